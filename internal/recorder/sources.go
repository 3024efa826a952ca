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
	r := b.Reserve(SlotsFor(len(args)))
	if r == nil {
		return 0
	}
	r.Flags = flags
	r.Kind = event.KindActivity
	r.SetName(b, name)
	r.Lane = track
	r.ID2 = int64(kind)
	r.Start = start
	if len(args) > 0 {
		r.SetArgs(b, args)
	}
	r.SetEnd(max(end, start))
	r.Commit()
	return r.ID
}

// TrackCounterMono records one sample of a counter series at t, in
// monotonic nanoseconds (see ActivityMono), for a series of a registered
// track (a device's counters, on its event.TrackDevice track) or, with
// track 0, the host's; unit is "" for a plain number.
func (b *Buffer) TrackCounterMono(track uint32, name, unit string, t int64, v float64) {
	r := b.Reserve(1)
	if r == nil {
		return
	}
	r.Kind = event.KindCounter
	r.Flags = FlagMonoTime
	if track != 0 {
		r.Flags |= event.FlagOnTrack
		r.Lane = track
	}
	r.SetName(b, name)
	r.SetArgs(b, []event.Arg{{Key: unit, Kind: event.ArgFloat, Num: math.Float64bits(v)}})
	r.Start = t
	r.SetEnd(t)
	r.Commit()
}

// ChildSpanMono records a finished span, start and end in monotonic
// nanoseconds, as a child of span parent on lane: a device source places
// the API calls a span made (a kernel launch) beneath it. It returns the
// record's ID, or 0 if the buffer was full.
func (b *Buffer) ChildSpanMono(parent uint64, lane uint32, name string, start, end int64, args []event.Arg) uint64 {
	r := b.Reserve(SlotsFor(len(args)))
	if r == nil {
		return 0
	}
	r.Kind = event.KindSpan
	r.Level = 1
	r.Flags = FlagMonoTime
	r.Parent, r.Lane = parent, lane
	r.SetName(b, name)
	r.Start = start
	if len(args) > 0 {
		r.SetArgs(b, args)
	}
	r.SetEnd(max(end, start))
	r.Commit()
	return r.ID
}
