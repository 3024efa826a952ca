package gotrace

import (
	"bytes"
	"io"
	rtrace "runtime/trace"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

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

// A trace cut short converts every event golang.org/x/exp/trace returns
// before its error, though convert parses events a batch at a time: the
// events of the last, partial batch are converted too.
func TestConvertsEventsBeforeAnError(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use: %v", err)
	}
	// A flight recorder makes the tracer start a generation every few
	// milliseconds, so that a cut falls after whole generations whose
	// events x/exp/trace returns before it finds the cut.
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MinAge: time.Millisecond, MaxBytes: 1 << 20})
	if err := fr.Start(); err != nil {
		rtrace.Stop()
		t.Fatalf("flight recorder: %v", err)
	}
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() { wg.Done() }()
		}
		wg.Wait()
		time.Sleep(100 * time.Microsecond)
	}
	fr.Stop()
	rtrace.Stop()
	data := buf.Bytes()
	partial := 0
	for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) * 3 / 4, len(data) - 1} {
		want, wantErr := readAll(data[:cut])
		if wantErr == nil {
			t.Fatalf("x/exp/trace read a trace cut at %d of %d bytes without an error", cut, len(data))
		}
		if want%eventBatch != 0 {
			partial++
		}
		c, err := convert(bytes.NewReader(data[:cut]), &countSink{}, Options{})
		if err == nil {
			t.Errorf("cut at %d of %d bytes: converted without an error", cut, len(data))
		}
		if c.res.Events != want {
			t.Errorf("cut at %d of %d bytes: converted %d events, x/exp/trace returns %d before its error", cut, len(data), c.res.Events, want)
		}
	}
	if partial == 0 {
		t.Fatal("no cut ended in a partial batch: the test checks nothing")
	}
}

// readAll counts the events x/exp/trace returns from data before the
// end or an error.
func readAll(data []byte) (int64, error) {
	tr, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		if _, err := tr.ReadEvent(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return n, err
		}
		n++
	}
}
