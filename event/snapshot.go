package event

import (
	"slices"
	"sync"
	"unsafe"
)

// Snapshot is a finished trace: what a session recorded, or what a reader
// found in a file. It is read-only; exporters and tools share one.
type Snapshot struct {
	Meta Meta
	// Events holds every record in storage order (no sorting implied).
	// Continuation records that hold overflow arguments are not listed;
	// use Args.
	Events []*Record
	// Tracks lists registered tracks; KindActivity and FlagOnTrack records
	// refer to Tracks[Lane-1].
	Tracks []Track
	// Processes lists the processes other than the recording program
	// (Meta.PID, Meta.Program) that tracks belong to (Track.Process): a
	// session's trace has none, a trace of several processes read from a
	// file has one each.
	Processes []Process

	segs []segment // sorted by base, for Lookup
	strs []string  // string table: id -> string

	layoutOnce sync.Once
	layout     *Layout
}

// segment is a run of stored records with consecutive IDs: recs[i] has
// ID base+i+1. A record's overflow arguments follow it in its segment.
type segment struct {
	base uint64
	recs []Record
	// args counts the continuation records among recs, where a Builder
	// made the segment: Builder.Snapshot lists a segment without any
	// without reading its records.
	args int
}

// adopt makes a Snapshot of records written in place by the recorder
// (internal/recorder binds it with go:linkname, so that recording stays
// out of this package's API and a session's records are never copied).
// chunks[i] holds the records with IDs bases[i]+1 and on, sorted by base;
// events lists the committed records to show, already on the monotonic
// timeline, with open spans marked.
//
//go:linkname adopt
//lint:ignore U1000 called from internal/recorder through go:linkname
func adopt(meta Meta, bases []uint64, chunks [][]Record, events []*Record, tracks []Track, strs []string) *Snapshot {
	s := &Snapshot{Meta: meta, Events: events, Tracks: tracks, strs: strs}
	s.segs = make([]segment, len(chunks))
	for i := range chunks {
		s.segs[i] = segment{base: bases[i], recs: chunks[i]}
	}
	s.validUTF8()
	return s
}

// Lookup returns the record with the given ID, or nil.
func (s *Snapshot) Lookup(id uint64) *Record {
	if id == 0 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(s.segs, id, func(g segment, id uint64) int {
		switch {
		case id <= g.base:
			return 1
		case id > g.base+uint64(len(g.recs)):
			return -1
		}
		return 0
	})
	if i >= len(s.segs) {
		return nil
	}
	g := s.segs[i]
	if id <= g.base || id > g.base+uint64(len(g.recs)) {
		return nil
	}
	r := &g.recs[id-g.base-1]
	if !r.committed() || r.kind == kindArgs {
		return nil
	}
	return r
}

// Name returns the name of r.
func (s *Snapshot) Name(r *Record) string { return s.String(r.nameID) }

// String returns the string with the given id in the snapshot's string
// table ("" for an unknown id).
func (s *Snapshot) String(id uint32) string {
	if int(id) < len(s.strs) {
		return s.strs[id]
	}
	return ""
}

// Args returns all arguments of r, inline and overflow, in a new slice.
// Code that visits every record uses AppendArgs with a reused slice.
func (s *Snapshot) Args(r *Record) []Arg {
	if r.nargs == 0 {
		return nil
	}
	return s.AppendArgs(make([]Arg, 0, r.nargs), r)
}

// AppendArgs appends all arguments of r to dst and returns the result.
func (s *Snapshot) AppendArgs(dst []Arg, r *Record) []Arg {
	for i := range min(int(r.nargs), inlineArgs) {
		dst = append(dst, s.arg(&r.args[i]))
	}
	if r.nargs > inlineArgs {
		for a := range r.moreArgs {
			dst = append(dst, s.arg(a))
		}
	}
	return dst
}

// moreArgs yields, in order, the arguments r does not hold itself: those
// of the continuation records after it. The three Append methods read
// r's own arguments directly (the common case, with no call per
// argument) and the rest through it.
func (r *Record) moreArgs(yield func(*storedArg) bool) {
	for c, left := r, int(r.nargs)-inlineArgs; left > 0; {
		c = c.next() // only while arguments are left: the last record may end its segment
		if c.kind != kindArgs {
			return
		}
		for i := 0; i < int(c.nargs) && left > 0; i++ {
			if !yield(&c.args[i]) {
				return
			}
			left--
		}
	}
}

// ArgRef is an argument as a snapshot stores it: its key, and a string
// value, as ids of the snapshot's string table (Snapshot.String). Writers
// that intern strings themselves can key their tables by these ids instead
// of resolving every argument of every record to strings.
type ArgRef struct {
	// Num is the value (as Arg.Num); for ArgString, the string id of the
	// value.
	Num uint64
	// Key is the string id of the key.
	Key uint32
	// Kind is the value's kind.
	Kind ArgKind
}

// AppendArgRefs appends the arguments of r to dst as AppendArgs does,
// with keys and string values left as string ids.
func (s *Snapshot) AppendArgRefs(dst []ArgRef, r *Record) []ArgRef {
	for i := range min(int(r.nargs), inlineArgs) {
		a := &r.args[i]
		dst = append(dst, ArgRef{Num: a.num, Key: a.key, Kind: a.kind})
	}
	if r.nargs > inlineArgs {
		for a := range r.moreArgs {
			dst = append(dst, ArgRef{Num: a.num, Key: a.key, Kind: a.kind})
		}
	}
	return dst
}

// NumStrings returns how many strings the snapshot's string table holds:
// its ids run from 0 to NumStrings()-1.
func (s *Snapshot) NumStrings() int { return len(s.strs) }

// AppendFlows appends the flow ids of r (its ArgFlow arguments, in
// argument order) to dst and returns the result: what AppendArgs would
// give as ArgFlow arguments, without resolving every other argument's key
// and value. Writers that visit every record only to pair flow ends use
// it; on a trace of a million spans with one argument each it costs a
// fraction of AppendArgs.
func (s *Snapshot) AppendFlows(dst []uint64, r *Record) []uint64 {
	for i := range min(int(r.nargs), inlineArgs) {
		if r.args[i].kind == ArgFlow {
			dst = append(dst, r.args[i].num)
		}
	}
	if r.nargs > inlineArgs {
		for a := range r.moreArgs {
			if a.kind == ArgFlow {
				dst = append(dst, a.num)
			}
		}
	}
	return dst
}

func (s *Snapshot) arg(sa *storedArg) Arg {
	a := Arg{Key: s.String(sa.key), Kind: sa.kind, Num: sa.num}
	if a.Kind == ArgString {
		a.Str, a.Num = s.String(uint32(sa.num)), 0
	}
	return a
}

// next returns the record that follows r in its segment. Only valid for a
// record whose overflow arguments are stored after it.
func (r *Record) next() *Record {
	return (*Record)(unsafe.Add(unsafe.Pointer(r), unsafe.Sizeof(Record{})))
}

// EndOf returns when r ended. A span still open when the session stopped
// ends at the stop time and finished is false.
func (s *Snapshot) EndOf(r *Record) (end int64, finished bool) {
	if r.Ended() {
		return r.End(), true
	}
	if r.kind == KindInstant || r.kind == KindCounter {
		return r.start, true
	}
	return max(s.Meta.Stop.Mono, r.start), false
}

// Counter returns the unit and value of a KindCounter sample.
func (s *Snapshot) Counter(r *Record) (unit string, v float64) {
	a := s.arg(&r.args[0])
	return a.Key, a.Float()
}
