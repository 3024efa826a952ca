package event

import "math"

// FlagOnTrack marks a span or instant that belongs to a registered Track
// (its Lane holds the track id) rather than to a lane of its own: spans read
// from a file keep the thread they were recorded on.
const FlagOnTrack uint8 = 1 << 1

// Builder makes a Snapshot out of events recorded elsewhere, such as a
// trace file being converted. Times are in ticks: nanoseconds on any
// timeline, with Meta.Start.Mono as the session start. A Builder is not
// safe for concurrent use.
type Builder struct {
	buf   *Buffer
	meta  Meta
	lanes map[uint64]uint32 // span ID -> lane, so children share their root's lane
}

// NewBuilder returns a builder for a snapshot with the given metadata.
func NewBuilder(meta Meta) *Builder {
	// One shard: a builder runs on one goroutine, and a single shard keeps
	// record IDs, and so layout tie-breaks, the same from run to run.
	return &Builder{buf: newBuffer(math.MaxInt64, 3, 1), meta: meta, lanes: map[uint64]uint32{}}
}

// Track registers a track and returns its id.
func (b *Builder) Track(t Track) uint32 { return b.buf.AddTrack(t) }

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

func (b *Builder) reserve(nargs int) *Record {
	r := b.buf.Reserve(SlotsFor(nargs))
	if r == nil { // cannot happen with an unbounded budget
		panic("event: builder buffer full")
	}
	return r
}

// Span adds a span and returns its ID.
func (b *Builder) Span(s Span) uint64 {
	r := b.reserve(len(s.Args))
	r.Kind = KindSpan
	r.Level = 1
	r.SetName(b.buf, s.Name)
	r.Start = s.Start
	r.Parent = s.Parent
	r.Lane = uint32(r.ID)
	if l, ok := b.lanes[s.Parent]; ok {
		r.Lane = l
	}
	b.lanes[r.ID] = r.Lane
	if s.Track != 0 {
		r.Lane = s.Track
		r.Flags |= FlagOnTrack
	}
	if s.Step {
		r.Flags |= FlagStep
		r.ID2 = s.StepNum
	}
	if len(s.Args) > 0 {
		r.SetArgs(b.buf, s.Args)
	}
	if !s.Unfinished {
		r.SetEnd(max(s.End, s.Start))
	}
	r.Commit()
	return r.ID
}

// Instant adds a point event on a track (or, with track 0, on the lane of
// parent, or on the process when parent is 0 too).
func (b *Builder) Instant(name string, t int64, track uint32, parent uint64, args []Arg) {
	r := b.reserve(len(args))
	r.Kind = KindInstant
	r.Level = 1
	r.SetName(b.buf, name)
	r.Start = t
	r.Parent = parent
	if track != 0 {
		r.Lane = track
		r.Flags |= FlagOnTrack
	}
	if len(args) > 0 {
		r.SetArgs(b.buf, args)
	}
	r.SetEnd(t)
	r.Commit()
}

// Counter adds one sample of a counter series.
func (b *Builder) Counter(name, unit string, t int64, v float64) {
	r := b.reserve(1)
	r.Kind = KindCounter
	r.SetName(b.buf, name)
	r.SetArgs(b.buf, []Arg{{Key: unit, Kind: ArgFloat, Num: math.Float64bits(v)}})
	r.Start = t
	r.SetEnd(t)
	r.Commit()
}

// Activity adds a complete event on a registered track (device activity)
// and returns its ID.
func (b *Builder) Activity(track uint32, name string, start, end int64, args []Arg) uint64 {
	return b.buf.Activity(track, name, start, end, args)
}

// TrackInfo returns a registered track.
func (b *Builder) TrackInfo(id uint32) (Track, bool) {
	b.buf.mu.Lock()
	defer b.buf.mu.Unlock()
	if id == 0 || int(id) > len(b.buf.tracks) {
		return Track{}, false
	}
	return b.buf.tracks[id-1], true
}

// SetDropped records how many events the original recording lost, and its
// bound.
func (b *Builder) SetDropped(dropped, maxEvents int64) {
	b.meta.Dropped, b.meta.MaxEvents = dropped, maxEvents
}

// Warn adds a warning to the snapshot's metadata.
func (b *Builder) Warn(msg string) { b.meta.Warnings = append(b.meta.Warnings, msg) }

// Note adds a note (how the trace was made) to the snapshot's metadata.
func (b *Builder) Note(msg string) { b.meta.Notes = append(b.meta.Notes, msg) }

// Snapshot returns the built snapshot. Meta.Dropped keeps the value given
// to NewBuilder (events the original recording lost).
func (b *Builder) Snapshot() *Snapshot {
	dropped := b.meta.Dropped
	s := b.buf.Snapshot(b.meta)
	s.Meta.Dropped = dropped
	s.Meta.MaxEvents = b.meta.MaxEvents
	return s
}

// FlagMonoTime marks a record whose times are monotonic nanoseconds
// already, not ticks: a device source that converts its own clock writes
// them, and Snapshot leaves their times as they are.
const FlagMonoTime uint8 = 1 << 2

// Activity records a complete event on a registered track: the entry
// point of device sources (CUPTI activity records). start and end are
// ticks (Now). It returns the record's ID, or 0 if the buffer was full.
func (b *Buffer) Activity(track uint32, name string, start, end int64, args []Arg) uint64 {
	return b.activity(track, name, start, end, args, 0)
}

// ActivityMono is Activity with start and end in monotonic nanoseconds
// (the session timeline, Meta.Start.Mono and on), for sources whose clock
// is converted by the source itself.
func (b *Buffer) ActivityMono(track uint32, name string, start, end int64, args []Arg) uint64 {
	return b.activity(track, name, start, end, args, FlagMonoTime)
}

func (b *Buffer) activity(track uint32, name string, start, end int64, args []Arg, flags uint8) uint64 {
	r := b.Reserve(SlotsFor(len(args)))
	if r == nil {
		return 0
	}
	r.Flags = flags
	r.Kind = KindActivity
	r.SetName(b, name)
	r.Lane = track
	r.Start = start
	if len(args) > 0 {
		r.SetArgs(b, args)
	}
	r.SetEnd(max(end, start))
	r.Commit()
	return r.ID
}

// CounterMono records one sample of a counter series at t, in monotonic
// nanoseconds (see ActivityMono); unit is "" for a plain number.
func (b *Buffer) CounterMono(name, unit string, t int64, v float64) {
	r := b.Reserve(1)
	if r == nil {
		return
	}
	r.Kind = KindCounter
	r.Flags = FlagMonoTime
	r.SetName(b, name)
	r.SetArgs(b, []Arg{{Key: unit, Kind: ArgFloat, Num: math.Float64bits(v)}})
	r.Start = t
	r.SetEnd(t)
	r.Commit()
}

// ChildSpanMono records a finished span, start and end in monotonic
// nanoseconds, as a child of span parent on lane: a device source places
// the API calls a span made (a kernel launch) beneath it. It returns the
// record's ID, or 0 if the buffer was full.
func (b *Buffer) ChildSpanMono(parent uint64, lane uint32, name string, start, end int64, args []Arg) uint64 {
	r := b.Reserve(SlotsFor(len(args)))
	if r == nil {
		return 0
	}
	r.Kind = KindSpan
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
