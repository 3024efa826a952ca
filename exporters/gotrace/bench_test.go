package gotrace_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	rtrace "runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/exporters/perfetto"
)

// bigTrace records a busy program's execution trace into a file until it
// holds at least mb MiB, and returns its path. The trace goes straight to
// disk, so that the benchmark's heap holds only what the reader keeps.
//
// With DEVPROF_GOTRACE_BENCH_FILE set, the trace is that file: recorded
// there if it does not exist, and read as it is if it does, so that runs
// (and builds) compared with each other read the same events; every
// recording differs.
func bigTrace(tb testing.TB, mb int) string {
	path := os.Getenv("DEVPROF_GOTRACE_BENCH_FILE")
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	} else {
		path = filepath.Join(tb.TempDir(), "big.trace")
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := &countingWriter{w: f}
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
				// A goroutine per message, as a server starts one per
				// request: the converter's state must not grow with them.
				done := make(chan struct{})
				go func() { close(done) }()
				<-done
			}
		}()
	}
	for w.n.Load() < int64(mb)<<20 {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	rtrace.Stop()
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// countingWriter counts the bytes the tracer wrote while the benchmark
// reads the count.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// heapObjects returns the bytes of the heap's live (and not yet swept)
// objects. runtime/metrics reads it without stopping the world, which
// runtime.ReadMemStats would do at every sample, preempting the read
// being measured.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap samples the heap's objects until stop is closed and returns
// the highest reading.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, heapObjects())
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
// execution trace (DEVPROF_GOTRACE_BENCH_MB MiB, default 32) streamed
// from a file: the read (at most MaxEvents kept) and the Perfetto write,
// in trace bytes and events per second, with the peak heap in use above
// what was in use before the read. "capped" keeps at most 1 M events:
// its peak heap stays the same whatever the trace's size, which is the
// bound (run it at two sizes to see).
func BenchmarkConvert(b *testing.B) {
	mb := 32
	if v, err := strconv.Atoi(os.Getenv("DEVPROF_GOTRACE_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	path := bigTrace(b, mb)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		max  int64
	}{{"default", 0}, {"capped", 1_000_000}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			var peak uint64
			var events atomic.Int64
			kept := 0
			for b.Loop() {
				s := convertFile(b, path, c.max, &peak, &events)
				kept = s
			}
			b.ReportMetric(float64(events.Load())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(st.Size())/(1<<20), "trace-MiB")
			b.ReportMetric(float64(kept), "kept-events")
		})
	}
}

// convertFile reads the trace at path and writes it as Perfetto,
// raising peak to the heap in use above the baseline; it returns the
// number of events kept.
func convertFile(b *testing.B, path string, maxEvents int64, peak *uint64, events *atomic.Int64) int {
	runtime.GC()
	base := heapObjects()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	p := peakHeap(stop)
	s, err := gotrace.Read(f, gotrace.Options{MaxEvents: maxEvents, Progress: func(n int64) { events.Store(n) }})
	if err != nil {
		b.Fatal(err)
	}
	if err := perfetto.Write(io.Discard, s, perfetto.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	close(stop)
	if h := <-p; h > base {
		*peak = max(*peak, h-base)
	}
	return len(s.Events)
}

// BenchmarkRead reads a big Go execution trace (DEVPROF_GOTRACE_BENCH_MB
// MiB, default 32) from a file three ways, in trace events per second
// with the peak heap in use above the baseline: "xexp" is
// golang.org/x/exp/trace alone reading every event (the rate the reader
// is held to: at least half of it, on one core: -cpu 1); "decode" is
// Decode into a sink that keeps nothing (the converter's own cost, what
// summary's streaming pays); "read" is Read into the model at the default
// bounds (what convert pays before writing). events/cpu-s divides by the
// process's CPU time instead of the wall clock: the figure to compare on
// a machine shared with other work.
func BenchmarkRead(b *testing.B) {
	mb := 32
	if v, err := strconv.Atoi(os.Getenv("DEVPROF_GOTRACE_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	path := bigTrace(b, mb)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func(r io.Reader) (events int64)
	}{
		{"xexp", func(r io.Reader) int64 {
			tr, err := xtrace.NewReader(r)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for {
				_, err := tr.ReadEvent()
				if err == io.EOF {
					return n
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		}},
		{"decode", func(r io.Reader) int64 {
			var n int64
			if err := gotrace.Decode(r, &nullSink{}, gotrace.Options{Progress: func(e int64) { n = e }}); err != nil {
				b.Fatal(err)
			}
			return n
		}},
		{"read", func(r io.Reader) int64 {
			var n int64
			if _, err := gotrace.Read(r, gotrace.Options{Progress: func(e int64) { n = e }}); err != nil {
				b.Fatal(err)
			}
			return n
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var peak uint64
			var events int64
			var cpu time.Duration
			for b.Loop() {
				runtime.GC()
				base := heapObjects()
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				p := peakHeap(stop)
				c0 := processCPU()
				events = c.read(bufio.NewReaderSize(f, 1<<16))
				cpu += processCPU() - c0
				close(stop)
				if h := <-p; h > base {
					peak = max(peak, h-base)
				}
				f.Close()
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			if cpu > 0 {
				// With -cpu 1 the process's CPU time is the read's (and
				// the collector's, and the peak-heap sampler's).
				b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}
