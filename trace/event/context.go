package event

import (
	"context"
	"time"
	"unsafe"
)

type ctxParent = context.Context

// spanKey is the context key under which a span's Record finds itself.
type spanKey struct{}

// A span's Record is the context.Context handed to the code inside the span:
// it answers Value(spanKey{}) with itself and delegates everything else to
// the context the span was begun in. Returning the Record as the new context
// is what lets annotate.Begin carry the parent without allocating.

// Deadline implements context.Context.
func (r *Record) Deadline() (time.Time, bool) { return r.parent.Deadline() }

// Done implements context.Context.
func (r *Record) Done() <-chan struct{} { return r.parent.Done() }

// Err implements context.Context.
func (r *Record) Err() error { return r.parent.Err() }

// Value implements context.Context.
func (r *Record) Value(key any) any {
	if _, ok := key.(spanKey); ok {
		return r
	}
	return r.parent.Value(key)
}

// String names the context in panics and logs, as the standard contexts do.
func (r *Record) String() string { return "devprof span " + r.Name }

// AsContext returns the span record as a context derived from parent. The
// parent must be non-nil.
func (r *Record) AsContext(parent context.Context) context.Context {
	r.parent = parent
	return r
}

// SpanFromContext returns the innermost span recorded in ctx, or nil.
func SpanFromContext(ctx context.Context) *Record {
	if ctx == nil {
		return nil
	}
	if r, ok := ctx.(*Record); ok { // the common case: no wrapping in between
		return r
	}
	r, _ := ctx.Value(spanKey{}).(*Record)
	return r
}

// next returns the record that follows r in its chunk. Only valid for
// records reserved together by one Buffer.Reserve call.
func (r *Record) next() *Record {
	return (*Record)(unsafe.Add(unsafe.Pointer(r), unsafe.Sizeof(Record{})))
}
