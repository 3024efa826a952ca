package event

import "unsafe"

// Sink is what a reader writes a trace into as it decodes it: the
// Builder, which keeps every event (devprof convert, serve), or a
// consumer that keeps only what it needs (devprof summary's aggregator,
// which holds names and open spans, not events). A reader that writes
// through a Sink instead of building a Snapshot of its own streams: the
// whole file, an intermediate copy and the model are never held at once.
//
// Times are nanoseconds on the reader's timeline. Argument slices (and
// the Span's) belong to the reader, which reuses them once the call
// returns: a sink copies what it keeps. IDs returned by Span,
// TrackSlice and ActivityOf are the sink's; a reader passes them back as
// parents and to EndSpan, and a sink that keeps no events may return any
// non-zero number unique within the trace.
type Sink interface {
	// Track registers a track and returns its id (non-zero).
	Track(t Track) uint32
	// SetTrackName renames a registered track (a reader that learns a
	// track's name only later in the file).
	SetTrackName(id uint32, name string)
	// Process registers a process besides the program and returns its
	// number for Track.Process (non-zero).
	Process(p Process) int
	// ProcessTrack returns the TrackProcess track of a process (0: the
	// program), registering it on first use.
	ProcessTrack(process int) uint32
	// Span adds a span and returns its ID. A span whose end the reader
	// does not know yet is added Unfinished and ended later with EndSpan.
	Span(s Span) uint64
	// EndSpan ends a span added Unfinished at time end; a span that
	// never gets an EndSpan stays unfinished.
	EndSpan(id uint64, end int64)
	// TrackSlice adds a root span on a registered track (see
	// Builder.TrackSlice).
	TrackSlice(track uint32, name string, start, end int64, args []Arg) uint64
	// Instant adds a point event (see Builder.Instant).
	Instant(name string, t int64, track uint32, parent uint64, args []Arg)
	// Counter adds one sample of the program's counter series.
	Counter(name, unit string, t int64, v float64)
	// TrackCounter adds one sample of a registered track's counter
	// series.
	TrackCounter(track uint32, name, unit string, t int64, v float64)
	// ActivityOf adds device activity of a known kind and returns its ID.
	ActivityOf(kind ActivityKind, track uint32, name string, start, end int64, args []Arg) uint64
	// Meta is the trace's metadata, for the reader to fill in as it
	// learns it (the time span at the end of the file, drops, warnings,
	// notes). It stays valid until the sink is done.
	Meta() *Meta
	// Reset discards everything written so far, metadata included (back
	// to what the sink was made with): a reader that finds late in a file
	// that it must read it again from the start (a Perfetto trace whose
	// events are out of order beyond what it sorts as it goes) starts
	// over in the same sink.
	Reset()
}

var _ Sink = (*Builder)(nil)

// EndSpan ends span id, added Unfinished, at end: a reader that pairs
// begin and end events adds the span at its begin (so that its children
// can name it as their parent) and ends it when the end arrives. It does
// nothing to a span that has ended, or to an ID the builder did not give.
func (b *Builder) EndSpan(id uint64, end int64) {
	r := b.record(id)
	if r == nil || r.kind != KindSpan && r.kind != KindActivity {
		return
	}
	if *(*int64)(unsafe.Pointer(&r.end)) != openAtStop {
		return
	}
	r.builtEnd(max(end, r.start) + 1)
}

// Meta returns the metadata the snapshot will have, for a reader to fill
// in as it reads.
func (b *Builder) Meta() *Meta { return &b.meta }

// Reset discards every track, process and event added so far, and any
// change made to the metadata since NewBuilder: the builder is as
// NewBuilder made it.
func (b *Builder) Reset() { *b = *NewBuilder(b.initial) }

// record returns the record with ID id, nil if there is none.
func (b *Builder) record(id uint64) *Record {
	if id == 0 {
		return nil
	}
	// A reader ends its spans soon after it adds them: the last segment
	// first.
	if k := len(b.segs); k > 0 {
		if g := &b.segs[k-1]; id > g.base {
			if i := id - g.base - 1; i < uint64(len(g.recs)) {
				return &g.recs[i]
			}
			return nil
		}
	}
	// Segments are in ID order: find the last whose base is below id.
	lo, hi := 0, len(b.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.segs[m].base < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	g := &b.segs[lo-1]
	i := id - g.base - 1
	if i >= uint64(len(g.recs)) {
		return nil
	}
	return &g.recs[i]
}
