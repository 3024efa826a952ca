package recorder

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/devprof/devprof/event"
)

// SpanContext is the context.Context handed to the code inside a span: it
// answers Value with itself for devprof's key and delegates everything else
// to the context the span was begun in. Each record slot has one beside it
// in its chunk, so beginning a span allocates nothing, and the records
// themselves stay free of pointers.
type SpanContext struct {
	parent context.Context
	rec    *Record
	// id and lane are the span's, kept here so that a child begun in this
	// context never reads the record: a flight recorder may have recycled
	// it for a later event.
	id    uint64
	lane  uint32
	epoch uint32 // session that owns rec; parents from other sessions are ignored
}

// spanKey is the context key under which a SpanContext finds itself.
type spanKey struct{}

// Deadline implements context.Context.
func (c *SpanContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done implements context.Context.
func (c *SpanContext) Done() <-chan struct{} { return c.parent.Done() }

// Err implements context.Context.
func (c *SpanContext) Err() error { return c.parent.Err() }

// Value implements context.Context.
func (c *SpanContext) Value(key any) any {
	if _, ok := key.(spanKey); ok {
		return c
	}
	return c.parent.Value(key)
}

// String names the context in panics and logs, as the standard contexts do.
func (c *SpanContext) String() string { return "devprof span context" }

// ID returns the span's record ID.
func (c *SpanContext) ID() uint64 { return c.id }

// EndToken returns what Record.EndSpan takes to end this span: its ID,
// with the top bit set in a flight recorder.
func (c *SpanContext) EndToken() uint64 { return c.id | uint64(c.epoch>>31)<<63 }

// Lane returns the span's lane.
func (c *SpanContext) Lane() uint32 { return c.lane }

// live reports whether the span's record still holds the span (a flight
// recorder recycles records) and the span has not ended. In a flight
// recorder the record may be recycled right after the check, so what the
// caller reads of it next (SpanPath's name, StepOf's step) can, rarely,
// be the next event's: a memory label, not a trace record, is what may
// come out wrong.
func (c *SpanContext) live() bool {
	return atomic.LoadUint64(&c.rec.ID) == c.id && !c.rec.Ended()
}

// SpanFromContext returns the innermost span recorded in ctx, or nil.
func SpanFromContext(ctx context.Context) *SpanContext {
	if ctx == nil {
		return nil
	}
	if c, ok := ctx.(*SpanContext); ok { // the common case: no wrapping in between
		return c
	}
	c, _ := ctx.Value(spanKey{}).(*SpanContext)
	return c
}

// SpanPath appends to dst the names of the spans of this session that ctx
// carries and that have not ended, outermost first. It is for callers off the
// hot path (a memory tracker labelling an allocation): each name is looked up
// in the string table under its lock.
func (b *Buffer) SpanPath(ctx context.Context, dst []string) []string {
	n := len(dst)
	for c := SpanFromContext(ctx); c != nil && c.epoch == b.epoch; c = SpanFromContext(c.parent) {
		if !c.live() {
			continue
		}
		dst = append(dst, b.strs.name(c.rec.NameID))
	}
	slices.Reverse(dst[n:])
	return dst
}

// StepOf returns the number of the innermost step (a span with
// event.FlagStep, its number in ID2) of this session that ctx carries and
// that has not ended, and false when there is none. Like SpanPath it is for
// a memory tracker labelling an allocation; it takes no lock.
func (b *Buffer) StepOf(ctx context.Context) (int64, bool) {
	for c := SpanFromContext(ctx); c != nil && c.epoch == b.epoch; c = SpanFromContext(c.parent) {
		if c.live() && c.rec.Flags&event.FlagStep != 0 {
			return c.rec.ID2, true
		}
	}
	return 0, false
}
