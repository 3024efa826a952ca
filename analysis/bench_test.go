package analysis

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/heappeak"
)

// syntheticTrace writes n events as a reader of a GPU trace would: a
// host thread whose steps (one per 1000 launches) hold launch calls,
// each linked by a flow to a kernel (a copy every eighth) on one of four
// streams of two devices, every 25th kernel a collective; the launches
// and kernels interleaved in time, each track in start order.
func syntheticTrace(sink event.Sink, n int) {
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	var streams [4]uint32
	for i := range streams {
		streams[i] = sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: i / 2, ID: int64(7 + i), Name: fmt.Sprintf("Stream #%d", 7+i)})
	}
	names := []string{"gemm_fusion", "loop_reduce_fusion", "softmax", "layer_norm", "elementwise_add"}
	args := make([]event.Arg, 1)
	var ends [4]int64
	t := int64(0)
	step := uint64(0)
	for i := 0; i < n/2; i++ {
		if i%1000 == 0 {
			if step != 0 {
				sink.EndSpan(step, t)
			}
			step = sink.Span(event.Span{Name: "train", Start: t, Track: host, Step: true, StepNum: int64(i / 1000), Unfinished: true})
			t++
		}
		args[0] = event.Arg{Kind: event.ArgFlow, Num: uint64(i + 1)}
		sink.Span(event.Span{Name: "cudaLaunchKernel", Start: t, End: t + 3000, Track: host, Args: args})
		s := i % 4
		start := max(ends[s]+int64(i%7)*500, t+5000)
		dur := int64(2000 + (i%13)*1500)
		switch {
		case i%8 == 0:
			sink.ActivityOf(event.ActivityMemcpy, streams[s], "Memcpy HtoD", start, start+dur, args)
		case i%25 == 0:
			sink.ActivityOf(event.ActivityKernel, streams[s], "ncclDevKernel_AllReduce_Sum_f32_RING_LL", start, start+dur, args)
		default:
			sink.ActivityOf(event.ActivityKernel, streams[s], names[i%len(names)], start, start+dur, args)
		}
		ends[s] = start + dur
		t += 3500
	}
	if step != 0 {
		sink.EndSpan(step, t)
	}
}

// BenchmarkAnalyze streams a synthetic GPU trace into an Analyzer and
// makes its report, as devprof analyze does behind a reader: events/s
// and the peak heap (the Analyzer's state; no reader's buffers). The
// 10 M-event run: go test -bench 'Analyze/events=10M' -benchmem -cpu 1.
func BenchmarkAnalyze(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%s", count(n)), func(b *testing.B) {
			var peak float64
			for b.Loop() {
				runtime.GC()
				stop := heappeak.Start()
				a := NewAnalyzer(event.Meta{}, Options{})
				syntheticTrace(a, n)
				if r := a.Report(); r.Kernels.Count == 0 || r.Steps == nil {
					b.Fatal("no kernels or steps")
				}
				peak = max(peak, heappeak.MiB(stop()))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(peak, "peak-heap-MiB")
		})
	}
}

// BenchmarkAnalyzeSnapshot is the same trace built into the model first
// (event.Builder) and analyzed from the Snapshot: what streaming saves.
func BenchmarkAnalyzeSnapshot(b *testing.B) {
	for _, n := range []int{1_000_000} {
		b.Run(fmt.Sprintf("events=%s", count(n)), func(b *testing.B) {
			var peak float64
			for b.Loop() {
				runtime.GC()
				stop := heappeak.Start()
				bl := event.NewBuilder(event.Meta{})
				syntheticTrace(bl, n)
				if r := Analyze(bl.Snapshot(), Options{}); r.Kernels.Count == 0 {
					b.Fatal("no kernels")
				}
				peak = max(peak, heappeak.MiB(stop()))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(peak, "peak-heap-MiB")
		})
	}
}

func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// TestSyntheticTraceStreams: the benchmark's trace, streamed and through
// the model, gives one report (so the benchmark measures the real thing).
func TestSyntheticTraceStreams(t *testing.T) {
	a := NewAnalyzer(event.Meta{}, Options{})
	syntheticTrace(a, 20_000)
	r := a.Report()
	b := event.NewBuilder(event.Meta{})
	syntheticTrace(b, 20_000)
	w := Analyze(b.Snapshot(), Options{})
	if !reflect.DeepEqual(r, w) {
		t.Errorf("streamed and through the model differ:\n%+v\n%+v", r, w)
	}
	if r.Kernels.Count != 10_000-10_000/8 || len(r.Devices) != 2 || len(r.Steps.All) != 10 || r.Kernels.Launch.Linked != r.Kernels.Count {
		t.Errorf("report: %d kernels, %d devices, %d steps, %d linked", r.Kernels.Count, len(r.Devices), len(r.Steps.All), r.Kernels.Launch.Linked)
	}
}
