package recorder

import (
	"math"

	"github.com/devprof/devprof/event"
)

// Activity records a complete event on a registered track: the entry
// point of device sources (CUPTI activity records). start and end are
// ticks (Now). It returns the record's ID, or 0 if the buffer was full.
func (b *Buffer) Activity(track uint32, kind event.ActivityKind, name string, start, end int64, args []event.Arg) uint64 {
	return b.activity(track, kind, name, start, end, args, 0)
}

// ActivityMono is Activity with start and end in monotonic nanoseconds
// (the session timeline, Meta.Start.Mono and on), for sources whose clock
// is converted by the source itself.
func (b *Buffer) ActivityMono(track uint32, kind event.ActivityKind, name string, start, end int64, args []event.Arg) uint64 {
	return b.activity(track, kind, name, start, end, args, FlagMonoTime)
}

func (b *Buffer) activity(track uint32, kind event.ActivityKind, name string, start, end int64, args []event.Arg, flags uint8) uint64 {
	return b.Put(&Entry{Kind: event.KindActivity, Flags: flags, Lane: track, ID2: int64(kind), Start: start, End: end}, name, args)
}

// TrackCounterMono records one sample of a counter series at t, in
// monotonic nanoseconds (see ActivityMono), for a series of a registered
// track (a device's counters, on its event.TrackDevice track) or, with
// track 0, the host's; unit is "" for a plain number.
func (b *Buffer) TrackCounterMono(track uint32, name, unit string, t int64, v float64) {
	e := Entry{Kind: event.KindCounter, Flags: FlagMonoTime, Start: t, End: t}
	if track != 0 {
		e.Flags |= event.FlagOnTrack
		e.Lane = track
	}
	b.Put(&e, name, []event.Arg{{Key: unit, Kind: event.ArgFloat, Num: math.Float64bits(v)}})
}

// ChildSpanMono records a finished span, start and end in monotonic
// nanoseconds, as a child of span parent on lane: a device source places
// the API calls a span made (a kernel launch) beneath it. It returns the
// record's ID, or 0 if the buffer was full.
func (b *Buffer) ChildSpanMono(parent uint64, lane uint32, name string, start, end int64, args []event.Arg) uint64 {
	return b.Put(&Entry{Kind: event.KindSpan, Level: 1, Flags: FlagMonoTime, Parent: parent, Lane: lane, Start: start, End: end}, name, args)
}
