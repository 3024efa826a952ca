package analysis

import (
	"testing"

	"github.com/devprof/devprof/event"
)

// hostTrace streams a host's steps (annotate.Step's form: step-marked
// spans with their numbers) into sink: step i starts at starts[i] and
// lasts walls[i], on the trace's own timeline.
func hostTrace(sink event.Sink, starts, walls []int64) {
	p := sink.Process(event.Process{PID: 1, Name: "train"})
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
	for i := range starts {
		sink.Span(event.Span{Name: "step", Start: starts[i], End: starts[i] + walls[i], Track: host, Step: true, StepNum: int64(i)})
	}
}

// TestCompareHosts: four hosts run ten synchronous steps; one is 40 %
// slower, one starts every step 300 µs late on the wall clock (and its
// trace's own timeline begins elsewhere, as another machine's monotonic
// clock does), one has no wall clock. The slow host is the one
// straggler, named with its excess; the late host's lateness and the
// spread of the step starts come from the wall clock alone.
func TestCompareHosts(t *testing.T) {
	const ms = int64(1e6)
	const epoch = int64(1_800_000_000) * 1e9 // Unix ns when the job began
	steps := func(wall int64, startAt int64) (starts, walls []int64) {
		for i := range 10 {
			starts = append(starts, startAt+int64(i)*12*ms)
			walls = append(walls, wall+int64(i%3)*ms/10) // a little noise
		}
		return
	}
	type host struct {
		name         string
		wall, offset int64 // step time; the trace's zero in Unix ns (0: no wall clock)
		startAt      int64 // first step on the trace's timeline
	}
	hosts := []host{
		{"h0", 10 * ms, epoch, 0},
		{"h1", 10 * ms, epoch - 5*ms, 5*ms + 300_000}, // its clock starts 5 ms earlier; every step 300 µs late
		{"h2", 14 * ms, epoch, 0},                     // the straggler
		{"h3", 10 * ms, 0, 7 * ms},                    // no wall clock
	}
	var reports []HostReport
	for _, h := range hosts {
		a := NewAnalyzer(event.Meta{Host: h.name}, Options{Warmup: -1})
		starts, walls := steps(h.wall, h.startAt)
		hostTrace(a, starts, walls)
		reports = append(reports, HostReport{Host: h.name, Report: a.Report(), WallOffsetNS: h.offset})
	}
	// CompareHosts sorts by name: hand it out of order.
	reports[0], reports[3] = reports[3], reports[0]
	got := CompareHosts(reports, 0)
	if len(got.Hosts) != 4 || got.Hosts[0].Host != "h0" || got.Hosts[3].Host != "h3" {
		t.Fatalf("hosts %+v, want h0..h3 in order", got.Hosts)
	}
	if got.MedianStepNS != 10*ms+ms/10 {
		t.Errorf("median step %d, want %d (the median host's median)", got.MedianStepNS, 10*ms+ms/10)
	}
	if len(got.Stragglers) != 1 || got.Stragglers[0] != "h2" || !got.Hosts[2].Straggler {
		t.Fatalf("stragglers %v, want [h2]", got.Stragglers)
	}
	if ex := got.Hosts[2].Excess; ex < 0.39 || ex > 0.41 {
		t.Errorf("h2 excess %.3f, want about 0.40", ex)
	}
	for _, i := range []int{0, 1, 3} {
		if h := got.Hosts[i]; h.Straggler || h.Excess > 0.01 || h.Steps != 10 || h.Slowest == nil {
			t.Errorf("%s: %+v, want 10 steps near the median, no straggler", h.Host, h)
		}
	}
	sk := got.Skew
	if sk == nil {
		t.Fatal("no skew measured")
	}
	if sk.Steps != 10 || sk.Spread.Min != 300_000 || sk.Spread.Max != 300_000 || sk.WorstFirst == "h1" || sk.WorstLast != "h1" {
		t.Errorf("skew %+v, want 10 steps spread 300 µs apart, h1 last", sk)
	}
	if got.Hosts[1].LateNS != 300_000 || got.Hosts[0].LateNS != 0 || got.Hosts[2].LateNS != 0 || got.Hosts[3].LateNS != -1 {
		t.Errorf("lateness h0..h3 %d %d %d %d, want 0, 300000, 0, -1 (no wall clock)",
			got.Hosts[0].LateNS, got.Hosts[1].LateNS, got.Hosts[2].LateNS, got.Hosts[3].LateNS)
	}
}

// TestCompareHostsEdges: one host is never a straggler; hosts without
// steps are listed unmeasured; a higher threshold spares a slow host.
func TestCompareHostsEdges(t *testing.T) {
	one := NewAnalyzer(event.Meta{}, Options{Warmup: -1})
	hostTrace(one, []int64{0, 100, 200}, []int64{50, 90, 50})
	alone := CompareHosts([]HostReport{{Host: "solo", Report: one.Report(), WallOffsetNS: 1}}, 0)
	if len(alone.Stragglers) != 0 || alone.Hosts[0].Straggler || alone.Skew != nil {
		t.Errorf("one host: %+v", alone)
	}
	empty := NewAnalyzer(event.Meta{}, Options{})
	slow := NewAnalyzer(event.Meta{}, Options{Warmup: -1})
	hostTrace(slow, []int64{0, 100, 200}, []int64{60, 60, 60})
	got := CompareHosts([]HostReport{{Host: "a", Report: one.Report()}, {Host: "b", Report: slow.Report()}, {Host: "c", Report: empty.Report()}}, 0.25)
	if len(got.Stragglers) != 0 {
		t.Errorf("b is 20%% slower than a with threshold 25%%: stragglers %v", got.Stragglers)
	}
	if c := got.Hosts[2]; c.Steps != 0 || c.Straggler || c.LateNS != -1 {
		t.Errorf("a host without steps: %+v", c)
	}
	if got := CompareHosts([]HostReport{{Host: "a", Report: one.Report()}, {Host: "b", Report: slow.Report()}}, 0.1); len(got.Stragglers) != 1 || got.Stragglers[0] != "b" {
		t.Errorf("threshold 10%%: stragglers %v, want [b]", got.Stragglers)
	}
}
