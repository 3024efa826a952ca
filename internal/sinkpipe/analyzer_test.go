package sinkpipe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/gotrace"
)

// gpuTrace writes about n events as a reader of a GPU program's trace
// would: two host threads whose steps hold launch calls (an operator
// span around each, its end learned later), each launch linked by a
// flow or a correlation id to a kernel, a copy or a collective on one of
// four streams of two devices, with instants and counters between; each
// track in start order.
func gpuTrace(sink event.Sink, n int) {
	proc := sink.Process(event.Process{PID: 42, Name: "train.py", Labels: []string{"rank 0"}})
	hosts := [2]uint32{
		sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: proc}),
		sink.Track(event.Track{Kind: event.TrackHostThread, ID: 2, Name: "loader", Process: proc}),
	}
	var streams [4]uint32
	for i := range streams {
		streams[i] = sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: i / 2, ID: int64(7 + i), Name: fmt.Sprintf("Stream #%d", 7+i)})
	}
	sink.SetTrackName(hosts[1], "data loader")
	pt := sink.ProcessTrack(proc)
	kernels := []string{"gemm_fusion", "softmax", "layer_norm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "elementwise_add"}
	args := make([]event.Arg, 2)
	var ends [4]int64
	var step [2]uint64
	t := int64(0)
	for i := 0; i < n/3; i++ {
		h := i % 2
		if i%500 < 2 {
			if step[h] != 0 {
				sink.EndSpan(step[h], t)
			}
			step[h] = sink.Span(event.Span{Name: "train", Start: t, Track: hosts[h], Step: true, StepNum: int64(i / 500), Unfinished: true})
			t++
		}
		op := sink.Span(event.Span{Name: "aten::linear", Start: t, Track: hosts[h], Parent: step[h], Unfinished: true})
		args[0] = event.Arg{Key: "correlation", Kind: event.ArgInt, Num: uint64(i + 1)}
		args[1] = event.Arg{Kind: event.ArgFlow, Num: uint64(i + 1)}
		if i%3 == 0 {
			args[1] = event.Arg{Key: "stream", Kind: event.ArgInt, Num: uint64(i % 4)}
		}
		sink.Span(event.Span{Name: "cudaLaunchKernel", Start: t + 1, End: t + 2500, Track: hosts[h], Parent: op, Args: args})
		sink.EndSpan(op, t+2600)
		s := i % 4
		start := max(ends[s]+int64(i%7)*800, t+4000)
		dur := int64(1500 + (i%11)*1700)
		switch {
		case i%9 == 0:
			sink.ActivityOf(event.ActivityMemcpy, streams[s], "Memcpy HtoD", start, start+dur, args)
		default:
			sink.ActivityOf(event.ActivityKernel, streams[s], kernels[i%len(kernels)], start, start+dur, args)
		}
		ends[s] = start + dur
		switch i % 50 {
		case 0:
			sink.Instant("checkpoint", t, hosts[h], step[h], nil)
		case 1:
			sink.Counter("loss", "", t, float64(i))
		case 2:
			sink.TrackCounter(pt, "memory", "B", t, float64(i*4096))
		}
		t += 3000
	}
	for _, id := range step {
		if id != 0 {
			sink.EndSpan(id, t)
		}
	}
	m := sink.Meta()
	m.Stop.Mono = t
	m.Warnings = append(m.Warnings, event.Warning{Text: "a test's warning"})
	m.AddDrops("cupti", 3)
}

// sequentialCheck passes every call on to an Analyzer and checks the
// guarantee that lets a pipe in front of it keep one run of span IDs:
// its tracks, processes and spans (Span, TrackSlice, ActivityOf) are
// numbered from 1 up, one at a time, and a process's track is
// registered once.
type sequentialCheck struct {
	*analysis.Analyzer
	t                    *testing.T
	tracks, procs, spans uint64
	procTracks           map[int]uint32
}

func (c *sequentialCheck) want(kind string, got uint64, count *uint64) {
	*count++
	if got != *count {
		c.t.Fatalf("the Analyzer's %s ID is %d, want %d (the next in sequence)", kind, got, *count)
	}
}

func (c *sequentialCheck) Track(t event.Track) uint32 {
	id := c.Analyzer.Track(t)
	c.want("track", uint64(id), &c.tracks)
	return id
}

func (c *sequentialCheck) Process(p event.Process) int {
	n := c.Analyzer.Process(p)
	c.want("process", uint64(n), &c.procs)
	return n
}

func (c *sequentialCheck) ProcessTrack(process int) uint32 {
	id := c.Analyzer.ProcessTrack(process)
	if known, ok := c.procTracks[process]; ok {
		if id != known {
			c.t.Fatalf("process %d's track is %d, then %d", process, known, id)
		}
		return id
	}
	c.want("process track", uint64(id), &c.tracks)
	c.procTracks[process] = id
	return id
}

func (c *sequentialCheck) Span(s event.Span) uint64 {
	id := c.Analyzer.Span(s)
	c.want("span", id, &c.spans)
	return id
}

func (c *sequentialCheck) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := c.Analyzer.TrackSlice(track, name, start, end, args)
	c.want("track slice", id, &c.spans)
	return id
}

func (c *sequentialCheck) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := c.Analyzer.ActivityOf(kind, track, name, start, end, args)
	c.want("activity", id, &c.spans)
	return id
}

func (c *sequentialCheck) Reset() {
	c.Analyzer.Reset()
	c.tracks, c.procs, c.spans = 0, 0, 0
	clear(c.procTracks)
}

// resets counts the Resets a sink is given.
type resets struct {
	event.Sink
	n int
}

func (r *resets) Reset() { r.n++; r.Sink.Reset() }

// analyzed is what analyzing a trace came to: the report as devprof
// analyze -json prints it, the metadata, the events.
type analyzed struct {
	report string
	meta   event.Meta
	events int64
	resets int
	err    string // the reader's error
}

// analyze streams a trace into an Analyzer, directly or through a Pipe
// (with the batch size given), with a small memory budget so that the
// analysis spills too.
func analyze(t *testing.T, piped bool, ops int, read func(event.Sink) error) analyzed {
	t.Helper()
	a := analysis.NewAnalyzer(event.Meta{Host: "test"}, analysis.Options{MemoryBudget: 64 << 10, TempDir: t.TempDir()})
	check := &sequentialCheck{Analyzer: a, t: t, procTracks: map[int]uint32{}}
	r := &resets{Sink: check}
	var sink event.Sink = r
	var p *Pipe
	if piped {
		p = newPipe(r, ops, depth)
		sink = p
	}
	err := read(sink)
	if p != nil {
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		if len(p.ids.runs) > 1 {
			t.Errorf("the Pipe kept %d runs of span IDs for the Analyzer's", len(p.ids.runs))
		}
	}
	if err != nil {
		a.Reset()
		return analyzed{err: err.Error()}
	}
	rep, err := a.Finish()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return analyzed{report: string(js), meta: *a.Meta(), events: a.Events(), resets: r.n}
}

// samePiped analyzes a trace directly and through Pipes of a few batch
// sizes and wants the same analysis of each.
func samePiped(t *testing.T, name string, read func(event.Sink) error) analyzed {
	t.Helper()
	want := analyze(t, false, 0, read)
	for _, ops := range []int{1, 7, batchOps} {
		got := analyze(t, true, ops, read)
		if got.report != want.report {
			t.Errorf("%s, batches of %d: piped report\n%s\nwant\n%s", name, ops, got.report, want.report)
		}
		if !reflect.DeepEqual(got.meta, want.meta) || got.events != want.events || got.resets != want.resets || got.err != want.err {
			t.Errorf("%s, batches of %d: piped %d events, %d resets, error %q, metadata %+v; want %d, %d, %q, %+v",
				name, ops, got.events, got.resets, got.err, got.meta, want.events, want.resets, want.err, want.meta)
		}
	}
	return want
}

// TestAnalyzerThroughPipe: every file in testdata (the real GPU
// fixtures, the goldens) and in the shared fixtures that a format claims,
// read by its reader, gives the Analyzer's report, metadata and event
// count through the Pipe that it gives directly, or the same error (a
// JSON file that is not a trace); the Analyzer's IDs are sequential on
// all of them.
func TestAnalyzerThroughPipe(t *testing.T) {
	var paths []string
	for _, pattern := range []string{"../../testdata/*", "../../testdata/*/*", "../../testdata/real-gpu/h200/*", "../../../shared/fixtures/real-gpu/*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	var analyzedFiles, failed int
	for _, path := range paths {
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			continue
		}
		f, err := formats.Detect(path)
		if err != nil {
			continue // not a trace (a manifest, a memory profile)
		}
		t.Run(strings.TrimPrefix(path, "../"), func(t *testing.T) {
			got := samePiped(t, path, func(sink event.Sink) error { return f.StreamFile(path, sink, formats.ReadOptions{}) })
			switch {
			case got.err != "":
				failed++
			case got.events > 0:
				analyzedFiles++
			}
		})
	}
	if analyzedFiles < 15 || failed > analyzedFiles/2 {
		t.Errorf("analyzed %d trace files (%d failed to read) of %d paths: where are the fixtures?", analyzedFiles, failed, len(paths))
	}
}

// TestAnalyzerThroughPipeSynthetic: the GPU-shaped trace streamed into
// the Analyzer as a reader would, and written in each format and read
// back, gives one analysis through the Pipe and directly.
func TestAnalyzerThroughPipeSynthetic(t *testing.T) {
	got := samePiped(t, "streamed", func(sink event.Sink) error { gpuTrace(sink, 30_000); return nil })
	if !strings.Contains(got.report, `"kernels":{"count":8888,`) || got.events < 30_000 {
		t.Fatalf("the synthetic trace analyzes to %d events: %s", got.events, got.report)
	}
	b := event.NewBuilder(event.Meta{Host: "test"})
	gpuTrace(b, 30_000)
	snap := b.Snapshot()
	for _, f := range []*formats.Format{formats.Perfetto, formats.XPlane, formats.Chrome} {
		var buf bytes.Buffer
		if err := f.Write(&buf, snap, false); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "synthetic"+f.Extensions[0])
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := samePiped(t, f.Name, func(sink event.Sink) error { return f.StreamFile(path, sink, formats.ReadOptions{}) }); got.err != "" || got.events < 30_000 {
			t.Errorf("%s: %d events, error %q", f.Name, got.events, got.err)
		}
	}
}

// TestAnalyzerThroughPipeReset: a Chrome file whose events are out of
// order is streamed, then read again after the reader Resets its sink:
// through the Pipe as directly.
func TestAnalyzerThroughPipeReset(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	for i := range 200 {
		// The host thread's spans go back in time halfway through.
		ts := i * 100
		if i >= 100 {
			ts = (i - 100) * 100
		}
		fmt.Fprintf(&b, `{"ph":"X","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":5,"args":{"correlation":%d}},`, ts, i+1)
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":%d,"dur":40,"args":{"correlation":%d,"device":0,"stream":7}},`, 100000+i*60, i+1)
	}
	b.WriteString(`{"ph":"i","name":"end","pid":1,"tid":1,"ts":0,"s":"t"}]}`)
	path := filepath.Join(t.TempDir(), "backwards.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := samePiped(t, "backwards", func(sink event.Sink) error { return formats.Chrome.StreamFile(path, sink, formats.ReadOptions{}) })
	if got.err != "" || got.resets != 1 || got.events < 400 {
		t.Errorf("the reader reset its sink %d times (want 1) and gave %d events", got.resets, got.events)
	}
}

// TestAnalyzerThroughPipeGoTrace: a Go execution trace (this test's own
// goroutines and regions) gives one analysis through the Pipe and
// directly.
func TestAnalyzerThroughPipeGoTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use (go test -trace?): %v", err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, task := rtrace.NewTask(context.Background(), "step")
			rtrace.WithRegion(ctx, fmt.Sprint("work ", i%5), func() {
				s := 0
				for j := range 10000 {
					s += j
				}
				_ = s
			})
			task.End()
		}()
	}
	wg.Wait()
	rtrace.Stop()
	data := buf.Bytes()
	got := samePiped(t, "go trace", func(sink event.Sink) error {
		return gotrace.Decode(bytes.NewReader(data), sink, gotrace.Options{Name: "test.trace"})
	})
	if got.err != "" || got.events == 0 {
		t.Errorf("the Go trace gave %d events, error %q", got.events, got.err)
	}
}

// TestPipeReaderFails: a reader that fails part way (a truncated file)
// returns its error, and Close ends the consumer with nothing left
// running.
func TestPipeReaderFails(t *testing.T) {
	b := event.NewBuilder(event.Meta{})
	gpuTrace(b, 20_000)
	var buf bytes.Buffer
	if err := formats.Perfetto.Write(&buf, b.Snapshot(), false); err != nil {
		t.Fatal(err)
	}
	a := analysis.NewAnalyzer(event.Meta{}, analysis.Options{})
	p := newPipe(a, 64, 2)
	err := formats.Perfetto.Stream(bytes.NewReader(buf.Bytes()[:buf.Len()*2/3]), "cut.pftrace", p)
	if err == nil {
		t.Fatal("a truncated file read without an error")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close after the reader's error: %v", err)
	}
	select {
	case <-p.done:
	default:
		t.Fatal("the consumer's goroutine still runs after Close")
	}
	a.Reset()
}

// TestBuilderThroughPipe: the model an event.Builder builds through the
// Pipe is the one it builds directly, value for value. The Builder gives
// instants and counter samples IDs too, so its span IDs keep one run per
// stretch between them, no more.
func TestBuilderThroughPipe(t *testing.T) {
	direct := event.NewBuilder(event.Meta{Host: "b"})
	gpuTrace(direct, 20_000)
	piped := event.NewBuilder(event.Meta{Host: "b"})
	p := newPipe(piped, 100, 3)
	gpuTrace(p, 20_000)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want, got := direct.Snapshot(), piped.Snapshot()
	points := 0
	for _, r := range want.Events {
		if r.Kind() == event.KindInstant || r.Kind() == event.KindCounter {
			points++
		}
	}
	if len(p.ids.runs) > points+1 || points == 0 {
		t.Errorf("%d runs of span IDs for the Builder's, with %d instants and samples between its spans", len(p.ids.runs), points)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the snapshots differ: %d events, %d tracks; want %d, %d", len(got.Events), len(got.Tracks), len(want.Events), len(want.Tracks))
	}
	if len(want.Events) < 20_000 {
		t.Errorf("the trace has %d events", len(want.Events))
	}
}
