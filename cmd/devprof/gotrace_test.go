package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
)

// goroutinesTraceFile records n goroutines that each run a region
// "work".
func goroutinesTraceFile(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use (go test -trace?): %v", err)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rtrace.WithRegion(context.Background(), "work", func() {})
		}()
	}
	wg.Wait()
	rtrace.Stop()
	return buf.Bytes()
}

// TestGoTraceMaxGoroutines: -max_goroutines bounds the goroutine rows
// convert draws, and convert says so naming the flag; raising it draws
// every goroutine without a word; summary with few rows still counts
// every goroutine and region; it is refused when negative or on a format
// that has no goroutines.
func TestGoTraceMaxGoroutines(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "trace.out")
	if err := os.WriteFile(in, goroutinesTraceFile(t, 40), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.pftrace")
	code, stdout, stderr := runCLI("convert", "-max_goroutines", "5", in, out)
	if code != 0 || !strings.Contains(stderr, "past the 5-goroutine row limit not drawn (raise with -max_goroutines N)") {
		t.Errorf("convert -max_goroutines 5: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("convert", "-max_goroutines", "1000", in, out)
	if code != 0 || strings.Contains(stderr, "max_goroutines") {
		t.Errorf("convert -max_goroutines 1000: exit %d\n%s%s", code, stdout, stderr)
	}
	// summary counts every goroutine and region whatever the rows drawn.
	code, stdout, stderr = runCLI("summary", "-json", "-max_goroutines", "5", in)
	var js struct {
		Warnings []struct {
			Code string `json:"code"`
		} `json:"warnings"`
		GoRuntime *struct {
			Goroutines int  `json:"goroutines"`
			Exact      bool `json:"exact"`
			Regions    []struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			} `json:"regions"`
		} `json:"go_runtime"`
	}
	if err := json.Unmarshal([]byte(stdout), &js); code != 0 || err != nil || js.GoRuntime == nil || !js.GoRuntime.Exact ||
		js.GoRuntime.Goroutines < 40 || len(js.GoRuntime.Regions) != 1 || js.GoRuntime.Regions[0].Count != 40 ||
		len(js.Warnings) == 0 || js.Warnings[0].Code != "max_goroutines" {
		t.Errorf("summary -json -max_goroutines 5: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if code, _, stderr := runCLI("convert", "-max_goroutines", "-1", in, out); code != 2 || !strings.Contains(stderr, "want 0") {
		t.Errorf("-max_goroutines -1: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("convert", "-max_goroutines", "5", out, filepath.Join(dir, "u.json.gz")); code == 0 || !strings.Contains(stderr, "goroutine rows applies to a Go execution trace") {
		t.Errorf("-max_goroutines on a Perfetto input: exit %d, %s", code, stderr)
	}
}
