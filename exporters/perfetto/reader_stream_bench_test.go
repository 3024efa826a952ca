package perfetto

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
)

// discard is a sink that keeps nothing: what Decode costs by itself.
type discard struct {
	meta   event.Meta
	tracks uint32
	ids    uint64
	procs  int
	events int
}

func (d *discard) Track(event.Track) uint32    { d.tracks++; return d.tracks }
func (d *discard) SetTrackName(uint32, string) {}
func (d *discard) Process(event.Process) int   { d.procs++; return d.procs }
func (d *discard) ProcessTrack(int) uint32     { d.tracks++; return d.tracks }
func (d *discard) Span(event.Span) uint64      { d.events++; d.ids++; return d.ids }
func (d *discard) EndSpan(uint64, int64)       {}
func (d *discard) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	d.events++
	d.ids++
	return d.ids
}
func (d *discard) Instant(string, int64, uint32, uint64, []event.Arg)  { d.events++ }
func (d *discard) Counter(string, string, int64, float64)              { d.events++ }
func (d *discard) TrackCounter(uint32, string, string, int64, float64) { d.events++ }
func (d *discard) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	d.events++
	d.ids++
	return d.ids
}
func (d *discard) Meta() *event.Meta { return &d.meta }
func (d *discard) Reset()            { *d = discard{} }

// peakHeap samples the heap's live objects while it runs, for a
// peak-heap metric.
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
			if v := s[0].Value.Uint64(); v > p.peak.Load() {
				p.peak.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) done() float64 {
	close(p.stop)
	p.wg.Wait()
	return float64(p.peak.Load()) / (1 << 20)
}

// sessionTrace writes, once per size, a trace shaped like a training
// session's (steps of nested spans with an argument, on one thread) to
// a file, as devprof's writer writes it (compressed packets).
func sessionTrace(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "devprof-perfetto-bench-"+strconv.Itoa(n)+".pftrace")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	data := jaxLikeTrace(b, n)
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkDecode reads a 1 M and a 10 M-event trace from a file with
// Decode: into a sink that keeps nothing (the reader's own cost, and its
// own memory, which must not grow with the trace), and into a Builder
// (devprof convert). events/s counts the events the sink received.
//
// DEVPROF_BENCH_PFTRACE names a trace file of your own to read as well
// (sub-benchmark "file").
func BenchmarkDecode(b *testing.B) {
	sizes := []string{"1M", "10M"}
	if os.Getenv("DEVPROF_BENCH_PFTRACE") != "" {
		sizes = append(sizes, "file")
	}
	for _, size := range sizes {
		for _, into := range []string{"discard", "builder"} {
			b.Run(size+"/"+into, func(b *testing.B) {
				var path string
				switch size {
				case "1M":
					path = sessionTrace(b, 1_000_000)
				case "10M":
					path = sessionTrace(b, 10_000_000)
				default:
					path = os.Getenv("DEVPROF_BENCH_PFTRACE")
				}
				st, _ := os.Stat(path)
				b.SetBytes(st.Size())
				b.ReportAllocs()
				events, peak := 0, 0.0
				for b.Loop() {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					ph := startPeakHeap()
					if into == "discard" {
						d := &discard{}
						err = Decode(f, d)
						events = d.events
					} else {
						bl := event.NewBuilder(event.Meta{})
						err = Decode(f, bl)
						s := bl.Snapshot()
						events = len(s.Events)
					}
					peak = max(peak, ph.done())
					f.Close()
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(peak, "peak-heap-MiB")
			})
		}
	}
}
