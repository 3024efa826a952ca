package recorder

import (
	"runtime"

	"github.com/devprof/devprof/event"
)

// TrackSpanMono records a finished span on a registered track (a
// FlagOnTrack span: a thread a source knows, such as a P of the Go
// runtime), start and end in monotonic nanoseconds, as a child of span
// parent (0: a root). A parent on another row is linked to it by every
// exporter (the layout marks it Displaced). It returns the record's ID,
// or 0 if the buffer was full.
func (b *Buffer) TrackSpanMono(track uint32, parent uint64, name string, start, end int64, args []event.Arg) uint64 {
	return b.Put(&Entry{
		Kind: event.KindSpan, Level: 1, Flags: FlagMonoTime | event.FlagOnTrack,
		Lane: track, Parent: parent, Start: start, End: end,
	}, name, args)
}

// TrackInstantMono records a point event on a registered track at t, in
// monotonic nanoseconds.
func (b *Buffer) TrackInstantMono(track uint32, name string, t int64, args []event.Arg) {
	b.Put(&Entry{
		Kind: event.KindInstant, Level: 1, Flags: FlagMonoTime | event.FlagOnTrack,
		Lane: track, Start: t, End: t,
	}, name, args)
}

// SpanOrigin is where and when a host span began: its record, the P whose
// chunk it was reserved in, and its start and end in monotonic
// nanoseconds (End 0 while open).
type SpanOrigin struct {
	ID, Parent uint64
	Name       string
	P          int
	Start, End int64
}

// SpanOrigins returns the host spans recorded so far (not those on
// tracks) with the P each was reserved on, so that a source that knows
// what ran on each P (the Go runtime's execution trace) can tell which
// goroutine began each span, at no cost to the span itself. ok is false
// when Ps cannot be told apart: GOMAXPROCS grew past the shards the
// buffer was made with. Records taken from another shard's chunk once the
// budget was spent carry that shard's P.
func (b *Buffer) SpanOrigins() (spans []SpanOrigin, ok bool) {
	if runtime.GOMAXPROCS(0) > len(b.shards) || b.ring != nil {
		// A flight recorder recycles chunks: its records are read through
		// its snapshots, not here.
		return nil, false
	}
	conv := func(t int64) int64 { return t }
	if b.cal != nil {
		b.cal.add()
		conv = b.cal.converter()
	}
	for c := b.chunks.Load(); c != nil; c = c.prev {
		used := min(c.loadNext(), int64(len(c.recs)))
		for i := range used {
			r := &c.recs[i]
			if !r.committed() || r.Kind != event.KindSpan || r.Flags&(event.FlagOnTrack|FlagMonoTime) != 0 {
				continue
			}
			o := SpanOrigin{ID: c.base + uint64(i) + 1, Parent: r.Parent, Name: b.strs.name(r.NameID), P: int(c.shard), Start: conv(r.Start)}
			if r.Ended() {
				o.End = conv(r.End())
			}
			spans = append(spans, o)
		}
	}
	return spans, true
}
