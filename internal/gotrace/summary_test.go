package gotrace

import (
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
)

// The Summarizer fed a stream counts what Summarize counts of the
// snapshot built from the same stream, even when a goroutine's track
// comes before the track that shows its process has the runtime's, and
// leaves alone another process's threads that happen to be named "G1".
func TestSummarizerMatchesSnapshot(t *testing.T) {
	b := event.NewBuilder(event.Meta{Stop: event.ClockAnchor{Mono: 1000}})
	var z Summarizer
	track := func(tr event.Track) uint32 {
		id := b.Track(tr)
		z.Track(id, tr)
		return id
	}
	slice := func(track uint32, name string, start, end int64, args []event.Arg) {
		b.TrackSlice(track, name, start, end, args)
		z.Span(track, name, start, end, args)
	}
	other := b.Process(event.Process{PID: 7, Name: "other"})
	g1 := track(event.Track{Kind: event.TrackHostThread, Name: "G1 main.main"})
	foreign := track(event.Track{Kind: event.TrackHostThread, Name: "G1", Process: other})
	slice(g1, "work", 10, 30, nil)
	slice(g1, "work", 40, 45, nil)
	slice(g1, "running", 0, 50, nil)
	slice(g1, RangeMarkAssist, 12, 14, nil)
	slice(g1, "step", 60, 70, []event.Arg{{Key: ArgGoroutine, Kind: event.ArgInt, Num: 1}})
	slice(foreign, "work", 0, 500, nil)
	b.Instant(InstantCPUSample, 20, g1, 0, nil)
	z.Instant(g1, InstantCPUSample, 20)
	gc := track(event.Track{Kind: event.TrackHostThread, Name: TrackGC})
	slice(gc, SliceGC, 100, 300, nil)
	stw := track(event.Track{Kind: event.TrackHostThread, Name: TrackSTW})
	slice(stw, STWPrefix+"GC mark termination", 300, 310, nil)
	slice(stw, STWPrefix+"GC sweep termination", 90, 93, nil)
	tasks := track(event.Track{Kind: event.TrackHostThread, Name: TrackTasks})
	slice(tasks, "request", 5, 95, nil)
	for i, v := range []float64{3, 9, 4} {
		b.Counter(CounterGoroutines, "", int64(i), v)
		z.Counter(0, CounterGoroutines, int64(i), v)
	}
	want := Summary{GCs: 1, GCTotal: 200, Pauses: 2, PauseTotal: 13, PauseMax: 10, Assists: 1, AssistTotal: 2,
		Goroutines: 1, PeakGoroutines: 9, CPUSamples: 1,
		Regions: []RegionStat{{Name: "work", Count: 2, Total: 25}},
		Tasks:   []RegionStat{{Name: "request", Count: 1, Total: 90}}}
	got, ok := z.Result(nil)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed: %+v, %v\nwant %+v", got, ok, want)
	}
	s := b.Snapshot()
	if got, ok := Summarize(s); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Summarize: %+v, %v\nwant %+v", got, ok, want)
	}
	// The reader's whole-file figures win over the tracks'.
	m := &event.Meta{GoRuntime: &event.GoRuntime{GCs: 5, Goroutines: 8000, Regions: []event.GoRegion{{Name: "a", Count: 1, Total: 1}, {Name: "b", Count: 2, Total: 9}}}}
	got, ok = z.Result(m)
	if !ok || !got.Exact || got.GCs != 5 || got.Goroutines != 8000 || len(got.Regions) != 2 || got.Regions[0].Name != "b" {
		t.Fatalf("with the reader's figures: %+v, %v", got, ok)
	}
}

// Without the runtime's own tracks there is no Go-runtime section, even
// with threads named like goroutines.
func TestSummarizerNoRuntime(t *testing.T) {
	var z Summarizer
	z.Track(1, event.Track{Kind: event.TrackHostThread, Name: "G1"})
	z.Span(1, "work", 0, 10, nil)
	if sum, ok := z.Result(&event.Meta{}); ok {
		t.Fatalf("got a summary %+v of a trace with no Go runtime tracks", sum)
	}
}
