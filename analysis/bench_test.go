package analysis

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
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
// and the peak heap (the Analyzer's state; no reader's buffers), which
// the memory budget bounds whatever the length. The 10 M-event run: go
// test -bench 'Analyze/events=10M' -benchmem -cpu 1.
func BenchmarkAnalyze(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 10_000_000, 30_000_000} {
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

// BenchmarkAnalyzeFile is BenchmarkAnalyze from files, as devprof
// analyze reads them: the synthetic trace written as XSpace with its
// device planes before the host's (as JAX and TensorFlow write them:
// every kernel comes before its launch call) and as Perfetto, streamed
// by its reader into an Analyzer (into=analysis), or into a sink that
// keeps nothing (into=nothing: what the reader alone takes). The peak
// heap is the reader's and the sink's together; making the files is not
// measured.
func BenchmarkAnalyzeFile(b *testing.B) {
	for _, f := range []*formats.Format{formats.XPlane, formats.Perfetto} {
		for _, n := range []int{1_000_000, 10_000_000} {
			for _, into := range []string{"analysis", "nothing"} {
				b.Run(fmt.Sprintf("%s/events=%s/into=%s", f.Name, count(n), into), func(b *testing.B) {
					path := syntheticFile(b, f, n)
					var peak float64
					var events int64
					for b.Loop() {
						runtime.GC()
						stop := heappeak.Start()
						var sink event.Sink = &discard{}
						if into == "analysis" {
							sink = NewAnalyzer(event.Meta{}, Options{})
						}
						if err := f.StreamFile(path, sink, formats.ReadOptions{}); err != nil {
							b.Fatal(err)
						}
						switch s := sink.(type) {
						case *Analyzer:
							events = s.Events()
							if r, err := s.Finish(); err != nil || r.Kernels.Count == 0 {
								b.Fatalf("%v, or no kernels", err)
							}
						case *discard:
							events = s.events
						}
						peak = max(peak, heappeak.MiB(stop()))
					}
					b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
					b.ReportMetric(peak, "peak-heap-MiB")
				})
			}
		}
	}
}

// discard is a sink that keeps nothing but a count of events.
type discard struct {
	ids, events int64
	meta        event.Meta
}

func (d *discard) id() uint64                                          { d.ids++; return uint64(d.ids) }
func (d *discard) Track(event.Track) uint32                            { return uint32(d.id()) }
func (d *discard) SetTrackName(uint32, string)                         {}
func (d *discard) Process(event.Process) int                           { return int(d.id()) }
func (d *discard) ProcessTrack(int) uint32                             { return uint32(d.id()) }
func (d *discard) Span(event.Span) uint64                              { d.events++; return d.id() }
func (d *discard) EndSpan(uint64, int64)                               {}
func (d *discard) Instant(string, int64, uint32, uint64, []event.Arg)  { d.events++ }
func (d *discard) Counter(string, string, int64, float64)              { d.events++ }
func (d *discard) TrackCounter(uint32, string, string, int64, float64) { d.events++ }
func (d *discard) Meta() *event.Meta                                   { return &d.meta }
func (d *discard) Reset()                                              { *d = discard{} }
func (d *discard) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	d.events++
	return d.id()
}
func (d *discard) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	d.events++
	return d.id()
}

// benchFiles holds the files syntheticFile made, made once per run of
// the package's benchmarks (TestMain removes them).
var benchFiles struct {
	dir   string
	paths map[string]string
}

// syntheticFile returns a file holding syntheticTrace(n) in format f
// (XSpace with its device planes first).
func syntheticFile(b *testing.B, f *formats.Format, n int) string {
	key := fmt.Sprintf("%s-%d", f.Name, n)
	if p, ok := benchFiles.paths[key]; ok {
		return p
	}
	if benchFiles.dir == "" {
		dir, err := os.MkdirTemp("", "devprof-analysis-bench-*")
		if err != nil {
			b.Fatal(err)
		}
		benchFiles.dir, benchFiles.paths = dir, map[string]string{}
	}
	bl := event.NewBuilder(event.Meta{})
	syntheticTrace(bl, n)
	var buf bytes.Buffer
	if err := f.Write(&buf, bl.Snapshot(), false); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	if f == formats.XPlane {
		var err error
		if data, err = devicePlanesFirst(data); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(benchFiles.dir, key+f.Extensions[0])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	benchFiles.paths[key] = path
	return path
}

// devicePlanesFirst rewrites an XSpace so that its device planes
// ("/device:...") come before the others, as TSL's profiler writes them
// (devprof's writer puts the host's first).
func devicePlanesFirst(space []byte) ([]byte, error) {
	var device, rest []byte
	for b := space; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		field := b[:n+m]
		b = b[n+m:]
		if num == 1 && typ == protowire.BytesType {
			plane, _ := protowire.ConsumeBytes(field[n:])
			if strings.HasPrefix(planeName(plane), "/device:") {
				device = append(device, field...)
				continue
			}
		}
		rest = append(rest, field...)
	}
	return append(device, rest...), nil
}

// planeName returns an XPlane's name (field 2).
func planeName(plane []byte) string {
	for len(plane) > 0 {
		num, typ, n := protowire.ConsumeTag(plane)
		if n < 0 {
			return ""
		}
		if num == 2 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(plane[n:])
			return string(v)
		}
		m := protowire.ConsumeFieldValue(num, typ, plane[n:])
		if m < 0 {
			return ""
		}
		plane = plane[n+m:]
	}
	return ""
}

// TestDevicePlanesFirst: the XSpace the file benchmark reads has its
// device planes first and reads back as the same trace, so that the
// benchmark measures the order it claims to.
func TestDevicePlanesFirst(t *testing.T) {
	bl := event.NewBuilder(event.Meta{})
	syntheticTrace(bl, 2000)
	var buf bytes.Buffer
	if err := formats.XPlane.Write(&buf, bl.Snapshot(), false); err != nil {
		t.Fatal(err)
	}
	moved, err := devicePlanesFirst(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for b := moved; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if num == 1 {
			plane, _ := protowire.ConsumeBytes(b[n:])
			names = append(names, planeName(plane))
		}
		b = b[n+m:]
	}
	if len(names) < 3 || !strings.HasPrefix(names[0], "/device:") || !strings.HasPrefix(names[1], "/device:") || strings.HasPrefix(names[len(names)-1], "/device:") {
		t.Fatalf("planes in order: %q", names)
	}
	analyze := func(data []byte) *Report {
		a := NewAnalyzer(event.Meta{}, Options{})
		if err := formats.XPlane.Stream(bytes.NewReader(data), "x.xplane.pb", a); err != nil {
			t.Fatal(err)
		}
		return a.Report()
	}
	if got, want := analyze(moved), analyze(buf.Bytes()); !reflect.DeepEqual(got, want) {
		t.Errorf("device planes first\n got %+v\nwant %+v", got, want)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFiles.dir != "" {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}
