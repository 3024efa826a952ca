package event

import (
	"cmp"
	"slices"
	"sync"
)

// Meta is what exporters need to know about a session besides its events.
type Meta struct {
	Host    string // host name as it appears in file names and outputs
	PID     int
	Program string // process name shown in the outputs

	Start, Stop ClockAnchor // clock readings at session start and stop

	HostTracerLevel   int
	DeviceTracerLevel int
	MaxEvents         int64
	Dropped           int64    // events lost because the buffer was full
	Warnings          []string // problems worth showing to the user (e.g. a source that failed)
	Notes             []string // facts about how the trace was made (e.g. which clock a device source used)
}

// BootNanos converts session ticks to CLOCK_BOOTTIME nanoseconds.
func (m *Meta) BootNanos(t int64) int64 { return t - m.Start.Mono + m.Start.Boot }

// WallNanos converts session ticks to Unix nanoseconds.
func (m *Meta) WallNanos(t int64) int64 { return t - m.Start.Mono + m.Start.Wall }

// Snapshot is the read-only view exporters get of a stopped session.
type Snapshot struct {
	Meta Meta
	// Events holds every committed record in buffer order (no sorting
	// implied). Continuation records are not listed; use Args.
	Events []*Record
	// Tracks lists registered tracks; KindActivity records refer to
	// Tracks[Lane-1].
	Tracks []Track

	chunks []*chunk // sorted by base, for Lookup
	strs   []string // string table: id -> string

	layoutOnce sync.Once
	layout     *Layout
}

// Snapshot collects the committed records of b, converting their times to
// monotonic nanoseconds. Call it once, after Deactivate; records committed
// later are not seen, and spans still open are closed at the stop time.
// meta.Dropped is filled in.
func (b *Buffer) Snapshot(meta Meta) *Snapshot {
	s := &Snapshot{Meta: meta}
	s.Meta.Dropped = b.Dropped()
	s.Meta.MaxEvents = b.maxRecords
	for c := b.chunks.Load(); c != nil; c = c.prev {
		s.chunks = append(s.chunks, c)
	}
	slices.SortFunc(s.chunks, func(a, b *chunk) int { return cmp.Compare(a.base, b.base) })
	n := 0
	for _, c := range s.chunks {
		n += int(min(c.next.Load(), int64(len(c.recs))))
	}
	var conv func(int64) int64
	if b.cal != nil {
		b.cal.add()
		conv = b.cal.converter()
	}
	s.Events = make([]*Record, 0, n)
	for _, c := range s.chunks {
		used := min(c.next.Load(), int64(len(c.recs)))
		for i := range used {
			r := &c.recs[i]
			if !r.committed() || r.Kind == kindArgs {
				continue
			}
			// Close open spans for good, then turn ticks into nanoseconds.
			r.end.CompareAndSwap(0, openAtStop)
			if conv != nil && r.Flags&FlagMonoTime == 0 {
				r.Start = conv(r.Start)
				if e := r.end.Load(); e != openAtStop {
					r.end.Store(conv(e-1) + 1)
				}
			}
			s.Events = append(s.Events, r)
		}
	}
	b.mu.Lock()
	s.Tracks = slices.Clone(b.tracks)
	b.mu.Unlock()
	s.strs = b.strs.snapshot()
	return s
}

// Lookup returns the committed record with the given ID, or nil.
func (s *Snapshot) Lookup(id uint64) *Record {
	if id == 0 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(s.chunks, id, func(c *chunk, id uint64) int {
		switch {
		case id <= c.base:
			return 1
		case id > c.base+uint64(len(c.recs)):
			return -1
		}
		return 0
	})
	if i >= len(s.chunks) {
		return nil
	}
	c := s.chunks[i]
	if id <= c.base || id > c.base+uint64(len(c.recs)) {
		return nil
	}
	r := &c.recs[id-c.base-1]
	if !r.committed() || r.Kind == kindArgs {
		return nil
	}
	return r
}

// Name returns the name of r.
func (s *Snapshot) Name(r *Record) string { return s.String(r.NameID) }

// String returns the string with the given id in the snapshot's string
// table ("" for an unknown id).
func (s *Snapshot) String(id uint32) string {
	if int(id) < len(s.strs) {
		return s.strs[id]
	}
	return ""
}

// Args returns all arguments of r, inline and overflow, in a new slice.
// Exporters that visit every record use AppendArgs with a reused slice.
func (s *Snapshot) Args(r *Record) []Arg {
	if r.NArgs == 0 {
		return nil
	}
	return s.AppendArgs(make([]Arg, 0, r.NArgs), r)
}

// AppendArgs appends all arguments of r to dst and returns the result.
func (s *Snapshot) AppendArgs(dst []Arg, r *Record) []Arg {
	n := int(r.NArgs)
	for i := 0; i < min(n, InlineArgs); i++ {
		dst = append(dst, s.arg(&r.args[i]))
	}
	if n <= InlineArgs {
		return dst
	}
	left := n - InlineArgs
	for c := r; left > 0; {
		c = c.next() // only while arguments are left: the last record may end its chunk
		if c.Kind != kindArgs {
			break
		}
		for i := 0; i < int(c.NArgs) && left > 0; i++ {
			dst = append(dst, s.arg(&c.args[i]))
			left--
		}
	}
	return dst
}

func (s *Snapshot) arg(sa *slotArg) Arg {
	a := Arg{Key: s.String(sa.key), Kind: sa.kind, Num: sa.num}
	if a.Kind == ArgString {
		a.Str, a.Num = s.String(uint32(sa.num)), 0
	}
	return a
}

// EndOf returns when r ended, in ticks. A span still open when the session
// stopped ends at the stop time and finished is false.
func (s *Snapshot) EndOf(r *Record) (end int64, finished bool) {
	if r.Ended() {
		return r.End(), true
	}
	if r.Kind == KindInstant || r.Kind == KindCounter {
		return r.Start, true
	}
	return max(s.Meta.Stop.Mono, r.Start), false
}

// Counter returns the unit and value of a KindCounter sample.
func (s *Snapshot) Counter(r *Record) (unit string, v float64) {
	a := s.arg(&r.args[0])
	return a.Key, a.Float()
}
