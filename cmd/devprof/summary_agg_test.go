package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/internal/spanstats"
)

// summaryTraces are the repository's traces of every format that summary
// reads.
var summaryTraces = []string{
	"../../testdata/golden/session.pftrace",
	"../../testdata/golden/session.trace.json",
	"../../testdata/golden/session.xplane.pb",
	"../../testdata/jax-cpu.xplane.pb",
	"../../testdata/real-gpu/devprof-h100-libwork.pftrace",
	"../../testdata/real-gpu/devprof-h100-libwork.xplane.pb",
	"../../testdata/real-gpu/jax-h100-train.perfetto_trace.json.gz",
	"../../testdata/real-gpu/jax-h100-train.xplane.pb",
	"../../testdata/real-gpu/jax-tsl-h100-libwork.xplane.pb",
	"../../testdata/real-gpu/kineto-h100-libwork.json.gz",
}

// TestSummaryAggregatorMatchesLayout holds the streaming aggregator to
// the summary computed from the whole Snapshot and its Layout
// (refSummary), table by table and row by row: on every trace of the
// repository read as summary reads it, on a recorded Go execution trace,
// and on random snapshots (nested, overlapping, displaced, tied and
// unfinished spans on tracks, lanes and devices) fed to it three ways:
// replayed in the order they were built, as a reader of begin and end
// events streams them (ends learned late through EndSpan), and buffered.
func TestSummaryAggregatorMatchesLayout(t *testing.T) {
	dir := t.TempDir()
	goTrace := filepath.Join(dir, "prog.trace")
	if err := os.WriteFile(goTrace, goTraceFile(t, "work"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A random snapshot written as Perfetto and read back streams
	// through the Perfetto reader's begin and end events.
	pf := filepath.Join(dir, "random.pftrace")
	out, err := os.Create(pf)
	if err != nil {
		t.Fatal(err)
	}
	if err := perfetto.Write(out, randomLayoutSnapshot(3, true, false), perfetto.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	for _, path := range append(slices.Clone(summaryTraces), goTrace, pf) {
		f, err := formats.Detect(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.ReadFile(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := refSummary(s)
		got, _, err := readSummary("summary", path, io.Discard, readLimits{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		compareSummary(t, filepath.Base(path), got, want)
		t.Logf("%s: %d spans, buffered: %v", filepath.Base(path), want.table.Spans, got.buffered)
	}
	streamed := 0
	for seed := range uint64(60) {
		s := randomLayoutSnapshot(seed, seed%2 == 0, seed%3 == 0)
		want := refSummary(s)
		label := fmt.Sprintf("random %d", seed)

		compareSummary(t, label+" replayed", aggregate(t, s, func(a *summaryAggregator) { formats.Replay(s, a) }), want)
		got := aggregate(t, s, func(a *summaryAggregator) { streamBeginEnd(s, a) })
		compareSummary(t, label+" as begin/end", got, want)
		if seed%6 == 0 && got.buffered {
			t.Errorf("%s: a properly nested begin/end stream on tracks was read again", label)
		}
		if !got.buffered {
			streamed++
		}
		b := newSummaryAggregator(true)
		formats.Replay(s, b)
		d, err := b.result()
		if err != nil {
			t.Fatalf("%s buffered: %v", label, err)
		}
		compareSummary(t, label+" buffered", d, want)
	}
	t.Logf("%d of 60 random begin/end streams summarized without reading them again", streamed)
}

// aggregate feeds s to an aggregator through feed, and again to a
// buffered one when the first asks for it, as readSummary does.
func aggregate(t *testing.T, s *event.Snapshot, feed func(*summaryAggregator)) *summaryData {
	t.Helper()
	a := newSummaryAggregator(false)
	feed(a)
	d, err := a.result()
	if errors.Is(err, errRestream) {
		a = newSummaryAggregator(true)
		feed(a)
		d, err = a.result()
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// streamBeginEnd writes s into sink as a reader of begin and end events
// does: each span added Unfinished at its begin and ended at its end,
// each track's events paired on a stack (the ends of spans over by a
// begin come before it), tracks merged in time order; activity, instants
// and counter samples whole at their time.
func streamBeginEnd(s *event.Snapshot, sink event.Sink) {
	m := sink.Meta()
	*m = s.Meta
	procs := []int{0}
	for _, p := range s.Processes {
		procs = append(procs, sink.Process(p))
	}
	tracks := []uint32{0}
	for _, tr := range s.Tracks {
		if tr.Process > 0 {
			tr.Process = procs[tr.Process]
		}
		tracks = append(tracks, sink.Track(tr))
	}
	onTrack := func(r *event.Record) uint32 {
		if r.Kind() != event.KindActivity && !r.OnTrack() {
			return 0
		}
		return tracks[r.Lane()]
	}
	type ev struct {
		t   int64
		r   *event.Record
		end bool
	}
	var evs, whole []ev
	byTrack := map[uint32][]*event.Record{}
	var keys []uint32
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan {
			whole = append(whole, ev{t: r.Start(), r: r})
			continue
		}
		k := onTrack(r)
		if byTrack[k] == nil {
			keys = append(keys, k)
		}
		byTrack[k] = append(byTrack[k], r)
	}
	endOf := func(r *event.Record) int64 {
		if !r.Ended() {
			return math.MaxInt64
		}
		return r.End()
	}
	for _, k := range keys {
		spans := byTrack[k]
		slices.SortStableFunc(spans, func(a, b *event.Record) int {
			return cmp.Or(cmp.Compare(a.Start(), b.Start()), cmp.Compare(endOf(b), endOf(a)))
		})
		var stack []*event.Record
		for _, r := range spans {
			for len(stack) > 0 && endOf(stack[len(stack)-1]) <= r.Start() {
				top := stack[len(stack)-1]
				evs = append(evs, ev{t: top.End(), r: top, end: true})
				stack = stack[:len(stack)-1]
			}
			evs = append(evs, ev{t: r.Start(), r: r})
			stack = append(stack, r)
		}
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].Ended() {
				evs = append(evs, ev{t: stack[i].End(), r: stack[i], end: true})
			}
		}
	}
	evs = append(evs, whole...)
	slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	ids := map[uint64]uint64{}
	for _, e := range evs {
		r := e.r
		switch {
		case e.end:
			sink.EndSpan(ids[r.ID()], r.End())
		case r.Kind() == event.KindSpan:
			ids[r.ID()] = sink.Span(event.Span{Name: s.Name(r), Start: r.Start(), Parent: ids[r.Parent()], Track: onTrack(r), Args: s.Args(r), Unfinished: true})
		case r.Kind() == event.KindActivity:
			end, _ := s.EndOf(r)
			ids[r.ID()] = sink.ActivityOf(r.Activity(), onTrack(r), s.Name(r), r.Start(), end, nil)
		case r.Kind() == event.KindInstant:
			sink.Instant(s.Name(r), r.Start(), onTrack(r), ids[r.Parent()], nil)
		case r.Kind() == event.KindCounter:
			unit, v := s.Counter(r)
			if tr := onTrack(r); tr != 0 {
				sink.TrackCounter(tr, s.Name(r), unit, r.Start(), v)
			} else {
				sink.Counter(s.Name(r), unit, r.Start(), v)
			}
		}
	}
}

// randomLayoutSnapshot is a trace whose layout has every case Layout
// tells apart: threads of two processes with nested spans, children that
// overlap a sibling or outlive their parent (displaced to other rows),
// children on another track than their parent, spans tied on start (and
// on end), spans of no length, spans that never end, device streams
// with kernels and counters, and, unless onlyTracks, spans on no track
// (the program's lanes). Spans are added in each track's time order,
// parents first, as readers add them. nested keeps each thread's spans
// properly nested, as a reader that pairs begin and end events on a
// stack has them (a child of another thread's span excepted).
func randomLayoutSnapshot(seed uint64, onlyTracks, nested bool) *event.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 38))
	b := event.NewBuilder(event.Meta{Host: "random", PID: 7, Program: "layout.test",
		Stop: event.ClockAnchor{Mono: 2_000_000}})
	other := b.Process(event.Process{PID: 99, Name: "worker", Labels: []string{"CPU"}})
	var threads []uint32
	for i := range 3 {
		threads = append(threads, b.Track(event.Track{Kind: event.TrackHostThread, ID: int64(i + 1), Name: fmt.Sprint("thread ", i)}))
	}
	threads = append(threads, b.Track(event.Track{Kind: event.TrackHostThread, ID: 50, Process: other}))
	names := []string{"step", "fwd", "bwd", "matmul", "io", "sync"}
	var all []uint64
	var allStart []int64
	for ti, tr := range threads {
		t := int64(rng.IntN(100))
		var stack []openSpan
		for range 60 + rng.IntN(80) {
			t += int64(rng.IntN(3)) * int64(rng.IntN(40)) // often tied
			for len(stack) > 0 && stack[len(stack)-1].end <= t && (nested || rng.IntN(5) > 0) {
				stack = stack[:len(stack)-1]
			}
			var parent uint64
			end := t + int64(rng.IntN(400))
			if rng.IntN(10) == 0 {
				end = t
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				parent = p.id
				if (nested || rng.IntN(6) > 0) && p.finished {
					end = min(end, p.end) // usually nested
				}
			} else if i := rng.IntN(len(all) + 1); rng.IntN(8) == 0 && i < len(all) && allStart[i] <= t {
				parent = all[i] // a parent elsewhere (another thread, or ended) that began before
			}
			unfinished := rng.IntN(40) == 0 && ti != 1
			if nested && len(stack) > 0 && stack[len(stack)-1].finished {
				unfinished = false // within a span that ends
			}
			if rng.IntN(25) == 0 {
				end = innermostEnd(t, stack) // ties on start and end with the enclosing span
			}
			id := b.Span(event.Span{Name: names[rng.IntN(len(names))], Start: t, End: end, Parent: parent, Track: tr, Unfinished: unfinished})
			all = append(all, id)
			allStart = append(allStart, t)
			stack = append(stack, openSpan{id, end, !unfinished})
			if unfinished {
				stack[len(stack)-1].end = math.MaxInt64
			}
			if rng.IntN(6) == 0 {
				b.Instant("mark", t, tr, id, nil)
			}
		}
	}
	for dev := range 2 {
		b.Track(event.Track{Kind: event.TrackDevice, Device: dev, DeviceName: fmt.Sprint("GPU model ", dev)})
		for st := range 2 {
			tr := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: dev, ID: int64(st), Name: fmt.Sprint("stream ", st)})
			t := int64(0)
			for range 40 {
				t += 1 + int64(rng.IntN(200)) // kernels of a stream start one after another
				b.ActivityOf(event.ActivityKernel, tr, names[rng.IntN(len(names))], t, t+int64(rng.IntN(300)), nil)
				if rng.IntN(3) == 0 {
					b.TrackCounter(tr, "utilization", "%", t, float64(rng.IntN(100)))
				}
			}
		}
	}
	if !onlyTracks {
		t := int64(0)
		var parent uint64
		for range 50 {
			t += int64(rng.IntN(100))
			p := uint64(0)
			if rng.IntN(2) == 0 {
				p = parent
			}
			parent = b.Span(event.Span{Name: names[rng.IntN(len(names))], Start: t, End: t + int64(rng.IntN(300)), Parent: p})
		}
	}
	b.Counter("loss", "", 5, 0.25)
	return b.Snapshot()
}

// openSpan is a span randomLayoutSnapshot has begun on a thread.
type openSpan struct {
	id       uint64
	end      int64
	finished bool
}

// innermostEnd is the end of the innermost open span that has one, else
// t.
func innermostEnd(t int64, stack []openSpan) int64 {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].finished {
			return max(stack[i].end, t)
		}
	}
	return t
}

// compareSummary fails t where got differs from want, field by field.
func compareSummary(t *testing.T, label string, got, want *summaryData) {
	t.Helper()
	if got.instants != want.instants || got.counters != want.counters || got.events != want.events {
		t.Errorf("%s: %d instants, %d counter samples, %d events; want %d, %d, %d", label, got.instants, got.counters, got.events, want.instants, want.counters, want.events)
	}
	if !reflect.DeepEqual(got.meta.Drops, want.meta.Drops) || !reflect.DeepEqual(got.meta.Warnings, want.meta.Warnings) || !reflect.DeepEqual(got.meta.Notes, want.meta.Notes) || got.meta.Host != want.meta.Host {
		t.Errorf("%s: meta %+v, want %+v", label, got.meta, want.meta)
	}
	compareTable(t, label, got.table, want.table)
	if len(got.groups) != len(want.groups) {
		t.Errorf("%s: %d groups, want %d", label, len(got.groups), len(want.groups))
	} else {
		for i := range got.groups {
			g, w := got.groups[i], want.groups[i]
			if g.key != w.key || g.device != w.device || g.pid != w.pid || g.pidText != w.pidText || g.name != w.name || g.label != w.label || (g.pidLabel == nil) != (w.pidLabel == nil) || g.pidLabel != nil && *g.pidLabel != *w.pidLabel {
				t.Errorf("%s: group %d is %+v, want %+v", label, i, g, w)
			}
			compareTable(t, fmt.Sprintf("%s group %s", label, w.label), g.table, w.table)
		}
	}
	if len(got.devices) != len(want.devices) {
		t.Errorf("%s: %d device counter series, want %d", label, len(got.devices), len(want.devices))
	} else {
		for i := range got.devices {
			g, w := got.devices[i], want.devices[i]
			mean := g.mean == w.mean || math.Abs(g.mean-w.mean) <= 1e-9*math.Abs(w.mean)
			g.mean = w.mean
			if g != w || !mean {
				t.Errorf("%s: device counters %d: %+v, want %+v", label, i, got.devices[i], w)
			}
		}
	}
	if got.hasGoRuntime != want.hasGoRuntime || !reflect.DeepEqual(got.goRuntime, want.goRuntime) {
		t.Errorf("%s: Go runtime %v %+v, want %v %+v", label, got.hasGoRuntime, got.goRuntime, want.hasGoRuntime, want.goRuntime)
	}
}

func compareTable(t *testing.T, label string, got, want *spanstats.Table) {
	t.Helper()
	if got.Spans != want.Spans || got.Tracks != want.Tracks || got.Wall != want.Wall {
		t.Errorf("%s: %d spans on %d rows, wall %v; want %d on %d, %v", label, got.Spans, got.Tracks, got.Wall, want.Spans, want.Tracks, want.Wall)
	}
	g, w := slices.Clone(got.Rows), slices.Clone(want.Rows)
	byName := func(a, b spanstats.Row) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(g, byName)
	slices.SortFunc(w, byName)
	if len(g) != len(w) {
		t.Errorf("%s: %d names, want %d", label, len(g), len(w))
		return
	}
	for i := range g {
		if g[i] != w[i] {
			t.Errorf("%s: row %+v, want %+v", label, g[i], w[i])
		}
	}
}
