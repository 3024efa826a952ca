package gotrace_test

import (
	"bytes"
	"io"
	"os"
	"runtime"
	rtrace "runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/exporters/perfetto"
)

// bigTrace records a busy program's execution trace until it holds at
// least mb MiB.
func bigTrace(tb testing.TB, mb int) []byte {
	w := &lockedBuffer{}
	if err := rtrace.Start(w); err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		ch := make(chan []byte)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(ch)
			for {
				select {
				case <-stop:
					return
				case ch <- make([]byte, 4096):
				}
			}
		}()
		go func() {
			defer wg.Done()
			for b := range ch {
				runtime.KeepAlive(b)
			}
		}()
	}
	for {
		time.Sleep(50 * time.Millisecond)
		w.mu.Lock()
		n := w.b.Len()
		w.mu.Unlock()
		if n >= mb<<20 {
			break
		}
	}
	close(stop)
	wg.Wait()
	rtrace.Stop()
	return w.b.Bytes()
}

// lockedBuffer is a buffer the tracer writes to while the benchmark reads
// its length.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// peakHeap samples the heap in use until stop is closed and returns the
// highest reading.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// BenchmarkConvert is devprof convert trace.out run.pftrace on a big Go
// execution trace (DEVPROF_GOTRACE_BENCH_MB MiB, default 32): the read
// (streamed, at most MaxEvents kept) and the Perfetto write, in trace
// bytes and events per second, with the peak heap in use. "capped" keeps
// at most 1 M events, to show the bound holds memory whatever the size.
func BenchmarkConvert(b *testing.B) {
	mb := 32
	if v, err := strconv.Atoi(os.Getenv("DEVPROF_GOTRACE_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	data := bigTrace(b, mb)
	for _, c := range []struct {
		name string
		max  int64
	}{{"default", 0}, {"capped", 1_000_000}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var peak uint64
			var events atomic.Int64
			kept := 0
			for b.Loop() {
				runtime.GC()
				stop := make(chan struct{})
				p := peakHeap(stop)
				s, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{MaxEvents: c.max, Progress: func(n int64) { events.Store(n) }})
				if err != nil {
					b.Fatal(err)
				}
				if err := perfetto.Write(io.Discard, s, perfetto.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
				close(stop)
				peak = max(peak, <-p)
				kept = len(s.Events)
			}
			b.ReportMetric(float64(events.Load())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(len(data))/(1<<20), "trace-MiB")
			b.ReportMetric(float64(kept), "kept-events")
		})
	}
}
