package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/profileserver"
)

// collectServer starts a profile server in this process with annotated
// work running, until the test ends.
func collectServer(t *testing.T) string {
	t.Helper()
	srv, err := profileserver.StartServer("", profileserver.Options{Log: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				_, sp := annotate.Begin(context.Background(), "collected-work")
				sp.End()
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait(); srv.Stop() })
	return srv.Addr()
}

// collected reads the one run directory's <host>.xplane.pb and counts the
// served spans.
func collected(t *testing.T, logdir, addr string) int {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(logdir, "plugins", "profile", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	snap, err := xplane.ReadFile(filepath.Join(runs[0], strings.ReplaceAll(addr, ":", "_")+".xplane.pb"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range snap.Events {
		if snap.Name(r) == "collected-work" {
			n++
		}
	}
	return n
}

func TestCollectWritesOneXPlanePerHostAndADeadHostCostsNoOther(t *testing.T) {
	addr := collectServer(t)
	logdir := t.TempDir()
	// Port 1 on loopback refuses connections: that host fails, clearly
	// and at once, and the live one is still written.
	start := time.Now()
	code, stdout, stderr := runCLI("collect", "grpc://"+addr+",127.0.0.1:1", "300", "--log_dir", logdir, "--device_tracer_level=0")
	if code != 1 || !strings.Contains(stderr, "127.0.0.1:1:") || !strings.Contains(stderr, "1 of 2 host(s) failed") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("a dead host held the capture up for %v", time.Since(start))
	}
	if n := collected(t, logdir, addr); n < 5 {
		t.Errorf("%d collected-work spans in a 300ms capture of a span a millisecond", n)
	}
	if !strings.HasPrefix(stdout, filepath.Join(logdir, "plugins", "profile")) {
		t.Errorf("stdout %q, want the run directory", stdout)
	}
}

func TestCollectInterruptKeepsWhatWasRecorded(t *testing.T) {
	addr := collectServer(t)
	old := collectInterrupt
	t.Cleanup(func() { collectInterrupt = old })
	collectInterrupt = func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 300*time.Millisecond) // Ctrl-C after 300ms
	}
	logdir := t.TempDir()
	start := time.Now()
	code, _, stderr := runCLI("collect", addr, "60000", "--log_dir", logdir, "--device_tracer_level", "0", "--no_perfetto_link")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the interrupt did not end a 60s capture early (%v)", time.Since(start))
	}
	if n := collected(t, logdir, addr); n == 0 {
		t.Errorf("the interrupted capture kept no spans")
	}
}

func TestCollectBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"collect", "127.0.0.1:9999"}, 2, "want ADDR"},
		{[]string{"collect", "9999", "100"}, 2, `address "9999"`},
		{[]string{"collect", "127.0.0.1:x", "100"}, 2, "not a number"},
		{[]string{"collect", "127.0.0.1:9999", "0"}, 2, "DURATION_MS"},
		{[]string{"collect", "127.0.0.1:9999", "abc"}, 2, "DURATION_MS"},
	} {
		code, _, stderr := runCLI(append(tc.args, "--log_dir", t.TempDir())...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// The only host is unreachable: no run directory is left behind.
	logdir := t.TempDir()
	code, _, stderr := runCLI("collect", "127.0.0.1:1", "100", "--log_dir", logdir)
	if code != 1 || !strings.Contains(stderr, "no host returned a trace") {
		t.Errorf("unreachable host: exit %d, stderr %q", code, stderr)
	}
	if runs, _ := os.ReadDir(filepath.Join(logdir, "plugins", "profile")); len(runs) != 0 {
		t.Errorf("an empty run directory was left: %v", runs)
	}
}
