package tracediff_test

import (
	"bytes"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/tracediff"
)

// TestGoTrackNames: on a Go trace's P and goroutine tracks, an execution
// named "G<id> <function>" counts as the function and a bare "G<id>" as
// an unnamed goroutine; the same names on other tracks, and names that
// only look alike, are left alone.
func TestGoTrackNames(t *testing.T) {
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
	p0 := c.Track(event.Track{Kind: event.TrackHostThread, Name: "Go P0"})
	p1 := c.Track(event.Track{Kind: event.TrackHostThread, Name: "Go P12"})
	g := c.Track(event.Track{Kind: event.TrackHostThread, Name: "G7"})
	other := c.Track(event.Track{Kind: event.TrackHostThread, Name: "main"})
	late := c.Track(event.Track{Kind: event.TrackHostThread, Name: "thread 9"})
	notP := c.Track(event.Track{Kind: event.TrackHostThread, Name: "Go Px"})
	slice := func(track uint32, name string, start int64) {
		c.TrackSlice(track, name, start, start+10, nil)
	}
	slice(p0, "G24 main.worker", 0)
	slice(p1, "G25 main.worker", 0)
	slice(p0, "G3", 20)
	slice(p1, "main.worker", 20) // the bare function, as the reader names it now
	slice(p0, "G26 ", 40)        // no function after the space: not the form
	slice(p0, "G2x main.worker", 60)
	slice(p0, "GC", 80)
	slice(g, "G9 main.other", 0) // a goroutine's own track
	c.SetTrackName(g, "G7 main.worker")
	slice(g, "running", 20)
	slice(other, "G24 main.worker", 0)
	c.SetTrackName(late, "G8 main.late") // named as a goroutine's later
	slice(late, "G8 main.late", 0)
	slice(notP, "G24 main.worker", 0)
	p := c.Profile()
	want := map[string]int64{"main.worker": 3, "goroutine": 1, "G26 ": 1, "G2x main.worker": 1, "GC": 1,
		"main.other": 1, "running": 1, "G24 main.worker": 2, "main.late": 1}
	for name, n := range want {
		if d := p.Names[name]; d == nil || d.Count != n {
			t.Errorf("%q: %+v, want %d instances", name, d, n)
		}
	}
	if len(p.Names) != len(want) {
		t.Errorf("names %v, want %d", p.Sorted(), len(want))
	}
}

// steady and scaled are the two functions the Go traces' goroutines
// start in; scaled does factor times steady's work.
func steady(wg *sync.WaitGroup) { defer wg.Done(); spin(40_000) }

func scaled(wg *sync.WaitGroup, factor int) { defer wg.Done(); spin(40_000 * factor) }

// spun keeps spin's result, so that its loop is not optimized away.
var spun atomic.Uint64

func spin(n int) {
	x := uint64(1)
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	spun.Add(x)
}

// goTrace records a Go execution trace of 200 goroutines of each
// function, two at a time, and reads it into a Collector (through
// rename, when not nil, as an older reader named the executions).
func goTrace(t *testing.T, factor int, rename bool) *tracediff.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("runtime/trace: %v", err)
	}
	for range 200 {
		var wg sync.WaitGroup
		wg.Add(2)
		go steady(&wg)
		go scaled(&wg, factor)
		wg.Wait()
	}
	trace.Stop()
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
	var s event.Sink = c
	if rename {
		s = &goroutineNames{Sink: c, ps: map[uint32]bool{}}
	}
	if err := formats.GoTrace.Stream(bytes.NewReader(buf.Bytes()), "go.trace", s); err != nil {
		t.Fatal(err)
	}
	return c.Profile()
}

// goroutineNames names each execution on a P's track "G<id> <function>"
// ("G<id>" for an unnamed goroutine), as devprof's Go trace reader did
// before it named them by the function alone: files written then still
// read so.
type goroutineNames struct {
	event.Sink
	ps map[uint32]bool
}

func (g *goroutineNames) Track(t event.Track) uint32 {
	id := g.Sink.Track(t)
	g.ps[id] = strings.HasPrefix(t.Name, "Go P")
	return id
}

func (g *goroutineNames) rename(track uint32, name string, args []event.Arg) string {
	if !g.ps[track] {
		return name
	}
	for _, a := range args {
		if a.Key == "goroutine" && a.Kind == event.ArgInt {
			if name == "goroutine" {
				return "G" + strconv.FormatInt(a.Int(), 10)
			}
			return "G" + strconv.FormatInt(a.Int(), 10) + " " + name
		}
	}
	return name
}

func (g *goroutineNames) Span(s event.Span) uint64 {
	s.Name = g.rename(s.Track, s.Name, s.Args)
	return g.Sink.Span(s)
}

func (g *goroutineNames) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	return g.Sink.TrackSlice(track, g.rename(track, name, args), start, end, args)
}

// TestDiffGoTraces compares Go execution traces of one program: two
// runs of the same work compare as no change in the functions the
// goroutines ran, whether the executions are named by goroutine or by
// function; a run whose one function does three times the work names
// that function first of the program's functions. (Rows of the runtime's
// own goroutines, which come and go with GC, and the goroutines'
// "running" state on their own tracks, the same time again, may come
// before it.)
func TestDiffGoTraces(t *testing.T) {
	base := goTrace(t, 1, false)
	const steadyFn = "github.com/devprof/devprof/tracediff_test.steady"
	const scaledFn = "github.com/devprof/devprof/tracediff_test.scaled"
	for _, fn := range []string{steadyFn, scaledFn} {
		if d := base.Names[fn]; d == nil || d.Count < 200 {
			t.Fatalf("%s: %+v, want 200 executions or more", fn, d)
		}
	}

	same := goTrace(t, 1, true)
	r := tracediff.Compare(base, same, 0)
	for _, row := range r.Rows {
		if strings.HasPrefix(row.Name, "G") && strings.Trim(strings.Fields(row.Name)[0][1:], "0123456789") == "" {
			t.Errorf("a row per goroutine: %q", row.Name)
		}
		if (row.Name == steadyFn || row.Name == scaledFn) && (row.Verdict == tracediff.Added || row.Verdict == tracediff.Removed || row.Change > 0.5 || row.Change < -0.5) {
			t.Errorf("the same work: %s %v %+.1f%%", row.Name, row.Verdict, 100*row.Change)
		}
	}

	slow := goTrace(t, 3, false)
	r = tracediff.Compare(base, slow, 0)
	for i, row := range r.Rows[:min(len(r.Rows), 5)] {
		t.Logf("row %d: %s %v %+.1f%% impact %d", i, row.Name, row.Verdict, 100*row.Change, row.Impact)
	}
	var first *tracediff.Row
	for i := range r.Rows {
		if strings.HasPrefix(r.Rows[i].Name, "github.com/devprof/devprof/tracediff_test.") {
			first = &r.Rows[i]
			break
		}
	}
	if first == nil || first.Name != scaledFn || first.Verdict != tracediff.Slower || first.Change < 1 {
		t.Errorf("first function's row %+v, want %s slower by about 200%%", first, scaledFn)
	}
}
