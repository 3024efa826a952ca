package recorder

import (
	"context"
	"github.com/devprof/devprof/event"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	_ "unsafe" // for go:linkname
)

// chunkRecords is how many records one chunk holds when the budget allows.
// Chunks are the unit a shard takes from the session budget: big enough that
// the slow path runs rarely, small enough that a mostly idle P wastes little.
const chunkRecords = 1024

type chunk struct {
	recs []Record
	next atomic.Int64 // index of the next free record; may run past len(recs)
	base uint64       // ID of recs[0] is base+1
	prev *chunk       // chunks form a list, newest first
	// shard is the index of the shard that installed the chunk: the P
	// its records were reserved on (see SpanOrigins).
	shard int32
}

// slab is a chunk while it is a shard's current chunk, with the span
// contexts handed out beside its records (ctxs[i] belongs to recs[i]). Only
// the shard points to a slab: once the shard moves on, the contexts stay
// alive only as long as the program holds them. The records, which hold no
// pointers, are never scanned by the garbage collector, and neither are
// the contexts of finished spans.
type slab struct {
	*chunk
	ctxs []SpanContext
}

// shard is a per-P allocation point. Padding keeps each shard's hot words on
// cache lines of their own (see reference/go_peers.md §1.2).
type shard struct {
	cur   atomic.Pointer[slab]
	drops atomic.Int64
	// refill serialises installing a new chunk on this shard (the slow
	// path, once per chunk), so that no chunk is ever left unreachable.
	refill sync.Mutex
	_      [128 - 24]byte
}

// Buffer is the bounded, lock-free event store of one session. Sources
// reserve records on the hot path (an atomic add on a per-P chunk); when the
// budget of MaxRecords is spent, events are dropped and counted, never
// blocking the caller.
type Buffer struct {
	epoch uint32
	level uint8 // host tracer level: annotations of level L are kept when L <= level

	_      [64]byte // keep shards[0] off the line that holds the header (nil-check probes read it)
	shards []shard

	budget   atomic.Int64 // records not yet handed to any chunk
	idBase   atomic.Uint64
	chunks   atomic.Pointer[chunk]
	overflow atomic.Int64 // drops counted by sources (Drop)
	full     atomic.Bool  // set once no room is left anywhere: later reservations fail fast

	maxRecords int64

	mu         sync.Mutex // guards tracks and correlator; not taken on the hot path
	tracks     []event.Track
	correlator DeviceCorrelator

	strs *strtab // names, argument keys and string values of the records

	spares       chan *slab    // slabs prepared by prefetch; nil for buffers without one
	stopPrefetch chan struct{} // closed by Deactivate

	// cal converts TSC ticks to monotonic ns at snapshot time; nil when
	// ticks are already nanoseconds.
	cal *calibration
}

var epochs atomic.Uint32

// NewBuffer returns a buffer that keeps at most maxRecords records and
// records host annotations up to level.
func NewBuffer(maxRecords int64, level uint8) *Buffer {
	b := newBuffer(maxRecords, level, runtime.GOMAXPROCS(0))
	if useTSC {
		b.cal = &calibration{}
		b.cal.add()
	}
	return b
}

// Calibrate pairs the tick source with the monotonic clock once more. A
// session calls it every second or so, so that conversion stays exact over
// long sessions; it is cheap (a few clock reads) and never blocks sources.
func (b *Buffer) Calibrate() {
	if b.cal != nil {
		b.cal.add()
	}
}

func newBuffer(maxRecords int64, level uint8, n int) *Buffer {
	if maxRecords < 1 {
		maxRecords = 1
	}
	b := &Buffer{
		epoch:      epochs.Add(1),
		level:      level,
		shards:     make([]shard, shardCount(n)),
		maxRecords: maxRecords,
		strs:       newStrtab(DefaultMaxStrings, DefaultMaxStringBytes),
	}
	b.budget.Store(maxRecords)
	if maxRecords >= prefetchMin {
		b.spares = make(chan *slab, n+1)
		b.stopPrefetch = make(chan struct{})
	}
	return b
}

// Level returns the host tracer level of the buffer.
func (b *Buffer) Level() uint8 { return b.level }

// Epoch identifies the buffer among every buffer of the process, without
// holding on to it: a source that caches what it registered in a buffer
// (its tracks) keys the cache by it, so that a stopped session's records
// are not kept alive by the cache.
func (b *Buffer) Epoch() uint32 { return b.epoch }

// Owns reports whether c is the context of a span of b (as opposed to one
// of an older session).
func (b *Buffer) Owns(c *SpanContext) bool { return c.epoch == b.epoch }

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Reserve returns n consecutive zeroed records (n >= 1), or nil when the
// buffer is full, in which case the drop is counted. The caller fills the
// first record, then calls Commit on it.
func (b *Buffer) Reserve(n int) *Record {
	c, i := b.reserve(n)
	if c == nil {
		return nil
	}
	return c.take(i)
}

// StartSpan records the start of a span begun in parent, named name, with
// args, at annotation level level: the hot path of annotate.Begin, kept in
// one function so that a span costs as few calls as possible. flags and
// id2 are stored as given (a step sets FlagStep and its number). It returns
// the span's context and record, or nils when the buffer is full.
func (b *Buffer) StartSpan(parent context.Context, name string, args []event.Arg, level, flags uint8, id2 int64) (*SpanContext, *Record) {
	n := 1
	if len(args) > InlineArgs {
		n = SlotsFor(len(args))
	}
	sl, i := b.reserve(n)
	if sl == nil {
		return nil, nil
	}
	r := &sl.recs[i]
	if j := i + prefetchAhead; j < int64(len(sl.recs)) {
		// Own the lines of a later record now, so that the stores to this
		// one are not waiting on memory when Commit's fence drains them.
		prefetchw(unsafe.Pointer(&sl.recs[j]))
	}
	r.ID = sl.base + uint64(i) + 1
	sc := &sl.ctxs[i]
	sc.parent, sc.rec, sc.epoch = parent, r, b.epoch
	r.Kind = event.KindSpan
	r.Level = level
	r.Flags = flags
	r.ID2 = id2
	r.NameID = b.strs.id(name)
	r.Lane = uint32(r.ID)
	if p := parentSpan(parent); p != nil && p.epoch == b.epoch {
		r.Parent, r.Lane = p.rec.ID, p.rec.Lane
	}
	if len(args) <= InlineArgs {
		r.NArgs = uint8(len(args))
		for j := range args {
			a := &args[j]
			sa := &r.args[j]
			sa.key, sa.kind, sa.num = b.strs.id(a.Key), a.Kind, a.Num
			if a.Kind == event.ArgString {
				sa.num = uint64(b.strs.id(a.Str))
			}
		}
	} else {
		r.SetArgs(b, args)
	}
	r.Start = Now()
	r.Commit()
	return sc, r
}

func (b *Buffer) reserve(n int) (*slab, int64) {
	p := procPin()
	procUnpin()
	s := &b.shards[uint(p)&uint(len(b.shards)-1)] // a power of two: no division
	if c := s.cur.Load(); c != nil {
		if i := c.next.Add(int64(n)) - int64(n); i+int64(n) <= int64(len(c.recs)) {
			return c, i
		}
	}
	return b.reserveSlow(s, n)
}

// model returns the chunk's records as the event model sees them.
func (c *chunk) model() []event.Record {
	return unsafe.Slice((*event.Record)(unsafe.Pointer(unsafe.SliceData(c.recs))), len(c.recs))
}

func (c *chunk) take(i int64) *Record {
	r := &c.recs[i]
	r.ID = c.base + uint64(i) + 1
	return r
}

// reserveSlow installs a fresh chunk from the budget, or, once the budget is
// spent, takes leftover room in other shards' chunks so that exactly
// maxRecords records are kept before anything is dropped.
func (b *Buffer) reserveSlow(s *shard, n int) (*slab, int64) {
	if b.full.Load() {
		// The budget is spent, but a shard's current chunk may still have
		// room (one installed while the search that set full ran), and
		// checking them costs a few loads.
		if c, i := b.steal(n); c != nil {
			return c, i
		}
		s.drops.Add(1)
		return nil, 0
	}
	s.refill.Lock()
	if c := s.cur.Load(); c != nil { // another goroutine on this P may have refilled
		if i := c.next.Add(int64(n)) - int64(n); i+int64(n) <= int64(len(c.recs)) {
			s.refill.Unlock()
			return c, i
		}
	}
	if size := b.claim(n); size > 0 {
		var sl *slab
		if size == chunkRecords {
			select {
			case sl = <-b.spares:
			default:
			}
		}
		if sl == nil {
			sl = newSlab(size)
		}
		c := sl.chunk
		c.base = b.idBase.Add(uint64(size)) - uint64(size)
		c.shard = int32((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&b.shards[0]))) / unsafe.Sizeof(shard{}))
		c.next.Store(int64(n))
		for {
			h := b.chunks.Load()
			c.prev = h
			if b.chunks.CompareAndSwap(h, c) {
				break
			}
		}
		s.cur.Store(sl)
		s.refill.Unlock()
		return sl, 0
	}
	s.refill.Unlock()
	if c, i := b.steal(n); c != nil {
		return c, i
	}
	if n == 1 { // a larger event not fitting says nothing about single records
		b.full.Store(true)
	}
	s.drops.Add(1)
	return nil, 0
}

// steal takes n records from the room left in any shard's current chunk.
func (b *Buffer) steal(n int) (*slab, int64) {
	for i := range b.shards {
		if c := b.shards[i].cur.Load(); c != nil {
			if j := c.next.Load(); j+int64(n) <= int64(len(c.recs)) {
				if k := c.next.Add(int64(n)) - int64(n); k+int64(n) <= int64(len(c.recs)) {
					return c, k
				}
			}
		}
	}
	return nil, 0
}

// prefetchAhead is how many records ahead of the one being written
// StartSpan prefetches.
const prefetchAhead = 4

// background is compared with, not called: Value on it would find nothing.
var background = context.Background()

// parentSpan is SpanFromContext for the hot path: a span's own context and
// context.Background() are answered without calling Value.
func parentSpan(ctx context.Context) *SpanContext {
	if c, ok := ctx.(*SpanContext); ok {
		return c
	}
	if ctx == background {
		return nil
	}
	return SpanFromContext(ctx)
}

// shardCount returns the number of shards for n Ps: the power of two at
// or above n, so that a P picks its shard with a mask (a division costs
// tens of cycles on the hot path), and Ps added later by GOMAXPROCS share.
func shardCount(n int) int {
	c := 1
	for c < n {
		c <<= 1
	}
	return c
}

// newSlab allocates a chunk of size records and its contexts, and writes
// every line of the records: fresh memory from the OS is mapped on its
// first write, and that fault (microseconds under a hypervisor) would
// otherwise land on whichever Begin touches each page first. Clearing the
// whole chunk measured no slower for Begin than touching one word a page.
func newSlab(size int64) *slab {
	c := &chunk{recs: make([]Record, size)}
	clear(c.recs)
	return &slab{chunk: c, ctxs: make([]SpanContext, size)}
}

// prefetchMin is the smallest buffer that gets a prefetcher: below it the
// budget hands out chunks smaller than chunkRecords, which prepared slabs
// do not serve.
const prefetchMin = 16 * chunkRecords

// prefetch prepares full-size slabs ahead of need on its own goroutine,
// until stop is closed, so that a source refilling its chunk takes one
// that is already allocated and mapped.
func (b *Buffer) prefetch(stop <-chan struct{}) {
	for {
		if b.budget.Load() < prefetchMin/2 {
			return // the last chunks are smaller; and nothing is wasted
		}
		sl := newSlab(chunkRecords)
		select {
		case b.spares <- sl:
		case <-stop:
			return
		}
	}
}

// claim takes up to chunkRecords records from the budget, at least n, and
// returns how many it took (0 when fewer than n are left). Near the end of
// the budget chunks shrink so that idle shards do not sit on spare room.
func (b *Buffer) claim(n int) int64 {
	for {
		left := b.budget.Load()
		if left < int64(n) {
			return 0
		}
		want := int64(chunkRecords)
		if share := left / int64(2*len(b.shards)); share < want {
			want = share
		}
		if want < int64(n) {
			want = int64(n)
		}
		if want > left {
			want = left
		}
		if b.budget.CompareAndSwap(left, left-want) {
			return want
		}
	}
}

// StringsOverflowed returns how many times a new name, argument key or
// string value found the string table full and was recorded as
// StringsFullPlaceholder.
func (b *Buffer) StringsOverflowed() int64 { return b.strs.overflow.Load() }

// Drop counts an event that a source discarded before reaching the buffer
// (for example a device record CUPTI could not deliver).
func (b *Buffer) Drop(n int64) { b.overflow.Add(n) }

// Dropped returns how many events were dropped so far.
func (b *Buffer) Dropped() int64 {
	d := b.overflow.Load()
	for i := range b.shards {
		d += b.shards[i].drops.Load()
	}
	return d
}

// MaxRecords returns the bound the buffer was created with.
func (b *Buffer) MaxRecords() int64 { return b.maxRecords }

// active is the buffer of the running session, nil when tracing is off.
// Every source's fast path starts with one load of it.
var active atomic.Pointer[Buffer]

// on mirrors active != nil as a plain word: the one atomic load that a
// source's inlined fast path makes (a pointer load costs the inliner more).
var on uint32

// On reports whether a buffer is active. It is the inlinable fast-path
// check of sources; they call Active on their slow path.
func On() bool { return atomic.LoadUint32(&on) != 0 }

// Active returns the buffer of the running session, or nil.
func Active() *Buffer { return active.Load() }

// Activate makes b the buffer that sources write into. It fails (returns
// false) if another buffer is active.
func Activate(b *Buffer) bool {
	if !active.CompareAndSwap(nil, b) {
		return false
	}
	if b.spares != nil {
		go b.prefetch(b.stopPrefetch)
	}
	atomic.StoreUint32(&on, 1)
	return true
}

// Deactivate stops sources from writing into b; records reserved before it
// may still be committed and are picked up if they commit before Snapshot.
func Deactivate(b *Buffer) {
	if active.CompareAndSwap(b, nil) {
		atomic.StoreUint32(&on, 0)
		if b.spares != nil {
			close(b.stopPrefetch)
		}
	}
}
