//go:build amd64 && !race

package recorder

import "unsafe"

// On amd64 every store is a release store (total store order), and the
// compiler keeps a goroutine's stores to memory in program order, so the
// hot path publishes with plain MOVs instead of the XCHG that
// sync/atomic's Store compiles to (a locked instruction, ~4.5 ns here).
// Under the race detector, and on other architectures, publish_atomic.go
// uses sync/atomic instead: the detector then sees the same
// happens-before edges that the hardware gives here.

// publish marks a fully written record committed.
func (r *Record) publish() { *(*uint32)(unsafe.Pointer(&r.state)) = 1 }

// storeNext and loadNext access the bump index of a chunk. Only the P
// that owns the chunk's shard writes it, inside its pinned section.
func (c *chunk) storeNext(v int64) { c.next = v }
func (c *chunk) loadNext() int64   { return c.next }

// unpublish clears a record's state and end, the two words a writer does
// not rewrite before it publishes, for a flight recorder that recycles
// its chunk (ring.overwrite, under the ring's lock, a thousand records at
// a time: as two XCHGs each they were ~9 ns of every span of a flight
// recorder on the 2-core VM). A late End's compare-and-swap on the end
// word may race with the store: either order leaves a word no End of the
// old span matches again, and the next writer rewrites it.
func (r *Record) unpublish() {
	*(*uint32)(unsafe.Pointer(&r.state)) = 0
	*(*int64)(unsafe.Pointer(&r.end)) = 0
}

// setID writes a record's ID. Span.End reads it (loadID) to tell its own
// record from a later one in a recycled flight-recorder chunk.
func (r *Record) setID(id uint64) { r.ID = id }

// setOpen marks r an open span with ID id (see EndSpan).
func (r *Record) setOpen(id uint64) { *(*int64)(unsafe.Pointer(&r.end)) = -int64(id) }

// endPlain stores end over the end word when it holds open: a load and a
// plain store in a pinned section (see EndSpan), instead of a locked
// compare-and-swap.
func (r *Record) endPlain(open, end int64) {
	procPin()
	if w := (*int64)(unsafe.Pointer(&r.end)); *w == open {
		*w = end
	}
	procUnpin()
}

// EndNow is EndSpan at the current time: the whole of a span's End
// behind one call, with the clock read and endPlain written out.
func (r *Record) EndNow(tok uint64) {
	var t int64
	if useTSC {
		t = rdtsc()
	} else {
		t = nanotime()
	}
	if tok&ringToken != 0 {
		r.end.CompareAndSwap(-int64(tok&^ringToken), t+1)
		return
	}
	procPin()
	if w := (*int64)(unsafe.Pointer(&r.end)); *w == -int64(tok) {
		*w = t + 1
	}
	procUnpin()
}

// storeCtxNext and loadCtxNext access the shard's context index, which
// only the P that owns the shard touches, inside its pinned section.
func (s *shard) storeCtxNext(v int64) { s.ctxNext = v }
func (s *shard) loadCtxNext() int64   { return s.ctxNext }
