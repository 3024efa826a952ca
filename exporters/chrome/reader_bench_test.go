package chrome

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
)

// sessionTrace records n events as a training loop under a devprof session
// does (a step span holding 98 spans with an int argument, each with a
// leaf span inside: the shape of the lead's 1,000,003-event trace) and
// writes them as devprof writes a session's Chrome trace, gzip or plain,
// into a file under dir. The snapshot is dropped before returning, so that
// a benchmark's peak heap is the reader's.
func sessionTrace(tb testing.TB, dir string, n int, gzipped bool) (path string, events int) {
	tb.Helper()
	s := record(tb, int64(n)+100, func(ctx context.Context) {
		names := []string{"forward", "backward", "optimizer", "matmul", "relu", "loss", "load", "sync"}
		for i, step := 0, int64(0); i < n; step++ {
			sctx, st := annotate.Step(ctx, "train", step)
			i++
			for j := 0; j < 98 && i < n; j++ {
				c, sp := annotate.BeginInt(sctx, names[j%8], "i", int64(j))
				i++
				if i < n {
					annotate.BeginLeaf(c, names[(j+3)%8]).End()
					i++
				}
				sp.End()
			}
			st.End()
		}
	})
	path = filepath.Join(dir, fmt.Sprintf("session-%d.trace.json", n))
	write := WritePlain
	if gzipped {
		path += ".gz"
		write = Write
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := write(f, s); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, len(s.Events)
}

// peakHeap samples the heap's objects while a benchmark runs, the figure
// that says whether a reader holds the whole trace. It reports the most
// seen above the heap at the start (after a GC): what the reader added,
// not what the recording that made the input left pooled.
type peakHeap struct {
	stop       chan struct{}
	done       sync.WaitGroup
	base, peak uint64
}

func startPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		p.peak = max(p.peak, sample[0].Value.Uint64())
	}
	read()
	p.base = p.peak
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				read()
				return
			case <-tick.C:
				read()
			}
		}
	}()
	return p
}

// report stops sampling and reports the peak in MiB.
func (p *peakHeap) report(b *testing.B) {
	close(p.stop)
	p.done.Wait()
	b.ReportMetric(float64(p.peak-p.base)/(1<<20), "peak-heap-MiB")
}

// discard is a Sink that keeps nothing, as a consumer that only counts
// would: reading into it shows what the reader itself holds.
type discard struct {
	meta   event.Meta
	nextID uint64
	n      int
}

func (d *discard) id() uint64                             { d.nextID++; return d.nextID }
func (d *discard) Track(event.Track) uint32               { return uint32(d.id()) }
func (d *discard) SetTrackName(uint32, string)            {}
func (d *discard) Process(event.Process) int              { return int(d.id()) }
func (d *discard) ProcessTrack(p int) uint32              { return uint32(d.id()) }
func (d *discard) Span(event.Span) uint64                 { d.n++; return d.id() }
func (d *discard) EndSpan(uint64, int64)                  {}
func (d *discard) Meta() *event.Meta                      { return &d.meta }
func (d *discard) Reset()                                 { *d = discard{} }
func (d *discard) Counter(string, string, int64, float64) { d.n++ }
func (d *discard) Instant(string, int64, uint32, uint64, []event.Arg) {
	d.n++
}
func (d *discard) TrackCounter(uint32, string, string, int64, float64) { d.n++ }
func (d *discard) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	d.n++
	return d.id()
}
func (d *discard) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	d.n++
	return d.id()
}

// BenchmarkRead reads a devprof session's Chrome trace of 1 M and 10 M
// events (8 span names, steps), plain and gzip, from a file: Read (into
// the event model, as convert does) and Decode into a sink that keeps
// nothing (what summary's own memory rests on). events/s counts the
// records read per second of wall time, events/cpu-s per second of the
// process's CPU time (the figure that holds on a shared machine);
// peak-heap-MiB is the most heap seen above what was live at the start.
// Run with -cpu 1 for the one-core figure; the 10 M cases only run when
// named (-bench 'Read/10M').
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir() // the sub-benchmarks' own are removed when each ends
	for _, n := range []int{1_000_000, 10_000_000} {
		for _, gzipped := range []bool{false, true} {
			form := "plain"
			if gzipped {
				form = "gzip"
			}
			name := fmt.Sprintf("%dM/%s", n/1_000_000, form)
			var path string
			var events int
			setup := func(b *testing.B) {
				if path == "" {
					path, events = sessionTrace(b, dir, n, gzipped)
				}
			}
			b.Run(name+"/model", func(b *testing.B) {
				setup(b)
				benchRead(b, path, events, func(r io.Reader) error {
					_, err := Read(r)
					return err
				})
			})
			b.Run(name+"/discard", func(b *testing.B) {
				setup(b)
				benchRead(b, path, events, func(r io.Reader) error {
					return Decode(r, &discard{})
				})
			})
		}
	}
	b.Run("bigTrace-100k", func(b *testing.B) {
		data := bigTrace(100000)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchRead(b *testing.B, path string, events int, read func(io.Reader) error) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	peak := startPeakHeap()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		err = read(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu = processCPU() - cpu
	peak.report(b)
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		// The events read per second of the process's CPU time: with -cpu 1
		// the one-core rate, whatever else the machine is running.
		b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}
