package analysis

import (
	"math"
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
)

func flow(n uint64) event.Arg { return event.Arg{Kind: event.ArgFlow, Num: n} }

func occupancy(pct float64) event.Arg {
	return event.Arg{Key: "theoretical_occupancy_pct", Kind: event.ArgFloat, Num: math.Float64bits(pct)}
}

// knownTrace writes a trace whose every answer is worked out by hand
// (the comments): one device with two streams, work of each category,
// idle gaps of each cause, two marked steps. Device work comes first, as
// an XSpace has it, so that kernels meet their launches only later.
// With open set, the steps and the spans around launches are added
// unfinished and ended when the reader would learn their ends.
func knownTrace(sink event.Sink, open bool) {
	s1 := sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7, Name: "Stream #7", DeviceName: "H100"})
	s2 := sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 8, Name: "Stream #8", DeviceName: "H100"})
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 100, Name: "main"})
	k := func(track uint32, kind event.ActivityKind, name string, start, end int64, args ...event.Arg) {
		sink.ActivityOf(kind, track, name, start, end, args)
	}
	// Stream 7: all compute. Busy 415 of [100, 1302).
	k(s1, event.ActivityKernel, "gemm", 100, 300, flow(1), occupancy(50))
	k(s1, event.ActivityKernel, "relu", 310, 315, flow(2))                // gap 10, launch pending: kernel wait
	k(s1, event.ActivityKernel, "gemm", 700, 900, flow(3), occupancy(75)) // gap 385, launched at 600: host wait
	k(s1, event.ActivityKernel, "scale", 1000, 1005, flow(5))             // gap 100, stream 8 copies: sync
	k(s1, event.ActivityKernel, "scale", 1200, 1203, flow(7))             // gap 195, nothing else runs: other
	k(s1, event.ActivityKernel, "scale", 1300, 1302)                      // gap 97, no launch linked: other
	// Stream 8: communication and a copy; its gap of 350 is sync
	// (stream 7 runs the second gemm in it).
	k(s2, event.ActivityKernel, "ncclAllReduceKernel", 200, 500, flow(4))
	k(s2, event.ActivityMemcpy, "Memcpy HtoD", 850, 950, flow(6))
	// Not device work: left out of every figure.
	k(s2, event.ActivitySync, "StreamSynchronize", 950, 2000)

	span := func(name string, start, end int64, args ...event.Arg) uint64 {
		return sink.Span(event.Span{Name: name, Start: start, End: end, Track: host, Args: args})
	}
	step := func(n, start, end int64) uint64 {
		return sink.Span(event.Span{Name: "train", Start: start, End: end, Track: host, Step: true, StepNum: n, Unfinished: open})
	}
	fwd := func(name string, start, end int64) uint64 {
		return sink.Span(event.Span{Name: name, Start: start, End: end, Track: host, Unfinished: open})
	}
	end := func(id uint64, t int64) {
		if open {
			sink.EndSpan(id, t)
		}
	}
	t1 := step(1, 0, 1000)
	f := fwd("fwd", 10, 400)
	span("cudaLaunchKernel", 20, 30, flow(1))
	span("cudaLaunchKernel", 40, 50, flow(2))
	span("cudaLaunchKernel", 60, 70, flow(4))
	span("cudaLaunchKernel", 80, 90, flow(5))
	span("cudaMemcpyAsync", 95, 99, flow(6))
	span("cudaLaunchKernel", 100, 105, flow(7))
	end(f, 400)
	b := fwd("bwd", 500, 900)
	span("cudaLaunchKernel", 600, 610, flow(3))
	end(b, 900)
	end(t1, 1000)
	t2 := step(2, 1000, 1400)
	span("opt", 1100, 1150)
	end(t2, 1400)
}

var knownOptions = Options{TinyKernel: 10, KernelWait: 50}

func TestKnownAnswers(t *testing.T) {
	a := NewAnalyzer(event.Meta{}, knownOptions)
	knownTrace(a, false)
	r := a.Report()
	if r.StartNS != 0 || r.WallNS != 2000 {
		t.Errorf("trace: start %d wall %d, want 0 and 2000", r.StartNS, r.WallNS)
	}
	if len(r.Devices) != 1 {
		t.Fatalf("%d devices, want 1", len(r.Devices))
	}
	d := r.Devices[0]
	if d.Name != "H100" {
		t.Errorf("device name %q", d.Name)
	}
	// The device's union: compute 415; compute or communication
	// [100,500)+[700,900)+10 = 610, so communication 195 (105 of its 300
	// under compute); the copy adds [900,950): memory 50; busy 660 of a
	// window of 1202.
	want := Breakdown{StartNS: 100, WallNS: 1202, ComputeNS: 415, CommunicationNS: 195, MemoryNS: 50, IdleNS: 542, OverlapNS: 105}
	if d.Breakdown != want {
		t.Errorf("device breakdown\n got %+v\nwant %+v", d.Breakdown, want)
	}
	if len(d.Streams) != 2 {
		t.Fatalf("%d streams, want 2", len(d.Streams))
	}
	wantStreams := []Stream{
		{ID: 7, Name: "Stream #7", Breakdown: Breakdown{StartNS: 100, WallNS: 1202, ComputeNS: 415, IdleNS: 787},
			Idle: IdleByCause{HostWaitNS: 385, KernelWaitNS: 10, SyncNS: 100, OtherNS: 195 + 97, Gaps: 5}},
		{ID: 8, Name: "Stream #8", Breakdown: Breakdown{StartNS: 200, WallNS: 750, CommunicationNS: 300, MemoryNS: 100, IdleNS: 350},
			Idle: IdleByCause{SyncNS: 350, Gaps: 1}},
	}
	if !reflect.DeepEqual(d.Streams, wantStreams) {
		t.Errorf("streams\n got %+v\nwant %+v", d.Streams, wantStreams)
	}
	if want := (IdleByCause{HostWaitNS: 385, KernelWaitNS: 10, SyncNS: 450, OtherNS: 292, Gaps: 6}); r.Idle.IdleByCause != want {
		t.Errorf("idle %+v, want %+v", r.Idle.IdleByCause, want)
	}
	var durs []int64
	for _, g := range r.Idle.Largest {
		durs = append(durs, g.DurNS)
	}
	if !reflect.DeepEqual(durs, []int64{385, 350, 195, 100, 97, 10}) {
		t.Errorf("largest gaps %v", durs)
	}
	// The host wait: launched from bwd, which began after the gap did;
	// the step around it had begun.
	wantGap := Gap{Device: 0, Stream: "Stream #7", StartNS: 315, DurNS: 385, Cause: CauseHostWait, Next: "gemm",
		Launch: "cudaLaunchKernel", HostSpan: "train", Step: 1}
	if r.Idle.Largest[0] != wantGap {
		t.Errorf("largest gap\n got %+v\nwant %+v", r.Idle.Largest[0], wantGap)
	}
	if g := r.Idle.Largest[4]; g.Cause != CauseOther || g.Launch != "" || g.Step != 2 {
		t.Errorf("the unlinked gap: %+v", g)
	}

	k := r.Kernels
	if k.Count != 7 || k.TotalNS != 715 {
		t.Errorf("kernels: %d, %d ns; want 7, 715", k.Count, k.TotalNS)
	}
	wantTop := []Kernel{
		{Name: "gemm", Category: "compute", Count: 2, TotalNS: 400, MeanNS: 200, P50NS: 200, P99NS: 200, Occupancy: 62.5},
		{Name: "ncclAllReduceKernel", Category: "communication", Count: 1, TotalNS: 300, MeanNS: 300, P50NS: 300, P99NS: 300, Occupancy: -1},
		{Name: "scale", Category: "compute", Count: 3, TotalNS: 10, MeanNS: 3, P50NS: 3, P99NS: 5, Occupancy: -1},
		{Name: "relu", Category: "compute", Count: 1, TotalNS: 5, MeanNS: 5, P50NS: 5, P99NS: 5, Occupancy: -1},
	}
	if !reflect.DeepEqual(k.Top, wantTop) {
		t.Errorf("top kernels\n got %+v\nwant %+v", k.Top, wantTop)
	}
	// Latencies 80, 100, 140, 270, 920, 1100 (the last scale is not
	// linked).
	wantLaunch := Launch{TinyNS: 10, Tiny: 4, TinyTotalNS: 15, Linked: 6,
		Latency:       Distribution{Count: 6, Mean: 435, Min: 80, P50: 140, P90: 1100, P99: 1100, Max: 1100},
		TinyLaunchers: []Launcher{{Name: "fwd", Kernels: 3, TotalNS: 13}}}
	if !reflect.DeepEqual(k.Launch, wantLaunch) {
		t.Errorf("launch\n got %+v\nwant %+v", k.Launch, wantLaunch)
	}

	st := r.Steps
	if st == nil {
		t.Fatal("no steps")
	}
	wantSteps := []Step{
		// Host busy: fwd [10,400) and bwd [500,900). Device busy:
		// [100,500) and [700,950).
		{Number: 1, StartNS: 0, WallNS: 1000, HostBusyNS: 790, DeviceBusyNS: 650, DeviceIdleNS: 350},
		{Number: 2, StartNS: 1000, WallNS: 400, HostBusyNS: 50, DeviceBusyNS: 10, DeviceIdleNS: 390},
	}
	if st.Source != "step markers" || !reflect.DeepEqual(st.All, wantSteps) {
		t.Errorf("steps (%s)\n got %+v\nwant %+v", st.Source, st.All, wantSteps)
	}
	if st.Warmup != 0 || st.Wall != (Distribution{Count: 2, Mean: 700, Min: 400, P50: 400, P90: 1000, P99: 1000, Max: 1000}) {
		t.Errorf("warm-up %d, wall %+v", st.Warmup, st.Wall)
	}
	if len(st.Slowest) != 2 || st.Slowest[0].Number != 1 {
		t.Errorf("slowest %+v", st.Slowest)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes: %q", r.Notes)
	}
}

// TestStreamedEqualsSnapshot holds the three ways in to one answer: the
// sink fed as a reader streams (ends known, or learned later), and a
// Snapshot built from the same calls, replayed.
func TestStreamedEqualsSnapshot(t *testing.T) {
	a := NewAnalyzer(event.Meta{}, knownOptions)
	knownTrace(a, false)
	want := a.Report()

	o := NewAnalyzer(event.Meta{}, knownOptions)
	knownTrace(o, true)
	if got := o.Report(); !reflect.DeepEqual(got, want) {
		t.Errorf("with ends learned later\n got %+v\nwant %+v", got, want)
	}

	b := event.NewBuilder(event.Meta{})
	knownTrace(b, true)
	got := Analyze(b.Snapshot(), knownOptions)
	// The snapshot's replay counts the same events.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from a snapshot\n got %+v\nwant %+v", got, want)
	}
}

// TestResetForgets: a reader that starts over gets the answer of the
// second pass alone.
func TestResetForgets(t *testing.T) {
	a := NewAnalyzer(event.Meta{}, knownOptions)
	knownTrace(a, false)
	a.Reset()
	knownTrace(a, false)
	b := NewAnalyzer(event.Meta{}, knownOptions)
	knownTrace(b, false)
	if got, want := a.Report(), b.Report(); !reflect.DeepEqual(got, want) {
		t.Errorf("after Reset\n got %+v\nwant %+v", got, want)
	}
}

// kinetoLike writes a trace as the Chrome reader gives a PyTorch
// profile: no device tracks, the streams as threads of a process
// labelled "GPU 0", work as spans whose kind only the name tells,
// launches linked by correlation ids, steps as ProfilerStep#N spans, and
// record_function ranges on the stream around its work.
func kinetoLike(sink event.Sink, walls []int64) {
	cpu := sink.Process(event.Process{PID: 620, Name: "python3", Labels: []string{"CPU"}})
	gpu := sink.Process(event.Process{PID: 0, Name: "python3", Labels: []string{"GPU 0"}})
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "thread 1", Process: cpu})
	stream := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 7, Name: "stream 7", Process: gpu})
	corr := func(n int64) []event.Arg {
		return []event.Arg{{Key: "correlation", Kind: event.ArgInt, Num: uint64(n)}}
	}
	t := int64(0)
	for i, w := range walls {
		n := int64(i + 5)
		sink.Span(event.Span{Name: "ProfilerStep#" + itoa(n), Start: t, End: t + w, Track: host})
		sink.Span(event.Span{Name: "aten::mm", Start: t + 1, End: t + 11, Track: host})
		sink.Span(event.Span{Name: "cudaLaunchKernel", Start: t + 2, End: t + 4, Track: host, Args: corr(2 * n)})
		sink.Span(event.Span{Name: "cudaMemcpyAsync", Start: t + 5, End: t + 7, Track: host, Args: corr(2*n + 1)})
		// A record_function range as Kineto puts it on the stream
		// (gpu_user_annotation): not work.
		sink.Span(event.Span{Name: "## forward ##", Start: t + 9, End: t + 41, Track: stream})
		sink.Span(event.Span{Name: "void gemm<float>(float*)", Start: t + 10, End: t + 30, Track: stream, Args: corr(2 * n)})
		sink.Span(event.Span{Name: "Memcpy DtoH (Device -> Pinned)", Start: t + 30, End: t + 40, Track: stream, Args: corr(2*n + 1)})
		t += w
	}
}

func itoa(n int64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestProfilerStepsAndWarmup(t *testing.T) {
	walls := []int64{5000, 3000, 1000, 1000, 1100, 1000, 1200, 1000}
	a := NewAnalyzer(event.Meta{}, Options{Top: 2})
	kinetoLike(a, walls)
	r := a.Report()
	st := r.Steps
	if st == nil || st.Source != "ProfilerStep#N" || len(st.All) != 8 {
		t.Fatalf("steps: %+v", st)
	}
	// A quarter of 8 is 2; the median of the other 6 is 1000; both first
	// steps take more than 1500.
	if st.Warmup != 2 {
		t.Errorf("warm-up %d, want 2", st.Warmup)
	}
	if st.Wall.Count != 6 || st.Wall.Max != 1200 || st.Wall.P50 != 1000 {
		t.Errorf("wall %+v", st.Wall)
	}
	if len(st.Slowest) != 2 || st.Slowest[0].Number != 11 || st.Slowest[1].Number != 9 {
		t.Errorf("slowest %+v, want steps 11 and 9", st.Slowest)
	}
	for _, s := range st.All {
		if s.HostBusyNS != 10 || s.DeviceBusyNS != 30 {
			t.Errorf("step %d: host busy %d, device busy %d; want 10 and 30", s.Number, s.HostBusyNS, s.DeviceBusyNS)
		}
	}
	if len(r.Devices) != 1 || len(r.Devices[0].Streams) != 1 {
		t.Fatalf("devices %+v", r.Devices)
	}
	d := r.Devices[0]
	if d.ComputeNS != 8*20 || d.MemoryNS != 8*10 {
		t.Errorf("compute %d memory %d, want 160 and 80", d.ComputeNS, d.MemoryNS)
	}
	// Every gap but none is the host's: each step's kernel is launched
	// 2 ns into it, after the last step's copy ended.
	if r.Idle.Gaps != 7 || r.Idle.HostWaitNS != r.Idle.IdleByCause.HostWaitNS || r.Idle.HostWaitNS != d.IdleNS {
		t.Errorf("idle %+v, device idle %d", r.Idle.IdleByCause, d.IdleNS)
	}
	if r.Idle.Largest[0].HostSpan != "ProfilerStep#5" {
		t.Errorf("largest gap %+v: want the host span ProfilerStep#5", r.Idle.Largest[0])
	}
	if r.Kernels.Launch.Linked != 8 || r.Kernels.Launch.Latency.P50 != 8 {
		t.Errorf("launch %+v", r.Kernels.Launch)
	}
	if l := r.Kernels.Launch.TinyLaunchers; len(l) != 1 || l[0].Name != "aten::mm" || l[0].Kernels != 8 {
		t.Errorf("tiny launchers %+v", l)
	}
}

func TestWarmupRule(t *testing.T) {
	steps := func(walls ...int64) []Step {
		var s []Step
		for _, w := range walls {
			s = append(s, Step{WallNS: w})
		}
		return s
	}
	for _, c := range []struct {
		walls []int64
		said  int
		want  int
	}{
		{[]int64{10, 10}, 0, 0},                         // too few to tell
		{[]int64{10, 10, 10}, 0, 1},                     // the first always
		{[]int64{90, 80, 10, 10, 10, 10, 10, 10}, 0, 2}, // both slow, a quarter
		{[]int64{90, 80, 70, 10, 10, 10, 10, 10}, 0, 2}, // no more than a quarter
		{[]int64{90, 10, 80, 10, 10, 10, 10, 10}, 0, 1}, // leading slow steps only
		{[]int64{90, 80, 10}, 3, 3},
		{[]int64{90, 80, 10}, 5, 3},
		{[]int64{90, 80, 10}, -1, 0},
	} {
		if got := warmup(steps(c.walls...), c.said); got != c.want {
			t.Errorf("warmup(%v, %d) = %d, want %d", c.walls, c.said, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		kind event.ActivityKind
		name string
		args []event.Arg
		want category
	}{
		{event.ActivityKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", nil, catComm},
		{event.ActivityKernel, "all-reduce-start", nil, catComm},
		{event.ActivityKernel, "broadcast_fusion", nil, catCompute},
		{event.ActivityKernel, "_Z5saxpyifPKfPf", nil, catCompute},
		{event.ActivityMemset, "Memset", nil, catMemory},
		{event.ActivitySync, "cudaStreamSynchronize", nil, catNone},
		{event.ActivityAlloc, "alloc", nil, catNone},
		{event.ActivityUnknown, "Memcpy HtoD (Pinned -> Device)", nil, catMemory},
		{event.ActivityUnknown, "MemcpyD2H", nil, catMemory},
		{event.ActivityUnknown, "x", []event.Arg{{Key: event.ArgCopyKind, Kind: event.ArgString, Str: "DtoD"}}, catMemory},
		{event.ActivityUnknown, "StreamSynchronize", []event.Arg{{Key: "sync_type", Kind: event.ArgString, Str: "StreamSynchronize"}}, catNone},
		{event.ActivityUnknown, "MemoryAlloc", nil, catNone},
		{event.ActivityUnknown, "Stream Sync", nil, catNone},
		{event.ActivityUnknown, "Event Sync", []event.Arg{{Key: "wait_on_cuda_event_record_corr_id", Kind: event.ArgInt, Num: 7}}, catNone},
		{event.ActivityUnknown, "x", []event.Arg{{Key: "wait_on_stream", Kind: event.ArgInt, Num: 7}}, catNone},
		{event.ActivityUnknown, "ncclKernel_AllGather_RING_LL_Sum_int8_t", nil, catComm},
		{event.ActivityUnknown, "saxpy(int, float, float const*, float*)", nil, catCompute},
	} {
		got := classify(c.kind, c.name, c.args)
		if got == catComm && !event.IsCollective(c.name) {
			got = catCompute
		}
		if got != c.want {
			t.Errorf("classify(%v, %q) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}

func TestOccupancyOf(t *testing.T) {
	str := func(k, v string) event.Arg { return event.Arg{Key: k, Kind: event.ArgString, Str: v} }
	for _, c := range []struct {
		args []event.Arg
		want float64
		ok   bool
	}{
		{[]event.Arg{occupancy(62.5)}, 62.5, true},
		{[]event.Arg{{Key: "est. achieved occupancy %", Kind: event.ArgInt, Num: 24}}, 24, true},
		{[]event.Arg{str("kernel_details", "regs:32 static_shared:0 grid:4096,1,1 block:256,1,1 occ_pct:87.5")}, 87.5, true},
		{[]event.Arg{str("kernel_details", "regs:32 occ_pct:100 grid:1,1,1")}, 100, true},
		{[]event.Arg{str("kernel_details", "regs:32")}, 0, false},
		{[]event.Arg{str("kernel_details", "occ_pct:x")}, 0, false},
		{nil, 0, false},
	} {
		if got, ok := occupancyOf(c.args); got != c.want || ok != c.ok {
			t.Errorf("occupancyOf(%v) = %v, %v; want %v, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}

func TestEmpty(t *testing.T) {
	r := NewAnalyzer(event.Meta{}, Options{}).Report()
	if r.Steps != nil || len(r.Devices) != 0 || r.Kernels.Count != 0 || r.WallNS != 0 || r.Idle.Largest == nil {
		t.Errorf("empty trace: %+v", r)
	}
}
