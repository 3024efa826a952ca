package perfetto

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/heappeak"
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

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// gpuTrace writes, once per size, a trace shaped like a GPU session's
// (nested host spans begun unfinished, launch calls with flows, kernels
// with grid, block and registers as arguments, counter samples:
// eventtest.GPUShaped) to a file, as devprof's writer
// writes it.
func gpuTrace(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "devprof-perfetto-gpu-bench-"+strconv.Itoa(n)+".pftrace")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.WriteFile(path+".tmp", gpuLikeTrace(b, n), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path
}

// gpuLikeTrace encodes eventtest.GPUShaped's trace of n events as devprof's writer
// writes it.
func gpuLikeTrace(tb testing.TB, n int) []byte {
	tb.Helper()
	bl := event.NewBuilder(event.Meta{})
	eventtest.GPUShaped(bl, n)
	var buf bytes.Buffer
	if err := Write(&buf, bl.Snapshot(), WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecode reads traces of 1 M and 10 M events from a file with
// Decode: into a sink that keeps nothing (the reader's own cost, and its
// own memory, which must not grow with the trace), and into a Builder
// (devprof convert). The session traces (1M, 10M) are a devprof
// session's host spans; the gpu ones are GPU-shaped (eventtest.GPUShaped):
// arguments on most events, flows, counters. events/s counts the events
// the sink received.
//
// DEVPROF_BENCH_PFTRACE names a trace file of your own to read as well
// (sub-benchmark "file").
func BenchmarkDecode(b *testing.B) {
	sizes := []string{"1M", "10M", "gpu-1M", "gpu-10M"}
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
				case "gpu-1M":
					path = gpuTrace(b, 1_000_000)
				case "gpu-10M":
					path = gpuTrace(b, 10_000_000)
				default:
					path = os.Getenv("DEVPROF_BENCH_PFTRACE")
				}
				st, _ := os.Stat(path)
				b.SetBytes(st.Size())
				b.ReportAllocs()
				events, peak := 0, 0.0
				cpu0 := cpuTime()
				for b.Loop() {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC() // the last run's garbage is not this one's peak
					stop := heappeak.Start()
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
					peak = max(peak, heappeak.MiB(stop()))
					f.Close()
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				// On a shared machine the wall clock also counts other
				// programs' time; the process's CPU time does not.
				b.ReportMetric(float64(events)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
				b.ReportMetric(peak, "peak-heap-MiB")
			})
		}
	}
}

// BenchmarkDecodeRealGPU reads the traces devprof recorded on real GPUs
// (testdata/real-gpu) from memory with Decode, into a sink that keeps
// nothing and into a Builder. They are small (hundreds to a few thousand
// events): their figures include what a read costs once, whatever the
// trace's length.
func BenchmarkDecodeRealGPU(b *testing.B) {
	paths, _ := filepath.Glob("../../testdata/real-gpu/*.pftrace")
	more, _ := filepath.Glob("../../testdata/real-gpu/*/*.pftrace")
	paths = append(paths, more...)
	if len(paths) == 0 {
		b.Fatal("no traces in ../../testdata/real-gpu")
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(path, "../../testdata/real-gpu/"), ".pftrace")
		for _, into := range []string{"discard", "builder"} {
			b.Run(name+"/"+into, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				events := 0
				for b.Loop() {
					var err error
					if into == "discard" {
						d := &discard{}
						err = Decode(bytes.NewReader(data), d)
						events = d.events
					} else {
						bl := event.NewBuilder(event.Meta{})
						err = Decode(bytes.NewReader(data), bl)
						events = len(bl.Snapshot().Events)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(events), "events")
			})
		}
	}
}
