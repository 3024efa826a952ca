package devmem

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// source says which path an allocation came through; CUDA's pointers and
// the explicit API's handles live in separate key spaces, so a program that
// also tells the explicit API about a cudaMalloc'd pointer is not counted
// as a double allocation.
type source uint8

const (
	sourceCUDA source = iota
	sourceAPI
)

var sourceNames = [...]string{sourceCUDA: "cuda", sourceAPI: "api"}

// space is one source's key space: where its live entries are and
// recently freed addresses. Maps keyed by the bare address hash and
// compare faster than maps keyed by a (source, address) struct.
type space struct {
	// live finds an address's entry in table.entries.
	live map[uint64]uint32
	// freed and freedOld remember between freedMemory and twice as many
	// of the last freed addresses, to tell a double free from an unknown
	// one. Two generations, never a delete: deleting from a map churned
	// this fast leaves it full of tombstones that every probe walks.
	freed, freedOld map[uint64]struct{}
}

// entry is one live allocation. Strings and tags are shared between
// entries (interned), and the stack is an index into the table's stacks, so
// an entry costs a few dozen bytes however deep its stack.
type entry struct {
	addr   uint64
	bytes  uint64 // 0: a free slot of table.entries
	when   int64  // unix nanoseconds
	stream uint64
	step   int64 // the annotate.Step it was made in; -1: none
	device int32
	corr   uint32
	stack  uint32 // index into table.stacks; 0: none
	src    source
	kind   string
	api    string
	span   string
	tags   []string
	joined string // tags joined with ",", as traces carry them (event.ArgTags)
}

// freedMemory is how many freed addresses the table remembers to tell a
// double free from a free of a pointer it never saw.
const freedMemory = 1 << 15

// table is the tracker's state. One mutex guards it: allocation calls are
// microseconds apart at the fastest (CUDA's own calls cost more), and a
// profile copies the table out under the lock and formats it outside.
type table struct {
	mu       sync.Mutex
	max      int
	depth    int
	bindings []string // Options.Bindings, read without the lock
	spaces   [len(sourceNames)]space
	// entries holds the live allocations of every space, in slots the
	// spaces' maps point to; a freed slot (bytes 0) is reused, its
	// index kept in freeSlots. A snapshot reads them in one pass over memory
	// laid out in a row, not over a map's scattered slots.
	entries   []entry
	freeSlots []uint32
	nlive     int
	counts    event.MemoryCounts

	// usage is what each device holds: devices -1 to denseDevices-2 at
	// index device+1, any other in moreUsage.
	usage     [denseDevices]deviceUsage
	moreUsage map[int32]*deviceUsage

	// stacks holds each distinct stack once; stackIDs finds it by hash.
	stacks   [][]uintptr
	stackIDs map[stackHash][]uint32
	strs     map[string]string // interned kinds, spans, tags
	tagSets  map[string]tagSet

	// What writing events into a session's trace needs (trace.go): the
	// time of the last event written, so that the next one is later, and
	// the memory tracks registered in the buffer of session traceEpoch.
	lastEvent   int64
	traceEpoch  uint32
	traceTracks map[int32]uint32
	// carried says that the buffers live when session carriedEpoch's
	// first event came were written into it (carryLive).
	carried      bool
	carriedEpoch uint32
}

// tagSet is one interned set of tags, with the form traces carry.
type tagSet struct {
	tags   []string
	joined string
}

// denseDevices is how many devices (host memory, then ordinals 0 and up)
// have their usage in an array rather than a map.
const denseDevices = 17

// deviceUsage is the bytes the table holds on one device, and the most it
// held since tracking started.
type deviceUsage struct {
	inUse, peak uint64
}

// usageOf returns the usage of device. Called with mu held.
func (t *table) usageOf(device int32) *deviceUsage {
	if i := int(device) + 1; i >= 0 && i < denseDevices {
		return &t.usage[i]
	}
	u := t.moreUsage[device]
	if u == nil {
		if t.moreUsage == nil {
			t.moreUsage = map[int32]*deviceUsage{}
		}
		u = &deviceUsage{}
		t.moreUsage[device] = u
	}
	return u
}

// add counts bytes more in use on the device.
func (u *deviceUsage) add(bytes uint64) {
	u.inUse += bytes
	u.peak = max(u.peak, u.inUse)
}

// remove counts bytes no longer in use.
func (u *deviceUsage) remove(bytes uint64) { u.inUse -= min(bytes, u.inUse) }

func newTable(o Options) *table {
	t := &table{
		max:      o.MaxBuffers,
		depth:    o.StackDepth,
		bindings: slices.Clone(o.Bindings),
		stacks:   [][]uintptr{nil},
		stackIDs: make(map[stackHash][]uint32),
		strs:     make(map[string]string),
		tagSets:  make(map[string]tagSet),
	}
	for i := range t.spaces {
		t.spaces[i] = space{live: make(map[uint64]uint32), freed: make(map[uint64]struct{})}
	}
	return t
}

type stackHash uint64

func hashStack(pcs []uintptr) stackHash {
	h := uint64(14695981039346656037)
	for _, pc := range pcs {
		h ^= uint64(pc)
		h *= 1099511628211
	}
	return stackHash(h)
}

// stackID returns the id of pcs, storing a copy the first time. Called
// with mu held.
func (t *table) stackID(pcs []uintptr) uint32 {
	if len(pcs) == 0 {
		return 0
	}
	h := hashStack(pcs)
	for _, id := range t.stackIDs[h] {
		if slicesEqual(t.stacks[id], pcs) {
			return id
		}
	}
	id := uint32(len(t.stacks))
	t.stacks = append(t.stacks, append([]uintptr(nil), pcs...))
	t.stackIDs[h] = append(t.stackIDs[h], id)
	return id
}

func slicesEqual(a, b []uintptr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// intern returns the table's copy of s, so that entries share strings.
// Called with mu held.
func (t *table) intern(s string) string {
	if s == "" {
		return ""
	}
	if c, ok := t.strs[s]; ok {
		return c
	}
	s = strings.Clone(s)
	t.strs[s] = s
	return s
}

// internTags returns a shared copy of tags (nil for none) and their
// joined form. Called with mu held.
func (t *table) internTags(tags []string) tagSet {
	if len(tags) == 0 {
		return tagSet{}
	}
	k := strings.Join(tags, "\x00")
	if c, ok := t.tagSets[k]; ok {
		return c
	}
	c := tagSet{tags: make([]string, len(tags)), joined: strings.Join(tags, ",")}
	for i, s := range tags {
		c.tags[i] = t.intern(s)
	}
	t.tagSets[strings.Clone(k)] = c
	return c
}

// alloc is one allocation of bytes at addr.
type alloc struct {
	src    source
	addr   uint64
	bytes  uint64
	stream uint64
	step   int64 // -1: none
	device int32
	corr   uint32
	kind   string
	api    string
	span   string
	tags   []string
}

// alloc records a; pcs is its stack. pcs is a parameter of its own, not a
// field of alloc, so that the caller's stack array does not escape with
// a's strings. With buf (the running session's buffer) it returns the
// events to write into the trace: the allocation, after the free of the
// buffer it replaced, if any.
func (t *table) alloc(a *alloc, pcs []uintptr, now time.Time, buf *recorder.Buffer) (out traceEvents) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.bytes == 0 {
		t.counts.ZeroSize++
		return
	}
	if buf != nil {
		t.carryLive(buf, &out)
	}
	sp := &t.spaces[a.src]
	if slot, ok := sp.live[a.addr]; ok {
		// The table still holds this address: its free was missed (made
		// through a path devprof does not see). The old entry goes; the new
		// one is what the address holds now.
		t.counts.Replaced++
		old := t.remove(sp, a.addr, slot)
		u := t.usageOf(old.device)
		u.remove(old.bytes)
		if buf != nil {
			out.add(t.traceEvent(buf, event.ActivityFree, a.addr, &old, u))
		}
	} else if t.nlive >= t.max {
		t.counts.Allocs++
		t.counts.Untracked++
		t.counts.UntrackedBytes += a.bytes
		// Its free must read as unknown, not as a double free of the
		// address's previous buffer.
		delete(sp.freed, a.addr)
		delete(sp.freedOld, a.addr)
		return
	}
	t.counts.Allocs++
	tags := t.internTags(a.tags)
	e := entry{
		addr:   a.addr,
		src:    a.src,
		bytes:  a.bytes,
		when:   now.UnixNano(),
		stream: a.stream,
		step:   a.step,
		device: a.device,
		corr:   a.corr,
		stack:  t.stackID(pcs),
		kind:   t.intern(a.kind),
		api:    a.api, // constant strings from cuptiwrap
		span:   t.intern(a.span),
		tags:   tags.tags,
		joined: tags.joined,
	}
	t.store(sp, &e)
	u := t.usageOf(a.device)
	u.add(a.bytes)
	if buf != nil {
		out.add(t.traceEvent(buf, event.ActivityAlloc, a.addr, &e, u))
	}
	return out
}

// free records the free of addr. With buf it returns the event to write
// into the trace; a free of an address the table does not hold writes
// none.
func (t *table) free(src source, addr uint64, buf *recorder.Buffer) (out traceEvents) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if buf != nil {
		t.carryLive(buf, &out)
	}
	sp := &t.spaces[src]
	if slot, ok := sp.live[addr]; ok {
		e := t.remove(sp, addr, slot)
		t.counts.Frees++
		sp.remember(addr)
		u := t.usageOf(e.device)
		u.remove(e.bytes)
		if buf != nil {
			out.add(t.traceEvent(buf, event.ActivityFree, addr, &e, u))
		}
		return out
	}
	_, again := sp.freed[addr]
	if _, old := sp.freedOld[addr]; again || old {
		t.counts.DoubleFrees++
		return
	}
	t.counts.UnknownFrees++
	return
}

// store keeps e in a free slot of entries (or a new one) and points its
// space's map at it. Called with mu held.
func (t *table) store(sp *space, e *entry) {
	var slot uint32
	if n := len(t.freeSlots); n > 0 {
		slot, t.freeSlots = t.freeSlots[n-1], t.freeSlots[:n-1]
		t.entries[slot] = *e
	} else {
		slot = uint32(len(t.entries))
		t.entries = append(t.entries, *e)
	}
	sp.live[e.addr] = slot
	t.nlive++
}

// remove takes the entry at slot (addr's, in sp) out of the table and
// returns it. Called with mu held.
func (t *table) remove(sp *space, addr uint64, slot uint32) entry {
	e := t.entries[slot]
	t.entries[slot] = entry{} // free, and holding no strings
	t.freeSlots = append(t.freeSlots, slot)
	delete(sp.live, addr)
	t.nlive--
	return e
}

// remember notes k as freed. An address freed and then allocated again
// stays here: free looks in the live table first. Called with mu held.
func (sp *space) remember(addr uint64) {
	if len(sp.freed) >= freedMemory {
		sp.freedOld, sp.freed = sp.freed, make(map[uint64]struct{}, freedMemory)
	}
	sp.freed[addr] = struct{}{}
}

// snapshot lists the table's buffers under the lock and resolves their
// stacks after it, each distinct stack once. The buffers are written
// straight into the snapshot's own slice (with their stacks' numbers
// beside them) rather than copied out twice: a million live buffers
// cost the snapshot's 200 MB, not that and a copy of the table.
func (t *table) snapshot(now time.Time) *event.DeviceMemory {
	t.mu.Lock()
	m := &event.DeviceMemory{Time: now, Counts: t.counts, Buffers: make([]event.Buffer, 0, t.nlive)}
	ids := make([]uint32, 0, t.nlive)
	for i := range t.entries {
		e := &t.entries[i]
		if e.bytes == 0 {
			continue
		}
		m.Buffers = append(m.Buffers, event.Buffer{
			Address:     e.addr,
			Bytes:       e.bytes,
			Count:       1,
			Device:      int(e.device),
			Kind:        e.kind,
			Source:      sourceNames[e.src],
			API:         e.api,
			Stream:      e.stream,
			Correlation: e.corr,
			Time:        time.Unix(0, e.when),
			Tags:        e.tags,
			Span:        e.span,
		})
		ids = append(ids, e.stack)
	}
	stacks := t.stacks[:len(t.stacks):len(t.stacks)] // entries are never changed once stored
	t.mu.Unlock()

	frames := make([][]event.Frame, len(stacks))
	resolved := make([]bool, len(stacks))
	for i, id := range ids {
		if !resolved[id] {
			frames[id], resolved[id] = resolve(stacks[id]), true
		}
		m.Buffers[i].Stack = frames[id]
	}
	m.MarkGlue(t.bindings)
	m.Sort()
	m.Warnings = warnings(m.Counts)
	return m
}

// resolve turns program counters into frames, dropping the frames of the
// tracker, of cgo's call and callback machinery and of the runtime at the
// innermost end, so that the first frame is the Go code that allocated.
func resolve(pcs []uintptr) []event.Frame {
	if len(pcs) == 0 {
		return nil
	}
	var out []event.Frame
	it := runtime.CallersFrames(pcs)
	leaf := true
	for {
		f, more := it.Next()
		if leaf && plumbing(f.Function) {
			if !more {
				break
			}
			continue
		}
		leaf = false
		out = append(out, event.Frame{Function: f.Function, File: f.File, Line: f.Line})
		if !more {
			break
		}
	}
	return out
}

const module = "github.com/devprof/devprof/"

// plumbing reports whether fn is a frame between the allocating Go code and
// the tracker: the runtime (cgo callbacks), cgo's generated wrappers,
// cuptiwrap's callback and this package.
func plumbing(fn string) bool {
	switch {
	case strings.HasPrefix(fn, "runtime."),
		strings.HasPrefix(fn, module+"devmem."),
		strings.HasPrefix(fn, module+"internal/cuptiwrap."),
		strings.HasPrefix(fn, "_cgo"):
		return true
	}
	// cgo's generated functions in the caller's package: pkg._Cfunc_f,
	// pkg._cgoexp_…, pkg._cgo_…
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		name := fn[i+1:]
		return strings.HasPrefix(name, "_Cfunc_") || strings.HasPrefix(name, "_cgo") || strings.HasPrefix(name, "_Cgo")
	}
	return false
}
