package event

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBuilder builds a 1 M-event snapshot as a trace reader does:
// nested spans on a thread track begun unfinished and ended later, with
// an int argument each and names that repeat (devprof convert's model,
// without the decoding). events/s is what the Builder alone can take; the
// peak heap is the model's own size.
func BenchmarkBuilder(b *testing.B) {
	const n = 1_000_000
	names := make([]string, 8)
	for i := range names {
		names[i] = "op" + strconv.Itoa(i) // made at run time, as a reader makes them
	}
	b.ReportAllocs()
	peak := 0.0
	for b.Loop() {
		p := startPeakHeap()
		bld := NewBuilder(Meta{})
		tr := bld.Track(Track{Kind: TrackHostThread, ID: 1, Name: "t"})
		args := make([]Arg, 1)
		for step := range int64(n / 10) {
			t := step * 1000
			args[0] = Arg{Key: "step", Kind: ArgInt, Num: uint64(step)}
			root := bld.Span(Span{Name: "train", Start: t, Track: tr, Args: args, Step: true, StepNum: step, Unfinished: true})
			for j := range 9 {
				s := t + int64(j)*100
				args[0] = Arg{Key: "layer", Kind: ArgInt, Num: uint64(j)}
				id := bld.Span(Span{Name: names[j%len(names)], Start: s, Parent: root, Track: tr, Args: args, Unfinished: true})
				bld.EndSpan(id, s+90)
			}
			bld.EndSpan(root, t+990)
		}
		s := bld.Snapshot()
		peak = max(peak, p.done())
		if len(s.Events) != n {
			b.Fatalf("%d events, want %d", len(s.Events), n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(peak, "peak-heap-MiB")
}

// peakHeap samples the heap's live objects while a benchmark runs.
type peakHeap struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak atomic.Uint64
}

func startPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.peak.Store(max(p.peak.Load(), s[0].Value.Uint64()))
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// done stops the sampling and returns the peak in MiB.
func (p *peakHeap) done() float64 {
	close(p.stop)
	p.wg.Wait()
	return float64(p.peak.Load()) / (1 << 20)
}
