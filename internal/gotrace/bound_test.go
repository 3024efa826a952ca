package gotrace

import (
	"bytes"
	rtrace "runtime/trace"
	"sync"
	"testing"

	"github.com/devprof/devprof/event"
)

// countSink counts what it is given and keeps nothing.
type countSink struct{ tracks, events int }

func (k *countSink) Track(event.Track) uint32 { k.tracks++; return uint32(k.tracks) }
func (k *countSink) Slice(uint32, uint64, string, int64, int64, []event.Arg) uint64 {
	k.events++
	return uint64(k.events)
}
func (k *countSink) Begin(uint32, string, int64, []event.Arg) uint64 {
	k.events++
	return uint64(k.events)
}
func (k *countSink) End(uint64, int64)                          {}
func (k *countSink) Instant(uint32, string, int64, []event.Arg) { k.events++ }
func (k *countSink) Counter(string, string, int64, float64)     { k.events++ }

// A trace of many short-lived goroutines (a server's per-request ones)
// converts with state for the live goroutines only: what the converter
// keeps grows with the goroutines alive at once, not with the file.
func TestExitedGoroutinesFreed(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use: %v", err)
	}
	const n = 5000
	for range n / 100 {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() { wg.Done() }()
		}
		wg.Wait()
	}
	rtrace.Stop()
	k := &countSink{}
	c, err := convert(bytes.NewReader(buf.Bytes()), k, Options{MaxGoroutines: 10})
	if err != nil {
		t.Fatal(err)
	}
	if c.res.Goroutines < n {
		t.Fatalf("the trace names %d goroutines, want at least the %d started", c.res.Goroutines, n)
	}
	// The test's own goroutines, the runtime's and the tracer's remain.
	if c.gs.n > 100 {
		t.Fatalf("the converter kept state for %d goroutines after %d exited, want only the live ones", c.gs.n, n)
	}
	if k.events == 0 {
		t.Fatal("nothing converted")
	}
}
