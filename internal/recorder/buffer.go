package recorder

import (
	"context"
	"github.com/devprof/devprof/event"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe" // also for go:linkname
)

// chunkRecords is how many records one chunk of a buffer holds when the
// budget allows. Chunks are the unit a shard takes from the session
// budget: big enough that the slow path (and the heap's lock, taken for
// every large allocation) runs rarely, small enough that a mostly idle P
// wastes little (~520 KiB with its contexts). 4096 rather than 1024 made a
// span 9-17 ns cheaper on an H100 machine's Xeon (paired, interleaved
// runs): a quarter of the allocations, each of whose pages the
// prefetcher or the writer must fault in.
const chunkRecords = 4096

// ringChunkRecords is a flight recorder's chunk: the unit it overwrites,
// so smaller, and its smallest ring (two chunks a P) stays small.
const ringChunkRecords = 1024

type chunk struct {
	recs []Record
	// next is the index of the next free record. Only the P whose shard
	// holds the chunk writes it, inside its pinned section (storeNext);
	// snapshots read it with an atomic load.
	next int64
	base uint64 // ID of recs[0] is base+1; set before the chunk is installed
	prev *chunk // chunks of a plain buffer form a list, newest first
	// retired is set by the P that replaces the chunk on its shard: from
	// then on nothing but a span's End writes into it, so a flight
	// recorder may recycle it (ring.go).
	retired atomic.Bool
	// shard is the index of the shard that installed the chunk (-1: the
	// spill shard): the P its records were written on (see SpanOrigins).
	// Set by install while pinned, before any record of the chunk is.
	shard int32
}

// shard is a per-P allocation point. Only the P it belongs to writes into
// its current chunk, and only while pinned (procPin): that is what lets
// the hot path reserve with a plain load and store instead of a locked
// add, and what lets a flight recorder know when a chunk is done with.
// Padding keeps each shard's hot words on cache lines of their own (see
// reference/go_peers.md §1.2).
type shard struct {
	cur atomic.Pointer[chunk]
	// next is a chunk prepared for the shard while another goroutine on
	// its P installed one: the next to install, with no refill.
	next  atomic.Pointer[chunk]
	drops atomic.Int64
	// refilling is set while a goroutine prepares a chunk for the shard.
	refilling atomic.Bool
	// lock is taken (spinning, while pinned) only on the spill shard,
	// which Ps beyond the shards share: GOMAXPROCS raised after the
	// buffer was made.
	lock atomic.Uint32
	// ctxs is the block the shard hands span contexts out of, and
	// ctxNext the index of the next one in it (see takeContext).
	ctxs    atomic.Pointer[ctxBlock]
	ctxNext int64
	_       [128 - 48]byte
}

// Buffer is the bounded, lock-free event store of one session. Sources
// write records on the hot path into their P's own chunk while the P is
// pinned (a plain bump, no locked instruction); when the budget of
// MaxRecords is spent, events are dropped and counted, never blocking the
// caller — or, for a flight recorder (NewRing), the oldest chunks are
// recycled.
type Buffer struct {
	epoch uint32
	level uint8 // host tracer level: annotations of level L are kept when L <= level

	_      [64]byte // keep shards[0] off the line that holds the header (nil-check probes read it)
	shards []shard
	spill  shard // shared by Ps whose id is past len(shards)

	budget   atomic.Int64 // records not yet handed to any chunk
	idBase   atomic.Uint64
	chunks   atomic.Pointer[chunk] // plain buffers: every chunk, newest first
	overflow atomic.Int64          // drops counted by sources (Drop)
	full     atomic.Bool           // set once no room is left anywhere: later reservations fail fast

	maxRecords int64

	mu         sync.Mutex // guards tracks and correlator; not taken on the hot path
	tracks     []event.Track
	correlator DeviceCorrelator

	strs *strtab // names, argument keys and string values of the records

	ring *ring // non-nil for a flight recorder: chunks are recycled oldest first

	chunk  int64            // records in a full-size chunk: chunkRecords, or ringChunkRecords for a ring
	spares *handoff[*chunk] // chunks prepared by prefetch; nil for buffers without one
	// ctxSpares holds blocks of span contexts prepared by
	// prefetchContexts; nil for buffers without a prefetcher.
	ctxSpares    *handoff[*ctxBlock]
	stopPrefetch chan struct{} // closed by Deactivate
	// selfMade counts full-size chunks a writer had to allocate itself
	// because the prefetcher had none ready: the fresh-memory cost left
	// on the recording path (SelfMadeChunks).
	selfMade atomic.Int64

	// cal converts TSC ticks to monotonic ns at snapshot time; nil when
	// ticks are already nanoseconds.
	cal *calibration
}

var epochs atomic.Uint32

// NewBuffer returns a buffer that keeps at most maxRecords records and
// records host annotations up to level.
func NewBuffer(maxRecords int64, level uint8) *Buffer {
	return newClocked(maxRecords, level, chunkRecords)
}

// newClocked is newBuffer for every P, with the tick source calibrated.
func newClocked(maxRecords int64, level uint8, chunk int64) *Buffer {
	b := newBuffer(maxRecords, level, max(runtime.GOMAXPROCS(0), runtime.NumCPU()), chunk)
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

func newBuffer(maxRecords int64, level uint8, n int, chunkLen int64) *Buffer {
	if maxRecords < 1 {
		maxRecords = 1
	}
	b := &Buffer{
		epoch:      epochs.Add(1) &^ ringEpoch,
		level:      level,
		shards:     make([]shard, shardCount(n)),
		maxRecords: maxRecords,
		chunk:      chunkLen,
		strs:       newStrtab(DefaultMaxStrings, DefaultMaxStringBytes),
	}
	b.budget.Store(maxRecords)
	if maxRecords >= prefetchChunks*chunkLen {
		b.spares = newHandoff[*chunk](sparesAhead * chunkRecords / int(chunkLen))
		b.ctxSpares = newHandoff[*ctxBlock](ctxBlocksAhead)
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

// pin pins the calling goroutine to its P and reserves n consecutive
// records in the P's chunk. It returns the chunk, the index of the first
// record and the shard to hand to unpin; or a nil chunk when the buffer is
// full (the drop is counted, and the caller is not pinned). Everything
// written into a chunk is written between pin and unpin: the P owns its
// shard's chunk for that time, so the bump is a plain load and store, and
// a chunk the P has moved on from is never written again (but by End).
func (b *Buffer) pin(n int) (*chunk, int64, *shard) {
	s := b.shardOf(procPin())
	if sl, i := s.take(n); sl != nil {
		return sl, i, s
	}
	return b.pinSlow(s, n)
}

// shardOf is the shard of P p, for a goroutine pinned on p: the spill
// shard, locked, for a P past the shards.
func (b *Buffer) shardOf(p int) *shard {
	if uint(p) < uint(len(b.shards)) {
		return &b.shards[p]
	}
	return b.lockSpill()
}

// take reserves n records in the shard's current chunk, or returns a nil
// chunk when it has no room. The caller is pinned on the shard's P, its
// only writer, so the bump is a plain load and store.
func (s *shard) take(n int) (*chunk, int64) {
	if sl := s.cur.Load(); sl != nil {
		if i := sl.loadNext(); i+int64(n) <= int64(len(sl.recs)) {
			sl.storeNext(i + int64(n))
			return sl, i
		}
	}
	return nil, 0
}

// unpin ends the pinned section pin began.
func (b *Buffer) unpin(s *shard) {
	if s == &b.spill {
		s.lock.Store(0)
	}
	procUnpin()
}

// lockSpill takes the spill shard's lock. The holder is pinned (it cannot
// be preempted), so the wait is the length of one record's write.
func (b *Buffer) lockSpill() *shard {
	for !b.spill.lock.CompareAndSwap(0, 1) {
	}
	return &b.spill
}

// pinSlow is pin when the P's chunk has no room: it installs the shard's
// waiting chunk, or unpins, prepares a chunk (from the budget, the
// prefetcher, or a flight recorder's oldest chunk), pins again — perhaps
// on another P — and installs it.
func (b *Buffer) pinSlow(s *shard, n int) (*chunk, int64, *shard) {
	for {
		if sl := s.next.Swap(nil); sl != nil {
			if int64(n) <= int64(len(sl.recs)) {
				return b.install(s, sl, n)
			}
			sl.retired.Store(true) // too small for this event: a ring recycles it
		}
		// One refill per shard at a time: the others on this P wait for
		// it (a flight recorder would otherwise overwrite a chunk of old
		// events for each of them, and use one).
		if s.refilling.CompareAndSwap(false, true) {
			break
		}
		b.unpin(s)
		runtime.Gosched()
		s = b.shardOf(procPin())
		if sl, i := s.take(n); sl != nil {
			return sl, i, s
		}
	}
	owner := s
	defer owner.refilling.Store(false)
	b.unpin(s)
	sl := b.refill(n)
	if sl == nil {
		owner.drops.Add(1)
		return nil, 0, nil
	}
	s = b.shardOf(procPin())
	// The goroutine may be on another P now, whose chunk may have room:
	// use it first, and keep the new chunk for when it is full.
	if cur, i := s.take(n); cur != nil {
		if !s.next.CompareAndSwap(nil, sl) {
			sl.retired.Store(true) // a ring recycles it; a plain buffer loses its room
		}
		return cur, i, s
	}
	return b.install(s, sl, n)
}

// install makes sl the shard's current chunk, with its first n records
// reserved, and retires the chunk it replaces. The caller is pinned.
func (b *Buffer) install(s *shard, sl *chunk, n int) (*chunk, int64, *shard) {
	sl.shard = -1
	if s != &b.spill {
		sl.shard = int32((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&b.shards[0]))) / unsafe.Sizeof(shard{}))
	}
	sl.storeNext(int64(n))
	if old := s.cur.Swap(sl); old != nil {
		old.retired.Store(true)
	}
	return sl, 0, s
}

// refill prepares a chunk with room for n records, unpinned, or returns
// nil when the budget is spent.
func (b *Buffer) refill(n int) *chunk {
	if b.ring != nil {
		return b.ring.refill(b, n)
	}
	if b.full.Load() {
		return nil
	}
	size := b.claim(n)
	if size == 0 {
		if n == 1 { // a larger event not fitting says nothing about single records
			b.full.Store(true)
		}
		return nil
	}
	c := b.fresh(size)
	c.base = b.idBase.Add(uint64(size)) - uint64(size)
	for {
		h := b.chunks.Load()
		c.prev = h
		if b.chunks.CompareAndSwap(h, c) {
			break
		}
	}
	return c
}

// fresh returns a new chunk of size records: one the prefetcher prepared
// when it has the size, else a new one.
func (b *Buffer) fresh(size int64) *chunk {
	if size == b.chunk && b.spares != nil {
		if sl, ok := b.spares.take(); ok {
			return sl
		}
		b.selfMade.Add(1)
	}
	return newChunk(size)
}

// SelfMadeChunks returns how many full-size chunks writers allocated
// themselves because the prefetcher had none ready (benchmarks report it:
// each is a chunk's allocation and page faults, or its recycled records'
// clearing, on the recording goroutine).
func (b *Buffer) SelfMadeChunks() int64 { return b.selfMade.Load() }

// Put records one complete event: e's fields, name and args (interned
// first, outside the pinned section, since a new string takes the string
// table's lock). It returns the record's ID, or 0 when the buffer was
// full.
func (b *Buffer) Put(e *Entry, name string, args []event.Arg) uint64 {
	nameID := b.strs.id(name)
	var inl [InlineArgs]slotArg
	var more []slotArg
	nargs := min(len(args), 255)
	if nargs <= InlineArgs {
		for j := range nargs {
			inl[j] = b.strs.arg(&args[j])
		}
	} else {
		var buf [maxStackArgs]slotArg
		more = b.strs.args(buf[:], args[:nargs])
	}
	return b.put(e, nameID, nargs, &inl, more)
}

// PutArgs is Put with the arguments in annotate's form (an instant).
func (b *Buffer) PutArgs(e *Entry, name string, args []Arg) uint64 {
	nameID := b.strs.id(name)
	var inl [InlineArgs]slotArg
	var more []slotArg
	nargs := min(len(args), 255)
	if nargs <= InlineArgs {
		for j := range nargs {
			inl[j] = b.strs.packedArg(&args[j])
		}
	} else {
		var buf [maxStackArgs]slotArg
		more = b.strs.packedArgs(buf[:], args[:nargs])
	}
	return b.put(e, nameID, nargs, &inl, more)
}

// put is Put's and PutArgs's part after interning: nargs arguments, in
// inl when they fit the record, else in more.
func (b *Buffer) put(e *Entry, nameID uint32, nargs int, inl *[InlineArgs]slotArg, more []slotArg) uint64 {
	n := SlotsFor(nargs)
	sl, i, s := b.pin(n)
	if sl == nil {
		return 0
	}
	r := &sl.recs[i]
	id := sl.base + uint64(i) + 1
	r.setID(id)
	r.Kind, r.Level, r.Flags = e.Kind, e.Level, e.Flags
	r.Lane, r.Parent, r.ID2 = e.Lane, e.Parent, e.ID2
	r.NameID = nameID
	r.NArgs = uint8(nargs)
	if more == nil {
		r.args = *inl
	} else {
		r.setMore(id, more)
	}
	r.Start = e.Start
	r.end.Store(max(e.End, e.Start) + 1)
	r.publish()
	b.unpin(s)
	return id
}

// maxStackArgs is how many arguments an event may have before interning
// them takes a heap slice.
const maxStackArgs = 16

// Entry is a complete event as Put records it. Times are ticks (Now), or
// monotonic nanoseconds when Flags holds FlagMonoTime.
type Entry struct {
	Kind         event.Kind
	Level, Flags uint8
	Lane         uint32
	Parent       uint64
	ID2          int64
	Start, End   int64 // End < Start is taken as Start
}

// StartSpan records the start of a span begun in parent, named name, with
// args, at annotation level level: the hot path of annotate.Begin. flags
// and id2 are stored as given (a step sets FlagStep and its number). It
// returns the span's context, its record and the token that ends it
// (Record.EndSpan), or nils when the buffer is full. A leaf span
// (annotate.BeginLeaf) has no context: none is taken, and nil returned.
//
// StartSpan and StartSpanInt are each one function, the helpers they call
// inlined (TestSpanPathInlines): a call is about a nanosecond of a span.
// They differ only in how the arguments reach the record.
func (b *Buffer) StartSpan(parent context.Context, name string, args []Arg, level, flags uint8, id2 int64, leaf bool) (*SpanContext, *Record, uint64) {
	strs := b.strs
	nameID, ok := strs.cached(name)
	if !ok {
		nameID = strs.intern(name)
	}
	var inl [InlineArgs]slotArg
	var more []slotArg
	nargs := min(len(args), 255)
	n := 1
	if nargs <= InlineArgs {
		for j := range nargs {
			a := &args[j]
			key, ok := strs.cached(a.Key)
			if !ok {
				key = strs.intern(a.Key)
			}
			inl[j] = slotArg{num: a.Num, key: key, kind: a.Kind()}
			if inl[j].kind == event.ArgString {
				inl[j].num = uint64(strs.id(a.Str()))
			}
		}
	} else {
		var buf [maxStackArgs]slotArg
		more = strs.packedArgs(buf[:], args[:nargs])
		n = SlotsFor(nargs)
	}
	ps, ok := parent.(*SpanContext)
	if !ok && typeWord(parent) != backgroundType {
		ps = SpanFromContext(parent)
	}
	pid, plane := b.parentIDs(ps)
	p := procPin()
	sl, i, s := b.takeOn(p, n)
	if sl == nil {
		if sl, i, s = b.pinAgain(p, n); sl == nil {
			return nil, nil, 0
		}
	}
	r := &sl.recs[i]
	id := sl.base + uint64(i) + 1
	r.openSpan(id, nameID, level, flags, id2, pid, plane)
	r.NArgs = uint8(nargs)
	if more == nil {
		r.args = inl
	} else {
		r.setMore(id, more)
	}
	var sc *SpanContext
	if !leaf {
		if sc = s.takeContext(); sc != nil {
			sc.set(parent, id, r.Lane, r, b.epoch)
		}
	}
	if useTSC { // Now, written out (it does not inline)
		r.Start = rdtsc()
	} else {
		r.Start = nanotime()
	}
	if sc == nil && !leaf { // the shard's block of contexts is used up
		// The lane is read while pinned: once the P is unpinned, a flight
		// recorder may recycle r for another event.
		lane := r.Lane
		r.publish()
		b.unpin(s)
		return b.refillContexts(parent, id, lane, r), r, endToken(id, b.epoch)
	}
	r.publish()
	b.unpin(s)
	return sc, r, endToken(id, b.epoch)
}

// StartSpanInt is StartSpan for a span with one integer argument key = v
// and neither flags nor a step (annotate.BeginInt, and Begin and BeginLeaf
// with one Int): the argument goes
// from registers into the record, with no slice to build and read back
// (paired on the 2-core VM: ~4.5 ns of a span).
func (b *Buffer) StartSpanInt(parent context.Context, name, key string, v int64, level uint8, leaf bool) (*SpanContext, *Record, uint64) {
	strs := b.strs
	nameID, ok := strs.cached(name)
	if !ok {
		nameID = strs.intern(name)
	}
	keyID, ok := strs.cached(key)
	if !ok {
		keyID = strs.intern(key)
	}
	ps, ok := parent.(*SpanContext)
	if !ok && typeWord(parent) != backgroundType {
		ps = SpanFromContext(parent)
	}
	pid, plane := b.parentIDs(ps)
	p := procPin()
	sl, i, s := b.takeOn(p, 1)
	if sl == nil {
		if sl, i, s = b.pinAgain(p, 1); sl == nil {
			return nil, nil, 0
		}
	}
	r := &sl.recs[i]
	id := sl.base + uint64(i) + 1
	r.openSpan(id, nameID, level, 0, 0, pid, plane)
	r.NArgs = 1
	r.args = [InlineArgs]slotArg{{num: uint64(v), key: keyID, kind: event.ArgInt}}
	var sc *SpanContext
	if !leaf {
		if sc = s.takeContext(); sc != nil {
			sc.set(parent, id, r.Lane, r, b.epoch)
		}
	}
	if useTSC {
		r.Start = rdtsc()
	} else {
		r.Start = nanotime()
	}
	if sc == nil && !leaf { // the shard's block of contexts is used up
		// The lane is read while pinned: once the P is unpinned, a flight
		// recorder may recycle r for another event.
		lane := r.Lane
		r.publish()
		b.unpin(s)
		return b.refillContexts(parent, id, lane, r), r, endToken(id, b.epoch)
	}
	r.publish()
	b.unpin(s)
	return sc, r, endToken(id, b.epoch)
}

// parentIDs returns the ID and lane of ps when it is a span of this
// buffer, or zeros (a span of no session or of another one is no parent).
func (b *Buffer) parentIDs(ps *SpanContext) (uint64, uint32) {
	if ps != nil && ps.epoch == b.epoch {
		return ps.id, ps.lane
	}
	return 0, 0
}

// takeOn is pin's fast path for a goroutine pinned on P p: n records of
// its own shard's chunk, or a nil chunk when p is past the shards or the
// chunk is full (then pinAgain).
func (b *Buffer) takeOn(p, n int) (sl *chunk, i int64, s *shard) {
	if uint(p) < uint(len(b.shards)) {
		s = &b.shards[p]
		sl, i = s.take(n)
	}
	return
}

// openSpan writes the header of an open span with ID id (all but its
// arguments and start time): a child of span pid in lane plane, or the
// root of a lane of its own when pid is 0.
func (r *Record) openSpan(id uint64, nameID uint32, level, flags uint8, id2 int64, pid uint64, plane uint32) {
	r.setID(id)
	r.Kind, r.Level, r.Flags = event.KindSpan, level, flags
	r.ID2, r.NameID = id2, nameID
	r.Lane, r.Parent = uint32(id), pid
	if pid != 0 {
		r.Lane = plane
	}
	r.setOpen(id)
}

// set makes c the context of the span with ID id in lane lane, recorded
// in r, begun in parent.
func (c *SpanContext) set(parent context.Context, id uint64, lane uint32, r *Record, epoch uint32) {
	c.parent, c.rec, c.id, c.lane, c.epoch = parent, r, id, lane, epoch
}

// pinAgain is pin for a goroutine pinned on P p whose shard had no room
// (or that is past the shards): the spill shard's lock, or the slow path.
func (b *Buffer) pinAgain(p, n int) (*chunk, int64, *shard) {
	s := b.shardOf(p)
	if s == &b.spill {
		if sl, i := s.take(n); sl != nil {
			return sl, i, s
		}
	}
	return b.pinSlow(s, n)
}

// model returns the chunk's records as the event model sees them.
func (c *chunk) model() []event.Record {
	return unsafe.Slice((*event.Record)(unsafe.Pointer(unsafe.SliceData(c.recs))), len(c.recs))
}

// backgroundType is the type word of context.Background()'s interface
// value. Its type is an empty struct, so every value of it is the same
// and the type word alone says "Background": comparing the interfaces
// with == would call runtime.ifaceeq instead.
var backgroundType = typeWord(context.Background())

// typeWord returns the first word of an interface value: its itab.
// (StartSpan reads it itself.)
func typeWord(ctx context.Context) uintptr { return *(*uintptr)(unsafe.Pointer(&ctx)) }

// shardCount returns the number of shards for n Ps: the power of two at
// or above n, so that Ps added later by GOMAXPROCS past it share the spill
// shard.
func shardCount(n int) int {
	c := 1
	for c < n {
		c <<= 1
	}
	return c
}

// newChunk prepares a chunk of size records, every page faulted in
// (see faultIn); a full-size chunk's records may be recycled ones
// (recycle.go).
func newChunk(size int64) *chunk { return &chunk{recs: newRecords(size)} }

// pageRecords is how many records a 4 KiB page holds, rounded down, so
// that touching every pageRecords-th record touches every page.
const pageRecords = 4096 / int64(unsafe.Sizeof(Record{}))

// sparesAhead is how many chunks of chunkRecords the prefetcher keeps
// ready (~3 MiB of records; a ring's smaller chunks are as many bytes):
// deep enough that a writer running faster than the
// prefetcher for a while, or one whose P holds the prefetcher's wake-up
// (a woken goroutine waits in the waker's P's run-next slot), still finds
// one: with the old depth of GOMAXPROCS+1 chunks of 1024 a single writer on
// the shared 2-core VM made ~1 chunk in 3 itself, with 32 ~1 in 6 to 1 in
// 10 (SelfMadeChunks). Writers on every P still outrun it: the
// prefetcher then has no CPU of its own.
const sparesAhead = 8

// prefetchChunks is the smallest buffer, in full-size chunks, that gets a
// prefetcher: below it the budget hands out smaller chunks, which
// prepared chunks do not serve.
const prefetchChunks = 16

// prefetch prepares full-size chunks ahead of need on its own goroutine,
// until stop is closed, so that a source refilling its chunk takes one
// that is already allocated and mapped.
func (b *Buffer) prefetch(stop <-chan struct{}) {
	for {
		// Chunks waiting in spares are not yet claimed from the budget:
		// count them, so that no more are made than the budget can use.
		if b.budget.Load()-int64(b.spares.waiting())*b.chunk < prefetchChunks/2*b.chunk {
			return // the last chunks are smaller; and nothing is wasted
		}
		if !b.spares.waitRoom(stop) {
			return
		}
		b.spares.put(newChunk(b.chunk))
	}
}

// claim takes up to a full-size chunk's records from the budget, at least n, and
// returns how many it took (0 when fewer than n are left). Near the end of
// the budget chunks shrink so that idle shards do not sit on spare room.
func (b *Buffer) claim(n int) int64 {
	for {
		left := b.budget.Load()
		if left < int64(n) {
			return 0
		}
		want := b.chunk
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
	d := b.overflow.Load() + b.spill.drops.Load()
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
		go b.prefetchContexts(b.stopPrefetch)
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
