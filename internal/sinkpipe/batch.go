package sinkpipe

import (
	"math"

	"github.com/devprof/devprof/event"
)

// op is one call queued for the sink, in the Pipe's IDs.
type op struct {
	kind     opKind
	flags    uint8
	activity event.ActivityKind
	track    uint32
	// args and nargs locate the call's arguments in its batch's args.
	args, nargs uint32
	// id is the call's parent span (Span, Instant), the span EndSpan
	// ends, the process ProcessTrack is of, or the index in the batch's
	// tracks or procs of what Track or Process registers.
	id         uint64
	start, end int64
	// num is a step's number, or a counter sample's bits.
	num        uint64
	name, unit string
}

type opKind uint8

const (
	opTrack opKind = iota + 1
	opSetTrackName
	opProcess
	opProcessTrack
	opSpan
	opEndSpan
	opTrackSlice
	opInstant
	opCounter
	opTrackCounter
	opActivity
)

const (
	flagUnfinished = 1 << iota
	flagStep
	flagKnown // a ProcessTrack whose track the Pipe handed out before
)

func floatBits(v float64) uint64 { return math.Float64bits(v) }

// batch is a run of calls with the storage their arguments, tracks and
// processes were copied into.
type batch struct {
	ops    []op
	argBuf []event.Arg
	tracks []event.Track
	procs  []event.Process
	facts  facts // the reader's when the batch was handed over
}

// facts are what of the metadata a batch carries to the sink, ahead of
// Close: what a sink that writes rows as events come (tables.Export)
// needs as soon as the reader knows it.
type facts struct {
	start         event.ClockAnchor
	host, program string
	pid           int
}

func factsOf(m *event.Meta) facts {
	return facts{start: m.Start, host: m.Host, program: m.Program, pid: m.PID}
}

// args copies a call's arguments into the batch.
func (b *batch) args(o *op, args []event.Arg) {
	if len(args) == 0 {
		return
	}
	o.args, o.nargs = uint32(len(b.argBuf)), uint32(len(args))
	b.argBuf = append(b.argBuf, args...)
}

// argsOf returns o's arguments, nil for none.
func (b *batch) argsOf(o *op) []event.Arg {
	if o.nargs == 0 {
		return nil
	}
	return b.argBuf[o.args : o.args+o.nargs : o.args+o.nargs]
}

// clear empties the batch for reuse, letting go of the strings it held.
func (b *batch) clear() {
	clear(b.ops)
	clear(b.argBuf)
	clear(b.tracks)
	clear(b.procs)
	b.ops, b.argBuf, b.tracks, b.procs = b.ops[:0], b.argBuf[:0], b.tracks[:0], b.procs[:0]
}

// apply makes a batch's calls on the sink, in order, translating the
// Pipe's IDs into the sink's.
func (p *Pipe) apply(b *batch) {
	s, m := p.sink, &p.ids
	meta := s.Meta()
	meta.Start, meta.Host, meta.Program, meta.PID = b.facts.start, b.facts.host, b.facts.program, b.facts.pid
	for i := range b.ops {
		o := &b.ops[i]
		switch o.kind {
		case opTrack:
			t := b.tracks[o.id]
			t.Process = m.process(t.Process)
			m.addTrack(s.Track(t))
		case opSetTrackName:
			s.SetTrackName(m.track(o.track), o.name)
		case opProcess:
			m.procs = append(m.procs, s.Process(b.procs[o.id]))
		case opProcessTrack:
			id := s.ProcessTrack(m.process(int(o.id)))
			if o.flags&flagKnown == 0 {
				m.addTrack(id)
			}
		case opSpan:
			m.addSpan(s.Span(event.Span{Name: o.name, Start: o.start, End: o.end, Parent: m.span(o.id), Track: m.track(o.track),
				Args: b.argsOf(o), Step: o.flags&flagStep != 0, StepNum: int64(o.num), Unfinished: o.flags&flagUnfinished != 0}))
		case opEndSpan:
			s.EndSpan(m.span(o.id), o.end)
		case opTrackSlice:
			m.addSpan(s.TrackSlice(m.track(o.track), o.name, o.start, o.end, b.argsOf(o)))
		case opInstant:
			s.Instant(o.name, o.start, m.track(o.track), m.span(o.id), b.argsOf(o))
		case opCounter:
			s.Counter(o.name, o.unit, o.start, math.Float64frombits(o.num))
		case opTrackCounter:
			s.TrackCounter(m.track(o.track), o.name, o.unit, o.start, math.Float64frombits(o.num))
		case opActivity:
			m.addSpan(s.ActivityOf(o.activity, m.track(o.track), o.name, o.start, o.end, b.argsOf(o)))
		}
	}
}

// idMap is the consumer's table of the sink's IDs by the Pipe's.
type idMap struct {
	tracks []uint32 // by Pipe track ID - 1
	procs  []int    // by Pipe process number - 1
	// runs map span IDs: from runs[k].pipe on, the Pipe's IDs go with
	// the sink's from runs[k].sink on, one for one, until the next run.
	runs  []idRun
	spans uint64 // the span IDs applied so far
}

type idRun struct{ pipe, sink uint64 }

func (m *idMap) reset() {
	m.tracks, m.procs, m.runs, m.spans = m.tracks[:0], m.procs[:0], m.runs[:0], 0
}

func (m *idMap) addTrack(id uint32) { m.tracks = append(m.tracks, id) }

// track returns the sink's ID of Pipe track id; 0 and IDs the Pipe did
// not hand out pass unchanged.
func (m *idMap) track(id uint32) uint32 {
	if id == 0 || uint64(id) > uint64(len(m.tracks)) {
		return id
	}
	return m.tracks[id-1]
}

// process returns the sink's number of Pipe process n; 0 (the program)
// and numbers the Pipe did not hand out pass unchanged.
func (m *idMap) process(n int) int {
	if n <= 0 || n > len(m.procs) {
		return n
	}
	return m.procs[n-1]
}

// addSpan records the sink's ID of the next Pipe span ID.
func (m *idMap) addSpan(id uint64) {
	m.spans++
	if k := len(m.runs); k > 0 {
		if r := m.runs[k-1]; r.sink+(m.spans-r.pipe) == id {
			return
		}
	}
	m.runs = append(m.runs, idRun{m.spans, id})
}

// span returns the sink's ID of Pipe span id; 0 and IDs the Pipe did not
// hand out pass unchanged.
func (m *idMap) span(id uint64) uint64 {
	if id == 0 || id > m.spans {
		return id
	}
	// The last run first: a reader refers mostly to recent spans, and a
	// sink numbering in sequence has one run.
	k := len(m.runs) - 1
	if m.runs[k].pipe > id {
		lo, hi := 0, k
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if m.runs[mid+1].pipe <= id {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		k = lo
	}
	r := m.runs[k]
	return r.sink + (id - r.pipe)
}
