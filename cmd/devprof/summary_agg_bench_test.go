package main

import (
	"fmt"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/heappeak"
)

// BenchmarkSummaryAggregator streams n spans into summary's aggregator
// as the Perfetto reader does (each span added at its begin, Unfinished,
// and ended at its end): training steps of 98 ops with a leaf each, on
// four threads. The aggregator's own memory must not grow with n: its
// peak-heap-MiB is the same at 1M and 10M spans.
func BenchmarkSummaryAggregator(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("spans=%dM", n/1_000_000), func(b *testing.B) {
			names := []string{"forward", "backward", "optimizer", "matmul", "relu", "loss", "load", "sync"}
			var peak float64
			for b.Loop() {
				stop := heappeak.Start()
				a := newSummaryAggregator(false)
				feedSteps(a, n, names)
				d, err := a.result()
				peak = max(peak, float64(stop()))
				if err != nil {
					b.Fatal(err)
				}
				if d.table.Spans != n {
					b.Fatalf("%d spans, want %d", d.table.Spans, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
		})
	}
}

// feedSteps writes n spans into sink: steps of 98 ops, each with a leaf,
// round-robin on four threads, in time order.
func feedSteps(sink event.Sink, n int, names []string) {
	var tracks [4]uint32
	for i := range tracks {
		tracks[i] = sink.Track(event.Track{Kind: event.TrackHostThread, ID: int64(i + 1)})
	}
	t := int64(0)
	for i, step := 0, 0; i < n; step++ {
		tr := tracks[step%len(tracks)]
		t += 10
		st := sink.Span(event.Span{Name: "train", Start: t, Track: tr, Unfinished: true, Step: true, StepNum: int64(step)})
		i++
		for j := 0; j < 98 && i < n; j++ {
			t += 5
			op := sink.Span(event.Span{Name: names[j%8], Start: t, Parent: st, Track: tr, Unfinished: true})
			i++
			if i < n {
				leaf := sink.Span(event.Span{Name: names[(j+3)%8], Start: t + 1, Parent: op, Track: tr, Unfinished: true})
				sink.EndSpan(leaf, t+3)
				i++
			}
			t += 5
			sink.EndSpan(op, t)
		}
		t++
		sink.EndSpan(st, t)
	}
	sink.Meta().Stop.Mono = t + 1
}
