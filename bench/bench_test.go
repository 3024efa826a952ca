package bench

import (
	"context"
	"io"
	"runtime"
	"runtime/metrics"
	rtrace "runtime/trace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/recorder"
	devtrace "github.com/devprof/devprof/trace"
)

// The span benchmarks record into buffers of rotateAfter+rotateMargin
// records and swap in a fresh buffer every rotateAfter spans, so that a
// benchmark of any length keeps a bounded amount of memory and never takes
// the drop path (drops are checked: they would measure the wrong path).
const (
	rotateAfter  = 1 << 20
	rotateMargin = 1 << 16
	// countBatch is how many spans a goroutine records between updates of
	// the shared count, so that counting adds no shared write per span.
	countBatch = 1024
)

// rotator owns the active buffer of a span benchmark and replaces it, in
// line and from whichever goroutine notices, once rotateAfter spans went
// into it. The swap costs a few microseconds per rotateAfter spans; while it
// runs, a concurrent Begin may see tracing off (or write into the old
// buffer, which has rotateMargin records to spare).
type rotator struct {
	mu      sync.Mutex
	buf     *recorder.Buffer
	used    atomic.Int64
	dropped int64
	buffers int
	// selfMade counts the chunks the benchmark's goroutines allocated
	// themselves (the prefetcher had none ready), over every buffer.
	selfMade int64
}

func startRotator(b *testing.B) *rotator {
	r := &rotator{buf: recorder.NewBuffer(rotateAfter+rotateMargin, 3), buffers: 1}
	if !recorder.Activate(r.buf) {
		b.Fatal("another event buffer is active")
	}
	return r
}

// add counts n spans recorded since the last call.
func (r *rotator) add(n int64) {
	if r.used.Add(n) >= rotateAfter {
		r.rotate()
	}
}

func (r *rotator) rotate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used.Load() < rotateAfter {
		return // another goroutine rotated
	}
	old := r.buf
	r.buf = recorder.NewBuffer(rotateAfter+rotateMargin, 3)
	recorder.Deactivate(old)
	if !recorder.Activate(r.buf) {
		panic("bench: another event buffer became active")
	}
	r.used.Store(0)
	r.dropped += old.Dropped()
	r.selfMade += old.SelfMadeChunks()
	r.buffers++
}

// stop deactivates the buffer and fails the benchmark if any span was
// dropped. It reports self-made-chunks/Mspan: how many full-size
// (4096-record) chunks the recording goroutines prepared themselves, per
// million spans, because the prefetcher had none ready (at most ~244,
// every chunk).
func (r *rotator) stop(b *testing.B) {
	r.mu.Lock()
	defer r.mu.Unlock()
	recorder.Deactivate(r.buf)
	if b.N > 0 {
		b.ReportMetric(float64(r.selfMade+r.buf.SelfMadeChunks())*1e6/float64(b.N), "self-made-chunks/Mspan")
	}
	if d := r.dropped + r.buf.Dropped(); d > 0 {
		b.Fatalf("%d events dropped over %d buffers: the benchmark measured the drop path", d, r.buffers)
	}
}

// cpuTimer reports the CPU time of the benchmark's own thread per op as
// cpu-ns/op (see threadCPU): start it just before the loop, call the
// result just after.
func cpuTimer(b *testing.B) func() {
	runtime.LockOSThread()
	t0 := threadCPU()
	return func() {
		if t1 := threadCPU(); t0 > 0 && b.N > 0 {
			b.ReportMetric(float64(t1-t0)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}

// BenchmarkDevprofSpanOff measures a span's Begin and End with no session
// running. It loops over b.N, not b.Loop: b.Loop keeps every call's
// results alive, storing them to the stack and loading them back each
// iteration, which on the 2-core VM is 0.75-1.3 ns for an empty body and
// took the disabled span from ~2.1 to ~4.5 ns: more than what is measured.
// (The atomic load that tracing off costs cannot be optimized away.)
func BenchmarkDevprofSpanOff(b *testing.B) {
	if recorder.On() {
		b.Fatal("tracing is on")
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, s := annotate.Begin(ctx, "span")
		s.End()
	}
}

// BenchmarkDevprofSpanOn measures a span with one int argument, Begin and
// End, while a buffer is recording.
func BenchmarkDevprofSpanOn(b *testing.B) {
	r := startRotator(b)
	defer r.stop(b)
	ctx := context.Background()
	n := int64(0)
	b.ReportAllocs()
	done := cpuTimer(b)
	for b.Loop() {
		_, s := annotate.Begin(ctx, "span", annotate.Int("batch", 32))
		s.End()
		if n++; n == countBatch {
			r.add(n)
			n = 0
		}
	}
	done()
}

// BenchmarkDevprofSpanOnInt is BenchmarkDevprofSpanOn through annotate.BeginInt,
// the one-integer-argument form whose key and value travel in registers
// instead of in a variadic array.
func BenchmarkDevprofSpanOnInt(b *testing.B) {
	r := startRotator(b)
	defer r.stop(b)
	ctx := context.Background()
	n := int64(0)
	b.ReportAllocs()
	done := cpuTimer(b)
	for b.Loop() {
		_, s := annotate.BeginInt(ctx, "span", "batch", 32)
		s.End()
		if n++; n == countBatch {
			r.add(n)
			n = 0
		}
	}
	done()
}

// BenchmarkDevprofLeafSpan is BenchmarkDevprofSpanOn through
// annotate.BeginLeaf, the span that hands out no context.
func BenchmarkDevprofLeafSpan(b *testing.B) {
	r := startRotator(b)
	defer r.stop(b)
	ctx := context.Background()
	n := int64(0)
	b.ReportAllocs()
	done := cpuTimer(b)
	for b.Loop() {
		s := annotate.BeginLeaf(ctx, "span", annotate.Int("batch", 32))
		s.End()
		if n++; n == countBatch {
			r.add(n)
			n = 0
		}
	}
	done()
}

// BenchmarkDevprofSpanOnParallel is BenchmarkDevprofSpanOn on every P at
// once; its ns/op is wall time per span with all of them running.
func BenchmarkDevprofSpanOnParallel(b *testing.B) {
	r := startRotator(b)
	defer r.stop(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		n := int64(0)
		for pb.Next() {
			_, s := annotate.Begin(ctx, "span", annotate.Int("batch", 32))
			s.End()
			if n++; n == countBatch {
				r.add(n)
				n = 0
			}
		}
	})
}

// BenchmarkDevprofSpanFlight is BenchmarkDevprofSpanOn inside a real
// flight-recorder session (trace.Options.FlightRecorder, a ring of 1 Mi
// events that the benchmark turns over many times): what keeping tracing
// always on costs a span, against the plain buffer of DevprofSpanOn in
// the same run. Its B/op is the span contexts beside each recycled chunk
// (the records themselves are reused).
func BenchmarkDevprofSpanFlight(b *testing.B) {
	s, err := devtrace.StartSession(b.TempDir(), devtrace.Options{
		DeviceTracerLevel: devtrace.Off, NoPerfetto: true, NoXPlane: true,
		FlightRecorder: &devtrace.FlightRecorderOptions{MaxEvents: 1 << 20},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	done := cpuTimer(b)
	for b.Loop() {
		_, sp := annotate.Begin(ctx, "span", annotate.Int("batch", 32))
		sp.End()
	}
	done()
	b.StopTimer()
	snap, err := s.FlightSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range snap.Meta.Drops {
		if d.Source == event.DropsRecorder && d.Events > 0 {
			b.Fatalf("%d spans dropped: the benchmark measured the drop path", d.Events)
		}
	}
	if err := s.Stop(); err != nil {
		b.Fatal(err)
	}
}

var (
	base      = time.Now()
	sinkDur   time.Duration
	sinkBytes int64
)

// BenchmarkTwoTimeSince measures two monotonic clock reads, the floor of a
// span's cost that the span targets are stated against.
func BenchmarkTwoTimeSince(b *testing.B) {
	b.ReportAllocs()
	var d time.Duration
	done := cpuTimer(b)
	for b.Loop() {
		t0 := time.Since(base)
		t1 := time.Since(base)
		d += t1 - t0
	}
	done()
	sinkDur = d
}

// BenchmarkTwoSpanClockReads measures the two reads of the clock a span
// itself makes (recorder.Now: the time-stamp counter where it is
// invariant, as on every amd64 machine measured so far): the floor under
// any span with a start and an end, against which DevprofSpanOn's own
// work is the difference.
func BenchmarkTwoSpanClockReads(b *testing.B) {
	b.ReportAllocs()
	var d int64
	done := cpuTimer(b)
	for b.Loop() {
		t0 := recorder.Now()
		t1 := recorder.Now()
		d += t1 - t0
	}
	done()
	sinkDur = time.Duration(d)
}

// BenchmarkRuntimeTraceRegion measures a runtime/trace region with the
// execution tracer on (writing to io.Discard).
func BenchmarkRuntimeTraceRegion(b *testing.B) {
	if rtrace.IsEnabled() {
		b.Fatal("the execution tracer is already on")
	}
	if err := rtrace.Start(io.Discard); err != nil {
		b.Fatal(err)
	}
	defer rtrace.Stop()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rtrace.StartRegion(ctx, "span").End()
	}
}

// discardExporter is an OpenTelemetry span exporter that drops every span.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkOTelSpan measures an OpenTelemetry SDK span with one int
// attribute: always sampled, through a batch span processor, to an exporter
// that discards.
func BenchmarkOTelSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(discardExporter{}),
	)
	defer func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	tracer := tp.Tracer("devprof/bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := tracer.Start(ctx, "span", oteltrace.WithAttributes(attribute.Int("batch", 32)))
		span.End()
	}
}

// encodeSpans is how many spans the encoding benchmarks' snapshot holds.
const encodeSpans = 1_000_000

var (
	encodeOnce sync.Once
	encodeSnap *event.Snapshot
)

// encodeSnapshot returns (built once) a snapshot of encodeSpans spans.
func encodeSnapshot() *event.Snapshot {
	encodeOnce.Do(func() { encodeSnap = buildSnapshot(encodeSpans) })
	return encodeSnap
}

// buildSnapshot builds a snapshot of n spans (n a multiple of 10) as a
// training loop records them: steps of 10 spans, a step marker enclosing 9
// sequential children, each span with one int argument.
func buildSnapshot(n int) *event.Snapshot {
	const stepNs, opNs = 10_500, 1_000
	start := recorder.ReadClocks()
	d := int64(n/10) * stepNs
	stop := event.ClockAnchor{Mono: start.Mono + d, Boot: start.Boot + d, Wall: start.Wall + d}
	bld := event.NewBuilder(event.Meta{Host: "bench", PID: 1, Program: "bench", Start: start, Stop: stop,
		HostTracerLevel: 2, MaxEvents: int64(n)})
	for step := range int64(n / 10) {
		t := start.Mono + step*stepNs
		id := bld.Span(event.Span{Name: "train", Start: t, End: t + 10*opNs, Step: true, StepNum: step,
			Args: []event.Arg{annotate.Int("batch", 32).EventArg()}})
		for j := range 9 {
			s := t + int64(j+1)*opNs
			bld.Span(event.Span{Name: "op", Start: s, End: s + opNs - 100, Parent: id,
				Args: []event.Arg{annotate.Int("layer", j).EventArg()}})
		}
	}
	return bld.Snapshot()
}

// countingWriter counts the bytes written to it and keeps none.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkPerfettoEncode measures the Perfetto writer on a snapshot of 1 M
// spans. events/s and B/event count a span's begin and end as two events.
func BenchmarkPerfettoEncode(b *testing.B) {
	s := encodeSnapshot()
	var cw countingWriter
	b.ReportAllocs()
	for b.Loop() {
		cw.n = 0
		if err := perfetto.Write(&cw, s, perfetto.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	events := float64(2 * encodeSpans) // a begin and an end per span
	b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cw.n)/events, "B/event")
	sinkBytes = cw.n
}

// BenchmarkXPlaneEncode measures the XPlane writer on the snapshot of
// BenchmarkPerfettoEncode; a span is one XEvent.
func BenchmarkXPlaneEncode(b *testing.B) {
	s := encodeSnapshot()
	var cw countingWriter
	b.ReportAllocs()
	for b.Loop() {
		cw.n = 0
		if err := xplane.Write(&cw, s); err != nil {
			b.Fatal(err)
		}
	}
	events := float64(encodeSpans) // one XEvent per span
	b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cw.n)/events, "B/event")
	sinkBytes = cw.n
}

// recordSpans records n spans in steps of 10 (a step marker and 9 children,
// each with one int argument), as a training loop does.
func recordSpans(n int) {
	ctx := context.Background()
	for i := 0; i < n; i += 10 {
		sctx, st := annotate.Step(ctx, "train", int64(i/10), annotate.Int("batch", 32))
		for j := 0; j < 9; j++ {
			_, sp := annotate.Begin(sctx, "op", annotate.Int("layer", j))
			sp.End()
		}
		st.End()
	}
}

// sessionOptions are the options of a session with room for n spans (and
// a margin) writing both formats.
func sessionOptions(n int) devtrace.Options {
	return devtrace.Options{
		// The host's spans alone: on a machine with a GPU the device
		// tracer's defaults would add NVML's samples (seen on an H100:
		// 29 beside 1 M spans) and make the counts inexact.
		DeviceTracerLevel: devtrace.Off,
		MaxEvents:         n + rotateMargin,
		AdvancedConfig:    map[string]any{"override_hostname": "bench", "program_name": "bench"},
	}
}

// startSession starts a session in a fresh directory with room for n spans.
func startSession(tb testing.TB, n int) *devtrace.Session {
	tb.Helper()
	s, err := devtrace.StartSession(tb.TempDir(), sessionOptions(n))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// checkSession fails the benchmark if the stopped session lost events or
// did not write both outputs.
func checkSession(tb testing.TB, s *devtrace.Session, n int) {
	tb.Helper()
	out := s.Outputs()
	if out.Dropped != 0 || out.Events != n {
		tb.Fatalf("session kept %d events and dropped %d, want %d and 0", out.Events, out.Dropped, n)
	}
	if out.Perfetto == "" || out.XPlane == "" {
		tb.Fatalf("outputs missing: %+v", out)
	}
}

const heapMetric = "/memory/classes/heap/objects:bytes"

// heapBytes returns the bytes of heap objects, live and not yet swept.
func heapBytes(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// heapPeak samples the heap every millisecond until stop is closed, then
// sends the largest reading.
func heapPeak(stop <-chan struct{}, peak chan<- uint64) {
	sample := []metrics.Sample{{Name: heapMetric}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	top := heapBytes(sample)
	for {
		select {
		case <-t.C:
			top = max(top, heapBytes(sample))
		case <-stop:
			peak <- max(top, heapBytes(sample))
			return
		}
	}
}

// settleHeap collects until the chunks of earlier iterations' buffers are
// freed: the recorder keeps a dropped buffer's records for reuse until two
// more collections pass them by (its finalizer runs between them), and
// heap measured with them still held would not show the new buffer's.
func settleHeap() {
	for range 4 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// stopSpans is how many spans BenchmarkStop1M buffers before Stop.
const stopSpans = 1_000_000

// BenchmarkStop1M times Stop of a session holding 1 M spans, writing both
// formats. buffer-MiB is the heap the recorded buffer holds; peak-heap-MiB
// the most the heap grew above that during Stop (heap objects, live and not
// yet collected, sampled every millisecond).
func BenchmarkStop1M(b *testing.B) {
	b.ReportAllocs()
	sample := []metrics.Sample{{Name: heapMetric}}
	var bufMiB, peakMiB float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		settleHeap()
		before := heapBytes(sample)
		s := startSession(b, stopSpans)
		recordSpans(stopSpans)
		runtime.GC()
		atStop := heapBytes(sample)
		stop, peak := make(chan struct{}), make(chan uint64, 1)
		go heapPeak(stop, peak)
		b.StartTimer()
		err := s.Stop()
		b.StopTimer()
		close(stop)
		top := <-peak
		if err != nil {
			b.Fatal(err)
		}
		checkSession(b, s, stopSpans)
		bufMiB = max(bufMiB, float64(int64(atStop)-int64(before))/(1<<20))
		peakMiB = max(peakMiB, float64(int64(top)-int64(atStop))/(1<<20))
		b.StartTimer()
	}
	b.ReportMetric(bufMiB, "buffer-MiB")
	b.ReportMetric(peakMiB, "peak-heap-MiB")
}

// sessionSpans is how many spans BenchmarkSession10M records.
const sessionSpans = 10_000_000

// BenchmarkSession10M times a whole session: start, 10 M spans recorded on
// one goroutine, and Stop writing both formats.
func BenchmarkSession10M(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		dir := b.TempDir()
		b.StartTimer()
		s, err := devtrace.StartSession(dir, sessionOptions(sessionSpans))
		if err != nil {
			b.Fatal(err)
		}
		recordSpans(sessionSpans)
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		checkSession(b, s, sessionSpans)
		b.StartTimer()
	}
	b.ReportMetric(float64(sessionSpans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// TestHelpers runs the benchmarks' helpers at a small scale, so that `go
// test` checks what the benchmarks build on: a recorded session keeps every
// span and writes both formats, and the encoders accept the built snapshot.
func TestHelpers(t *testing.T) {
	s := startSession(t, 1000)
	recordSpans(1000)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	checkSession(t, s, 1000)

	snap := buildSnapshot(1000)
	if len(snap.Events) != 1000 {
		t.Fatalf("built snapshot has %d events, want 1000", len(snap.Events))
	}
	var cw countingWriter
	if err := perfetto.Write(&cw, snap, perfetto.WriteOptions{}); err != nil || cw.n == 0 {
		t.Fatalf("perfetto.Write: %d bytes, %v", cw.n, err)
	}
	cw.n = 0
	if err := xplane.Write(&cw, snap); err != nil || cw.n == 0 {
		t.Fatalf("xplane.Write: %d bytes, %v", cw.n, err)
	}
}
