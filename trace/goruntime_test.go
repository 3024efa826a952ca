package trace_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/trace"
)

// goRuntimeWorkload forces two GCs inside span "gc" and blocks a
// goroutine on a channel receive inside span "wait" for about 20 ms; it
// returns the times (monotonic ns as the session sees them: the spans'
// records) and runtime/metrics' figures read right after the last GC.
type goRuntimeFacts struct {
	gcBefore, gcAfter uint64 // /gc/cycles/total:gc-cycles
	heapGoal          uint64 // /gc/heap/goal:bytes after the last GC
	heapObjects       uint64 // /memory/classes/heap/objects:bytes after the last GC
}

func readMetrics(names ...string) []metrics.Sample {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	return s
}

func goRuntimeWorkload(t *testing.T) goRuntimeFacts {
	var f goRuntimeFacts
	ctx := context.Background()
	ch := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wctx, sp := annotate.Begin(ctx, "wait")
		<-ch
		_, c := annotate.Begin(wctx, "after wait")
		busy(100 * time.Microsecond)
		c.End()
		sp.End()
	}()
	time.Sleep(20 * time.Millisecond)
	var keep [][]byte
	for range 64 {
		keep = append(keep, make([]byte, 64<<10))
	}
	// No cycle is under way once runtime.GC returns; span gc covers both
	// reads of the cycle count, so that the cycles that end in it are
	// those runtime/metrics counts.
	runtime.GC()
	_, sp := annotate.Begin(ctx, "gc")
	f.gcBefore = readMetrics("/gc/cycles/total:gc-cycles")[0].Value.Uint64()
	runtime.GC()
	runtime.GC()
	m := readMetrics("/gc/cycles/total:gc-cycles", "/gc/heap/goal:bytes", "/memory/classes/heap/objects:bytes")
	sp.End()
	f.gcAfter, f.heapGoal, f.heapObjects = m[0].Value.Uint64(), m[1].Value.Uint64(), m[2].Value.Uint64()
	runtime.KeepAlive(keep)
	time.Sleep(5 * time.Millisecond)
	ch <- 1
	<-done
	rctx, task := rtrace.NewTask(ctx, "user task")
	rtrace.WithRegion(rctx, "user region", func() { busy(50 * time.Microsecond) })
	rtrace.Log(rctx, "category", "a message")
	task.End()
	_, sp2 := annotate.Begin(ctx, "busy")
	busy(300 * time.Microsecond)
	sp2.End()
	return f
}

func busy(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// TestGoRuntimeOnTheTimeline runs a session at host tracer level 3 over a
// program that forces GCs and blocks a goroutine on a channel, and checks
// both show at the right times, that the trace's GC count and heap goal
// agree with runtime/metrics read in the same program, that each span is
// linked to the goroutine it began on and nests in that goroutine's
// executions within 1 µs, and hands the outputs to the conformance
// checkers.
func TestGoRuntimeOnTheTimeline(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir, trace.Options{HostTracerLevel: 3, DeviceTracerLevel: trace.Off, ChromeTrace: true})
	facts := goRuntimeWorkload(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	for _, w := range snap.Meta.Warnings {
		t.Errorf("warning: %s", w.Text)
	}
	byTrack := map[string][]*event.Record{}
	trackOf := map[*event.Record]string{}
	spans := map[string]*event.Record{}
	counters := map[string][]*event.Record{}
	for _, r := range snap.Events {
		switch tr, ok := snap.TrackOf(r); {
		case ok:
			byTrack[tr.Name] = append(byTrack[tr.Name], r)
			trackOf[r] = tr.Name
		case r.Kind() == event.KindSpan:
			spans[snap.Name(r)] = r
		case r.Kind() == event.KindCounter:
			counters[snap.Name(r)] = append(counters[snap.Name(r)], r)
		}
	}
	end := func(r *event.Record) int64 { e, _ := snap.EndOf(r); return e }
	gcSpan, wait, busySpan := spans["gc"], spans["wait"], spans["busy"]
	if gcSpan == nil || wait == nil || busySpan == nil {
		t.Fatalf("spans %v: want gc, wait, busy", spans)
	}

	// GC cycles that ended in span gc: as many as runtime/metrics counted
	// (it counts completed cycles).
	gcs := 0
	for _, r := range byTrack[gotrace.TrackGC] {
		if snap.Name(r) == gotrace.SliceGC && end(r) >= gcSpan.Start() && end(r) <= end(gcSpan) {
			gcs++
		}
	}
	if want := int(facts.gcAfter - facts.gcBefore); gcs != want || want < 2 {
		t.Errorf("%d GC cycles in span gc on %q, runtime/metrics counted %d (want >= 2)", gcs, gotrace.TrackGC, want)
	}
	// The whole trace's figures travel in the metadata, whatever rows the
	// source kept: at least the cycles counted above, and the GC track's
	// own count when no row was left out.
	g := snap.Meta.GoRuntime
	if g == nil {
		t.Fatal("Meta.GoRuntime is nil: the session did not carry the Go runtime's figures")
	}
	onTrack := 0
	for _, r := range byTrack[gotrace.TrackGC] {
		if snap.Name(r) == gotrace.SliceGC {
			onTrack++
		}
	}
	if g.GCs < gcs || g.GCs != onTrack || g.Goroutines < 2 {
		t.Errorf("Meta.GoRuntime: %d GCs, %d goroutines; want %d (the GC track's) and at least %d in span gc, 2 goroutines", g.GCs, g.Goroutines, onTrack, gcs)
	}
	stw := 0
	for _, r := range byTrack[gotrace.TrackSTW] {
		if r.Start() >= gcSpan.Start() && end(r) <= end(gcSpan) && strings.HasPrefix(snap.Name(r), gotrace.STWPrefix) {
			stw++
		}
	}
	if stw < 2*gcs {
		t.Errorf("%d stop-the-world pauses in span gc, want at least 2 per GC (sweep and mark termination): %d", stw, 2*gcs)
	}
	// The heap goal the trace shows after the GCs is runtime/metrics'.
	var goal float64
	for _, r := range counters[gotrace.CounterHeapGoal] {
		if r.Start() <= end(gcSpan) {
			_, goal = snap.Counter(r)
		}
	}
	// The goal moves a little between cycles too (the runtime recomputes
	// it as stacks and globals change): within 1 %, exact in most runs.
	if d := goal - float64(facts.heapGoal); d > 0.01*goal || d < -0.01*goal {
		t.Errorf("heap goal at the end of span gc %v, runtime/metrics %d", goal, facts.heapGoal)
	}
	// The heap in use the trace shows after the GCs is runtime/metrics'
	// (read a moment later: within 5 %).
	var heap float64
	for _, r := range counters[gotrace.CounterHeap] {
		if r.Start() <= end(gcSpan) {
			_, heap = snap.Counter(r)
		}
	}
	if d := heap - float64(facts.heapObjects); d > 0.05*heap || d < -0.05*heap {
		t.Errorf("heap in use at the end of span gc %v, runtime/metrics %d", heap, facts.heapObjects)
	}
	t.Logf("heap in use: trace %.0f, runtime/metrics %d; heap goal %.0f, %d", heap, facts.heapObjects, goal, facts.heapGoal)
	for _, c := range []string{gotrace.CounterHeap, gotrace.CounterGoroutines, gotrace.CounterGOMAXPROCS} {
		if len(counters[c]) == 0 {
			t.Errorf("no %q samples", c)
		}
	}
	if _, v := snap.Counter(counters[gotrace.CounterGOMAXPROCS][0]); int(v) != runtime.GOMAXPROCS(0) {
		t.Errorf("GOMAXPROCS counter %v, want %d", v, runtime.GOMAXPROCS(0))
	}

	// Links: each root span has a slice under it on the track of the
	// goroutine it began on.
	linked := map[uint64]*event.Record{}
	for _, rs := range byTrack {
		for _, r := range rs {
			if r.Parent() != 0 && strings.HasPrefix(trackOf[r], gotrace.GoroutinePrefix) {
				linked[r.Parent()] = r
			}
		}
	}
	goOf := func(sp *event.Record) string {
		l := linked[sp.ID()]
		if l == nil {
			t.Fatalf("span %q is not linked to a goroutine", snap.Name(sp))
		}
		return trackOf[l]
	}
	waitG, mainG := goOf(wait), goOf(gcSpan)
	if !strings.Contains(waitG, "goRuntimeWorkload.func1") || waitG == mainG || goOf(busySpan) != mainG {
		t.Errorf("span wait began on %q, gc on %q, busy on %q: want the workload's goroutine, then the test's twice", waitG, mainG, goOf(busySpan))
	}
	if _, ok := linked[spans["after wait"].ID()]; ok {
		t.Errorf("span %q is linked though its parent began on the same goroutine", "after wait")
	}

	// The goroutine blocked on the channel from span wait's start until
	// the send after span gc.
	var blocked *event.Record
	for _, r := range byTrack[waitG] {
		if snap.Name(r) == "blocked: chan receive" {
			blocked = r
		}
	}
	if blocked == nil {
		t.Fatalf("no %q slice on %q", "blocked: chan receive", waitG)
	}
	if blocked.Start() < wait.Start() || blocked.Start() > wait.Start()+int64(time.Millisecond) || end(blocked) < end(gcSpan) || end(blocked) > end(wait) {
		t.Errorf("blocked [%d, %d], want from span wait's start %d (within 1 ms) past span gc's end %d, before wait's end %d",
			blocked.Start(), end(blocked), wait.Start(), end(gcSpan), end(wait))
	}

	// One time axis: span busy nests in the executions of its goroutine
	// on the Ps within 1 µs, at both ends.
	gid := snap.Args(linked[busySpan.ID()])
	var runs []*event.Record
	for name, rs := range byTrack {
		if !strings.HasPrefix(name, gotrace.ProcPrefix) {
			continue
		}
		for _, r := range rs {
			if a := snap.Args(r); len(a) == 1 && len(gid) == 1 && a[0].Key == gotrace.ArgGoroutine && a[0].Num == gid[0].Num {
				runs = append(runs, r)
			}
		}
	}
	within := func(t0 int64) bool {
		for _, r := range runs {
			if r.Start()-1000 <= t0 && t0 <= end(r)+1000 {
				return true
			}
		}
		return false
	}
	if !within(busySpan.Start()) || !within(end(busySpan)) {
		t.Errorf("span busy [%d, %d] is not within 1 µs of an execution of its goroutine on a P (%d executions)", busySpan.Start(), end(busySpan), len(runs))
	}

	// runtime/trace's own annotations.
	has := func(track, name string) bool {
		for _, r := range byTrack[track] {
			if snap.Name(r) == name {
				return true
			}
		}
		return false
	}
	if !has(gotrace.TrackTasks, "user task") || !has(mainG, "user region") || !has(mainG, "category") {
		t.Errorf("want task %q on %q, region %q and log %q on %q", "user task", gotrace.TrackTasks, "user region", "category", mainG)
	}
	// xprof shows host lines in id order: the program's own rows come
	// first, the runtime's after them in their order.
	back, _, err := formats.Read(s.Outputs().XPlane)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, tr := range back.Tracks {
		if tr.Kind == event.TrackHostThread {
			order = append(order, tr.Name)
		}
	}
	if len(order) < 3 || strings.HasPrefix(order[0], "Go ") || order[len(order)-1] == gotrace.TrackGC {
		t.Errorf("host lines in the XSpace: %q; want the program's first, the runtime's (Go GC first) after", order)
	}
	for i, name := range order {
		if name == gotrace.TrackGC && (i == 0 || !strings.HasPrefix(order[i+1], gotrace.TrackSTW)) {
			t.Errorf("host lines in the XSpace: %q; want %q after the program's rows, then %q", order, gotrace.TrackGC, gotrace.TrackSTW)
		}
	}
	for _, n := range snap.Meta.Notes {
		t.Log(n.Text)
	}
	conformance.Export(t, "goruntime", s.Outputs().Perfetto, snap)
	conformance.ExportXPlane(t, "goruntime", s.Outputs().XPlane, snap)
}
