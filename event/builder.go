package event

import (
	"hash/maphash"
	"math"
	"slices"
	"unsafe"
)

// Builder makes a Snapshot out of events recorded elsewhere, such as a
// trace file being read. Times are nanoseconds on any monotonic timeline,
// with Meta.Start.Mono as the trace's start. A Builder is not safe for
// concurrent use.
type Builder struct {
	meta    Meta
	initial Meta // what NewBuilder was given, for Reset
	segs    []segment
	nextID  uint64
	tracks  []Track
	procs   []Process
	// procTracks holds the TrackProcess track of each process that has
	// one (ProcessTrack).
	procTracks map[int]uint32
	strs       []string
	// names indexes strs by content (see lookup): a reader of a Go
	// execution trace interns a name for each of its hundreds of
	// thousands of goroutines, and a table of 4-byte ids, probed by a
	// 32-bit hash kept beside each, stays in the caches where a map of
	// strings does not.
	names     []uint64 // hash<<32 | id; 0: empty
	namesUsed int
	seed      maphash.Seed
	lanes     map[uint64]uint32 // span ID -> lane, so children share their root's lane (spans on no track)
	onTrack   []uint64          // a bit per record ID: a span Span added on a track (see laneOf)
	// events counts the records committed. Snapshot lists them then,
	// walking the segments: a list kept as they come would be a slice of
	// pointers that every garbage collection scans, and whose growth
	// copies pass through write barriers, for the whole of a read.
	events int
	// recent remembers where strings interned lately came from (see
	// intern).
	recent [internCache]internEntry
}

// internCache is how many strings a Builder remembers by address: a
// reader hands it the same few names and keys, from its own tables, over
// and over. A Go execution trace names each goroutine's runs by a string
// of its own, and a server's thousands of goroutines interleave: 512
// entries halve the lookups by content of names already interned (a
// 6.4 M-event trace: 177,000 with 128 entries, 86,000 with 512).
const (
	internCacheBits = 9
	internCache     = 1 << internCacheBits
)

// internEntry is a string the Builder interned, and its id.
type internEntry struct {
	s  string
	id uint32
}

// builderSegment is how many records a Builder stores per segment.
const builderSegment = 1024

// NewBuilder returns a builder for a snapshot with the given metadata.
func NewBuilder(meta Meta) *Builder {
	return &Builder{
		meta:    meta,
		initial: meta,
		strs:    []string{""},
		names:   make([]uint64, 1024),
		seed:    maphash.MakeSeed(),
		lanes:   map[uint64]uint32{},
	}
}

// Track registers a track and returns its id (non-zero).
func (b *Builder) Track(t Track) uint32 {
	b.tracks = append(roomForOne(b.tracks), t)
	return uint32(len(b.tracks))
}

// SetTrackName renames a registered track: a reader that learns what a
// track holds only later in the file names it when done.
func (b *Builder) SetTrackName(id uint32, name string) {
	if id > 0 && int(id) <= len(b.tracks) {
		b.tracks[id-1].Name = name
	}
}

// TrackInfo returns a registered track.
func (b *Builder) TrackInfo(id uint32) (Track, bool) {
	if id == 0 || int(id) > len(b.tracks) {
		return Track{}, false
	}
	return b.tracks[id-1], true
}

// Span describes a span for Builder.Span.
type Span struct {
	Name       string
	Start, End int64
	// Parent is the ID (from Builder.Span) of the enclosing span, or 0.
	Parent uint64
	// Track is a registered track the span sits on, or 0 for the lanes of
	// the host layout.
	Track uint32
	Args  []Arg
	// Step marks a training-loop step with number StepNum.
	Step    bool
	StepNum int64
	// Unfinished marks a span that had not ended when recording stopped.
	Unfinished bool
}

// Span adds a span and returns its ID.
func (b *Builder) Span(s Span) uint64 {
	r := b.add(KindSpan, s.Name, s.Start, s.Args)
	r.level = 1
	r.parent = s.Parent
	if s.Track != 0 {
		// Its lane matters only to a child on no track, which is rare:
		// it is worked out then (laneOf), rather than kept for every span
		// of a file read back (a map entry a span).
		r.lane = s.Track
		r.flags |= FlagOnTrack
		b.markSpan(r.id)
	} else {
		r.lane = uint32(r.id)
		if l, ok := b.laneOf(s.Parent); ok {
			r.lane = l
		}
		b.lanes[r.id] = r.lane
	}
	if s.Step {
		r.flags |= FlagStep
		r.id2 = s.StepNum
	}
	if !s.Unfinished {
		r.builtEnd(max(s.End, s.Start) + 1)
	} else {
		r.builtEnd(openAtStop)
	}
	return b.commit(r)
}

// markSpan notes that record id is a span Span added on a track.
func (b *Builder) markSpan(id uint64) {
	w := int(id / 64)
	if w >= len(b.onTrack) {
		b.onTrack = append(b.onTrack, make([]uint64, w+1-len(b.onTrack))...)
	}
	b.onTrack[w] |= 1 << (id % 64)
}

// laneOf returns the lane a child of span id shares: the lane of id's
// root among the spans Span added, whether on a track or not; false when
// id is no such span (a child then starts a lane of its own).
func (b *Builder) laneOf(id uint64) (uint32, bool) {
	if l, ok := b.lanes[id]; ok {
		return l, true
	}
	if !b.spanOnTrack(id) {
		return 0, false
	}
	for {
		// A span on a track: its lane is its parent's when its parent is
		// a span Span added, else its own ID.
		p := b.record(id).parent
		if l, ok := b.lanes[p]; ok && p < id {
			return l, true
		}
		if p == 0 || p >= id || !b.spanOnTrack(p) {
			return uint32(id), true
		}
		id = p
	}
}

// spanOnTrack reports whether record id is a span Span added on a track.
func (b *Builder) spanOnTrack(id uint64) bool {
	w := id / 64
	return w < uint64(len(b.onTrack)) && b.onTrack[w]&(1<<(id%64)) != 0
}

// TrackSlice adds a root span on a registered track and returns its ID:
// Span with Track set and no Parent, for a reader of a file whose slices
// nest by time alone (a Go execution trace's millions of goroutine
// states). It keeps no lane for children: a span naming it as Parent
// without a Track of its own starts a lane of its own.
func (b *Builder) TrackSlice(track uint32, name string, start, end int64, args []Arg) uint64 {
	r := b.add(KindSpan, name, start, args)
	r.level = 1
	r.lane = track
	r.flags |= FlagOnTrack
	r.builtEnd(max(end, start) + 1)
	return b.commit(r)
}

// BeginTrackSlice adds a root span on a registered track whose end comes
// later (EndSpan), and returns its ID: the span Span adds for a Span with
// only Name, Start, Track, Args and Unfinished set, for a reader that
// begins millions of them (a Go execution trace's goroutine states and
// runs) without building a Span each.
func (b *Builder) BeginTrackSlice(track uint32, name string, start int64, args []Arg) uint64 {
	r := b.add(KindSpan, name, start, args)
	r.level = 1
	r.lane = track
	r.flags |= FlagOnTrack
	b.markSpan(r.id)
	r.builtEnd(openAtStop)
	return b.commit(r)
}

// Instant adds a point event on a track (or, with track 0, on the lane of
// parent, or on the program's process when parent is 0 too). An instant
// of another process that is on none of its threads goes on that
// process's TrackProcess track (Builder.ProcessTrack).
func (b *Builder) Instant(name string, t int64, track uint32, parent uint64, args []Arg) {
	r := b.add(KindInstant, name, t, args)
	r.level = 1
	r.parent = parent
	if track != 0 {
		r.lane = track
		r.flags |= FlagOnTrack
	}
	r.builtEnd(t + 1)
	b.commit(r)
}

// Counter adds one sample of a counter series; unit is "" for a plain
// number.
func (b *Builder) Counter(name, unit string, t int64, v float64) {
	r := b.add(KindCounter, name, t, []Arg{{Key: unit, Kind: ArgFloat, Num: math.Float64bits(v)}})
	r.builtEnd(t + 1)
	b.commit(r)
}

// TrackCounter adds one sample of a counter series of a registered track:
// a device's (its utilization, on its TrackDevice track), a process's (on
// its TrackProcess track, Builder.ProcessTrack) or a thread's (on its
// TrackHostThread track).
func (b *Builder) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	r := b.add(KindCounter, name, t, []Arg{{Key: unit, Kind: ArgFloat, Num: math.Float64bits(v)}})
	r.lane = track
	r.flags |= FlagOnTrack
	r.builtEnd(t + 1)
	b.commit(r)
}

// Activity adds a complete event on a registered track (device activity)
// of unknown kind and returns its ID.
func (b *Builder) Activity(track uint32, name string, start, end int64, args []Arg) uint64 {
	return b.ActivityOf(ActivityUnknown, track, name, start, end, args)
}

// ActivityOf is Activity for device activity of a known kind.
func (b *Builder) ActivityOf(kind ActivityKind, track uint32, name string, start, end int64, args []Arg) uint64 {
	r := b.add(KindActivity, name, start, args)
	r.lane = track
	r.id2 = int64(kind)
	r.builtEnd(max(end, start) + 1)
	return b.commit(r)
}

// AddDrops records that the original recording's source lost n events
// (see Meta.AddDrops).
func (b *Builder) AddDrops(source string, n int64) { b.meta.AddDrops(source, n) }

// SetMaxEvents records the original recording's bound on events.
func (b *Builder) SetMaxEvents(n int64) { b.meta.MaxEvents = n }

// Warn adds a warning to the snapshot's metadata.
func (b *Builder) Warn(w Warning) { b.meta.Warnings = append(b.meta.Warnings, w) }

// Note adds a note (how the trace was made) to the snapshot's metadata.
func (b *Builder) Note(n Note) { b.meta.Notes = append(b.meta.Notes, n) }

// Snapshot returns the built snapshot. The builder must not be used after.
func (b *Builder) Snapshot() *Snapshot {
	events := make([]*Record, 0, b.events)
	for i := range b.segs {
		recs := b.segs[i].recs
		if b.segs[i].args == 0 {
			for j := range recs {
				events = append(events, &recs[j])
			}
			continue
		}
		for j := range recs {
			if recs[j].kind != kindArgs {
				events = append(events, &recs[j])
			}
		}
	}
	// The builder is done: its tracks are the snapshot's, not copied (a
	// Go execution trace has a track per goroutine, 100,000 by default).
	s := &Snapshot{Meta: b.meta, Events: events, Tracks: slices.Clip(b.tracks), Processes: slices.Clone(b.procs), segs: b.segs, strs: b.strs}
	s.validUTF8()
	return s
}

// add stores a record of kind with its name, start and arguments (taking
// continuation records in the same segment for overflow arguments).
func (b *Builder) add(kind Kind, name string, start int64, args []Arg) *Record {
	n := min(len(args), 255)
	slots := 1
	if n > inlineArgs {
		slots += (n - inlineArgs + inlineArgs - 1) / inlineArgs
	}
	g := b.segment(slots)
	i := len(g.recs)
	g.recs = g.recs[:i+slots]
	g.args += slots - 1
	r := &g.recs[i]
	r.id = g.base + uint64(i) + 1
	r.kind = kind
	r.nameID = b.intern(name)
	r.start = start
	r.nargs = uint8(n)
	for j := 0; j < n; j++ {
		slot, at := r, j
		if j >= inlineArgs {
			slot, at = &g.recs[i+1+(j-inlineArgs)/inlineArgs], (j-inlineArgs)%inlineArgs
			slot.kind = kindArgs
			slot.nargs++
			slot.id = g.base + uint64(i+1+(j-inlineArgs)/inlineArgs) + 1
			slot.builtCommit()
		}
		slot.args[at] = b.store(&args[j])
	}
	return r
}

// segment returns the current segment with room for n more records,
// starting a new one when it has none.
func (b *Builder) segment(n int) *segment {
	if k := len(b.segs); k > 0 {
		g := &b.segs[k-1]
		if len(g.recs)+n <= cap(g.recs) {
			return g
		}
		b.nextID = g.base + uint64(len(g.recs))
	}
	b.segs = append(b.segs, segment{base: b.nextID, recs: make([]Record, 0, max(builderSegment, n))})
	return &b.segs[len(b.segs)-1]
}

func (b *Builder) commit(r *Record) uint64 {
	r.builtCommit()
	b.events++
	return r.id
}

func (b *Builder) store(a *Arg) storedArg {
	sa := storedArg{num: a.Num, key: b.intern(a.Key), kind: a.Kind}
	if a.Kind == ArgString {
		sa.num = uint64(b.intern(a.Str))
	}
	return sa
}

// intern returns the string id of s, adding s to the string table when
// new. A string at the address and of the length of one it interned
// lately is that string (the cache keeps it alive, so the memory holds
// the same bytes): its id is found without hashing it. The cache has two
// ways, so that two of a trace's few names that hash alike do not evict
// each other an event.
func (b *Builder) intern(s string) uint32 {
	p := unsafe.StringData(s)
	h := (uint64(uintptr(unsafe.Pointer(p))) + uint64(len(s))) * 0x9e3779b97f4a7c15 // Fibonacci hashing: nearby addresses spread
	i := h >> (64 - internCacheBits) &^ 1
	c := &b.recent[i]
	if unsafe.StringData(c.s) == p && len(c.s) == len(s) && p != nil {
		return c.id
	}
	if d := &b.recent[i+1]; unsafe.StringData(d.s) == p && len(d.s) == len(s) && p != nil {
		return d.id
	}
	id := b.lookup(s)
	b.recent[i+1] = *c
	c.s, c.id = s, id
	return id
}

// lookup returns the id of s, adding it to the string table when new.
// names is open-addressed with linear probing, at most half full; a
// slot's home is its hash's low bits, so that growing re-places slots
// from the hashes they keep, never hashing a string again.
func (b *Builder) lookup(s string) uint32 {
	if s == "" {
		return 0
	}
	h := uint32(maphash.String(b.seed, s) >> 32)
	mask := uint32(len(b.names) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := b.names[i]
		if e == 0 {
			id := uint32(len(b.strs))
			b.strs = append(roomForOne(b.strs), s)
			b.names[i] = uint64(h)<<32 | uint64(id)
			if b.namesUsed++; b.namesUsed*2 > len(b.names) {
				b.growNames()
			}
			return id
		}
		if uint32(e>>32) == h && b.strs[uint32(e)] == s {
			return uint32(e)
		}
	}
}

// roomForOne returns s with room to append one more element, doubling
// its capacity when full: append grows a long slice by a quarter, and a
// reader of a Go execution trace appends a name and a track per
// goroutine, hundreds of thousands, each growth copying (and, for
// strings and tracks, passing through the write barriers) all before.
func roomForOne[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(len(s), 8))
}

// growNames doubles names.
func (b *Builder) growNames() {
	old := b.names
	b.names = make([]uint64, 2*len(old))
	mask := uint32(len(b.names) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := uint32(e>>32) & mask
		for b.names[i] != 0 {
			i = (i + 1) & mask
		}
		b.names[i] = e
	}
}

// builtEnd sets the end word of a record the Builder is filling (end
// time + 1, or openAtStop) with a plain store, as builtCommit does.
func (r *Record) builtEnd(e int64) { *(*int64)(unsafe.Pointer(&r.end)) = e }

// builtCommit marks a record the Builder filled as committed. The
// recorder's writers race its readers and so write a record's state
// and end atomically; a Builder is used by one goroutine and publishes
// its records only through Snapshot, so it writes them as plain memory:
// a locked instruction per word waits for the record's earlier stores
// to reach the cache, and a reader fills millions of records in fresh
// memory.
func (r *Record) builtCommit() { *(*uint32)(unsafe.Pointer(&r.state)) = 1 }
