package main

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
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
				stop := sampleHeap(&peak)
				a := newSummaryAggregator(false)
				feedSteps(a, n, names)
				d, err := a.result()
				stop()
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

// sampleHeap samples the heap's live objects every millisecond into
// *peak (bytes, the highest seen) until the returned stop is called.
func sampleHeap(peak *float64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		*peak = max(*peak, float64(s[0].Value.Uint64()))
	}
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		read()
	}
}
