package annotate

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// Level is the importance of an annotation. An annotation of level L is
// recorded when L is at most the session's host tracer level, as in
// TensorFlow's and JAX's TraceMe.
type Level uint8

const (
	// LevelCritical is for user annotations; Begin, Step and Instant use it.
	LevelCritical Level = 1
	// LevelInfo is for expensive operations; recorded at the default host
	// tracer level (2).
	LevelInfo Level = 2
	// LevelVerbose is for cheap, frequent operations; recorded only at host
	// tracer level 3.
	LevelVerbose Level = 3
)

// Arg is a typed argument of a span or instant. Build one with Int, Int64,
// Uint64, Float64, Bool, String, Duration or Flow; the trace records it as
// the event.Arg that EventArg returns. It is 32 bytes, small enough for the
// compiler to build in registers and store straight into Begin's argument
// array (the model's event.Arg, 48 bytes, costs the caller a copy and a
// store-forwarding stall: several nanoseconds a span). The zero Arg has
// kind 0, as the zero event.Arg does.
type Arg struct{ a recorder.Arg }

// Int returns an integer argument.
func Int(key string, v int) Arg { return Arg{recorder.NumArg(key, event.ArgInt, uint64(int64(v)))} }

// Int64 returns an integer argument.
func Int64(key string, v int64) Arg { return Arg{recorder.NumArg(key, event.ArgInt, uint64(v))} }

// Uint64 returns an unsigned integer argument.
func Uint64(key string, v uint64) Arg { return Arg{recorder.NumArg(key, event.ArgUint, v)} }

// Float64 returns a floating-point argument.
func Float64(key string, v float64) Arg {
	return Arg{recorder.NumArg(key, event.ArgFloat, math.Float64bits(v))}
}

// Bool returns a boolean argument.
func Bool(key string, v bool) Arg {
	n := uint64(0)
	if v {
		n = 1
	}
	return Arg{recorder.NumArg(key, event.ArgBool, n)}
}

// String returns a string argument.
func String(key, v string) Arg { return Arg{recorder.StringArg(key, v)} }

// Duration returns a duration argument.
func Duration(key string, v time.Duration) Arg {
	return Arg{recorder.NumArg(key, event.ArgDuration, uint64(v))}
}

// Flow returns an argument that links the event to every other event that
// carries the same flow id (from NewFlowID): the outputs draw an arrow from
// the earliest to the next, as for a request handed between goroutines.
func Flow(id uint64) Arg { return Arg{recorder.NumArg("", event.ArgFlow, id)} }

// Key returns the argument's key.
func (a Arg) Key() string { return a.a.Key }

// EventArg returns the argument as the event model holds it: what a
// snapshot's Args returns for it.
func (a Arg) EventArg() event.Arg { return a.a.Event() }

// packed returns args as the recorder takes them: Arg is a struct of one
// recorder.Arg, so the two slices share their layout.
func packed(args []Arg) []recorder.Arg {
	return unsafe.Slice((*recorder.Arg)(unsafe.Pointer(unsafe.SliceData(args))), len(args))
}

var flowIDs atomic.Uint64

// NewFlowID returns a process-unique flow id for Flow.
func NewFlowID() uint64 { return flowIDs.Add(1) }

// Span is an open span. The zero Span (returned when nothing is recorded)
// is valid and its End does nothing.
type Span struct {
	rec *recorder.Record
	tok uint64 // what ends it (SpanContext.EndToken): a flight recorder may recycle rec for a later event
}

// End ends the span. Calling End more than once keeps the first end.
func (s Span) End() {
	// Inlined into the caller: a span of a stopped session costs a nil
	// check, a recorded one one call.
	if s.rec != nil {
		s.rec.EndNow(s.tok)
	}
}

// Recording reports whether the span is being recorded.
func (s Span) Recording() bool { return s.rec != nil }

// Enabled reports whether a trace session is recording host annotations.
func Enabled() bool { return recorder.On() }

// Begin starts a span named name as a child of the span in ctx (or as the
// root of a new lane when ctx holds none) and returns a context that carries
// it. End the span with End, usually deferred.
func Begin(ctx context.Context, name string, args ...Arg) (c context.Context, s Span) {
	// Written so that Begin inlines: with tracing off it is one atomic load
	// and a branch in the caller.
	c = ctx
	if recorder.On() {
		c, s = beginCritical(ctx, name, args)
	}
	return
}

// BeginInt is Begin for a span with one integer argument, key = v: the
// common case (a batch size, a step, an id) without the variadic call:
// key and v travel in registers, with no argument array to build on the
// caller's stack and read back. It records exactly what
// Begin(ctx, name, Int64(key, v)) records.
func BeginInt(ctx context.Context, name, key string, v int64) (c context.Context, s Span) {
	c = ctx
	if recorder.On() {
		c, s = beginInt(ctx, name, key, v)
	}
	return
}

// BeginLevel is Begin for an annotation of the given level.
func BeginLevel(ctx context.Context, level Level, name string, args ...Arg) (c context.Context, s Span) {
	c = ctx
	if recorder.On() {
		c, s = begin(ctx, name, args, uint8(level))
	}
	return
}

// Step starts the span of step n of a loop named name ("train"): the marker
// that lets TensorBoard's overview and devprof's summary show step time.
// Like JAX's StepTraceAnnotation it is recorded as a root-level marker with
// the step number as an argument.
func Step(ctx context.Context, name string, n int64, args ...Arg) (context.Context, Span) {
	b := recorder.Active()
	if b == nil {
		return ctx, Span{}
	}
	if n < 0 {
		n = 0
	}
	return start(b, ctx, name, args, uint8(LevelCritical), n)
}

// noStep tells start that the span is not a step.
const noStep = -1

// beginCritical is the out-of-line part of Begin (one argument fewer than
// begin keeps Begin within the inlining budget).
//
//go:noinline
func beginCritical(ctx context.Context, name string, args []Arg) (context.Context, Span) {
	// start, written out for the common case: one call fewer per span.
	b := recorder.Active()
	if b == nil || uint8(LevelCritical) > b.Level() { // stopped since On was checked, or host tracer off
		return ctx, Span{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var c *recorder.SpanContext
	var r *recorder.Record
	var tok uint64
	if len(args) == 1 && args[0].a.IsInt() {
		// The commonest span of all, one integer argument, takes
		// BeginInt's path: its fields are read once, here, and handed on
		// in registers instead of through the argument loop.
		a := &args[0].a
		c, r, tok = b.StartSpanInt(ctx, name, a.Key, int64(a.Num), uint8(LevelCritical), false)
	} else {
		c, r, tok = b.StartSpan(ctx, name, packed(args), uint8(LevelCritical), 0, 0, false)
	}
	if r == nil {
		return ctx, Span{}
	}
	return c, Span{rec: r, tok: tok}
}

// BeginLeaf starts a span like Begin, as a child of the span in ctx, but
// returns no context: nothing can be begun inside it. It is the form for
// the innermost spans of hot code (a kernel launch, a batch's copy), as
// runtime/trace's StartRegion is: with no context to fill for the code
// inside, it is the cheapest span there is.
func BeginLeaf(ctx context.Context, name string, args ...Arg) (s Span) {
	if recorder.On() {
		s = beginLeaf(ctx, name, args)
	}
	return
}

// beginLeaf is the out-of-line part of BeginLeaf: beginCritical without
// the context.
//
//go:noinline
func beginLeaf(ctx context.Context, name string, args []Arg) Span {
	b := recorder.Active()
	if b == nil || uint8(LevelCritical) > b.Level() {
		return Span{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// beginCritical's choice, written out again: shared, it would not
	// inline (cost 199 of 80), and a call is about a nanosecond of a span.
	var r *recorder.Record
	var tok uint64
	if len(args) == 1 && args[0].a.IsInt() {
		a := &args[0].a
		_, r, tok = b.StartSpanInt(ctx, name, a.Key, int64(a.Num), uint8(LevelCritical), true)
	} else {
		_, r, tok = b.StartSpan(ctx, name, packed(args), uint8(LevelCritical), 0, 0, true)
	}
	return Span{rec: r, tok: tok}
}

// beginInt is the out-of-line part of BeginInt: beginCritical with the
// argument handed on in registers.
//
//go:noinline
func beginInt(ctx context.Context, name, key string, v int64) (context.Context, Span) {
	b := recorder.Active()
	if b == nil || uint8(LevelCritical) > b.Level() {
		return ctx, Span{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c, r, tok := b.StartSpanInt(ctx, name, key, v, uint8(LevelCritical), false)
	if r == nil {
		return ctx, Span{}
	}
	return c, Span{rec: r, tok: tok}
}

// begin is the out-of-line part of BeginLevel.
//
//go:noinline
func begin(ctx context.Context, name string, args []Arg, level uint8) (context.Context, Span) {
	b := recorder.Active()
	if b == nil { // stopped since On was checked
		return ctx, Span{}
	}
	return start(b, ctx, name, args, level, noStep)
}

// start records the start of a span; step >= 0 makes it a step marker.
func start(b *recorder.Buffer, ctx context.Context, name string, args []Arg, level uint8, step int64) (context.Context, Span) {
	if level > b.Level() {
		return ctx, Span{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	flags := uint8(0)
	if step >= 0 {
		flags = event.FlagStep
	} else {
		step = 0
	}
	c, r, tok := b.StartSpan(ctx, name, packed(args), level, flags, step, false)
	if r == nil {
		return ctx, Span{}
	}
	return c, Span{rec: r, tok: tok}
}

// Run runs fn inside a span named name, ending the span when fn returns or
// panics. It is the function wrapper of the package.
func Run(ctx context.Context, name string, fn func(ctx context.Context), args ...Arg) {
	ctx, span := Begin(ctx, name, args...)
	defer span.End()
	fn(ctx)
}

// Instant records a point in time named name on the lane of the span in
// ctx, or on the process when ctx holds no span.
func Instant(ctx context.Context, name string, args ...Arg) {
	if recorder.On() {
		instant(ctx, name, args)
	}
}

//go:noinline
func instant(ctx context.Context, name string, args []Arg) {
	b := recorder.Active()
	if b == nil || uint8(LevelCritical) > b.Level() {
		return
	}
	e := recorder.Entry{Kind: event.KindInstant, Level: uint8(LevelCritical)}
	if p := recorder.SpanFromContext(ctx); p != nil && b.Owns(p) {
		e.Parent, e.Lane = p.ID(), p.Lane()
	}
	e.Start = recorder.Now()
	e.End = e.Start
	b.PutArgs(&e, name, packed(args))
}

// Counter is a named numeric series, such as a loss or a queue length,
// shown as a counter track. The zero Unit means a plain number; otherwise a
// short unit such as "bytes", "%" or "W".
type Counter struct {
	Name string
	Unit string
}

// Set records the counter's value now.
func (c Counter) Set(v float64) {
	if recorder.On() {
		c.set(v)
	}
}

//go:noinline
func (c Counter) set(v float64) {
	b := recorder.Active()
	if b == nil || uint8(LevelCritical) > b.Level() { // host tracer off
		return
	}
	t := recorder.Now()
	b.Put(&recorder.Entry{Kind: event.KindCounter, Start: t, End: t}, c.Name, []event.Arg{{Key: c.Unit, Kind: event.ArgFloat, Num: math.Float64bits(v)}})
}

// DeviceSpan is an open span begun with Device. The zero DeviceSpan is
// valid and its End does nothing.
type DeviceSpan struct {
	span  Span
	corr  recorder.DeviceCorrelator
	owned bool // the OS thread was locked by Device
}

// Device begins a span, like Begin, whose GPU work is attributed to it:
// kernels and copies launched inside it carry its name (as the tf_op
// argument TensorFlow uses) in the outputs. It locks the calling goroutine
// to its OS thread until End, because CUPTI tracks the attribution per
// thread, and pushes the span's id as CUPTI external correlation. With no
// device tracer running it is just Begin. End the span on the same
// goroutine, usually deferred.
func Device(ctx context.Context, name string, args ...Arg) (context.Context, DeviceSpan) {
	c, s := Begin(ctx, name, args...)
	if !s.Recording() {
		return c, DeviceSpan{}
	}
	d := DeviceSpan{span: s}
	b := recorder.Active()
	if b == nil {
		return c, d
	}
	corr := b.Correlator()
	if corr == nil {
		return c, d
	}
	runtime.LockOSThread()
	if err := corr.Push(c.(*recorder.SpanContext).ID(), c.(*recorder.SpanContext).Lane(), name); err != nil {
		runtime.UnlockOSThread()
		return c, d
	}
	d.corr, d.owned = corr, true
	return c, d
}

// End ends the span and stops attributing GPU work to it.
func (d DeviceSpan) End() {
	if d.corr != nil {
		d.corr.Pop()
	}
	if d.owned {
		runtime.UnlockOSThread()
	}
	d.span.End()
}

// Recording reports whether the span is being recorded.
func (d DeviceSpan) Recording() bool { return d.span.Recording() }
