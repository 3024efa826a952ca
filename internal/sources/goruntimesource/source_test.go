package goruntimesource

import (
	"runtime"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/goruntime"
)

func TestGoroutineOf(t *testing.T) {
	// In units of the tolerance: on P0, G1, then G2 right after it, then
	// G3 much later. G2 runs again on another P later; G1 never again.
	const u = linkTolerance / 20
	runs := []gotrace.Run{{Start: 100 * u, End: 200 * u, G: 1}, {Start: 205 * u, End: 20_000 * u, G: 2}, {Start: 40_000 * u, End: 45_000 * u, G: 3}}
	byG := map[int64][]gotrace.Run{1: {runs[0]}, 2: {runs[1], {Start: 49_000 * u, End: 51_000 * u, G: 2}}, 3: {runs[2]}}
	for _, c := range []struct {
		start, end int64
		g          int64
		want       bool
	}{
		{150 * u, 0, 1, true},          // inside G1's run, near G2's start: the run that holds it
		{203 * u, 50_000 * u, 2, true}, // between the two, ended while G2 ran elsewhere: G2
		{190 * u, 50_000 * u, 2, true}, // inside G1's run by the clock, but only G2 was there to end it
		{190 * u, 60_000 * u, 1, true}, // neither ran at the end: the run that holds the start
		{10_000 * u, 0, 2, true},       // well inside G2's run
		{30_000 * u, 0, 0, false},      // the P idle
		{40_000*u - linkTolerance/2, 0, 3, true},
		{45_000*u + linkTolerance, 0, 3, true},
		{100_000 * u, 0, 0, false},
	} {
		g, ok := goroutineOf(runs, byG, c.start, c.end)
		if ok != c.want || ok && g != c.g {
			t.Errorf("goroutineOf(%d, %d) = %d, %v; want %d, %v", c.start, c.end, g, ok, c.g, c.want)
		}
	}
}

// TestStartStop runs the source on a buffer of its own and checks the
// runtime's tracks land in it, and that a second flight recorder cannot
// start beside the first (the runtime allows one), with an error saying so.
func TestStartStop(t *testing.T) {
	buf := recorder.NewBuffer(1<<20, 3)
	s, err := Start(buf, goruntime.Options{Mode: goruntime.ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(recorder.NewBuffer(16, 3), goruntime.Options{Mode: goruntime.ModeOn}); err == nil || !strings.Contains(err.Error(), "go runtime tracing") {
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
	s2, err := Start(recorder.NewBuffer(16, 3), goruntime.Options{Mode: goruntime.ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	rep = s2.Stop()
	if got := rep.Dropped; got < 0 {
		t.Errorf("dropped %d", got)
	}
}
