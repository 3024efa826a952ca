package recorder

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

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

// A span's context is the one thing of a span that may outlive the
// buffer: a program may hold it, and begin spans in it, long after the
// span ended. So contexts are never recycled, and they live apart from
// the records (which are): each shard hands them out of a block of its
// own, one per span that has a context (Begin, not BeginLeaf), so that a
// record of any other kind (an instant, a counter, a GPU activity, a leaf
// span) costs its 88 bytes and no more. A block stays alive as long as
// the program holds any context of it.

// ctxBlockLen is how many contexts a block holds (40 KiB).
const ctxBlockLen = 1024

// ctxBlock is a shard's supply of span contexts.
type ctxBlock [ctxBlockLen]SpanContext

// ctxBlocksAhead is how many blocks the prefetcher keeps ready: as many
// spans' worth as sparesAhead chunks of records, so that its wake-ups
// (one each time the queue is half empty, paid on the writer's thread:
// see handoff) come no more often than the chunk prefetcher's.
const ctxBlocksAhead = sparesAhead * chunkRecords / ctxBlockLen

// takeContext hands out the next context of the shard's block, or nil
// when the block is used up (or the shard has none yet). The caller is
// pinned on the shard's P (or holds the spill shard's lock), its only
// user, so the bump is a plain load and store.
func (s *shard) takeContext() *SpanContext {
	if k := s.ctxs.Load(); k != nil {
		if i := uint64(s.loadCtxNext()); i < ctxBlockLen { // unsigned: no second bounds check
			s.storeCtxNext(int64(i + 1))
			return &k[i]
		}
	}
	return nil
}

// refillContexts is the span path's when its shard's block of contexts
// was used up: after the span is published and the P unpinned (so that
// the fast path keeps its registers, and nothing is allocated pinned), it
// gives the shard of the P it runs on now a new block (one the prefetcher
// made, or one made here) and makes the block's first context the span's
// (id, lane and record r, begun in parent). Another goroutine on that P
// may have refilled the shard meanwhile: its block is used then.
//
//go:noinline
func (b *Buffer) refillContexts(parent context.Context, id uint64, lane uint32, r *Record) *SpanContext {
	var k *ctxBlock
	if b.ctxSpares != nil {
		k, _ = b.ctxSpares.take()
	}
	if k == nil {
		k = new(ctxBlock)
	}
	s := b.shardOf(procPin())
	c := s.takeContext()
	if c == nil {
		s.storeCtxNext(1)
		s.ctxs.Store(k)
		c = &k[0]
	}
	b.unpin(s)
	c.set(parent, id, lane, r, b.epoch)
	return c
}

// prefetchContexts prepares blocks of span contexts ahead of need on a
// goroutine of its own, until stop is closed, every page of each faulted
// in, so that a span that uses up its shard's block takes a ready one.
// It makes none until a span first asks for a block: a session of
// instants, counters, device activity and leaf spans needs none.
func (b *Buffer) prefetchContexts(stop <-chan struct{}) {
	if !b.ctxSpares.waitWanted(stop) {
		return
	}
	for b.ctxSpares.waitRoom(stop) {
		if b.full.Load() {
			return // no span will need a context: the budget is spent
		}
		k := new(ctxBlock)
		for i := 0; i < ctxBlockLen; i += int(pageContexts) {
			k[i].lane = 0
		}
		k[ctxBlockLen-1].lane = 0
		b.ctxSpares.put(k)
	}
}

// pageContexts is how many contexts a 4 KiB page holds, rounded down.
const pageContexts = 4096 / int64(unsafe.Sizeof(SpanContext{}))

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
func (c *SpanContext) EndToken() uint64 { return endToken(c.id, c.epoch) }

// endToken is the end token of span id of the buffer with epoch epoch:
// the ID, with the top bit set for a flight recorder (ringEpoch).
func endToken(id uint64, epoch uint32) uint64 { return id | uint64(epoch>>31)<<63 }

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
