package goruntime

import (
	"runtime"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/recorder"
)

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{Mode: ModeOn, MaxBytes: 1 << 20, MaxGoroutines: 10}, ""},
		{Options{Mode: 7}, "GoRuntime.Mode 7"},
		{Options{MaxBytes: 1000}, "go_runtime_max_bytes"},
		{Options{MaxGoroutines: -1}, "go_runtime_max_goroutines"},
	} {
		err := c.o.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	for _, m := range []Mode{ModeAuto, ModeOn, ModeOff} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil || !strings.Contains(err.Error(), "go_runtime") {
		t.Errorf("ParseMode(sometimes): %v", err)
	}
	if (Options{}).Runs(2) || !(Options{}).Runs(3) || !(Options{Mode: ModeOn}).Runs(1) || (Options{Mode: ModeOff}).Runs(3) {
		t.Error("Runs: want auto at level 3 only, on always, off never")
	}
}

func TestGoroutineAt(t *testing.T) {
	runs := []gotrace.Run{{Start: 100, End: 200, G: 1}, {Start: 10_000, End: 20_000, G: 2}}
	for _, c := range []struct {
		t    int64
		g    int64
		want bool
	}{{150, 1, true}, {200 + linkTolerance, 1, true}, {9_000, 2, true}, {5_000, 0, false}, {20_500, 2, true}, {50_000, 0, false}, {0, 1, true}} {
		g, ok := goroutineAt(runs, c.t)
		if ok != c.want || ok && g != c.g {
			t.Errorf("goroutineAt(%d) = %d, %v; want %d, %v", c.t, g, ok, c.g, c.want)
		}
	}
}

// TestStartStop runs the source on a buffer of its own and checks the
// runtime's tracks land in it, and that a second flight recorder cannot
// start beside the first (the runtime allows one), with an error saying so.
func TestStartStop(t *testing.T) {
	buf := recorder.NewBuffer(1<<20, 3)
	s, err := Start(buf, Options{Mode: ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(recorder.NewBuffer(16, 3), Options{Mode: ModeOn}); err == nil || !strings.Contains(err.Error(), "go runtime tracing") {
		t.Errorf("a second source started: %v", err)
	}
	runtime.GC()
	rep := s.Stop()
	if len(rep.Warnings) > 0 {
		t.Errorf("warnings %v", rep.Warnings)
	}
	if rep2 := s.Stop(); len(rep2.Notes) != len(rep.Notes) {
		t.Error("a second Stop reported differently")
	}
	st := s.LastStats()
	if st.Events == 0 || st.GCs < 1 || st.TraceBytes == 0 {
		t.Errorf("stats %+v: want events, a GC and bytes", st)
	}
	snap := buf.Snapshot(event.Meta{})
	names := map[string]bool{}
	for _, tr := range snap.Tracks {
		names[tr.Name] = true
	}
	if !names[gotrace.TrackGC] || !names[gotrace.TrackSTW] || !names[gotrace.ProcPrefix+"0"] {
		t.Errorf("tracks %v: want %q, %q and %q", names, gotrace.TrackGC, gotrace.TrackSTW, gotrace.ProcPrefix+"0")
	}
	// A new source can start once the first stopped.
	s2, err := Start(recorder.NewBuffer(16, 3), Options{Mode: ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	rep = s2.Stop()
	if got := rep.Dropped; got < 0 {
		t.Errorf("dropped %d", got)
	}
}
