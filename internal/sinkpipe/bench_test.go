package sinkpipe

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/heappeak"
)

// counting is a sink that keeps nothing but counts of its calls and of
// the events among them: what the Pipe costs a reader, with no sink's
// work behind it, and what a reader costs alone.
type counting struct {
	ids, calls, events uint64
	meta               event.Meta
}

func (c *counting) id() uint64                  { c.calls++; c.ids++; return c.ids }
func (c *counting) event() uint64               { c.events++; return c.id() }
func (c *counting) Track(event.Track) uint32    { return uint32(c.id()) }
func (c *counting) SetTrackName(uint32, string) { c.calls++ }
func (c *counting) Process(event.Process) int   { return int(c.id()) }
func (c *counting) ProcessTrack(int) uint32     { return uint32(c.id()) }
func (c *counting) Span(event.Span) uint64      { return c.event() }
func (c *counting) EndSpan(uint64, int64)       { c.calls++ }
func (c *counting) Instant(string, int64, uint32, uint64, []event.Arg) {
	c.event()
}
func (c *counting) Counter(string, string, int64, float64)              { c.event() }
func (c *counting) TrackCounter(uint32, string, string, int64, float64) { c.event() }
func (c *counting) Meta() *event.Meta                                   { return &c.meta }
func (c *counting) Reset()                                              { *c = counting{} }
func (c *counting) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	return c.event()
}
func (c *counting) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	return c.event()
}

// cpuTime is the CPU time the process has taken so far, user and system:
// on a machine others share, what a run costs is clearer in CPU time
// than in wall time, and a Pipe trades some CPU for wall time.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkPipe is the GPU-shaped trace of 1 M events written straight
// into a sink that only counts (into=direct) and through a Pipe in front
// of it (into=pipe): the Pipe's own cost, in calls/s; with -cpu 2 the
// consumer runs beside the writer.
func BenchmarkPipe(b *testing.B) {
	const n = 1_000_000
	for _, into := range []string{"direct", "pipe"} {
		b.Run("into="+into, func(b *testing.B) {
			var calls uint64
			cpu := cpuTime(b)
			for b.Loop() {
				c := &counting{}
				if into == "pipe" {
					p := New(c)
					gpuTrace(p, n)
					if err := p.Close(); err != nil {
						b.Fatal(err)
					}
				} else {
					gpuTrace(c, n)
				}
				calls = c.calls
			}
			b.ReportMetric(float64(calls)*float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(calls)/float64(b.N), "cpu-ns/call")
		})
	}
}

// BenchmarkAnalyzeFile reads the GPU-shaped trace from a file and
// analyzes it, as devprof analyze does: the Analyzer on the reader's
// goroutine (direct) or behind a Pipe (pipe), and the reader alone into
// a sink that only counts (nothing: the rate a pipe can come close to
// while reading). Besides events/s and the peak heap of the reader, the
// Pipe and the Analyzer together, it reports the seconds of each phase:
// stream-s, reading until the sink has every event (the Pipe closed),
// which the Pipe overlaps, and finish-s, Analyzer.Finish, which comes
// after, and the CPU seconds the process took (cpu-s/op, the runtime's
// own threads included). The 10 M-event figures: go test -bench
// 'AnalyzeFile/.*/events=10M' -benchmem -cpu 2 ./internal/sinkpipe.
// Making the files (once per run) is not measured.
func BenchmarkAnalyzeFile(b *testing.B) {
	for _, f := range []*formats.Format{formats.Perfetto, formats.XPlane} {
		for _, n := range []int{1_000_000, 10_000_000} {
			for _, into := range []string{"nothing", "direct", "pipe"} {
				b.Run(fmt.Sprintf("%s/events=%dM/%s", f.Name, n/1_000_000, into), func(b *testing.B) {
					path := benchFile(b, f, n)
					var peak float64
					var events int64
					var streaming, finishing time.Duration
					cpu := cpuTime(b)
					for b.Loop() {
						runtime.GC()
						stop := heappeak.Start()
						start := time.Now()
						if into == "nothing" {
							c := &counting{}
							if err := f.StreamFile(path, c, formats.ReadOptions{}); err != nil {
								b.Fatal(err)
							}
							events = int64(c.events)
							streaming += time.Since(start)
							peak = max(peak, heappeak.MiB(stop()))
							continue
						}
						a := analysis.NewAnalyzer(event.Meta{}, analysis.Options{})
						var sink event.Sink = a
						var p *Pipe
						if into == "pipe" {
							p = New(a)
							sink = p
						}
						err := f.StreamFile(path, sink, formats.ReadOptions{})
						if p != nil {
							if cerr := p.Close(); err == nil {
								err = cerr
							}
						}
						if err != nil {
							b.Fatal(err)
						}
						streamed := time.Now()
						streaming += streamed.Sub(start)
						events = a.Events()
						if r, err := a.Finish(); err != nil || r.Kernels.Count == 0 {
							b.Fatalf("%v, or no kernels", err)
						}
						finishing += time.Since(streamed)
						peak = max(peak, heappeak.MiB(stop()))
					}
					b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
					b.ReportMetric(streaming.Seconds()/float64(b.N), "stream-s/op")
					b.ReportMetric(finishing.Seconds()/float64(b.N), "finish-s/op")
					b.ReportMetric(peak, "peak-heap-MiB")
					b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
				})
			}
		}
	}
}

// benchFiles holds the files benchFile made, made once per run of the
// package's benchmarks (TestMain removes them) unless
// DEVPROF_SINKPIPE_BENCH_DIR names a directory to keep them in (to time
// devprof analyze on the same files).
var benchFiles struct {
	dir   string
	keep  bool
	paths map[string]string
}

// benchFile returns a file holding gpuTrace(n) in format f.
func benchFile(b *testing.B, f *formats.Format, n int) string {
	key := fmt.Sprintf("gpu-%dM", n/1_000_000)
	if p, ok := benchFiles.paths[f.Name+key]; ok {
		return p
	}
	if benchFiles.paths == nil {
		benchFiles.paths = map[string]string{}
		benchFiles.dir = os.Getenv("DEVPROF_SINKPIPE_BENCH_DIR")
		benchFiles.keep = benchFiles.dir != ""
		if !benchFiles.keep {
			dir, err := os.MkdirTemp("", "devprof-sinkpipe-bench-*")
			if err != nil {
				b.Fatal(err)
			}
			benchFiles.dir = dir
		}
	}
	path := filepath.Join(benchFiles.dir, key+f.Extensions[0])
	if _, err := os.Stat(path); err != nil || !benchFiles.keep {
		bl := event.NewBuilder(event.Meta{Host: "bench"})
		gpuTrace(bl, n)
		out, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(out, 1<<20)
		if err := f.Write(w, bl.Snapshot(), false); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
	benchFiles.paths[f.Name+key] = path
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFiles.dir != "" && !benchFiles.keep {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}
