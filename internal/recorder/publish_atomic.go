//go:build !amd64 || race

package recorder

import (
	"sync/atomic"
	"unsafe"
)

// See publish_plain.go: this is the same protocol with sync/atomic, for
// the race detector (which must see the happens-before edges between the
// goroutines that take turns on one P) and for weaker memory models.

func (r *Record) publish() { atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.state)), 1) }

func (c *chunk) storeNext(v int64) { atomic.StoreInt64(&c.next, v) }
func (c *chunk) loadNext() int64   { return atomic.LoadInt64(&c.next) }

func (s *shard) storeCtxNext(v int64) { atomic.StoreInt64(&s.ctxNext, v) }
func (s *shard) loadCtxNext() int64   { return atomic.LoadInt64(&s.ctxNext) }

func (r *Record) unpublish() {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.state)), 0)
	r.end.Store(0)
}

func (r *Record) setID(id uint64) { atomic.StoreUint64(&r.ID, id) }

func (r *Record) setOpen(id uint64) { r.end.Store(-int64(id)) }

func (r *Record) endPlain(open, end int64) { r.end.CompareAndSwap(open, end) }

// EndNow is EndSpan at the current time (publish_plain.go).
func (r *Record) EndNow(tok uint64) { r.EndSpan(tok, Now()) }
