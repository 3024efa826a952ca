package chrome

import (
	"errors"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

// This file holds the reader's streaming path. What Read makes of an
// event can depend on the whole file: times count from the earliest event
// (or from the session start, which devprof's writer puts in otherData
// after the events), a span's parent is the latest-starting span that
// contains it once a thread's spans are sorted, a pid is a process of its
// own unless otherData lists it as the program's, and tracks are numbered
// in the order their threads first appear. The batch path (builder) keeps
// every event until the end for that. The streaming path instead assumes
// what a file devprof wrote says — times from the session start, every
// pid the program's, each thread's spans in start order with enclosing
// spans first — and writes each event into the sink as it is read,
// holding only each thread's stack of enclosing spans. It checks every
// assumption as it goes and at the end; when one fails (any other file, or
// an event the streaming path does not convert: B/E pairs, async events,
// flows, thread-scoped instants), Decode starts over in the batch path
// (Sink.Reset, then the input again from where it began). The two paths
// give the same events, tracks and metadata (TestStreamMatchesBatch).

// errRestart says that the streaming path's assumptions do not hold for
// this file: Decode reads it again through the batch path.
var errRestart = errors.New("chrome: the file must be read again in the batch path")

// streamer writes the events of a file devprof wrote into a sink as the
// parser reads them.
type streamer struct {
	p    *parser
	sink event.Sink
	// threads follows parser.threads: the track and open spans of each.
	threads []streamThread
	// lastFirst is the latest parser thread seq (threadInfo.first) of a
	// thread given a track: tracks must be made in that order.
	lastFirst int
	stop      int64
	// lastInstant and lastCounter keep instants and counter samples in
	// time order, the order the batch path gives them.
	lastInstant, lastCounter int64
	noValue                  int
	marks                    metatext.Collector
	vals                     []counterValue
}

type streamThread struct {
	track uint32
	// prevStart and prevEnd are the thread's last span: spans must come
	// in (start, -end) order, as the batch path sorts them.
	prevStart, prevEnd int64
	open               []openSpan // spans that may enclose the next one, outermost first
}

type openSpan struct {
	end int64
	id  uint64
}

func newStreamer(p *parser, sink event.Sink) *streamer {
	return &streamer{p: p, sink: sink, lastInstant: minInt64, lastCounter: minInt64}
}

const minInt64 = -1 << 63

// add writes one event (ph, ts and thread set) into the sink, or returns
// errRestart. args are the parser's scratch, valid only during the call.
func (s *streamer) add(e *ev) error {
	if e.flags&(fHasBind|fFlowIn|fFlowOut) != 0 {
		return errRestart // flows bind across events
	}
	t := e.ts // devprof's times count from the session start
	s.stop = max(s.stop, t)
	switch e.ph {
	case 'X':
		return s.span(e, t)
	case 'i', 'I', 'R':
		if t < s.lastInstant {
			return errRestart
		}
		s.lastInstant = t
		if s.marks.Take(e.name, e.args) {
			return nil
		}
		if e.flags&fProcScope == 0 {
			return errRestart // its parent is the span enclosing it, perhaps one yet to come
		}
		s.sink.Instant(e.name, t, 0, 0, e.args) // the program's process: no track
	case 'C':
		if t < s.lastCounter {
			return errRestart
		}
		s.lastCounter = t
		s.vals = counterValues(e.args, s.vals[:0])
		if len(s.vals) == 0 {
			s.noValue++
			return nil
		}
		base := counterBase(e)
		for _, x := range s.vals {
			name, unit := counterName(base, x.key, len(s.vals) > 1)
			s.sink.Counter(name, unit, t, x.v)
		}
	default:
		return errRestart // B/E and async pairs, flows
	}
	return nil
}

// span writes an X event, whose parent is the latest-starting span of its
// thread that contains it (builder.nest, done as the spans arrive).
func (s *streamer) span(e *ev, start int64) error {
	end := satAdd(start, max(e.dur, 0))
	s.stop = max(s.stop, end)
	for int(e.thread) >= len(s.threads) {
		s.threads = append(s.threads, streamThread{})
	}
	th := &s.threads[e.thread]
	var err error
	if th.track != 0 && (start < th.prevStart || start == th.prevStart && end > th.prevEnd) {
		return errRestart // out of order: sorting needs the whole thread
	}
	if th.track == 0 {
		if th.track, err = s.track(e.thread); err != nil {
			return err
		}
	}
	th.prevStart, th.prevEnd = start, end
	open := th.open
	for len(open) > 0 && open[len(open)-1].end <= start {
		open = open[:len(open)-1]
	}
	var parent uint64
	for j, n := len(open)-1, 0; j >= 0 && n < maxWalk; j, n = j-1, n+1 {
		if o := open[j]; o.end > start && end <= o.end {
			parent = o.id
			break
		}
	}
	sp := event.Span{Name: e.name, Start: start, End: end, Parent: parent, Track: th.track}
	sp.Args = streamSpanArgs(&sp, e.args)
	id := s.sink.Span(sp)
	th.open = append(open, openSpan{end: end, id: id})
	return nil
}

// streamSpanArgs takes devprof's markers out of a span's arguments, as
// builder.spanArgs does, in place (args are the parser's scratch).
func streamSpanArgs(sp *event.Span, args []event.Arg) []event.Arg {
	out := args[:0]
	for _, a := range args {
		switch {
		case a.Key == "step_num" && !sp.Step:
			if n, ok := argInt(a); ok {
				sp.Step, sp.StepNum = true, n
				continue
			}
		case a.Key == "unfinished" && a.Kind == event.ArgBool:
			sp.Unfinished = sp.Unfinished || a.Bool()
			continue
		}
		out = append(out, a)
	}
	return out
}

// track makes the track of thread ti, which has its first span. The batch
// path numbers tracks in the order their threads first appear in the
// file, so a thread that appeared before the last one given a track
// cannot have one now.
func (s *streamer) track(ti int32) (uint32, error) {
	t := &s.p.threads[ti]
	if t.first < s.lastFirst || t.tid.str {
		return 0, errRestart // a string tid is numbered past every numeric id of the file
	}
	s.lastFirst = t.first
	return s.sink.Track(event.Track{Kind: event.TrackHostThread, ID: t.tid.n, Name: laneName(t), SortIndex: t.sort, Sorted: t.sorted,
		Device: foldedDevice(s.p.proc(t.pid))}), nil
}

// threadMeta applies thread metadata that arrives after the thread's
// track was made: a name can change, a sort index cannot.
func (s *streamer) threadMeta(ti int32, sortIndex bool) error {
	if int(ti) >= len(s.threads) || s.threads[ti].track == 0 {
		return nil
	}
	if sortIndex {
		return errRestart
	}
	s.sink.SetTrackName(s.threads[ti].track, laneName(&s.p.threads[ti]))
	return nil
}

// deviceRenamed is a process_name that changes the device a pid's
// threads stand for (foldedDevice): a track already made with the old
// one would differ from the batch path's, which names it from the last.
func (s *streamer) deviceRenamed(pid procID) error {
	for ti := range s.threads {
		if s.threads[ti].track != 0 && s.p.threads[ti].pid == pid {
			return errRestart
		}
	}
	return nil
}

// finish checks what the streaming path assumed against the whole file
// and fills in the metadata, as builder.emit does.
func (s *streamer) finish() error {
	p := s.p
	if !p.other.hasStartNS || p.other.hasProgramPIDs {
		return errRestart // not every pid is the program's
	}
	if p.minTS < 0 {
		return errRestart // times count from the earliest event
	}
	for pid := range p.procs {
		if pid.str {
			return errRestart // string pids are numbered in an order of their own
		}
	}
	b := &builder{p: p, stop: s.stop, noValue: s.noValue, marks: s.marks}
	meta := s.sink.Meta()
	b.fillMeta(meta)
	b.emitMarks(meta)
	b.warn(meta)
	return nil
}
