package xplane

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
)

// hostFlowSnapshot has flows between host threads of every shape — two
// spans on two threads, a chain through three threads, an instant to a
// span, an event on two flows — beside one launch → kernel link.
func hostFlowSnapshot() *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: "flow-host", Program: "server", PID: 77,
		Start: event.ClockAnchor{Mono: 0, Boot: 1e12, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 40 * ms, Boot: 1e12 + 40*ms, Wall: 1_795_000_000_040_000_000}})
	producer := b.Track(event.Track{Kind: event.TrackHostThread, ID: 11, Name: "producer"})
	consumer := b.Track(event.Track{Kind: event.TrackHostThread, ID: 12, Name: "consumer"})
	relay := b.Track(event.Track{Kind: event.TrackHostThread, ID: 13, Name: "relay"})
	stream := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", ID: 7, Name: "Stream #7(Compute)"})
	flow := func(id uint64) event.Arg { return event.Arg{Kind: event.ArgFlow, Num: id} }
	step := b.Span(event.Span{Name: "serve", Start: 1 * ms, End: 30 * ms, Track: producer, Step: true, StepNum: 0})
	b.Span(event.Span{Name: "enqueue", Start: 2 * ms, End: 3 * ms, Track: producer, Parent: step, Args: []event.Arg{flow(1 << 60)}})
	b.Span(event.Span{Name: "dequeue", Start: 4 * ms, End: 6 * ms, Track: consumer, Args: []event.Arg{flow(1 << 60)}})
	b.Span(event.Span{Name: "send", Start: 7 * ms, End: 8 * ms, Track: producer, Parent: step, Args: []event.Arg{flow(2)}})
	b.Span(event.Span{Name: "forward", Start: 9 * ms, End: 10 * ms, Track: relay, Args: []event.Arg{flow(2)}})
	b.Span(event.Span{Name: "sink", Start: 11 * ms, End: 12 * ms, Track: consumer, Args: []event.Arg{flow(2)}})
	b.Instant("signal", 13*ms, producer, 0, []event.Arg{flow(3)})
	b.Span(event.Span{Name: "handle", Start: 14 * ms, End: 15 * ms, Track: relay, Args: []event.Arg{flow(3)}})
	b.Span(event.Span{Name: "request", Start: 16 * ms, End: 17 * ms, Track: producer, Parent: step, Args: []event.Arg{flow(4)}})
	b.Span(event.Span{Name: "both", Start: 18 * ms, End: 19 * ms, Track: consumer, Args: []event.Arg{flow(4), flow(5)}})
	b.Span(event.Span{Name: "reply", Start: 20 * ms, End: 21 * ms, Track: relay, Args: []event.Arg{flow(5)}})
	b.Span(event.Span{Name: "lonely", Start: 22 * ms, End: 23 * ms, Track: relay, Args: []event.Arg{flow(6)}})
	// The one launch: its flow is a correlation_id, not a flow stat.
	b.Span(event.Span{Name: "cudaLaunchKernel", Start: 24 * ms, End: 25 * ms, Track: producer, Parent: step,
		Args: []event.Arg{flow(100), {Key: "device_id", Kind: event.ArgUint, Num: 0}}})
	b.Activity(stream, "gemm", 26*ms, 28*ms, []event.Arg{flow(100),
		{Key: "kernel_details", Kind: event.ArgString, Str: "regs:64 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:50"}})
	return b.Snapshot()
}

// TestHostFlowsAsFlowStats: each end of a flow between host events
// carries xprof's flow stat (renumbered id, generic category, out on the
// first end, in on the last, both between) and no correlation_id, while
// the launch keeps its correlation_id and no flow stat; a flow with one
// end gets none. Read gives back every flow by its ends. Under
// scripts/test xprof's own trace viewer must draw them with both ends and
// count only the launch (conformance/test_xprof_outputs.py).
func TestHostFlowsAsFlowStats(t *testing.T) {
	s := hostFlowSnapshot()
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	xs := decode(t, buf.Bytes())
	got := map[string][]uint64{} // event name -> its flow stats
	corr := map[string]bool{}
	for _, p := range xs.Planes {
		for _, l := range p.Lines {
			for _, e := range l.Events {
				name := p.EventMetadata[e.MetadataId].GetName()
				for _, st := range e.Stats {
					switch p.StatMetadata[st.MetadataId].GetName() {
					case StatFlow:
						got[name] = append(got[name], st.GetUint64Value())
					case "correlation_id":
						corr[name] = true
					}
				}
			}
		}
	}
	// Flows numbered by their first end's time: enqueue's 1, send's 2,
	// signal's 3, request's 4, both's 5; direction in the low two bits.
	x := func(id, dir uint64) uint64 { return id<<xflowIDShift | dir }
	want := map[string][]uint64{
		"enqueue": {x(1, xflowOut)}, "dequeue": {x(1, xflowIn)},
		"send": {x(2, xflowOut)}, "forward": {x(2, xflowInOut)}, "sink": {x(2, xflowIn)},
		"signal": {x(3, xflowOut)}, "handle": {x(3, xflowIn)},
		"request": {x(4, xflowOut)}, "both": {x(4, xflowIn), x(5, xflowOut)}, "reply": {x(5, xflowIn)},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s: flow stats %#x, want %#x", name, got[name], w)
		}
		if corr[name] {
			t.Errorf("%s carries a correlation_id: xprof would count it as a launch", name)
		}
	}
	for _, name := range []string{"lonely", "cudaLaunchKernel", "gemm", "serve"} {
		if len(got[name]) != 0 {
			t.Errorf("%s: flow stats %#x, want none", name, got[name])
		}
	}
	if !corr["cudaLaunchKernel"] || !corr["gemm"] {
		t.Errorf("the launch and its kernel lost their correlation_id: %v", corr)
	}

	back, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, wf := eventtest.ProcessFacts(s, false)
	_, _, _, gf := eventtest.ProcessFacts(back, false)
	wantFlows := []string{"both -> reply", "cudaLaunchKernel -> gemm", "enqueue -> dequeue", "lonely", "request -> both", "send -> forward -> sink", "signal -> handle"}
	if !slices.Equal(wf, wantFlows) {
		t.Fatalf("the snapshot's flows %q, want %q", wf, wantFlows)
	}
	// The one-ended flow has nothing to link and is not written.
	if w := slices.DeleteFunc(slices.Clone(wf), func(f string) bool { return f == "lonely" }); !slices.Equal(gf, w) {
		t.Errorf("flows read back %q, want %q", gf, w)
	}
	// Written again, the file is the same: ids and directions are stable.
	var again bytes.Buffer
	if err := Write(&again, back); err != nil {
		t.Fatal(err)
	}
	if back2, err := Read(bytes.NewReader(again.Bytes())); err != nil {
		t.Fatal(err)
	} else if _, _, _, f2 := eventtest.ProcessFacts(back2, false); !slices.Equal(f2, gf) {
		t.Errorf("flows after a second round trip %q, want %q", f2, gf)
	}

	path := filepath.Join(t.TempDir(), "flow-host.xplane.pb")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m := conformance.ExpectXprof(s, "host-flows.xplane.pb")
	wantPairs := [][2]string{{"enqueue", "dequeue"}, {"send", "forward"}, {"forward", "sink"}, {"signal", "handle"}, {"both", "reply"}}
	if !sameSet(m.HostFlows, wantPairs) || m.LaunchLinks != 1 {
		t.Errorf("xprof manifest: host flows %q (want %q: both shows its last flow only), %d launch links (want 1)", m.HostFlows, wantPairs, m.LaunchLinks)
	}
	conformance.ExportXPlane(t, "host-flows", path, s)
}

func sameSet(a, b [][2]string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	less := func(x, y [2]string) int {
		if x[0] != y[0] {
			if x[0] < y[0] {
				return -1
			}
			return 1
		}
		if x[1] < y[1] {
			return -1
		} else if x[1] > y[1] {
			return 1
		}
		return 0
	}
	slices.SortFunc(a, less)
	slices.SortFunc(b, less)
	return slices.Equal(a, b)
}
