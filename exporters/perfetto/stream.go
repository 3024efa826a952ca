package perfetto

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

// This file holds the streaming decoder behind Decode. trace_processor
// sorts a whole file's events before it pairs them; the buffered reader
// (ReadTrace) does the same, which holds every event of the file at once.
// The streaming decoder gets the same result holding a window: the
// tokenizer (reader.go) queues events as ever, and every window's worth
// of them is sorted per track and paired on stacks that carry over from
// window to window, the events at a track's latest time held back for the
// next window (equal times keep file order). Slices go to the sink at
// their BEGIN (unfinished) and are ended at their END, so that children
// and instants can name them.
//
// That is exact when every event arrives after the events of its track
// that it sorts after, and the file has none of the rarer forms whose
// rules look across the whole file (legacy flow v1 events and bind ids,
// flows of a file devprof did not write, timestamps on a clock no
// snapshot has converted yet, descriptors that change a track after its
// events went out). A file that breaks one of these is read again from
// the start by the buffered reader (errRestart, and Sink.Reset), so the
// result never depends on which path read it: the streaming decoder's
// memory is bounded for the files that follow the order every writer
// keeps (devprof's, the Perfetto SDK's), and the rest cost what they
// always did.

// errRestart says the streaming decoder cannot read the file exactly: it
// must be read again, buffered.
type restartError struct{ why string }

func (e *restartError) Error() string { return "perfetto: read the file again, buffered: " + e.why }

func restart(format string, args ...any) error {
	return &restartError{why: fmt.Sprintf(format, args...)}
}

// streamWindow is how many queued events make the streaming decoder pass
// on what is final: large enough to sort what interleaved sequences
// write out of order, small enough to stay in cache. A queued event takes
// about 200 bytes: 8 K of them (1.6 MB) stay in a core's cache where 32 K
// did not (Decode of a 1 M-event devprof trace, one core: 331 -> 317 ms,
// and 33 -> 11 MiB of peak heap into a sink that keeps nothing).
var streamWindow = 1 << 13

// Decode reads a Perfetto trace (optionally whole-file gzip) into sink,
// mapped to the model as Trace.Snapshot describes, following
// trace_processor's import rules as ReadTrace does.
//
// From an io.ReadSeeker (a file) it streams: memory holds the names,
// tracks and open slices, not the events, for files whose events come in
// time order per track (as every writer keeps them); a file that is not
// in that order, or that uses a rare form whose rules look across the
// whole file, is read again from where r started, buffered, after
// sink.Reset. From any other reader it reads buffered.
func Decode(r io.Reader, sink event.Sink) error {
	rs, ok := r.(io.ReadSeeker)
	var start int64
	if ok {
		var err error
		start, err = rs.Seek(0, io.SeekCurrent)
		ok = err == nil
	}
	if ok {
		err := decodeStreaming(rs, sink)
		if _, again := errors.AsType[*restartError](err); !again {
			return err
		}
		sink.Reset()
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("perfetto: reading the file again: %w", err)
		}
	}
	t, err := ReadTrace(r)
	if err != nil {
		return err
	}
	t.into(sink)
	return nil
}

// decodeStreaming is Decode's streaming path; a *restartError means the
// file must be read again, buffered.
func decodeStreaming(r io.Reader, sink event.Sink) error {
	return decodeWindowed(r, sink, streamWindow)
}

// decodeWindowed is decodeStreaming passing events on every window
// events.
func decodeWindowed(r io.Reader, sink event.Sink, window int) error {
	src, gz, closeFn, err := openStream(r)
	if err != nil {
		return err
	}
	defer closeFn()
	rd := newReader()
	st := newStreamer(rd, sink)
	st.window = window
	rd.afterPacket = st.afterPacket
	rd.descChanged = st.descriptorChanged
	if err := rd.stream(src, gz); err != nil {
		return err
	}
	return st.finish()
}

// streamer passes a reader's queued events on to a sink, window by
// window.
type streamer struct {
	r      *reader
	c      *converter
	tracks []*trackStream // by index in Trace.Tracks (nil: no event yet)
	window int            // queued events that make a window
	marks  metatext.Collector
	lo, hi int64 // the time span of the events passed on
	seen   bool  // lo and hi hold something

	started   bool                  // events have gone to the sink
	anchored  bool                  // the sink's Meta has the wall clock's anchor
	ntracks   int                   // len(Trace.Tracks) when the converter's indexes were made
	pinned    map[uint64]bool       // tracks whose description the sink holds: a change to one means reading again
	pinnedPID map[int64]bool        // pids of processes whose tracks the sink holds
	checks    map[uint64]trackCheck // the hierarchy check each track passed on had
	byFlow    map[uint64]*openSlice // devprof parent flows by id: the slice whose BEGIN carries it
	missing   map[uint64]sliceKey   // parent flows a slice looked for and did not find, by id: the slice's key
	devprof   bool                  // the program's process carries devprof's label: its flows keep one end
	undescr   int                   // processes registered without a descriptor
	evs       []pendingEvent        // scratch
	seq       []*pendingEvent       // scratch: a track's held events and its window's
	touched   []*trackStream        // scratch: the tracks with events in a window
	slab      []openSlice           // open slices are made from here, a block at a time
	free      []*openSlice          // open slices released, to be made again
	args      []event.Arg           // scratch: the arguments of the event going out
	// Drops made passing events on, kept apart (see check).
	lateEvents, lateCounters []Drop
	devices                  map[int64]uint32  // the converter's counters: GPU pid -> its device track
	parents                  map[uint64]uint32 // counter track uuid -> the sink track its samples go on
}

// trackStream is a track's state between windows.
type trackStream struct {
	idx      int
	last     int64 // the time of the last event passed on, when passed
	passed   bool
	held     []pendingEvent // events at the track's latest time, kept for the next window
	heldNext []pendingEvent // the other of two buffers held events alternate between
	// The arguments and flow ids of held events, copied out of the
	// reader's blocks (which it fills again), in two buffers too.
	heldArgs, heldArgsNext   []Arg
	heldFlows, heldFlowsNext []uint64
	queue                    []*pendingEvent // the track's events of the window being passed on
	open                     []*openSlice    // the pairing stack
	encl                     []*openSlice    // slices in start order that may still enclose an instant (see enclosing)
	byInstant                bool            // a plain unnamed track got its name from an instant, which a later slice's would override
	sinkTrack                uint32          // the sink's track for its slices, once sinkKnown
	sinkKnown                bool
	device                   bool // its slices go out as device activity
}

// openSlice is a slice the sink has, or a device slice waiting for its
// end to go out as activity.
type openSlice struct {
	key        sliceKey
	name       string
	start, dur int64 // dur -1 until it ends
	depth      int
	complete   bool   // a legacy X event: its end is known at its start
	id         uint64 // the sink's ID (0 for device activity until it goes out)
	track      uint32 // the sink's track
	device     bool   // goes out as activity, at its end
	unfinished bool   // devprof marked it as never ended: its END is not passed on
	sent       bool   // went out ended (leafEnd): its END is not passed on
	args       []event.Arg
	refs       int // places that hold it (see release)
}

// sliceKey is the order in which the buffered reader lists slices
// (orderSlices): a parent flow may only point at a slice earlier in it.
type sliceKey struct {
	start int64
	track int
	depth int
	order int
}

func (a sliceKey) less(b sliceKey) bool {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.track, b.track), cmp.Compare(a.depth, b.depth), cmp.Compare(a.order, b.order)) < 0
}

func newStreamer(r *reader, sink event.Sink) *streamer {
	c := &converter{t: r.t, b: sink, byUUID: map[uint64]*Track{}, procName: map[int64]string{}, procs: map[int64]*Track{},
		tracks: map[uint64]uint32{}, kinds: map[uint32]event.TrackKind{}, procNum: map[int64]int{}, lone: map[uint64]bool{}}
	return &streamer{r: r, c: c, pinned: map[uint64]bool{}, pinnedPID: map[int64]bool{},
		checks: map[uint64]trackCheck{}, byFlow: map[uint64]*openSlice{}, missing: map[uint64]sliceKey{}}
}

// afterPacket passes on what is final once a window's worth of events is
// queued.
func (st *streamer) afterPacket() error {
	if len(st.r.events)+len(st.r.counters) < st.window {
		return nil
	}
	return st.flush(false)
}

// finish passes on everything left at the end of the file, checks that
// nothing learned since changes what went out, and fills in the
// metadata.
func (st *streamer) finish() error {
	if err := st.flush(true); err != nil {
		return err
	}
	for uuid, was := range st.checks {
		if now := st.r.checkTrack(uuid); now.stat != was.stat {
			return restart("track %d's hierarchy changed after its events went out", uuid)
		}
	}
	if err := st.start(); err != nil { // a file with no events still names its program
		return err
	}
	// Device slices that never ended go out as they would have.
	for _, ts := range st.tracks {
		if ts == nil {
			continue
		}
		for _, s := range ts.open {
			if s.device && s.id == 0 {
				st.deviceActivity(s)
			}
		}
	}
	m := st.c.b.Meta()
	lo, hi := st.lo, st.hi
	if !st.seen {
		lo, hi = 0, 0
	}
	t := st.r.t
	m.Start = event.ClockAnchor{Mono: lo, Boot: lo}
	m.Stop = event.ClockAnchor{Mono: hi, Boot: hi}
	if t.WallStart != 0 {
		m.Start.Wall = t.WallStart + lo - t.WallStartTS
		m.Stop.Wall = t.WallStart + hi - t.WallStartTS
	}
	st.marks.ApplyMeta(m)
	addDrops(m, mergeDrops(t.Drops, st.lateEvents, st.lateCounters))
	return nil
}

// mergeDrops adds the drops of later lists to the first: a kind already
// listed keeps its first place and its count grows.
func mergeDrops(first []Drop, later ...[]Drop) []Drop {
	out := slices.Clone(first)
	for _, l := range later {
		for _, d := range l {
			if i := slices.IndexFunc(out, func(o Drop) bool { return o.Stat == d.Stat }); i >= 0 {
				out[i].Events += d.Events
			} else {
				out = append(out, d)
			}
		}
	}
	return out
}

func (st *streamer) see(a, b int64) {
	if !st.seen {
		st.lo, st.hi, st.seen = a, b, true
		return
	}
	st.lo, st.hi = min(st.lo, a), max(st.hi, b)
}

// start picks the program and registers the processes described so far,
// before the first event goes to the sink, as Trace.Snapshot does for the
// whole file; and it brings the converter's indexes of the tracks up to
// date.
func (st *streamer) start() error {
	c := st.c
	if len(c.t.Tracks) != st.ntracks {
		if err := st.index(); err != nil {
			return err
		}
	}
	if st.started {
		return nil
	}
	st.started = true
	m := c.b.Meta()
	m.Program, m.PID = "perfetto", 0
	if p := c.byUUID[c.progUUID]; c.progUUID != 0 && p != nil {
		m.Program, m.PID = p.Name, int(p.PID)
		if slices.Contains(p.Labels, ProcessLabelUnnamed) {
			m.Program = ""
		}
		st.pinned[p.UUID] = true
	}
	c.pid = m.PID
	c.registerTwin()
	for i := range c.t.Tracks {
		st.register(&c.t.Tracks[i])
	}
	return nil
}

// index rebuilds the converter's indexes of the tracks (the tracks grow
// as the file is read, and move when they do).
func (st *streamer) index() error {
	c := st.c
	for i := range c.t.Tracks {
		tr := &c.t.Tracks[i]
		c.byUUID[tr.UUID] = tr
		if tr.Kind == TrackProcess {
			c.procName[tr.PID] = tr.Name
			c.procs[tr.PID] = tr
			// As flowEnds: a file with a process devprof labelled keeps
			// its flows of one end.
			st.devprof = st.devprof || slices.ContainsFunc(tr.Labels, func(l string) bool { return strings.HasPrefix(l, "devprof host=") })
			if !st.started && c.progUUID == 0 && !gpuProcess.MatchString(tr.Name) {
				c.progUUID = tr.UUID
			}
		}
	}
	if st.started {
		for i := st.ntracks; i < len(c.t.Tracks); i++ {
			if tr := &c.t.Tracks[i]; tr.Kind == TrackProcess {
				if err := st.lateProcess(tr); err != nil {
					return err
				}
			}
			st.register(&c.t.Tracks[i])
		}
	}
	st.ntracks = len(c.t.Tracks)
	return nil
}

// register makes a process track an event.Process, as processes does.
func (st *streamer) register(tr *Track) {
	c := st.c
	if tr.Kind != TrackProcess || tr.UUID == c.progUUID || tr.PID == int64(c.pid) {
		return
	}
	if _, dup := c.procNum[tr.PID]; dup {
		return
	}
	if _, dev := c.deviceOf(tr.PID); dev {
		return
	}
	c.procNum[tr.PID] = c.b.Process(processOfTrack(tr))
}

// descriptorChanged is told of every track a descriptor adds or changes:
// once events are out, a change to a track they use (or to its process)
// changes what they would have been, and the file is read again.
func (st *streamer) descriptorChanged(uuid uint64, added bool) error {
	if !st.started {
		return nil
	}
	c := st.c
	tr := &c.t.Tracks[st.r.tracks[uuid].idx]
	if !added && st.pinned[uuid] {
		return restart("track %d is described again, differently, after its events went out", uuid)
	}
	if tr.Kind == TrackProcess {
		return st.lateProcess(tr)
	}
	return nil
}

// lateProcess checks a process track that appears once events have gone
// out (described, or made for a legacy event's pid): it may not be the
// program's, nor one whose tracks are out already.
func (st *streamer) lateProcess(tr *Track) error {
	if st.pinnedPID[tr.PID] {
		return restart("process %d appears after its tracks' events went out", tr.PID)
	}
	if st.undescr > 0 {
		return restart("a process appears after one without a descriptor was used")
	}
	if st.c.progUUID == 0 && !gpuProcess.MatchString(tr.Name) {
		return restart("the program's process appears after events went out")
	}
	return nil
}

// pin notes that the sink holds a track made from uuid: its description,
// its ancestors' and its process's may not change from now on.
func (st *streamer) pin(uuid uint64) {
	c := st.c
	for u, n := uuid, 0; u != 0 && n <= maxTrackAncestors; n++ {
		if st.pinned[u] {
			break
		}
		st.pinned[u] = true
		tr := c.byUUID[u]
		if tr == nil {
			break
		}
		st.pinnedPID[tr.PID] = true
		u = tr.ParentUUID
	}
}

// trackOf is the converter's trackOf, after pinning what it depends on.
func (st *streamer) trackOf(uuid uint64) (uint32, error) {
	c := st.c
	if id, ok := c.tracks[uuid]; ok {
		return id, nil
	}
	st.pin(uuid)
	if ti := st.r.tracks[uuid]; ti != nil {
		st.r.inheritID(ti.idx)
	}
	procs := len(c.procNum)
	id := c.trackOf(uuid)
	if err := st.checkUndescribed(procs); err != nil {
		return 0, err
	}
	return id, nil
}

// checkUndescribed reads the file again when the converter registered a
// process no descriptor describes (the buffered reader registers those
// after every described one, in the order of their first slice).
func (st *streamer) checkUndescribed(before int) error {
	if n := len(st.c.procNum) - before; n > 0 {
		st.undescr += n
		if st.undescr > 1 {
			return restart("several processes without a descriptor")
		}
	}
	return nil
}

// flush passes on the queued events that are final: every counter sample,
// and on each track the events before its latest time (all of them at the
// end of the file).
func (st *streamer) flush(final bool) error {
	r := st.r
	if err := st.start(); err != nil {
		return err
	}
	if err := st.check(); err != nil {
		return err
	}
	if !st.anchored && r.wallSet {
		// The wall clock's anchor as soon as it is known, not only at
		// the end: a sink that writes Unix times as events come
		// (tables.Export) needs it then. finish sets the same offset
		// from the first event's time.
		st.anchored = true
		t := r.t
		m := st.c.b.Meta()
		m.Start = event.ClockAnchor{Mono: t.WallStartTS, Boot: t.WallStartTS, Wall: t.WallStart}
	}
	// Bucket the events by track, in file order; a track's are sorted by
	// time only when the file did not have them so (a sort moves
	// pointers, not events).
	evs := r.events
	r.events = st.evs[:0]
	touched := st.touched[:0]
	for i := range evs {
		ts := st.track(evs[i].tidx)
		if len(ts.queue) == 0 {
			touched = append(touched, ts)
		}
		ts.queue = append(ts.queue, &evs[i])
	}
	if final {
		for _, ts := range st.tracks {
			if ts != nil && len(ts.held) > 0 && len(ts.queue) == 0 {
				touched = append(touched, ts)
			}
		}
	}
	// Tracks in the order of the file's tracks, so that what the sink
	// gets does not depend on a map's order.
	slices.SortFunc(touched, func(a, b *trackStream) int { return cmp.Compare(a.idx, b.idx) })
	for _, ts := range touched {
		q := ts.queue
		if !inTimeOrder(q) {
			slices.SortStableFunc(q, byTime)
		}
		err := st.pass(ts, q, final)
		clear(q)
		ts.queue = q[:0]
		if err != nil {
			return err
		}
	}
	clear(touched)
	st.touched = touched[:0]
	// evs is not cleared: the next window overwrites it, and until then
	// it keeps alive no more than one window's names and arguments.
	// Clearing it cost a write barrier a pointer while a collection ran.
	st.evs = evs[:0]
	if err := st.counters(); err != nil {
		return err
	}
	// Every queued event has gone out or is held with copies of its
	// arguments: the reader fills its blocks again.
	r.argBlocks.reuse()
	r.flowBlocks.reuse()
	return nil
}

// inTimeOrder reports whether a track's events are in byTime's order, as
// nearly every window's are: slices.IsSortedFunc with byTime inlined,
// which the check of every event of every window costs a call for.
func inTimeOrder(evs []*pendingEvent) bool {
	for i := 1; i < len(evs); i++ {
		a, b := evs[i-1], evs[i]
		if a.at.ts > b.at.ts || a.at.ts == b.at.ts && a.order > b.order {
			return false
		}
	}
	return true
}

// byTime orders a track's events by time, then file order.
func byTime(a, b *pendingEvent) int {
	return cmp.Or(cmp.Compare(a.at.ts, b.at.ts), cmp.Compare(a.order, b.order))
}

// check settles the queued events' times and tracks as the buffered
// reader's resolveTimes does, dropping what it drops, and reads the file
// again for what only a whole-file read gets right.
func (st *streamer) check() error {
	// What this drops, the buffered reader drops at the end of the file,
	// after every drop made while reading, events before counter samples:
	// kept apart, and added after those at the end (finish), so that each
	// kind's first place is the one the buffered reader names.
	r := st.r
	tok := r.t.Drops
	r.t.Drops = st.lateEvents
	defer func() { r.t.Drops = tok }()
	k := 0
	var lastUUID uint64
	var lastTI *trackInfo
	var lastCheck trackCheck
	for i := range r.events {
		e := &r.events[i]
		if !e.at.ok {
			return restart("a timestamp on a clock no snapshot converts yet")
		}
		if e.kind == evFlowV1 || e.bindDir != 0 {
			return restart("legacy flow events")
		}
		if e.kind == evEnd && (len(e.args) > 0 || len(e.flows) > 0 || len(e.terms) > 0) {
			return restart("an END with arguments or flows")
		}
		for _, f := range e.terms {
			if f&ParentFlowBit == 0 {
				return restart("terminating flows")
			}
		}
		if !st.devprof {
			for _, f := range e.flows {
				if f&ParentFlowBit == 0 {
					return restart("flows in a file devprof did not write")
				}
			}
		}
		// settle has nothing to do for a good time, which nearly every
		// one is: it is called for the others only.
		if (!e.at.ok || e.at.ts < 0) && r.settle(&e.at, e.pkt, e.off) {
			continue
		}
		if e.track != lastUUID || lastTI == nil {
			ti := r.tracks[e.track]
			if ti == nil {
				return restart("an END on a track nothing describes yet")
			}
			stat, err := r.invalidTrack(e.track, st.checks)
			lastUUID, lastTI, lastCheck = e.track, ti, trackCheck{stat, err}
		}
		if lastCheck.err != nil {
			r.dropAt(lastCheck.stat, pktWhere(e.pkt, e.off), lastCheck.err)
			continue
		}
		e.tidx = lastTI.idx
		if k != i {
			r.events[k] = *e
		}
		k++
	}
	clear(r.events[k:])
	r.events = r.events[:k]
	st.lateEvents = r.t.Drops
	r.t.Drops = st.lateCounters
	defer func() { st.lateCounters = r.t.Drops }()
	cs := r.counters[:0]
	for _, c := range r.counters {
		if !c.at.ok {
			return restart("a timestamp on a clock no snapshot converts yet")
		}
		if r.settle(&c.at, c.pkt, c.off) {
			continue
		}
		if stat, err := r.invalidTrack(c.track, st.checks); err != nil {
			r.dropAt(stat, pktWhere(c.pkt, c.off), err)
			continue
		}
		cs = append(cs, c)
	}
	r.counters = cs
	return nil
}

func (st *streamer) track(idx int) *trackStream {
	if idx >= len(st.tracks) {
		st.tracks = append(st.tracks, make([]*trackStream, idx+1-len(st.tracks))...)
	}
	ts := st.tracks[idx]
	if ts == nil {
		ts = &trackStream{idx: idx}
		st.tracks[idx] = ts
	}
	return ts
}

// pass pairs one track's events of a window (sorted by time and file
// order), after those held from the last: every event before the latest
// time, or all of them when final.
func (st *streamer) pass(ts *trackStream, evs []*pendingEvent, final bool) error {
	// An event at or before the last time passed on would have been paired
	// before what went out (or, at that very time, have enclosed its
	// instants): only a buffered read gets it right.
	if len(evs) > 0 && ts.passed && evs[0].at.ts <= ts.last {
		return restart("events of track %d out of time order by more than the window", st.r.t.Tracks[ts.idx].UUID)
	}
	if len(ts.held) > 0 {
		// The held events came before this window's in the file: they go
		// first among equal times.
		seq := st.seq[:0]
		for i := range ts.held {
			seq = append(seq, &ts.held[i])
		}
		evs = append(seq, evs...)
		st.seq = evs
		if !inTimeOrder(evs) {
			slices.SortStableFunc(evs, byTime)
		}
		// ts.held is read through seq below and refilled only after.
		ts.heldNext, ts.held = ts.held, ts.heldNext[:0]
		ts.heldArgsNext, ts.heldArgs = ts.heldArgs, ts.heldArgsNext[:0]
		ts.heldFlowsNext, ts.heldFlows = ts.heldFlows, ts.heldFlowsNext[:0]
	}
	if len(evs) == 0 {
		return nil
	}
	n := len(evs)
	if !final {
		// The events at the latest time wait: a later window may add to
		// them.
		last := evs[n-1].at.ts
		for n > 0 && evs[n-1].at.ts == last {
			n--
		}
		for _, e := range evs[n:] {
			ts.hold(e)
		}
		if n == 0 {
			return nil
		}
	}
	ts.passed, ts.last = true, evs[n-1].at.ts
	for i := 0; i < n; {
		// Events at one time: BEGINs and ENDs in file order, then the
		// instants, which a slice beginning at their time encloses and one
		// ending then does not.
		j := i + 1
		for j < n && evs[j].at.ts == evs[i].at.ts {
			j++
		}
		for k := i; k < j; k++ {
			if evs[k].kind != evInst {
				if err := st.pair(ts, evs[k], leafEnd(evs, k, n)); err != nil {
					return err
				}
			}
		}
		for k := i; k < j; k++ {
			if evs[k].kind == evInst {
				if err := st.instant(ts, evs[k]); err != nil {
					return err
				}
			}
		}
		i = j
	}
	return nil
}

// hold keeps event e for the next window, with copies of its arguments
// and flow ids: the reader fills its blocks again once a window is out.
func (ts *trackStream) hold(e *pendingEvent) {
	h := *e
	if len(e.args) > 0 {
		start := len(ts.heldArgs)
		ts.heldArgs = append(ts.heldArgs, e.args...)
		h.args = ts.heldArgs[start:len(ts.heldArgs):len(ts.heldArgs)]
	}
	if len(e.flows)+len(e.terms) > 0 {
		start := len(ts.heldFlows)
		ts.heldFlows = append(ts.heldFlows, e.flows...)
		mid := len(ts.heldFlows)
		ts.heldFlows = append(ts.heldFlows, e.terms...)
		h.flows, h.terms = nil, nil
		if mid > start {
			h.flows = ts.heldFlows[start:mid:mid]
		}
		if len(ts.heldFlows) > mid {
			h.terms = ts.heldFlows[mid:len(ts.heldFlows):len(ts.heldFlows)]
		}
	}
	ts.held = append(ts.held, h)
}

// leafEnd returns the time of the END that closes the BEGIN evs[k] when
// it is the next of the first n events of the track, else -1: such a
// slice encloses nothing, and goes to the sink ended, in one call rather
// than begun and ended in two.
func leafEnd(evs []*pendingEvent, k, n int) int64 {
	b := evs[k]
	if b.kind != evBegin || b.complete || k+1 >= n {
		return -1
	}
	if e := evs[k+1]; e.kind == evEnd && (!e.hasName || e.name == b.name) {
		return e.at.ts
	}
	return -1
}

// pair applies a BEGIN or END to its track's stack, as pairSlices does;
// a BEGIN whose END is known (leafEnd, or -1) goes out ended.
func (st *streamer) pair(ts *trackStream, e *pendingEvent, end int64) error {
	for n := len(ts.open); n > 0 && ts.open[n-1].complete && ts.open[n-1].start+ts.open[n-1].dur <= e.at.ts; n-- {
		st.release(ts.open[n-1])
		ts.open[n-1] = nil
		ts.open = ts.open[:n-1]
	}
	switch e.kind {
	case evBegin:
		return st.begin(ts, e, end)
	case evEnd:
		st.end(ts, e)
	}
	return nil
}

func (st *streamer) begin(ts *trackStream, e *pendingEvent, end int64) error {
	c := st.c
	s := st.newSlice() // zeroed
	s.name, s.start, s.dur, s.complete, s.refs = e.name, e.at.ts, -1, e.complete, 1
	if e.complete {
		s.dur = e.dur
	}
	var parent *openSlice
	if n := len(ts.open); n > 0 {
		parent = ts.open[n-1]
		s.depth = parent.depth + 1
	}
	s.key = sliceKey{start: s.start, track: ts.idx, depth: s.depth, order: e.order}
	ts.open = append(ts.open, s)

	// An unnamed plain track takes the name of its first slice that has
	// one, else of its first instant that has one (nameTracks).
	tr := &c.t.Tracks[ts.idx]
	if e.name != "" && ts.byInstant {
		return restart("track %d named after an instant before a slice", tr.UUID)
	}
	if e.name != "" && tr.Name == "" && tr.Kind == TrackPlain {
		if _, out := c.tracks[tr.UUID]; out {
			return restart("track %d named after its events went out", tr.UUID)
		}
		tr.Name = e.name
	}

	// devprof's parent flows: a root names, by a terminating flow, the
	// slice whose BEGIN carries that flow.
	for _, id := range e.flows {
		if id&ParentFlowBit == 0 {
			continue
		}
		if _, dup := st.byFlow[id]; dup {
			return restart("parent flow %#x begun twice", id)
		}
		if k, ok := st.missing[id]; ok && s.key.less(k) {
			return restart("parent flow %#x begun after a slice looked for it", id)
		}
		st.byFlow[id] = s
		s.refs++
	}
	if parent == nil {
		if n := countParentFlows(e.terms); n > 1 {
			return restart("a slice with %d parent flows", n)
		}
		for _, id := range e.terms {
			if id&ParentFlowBit == 0 {
				continue
			}
			p, ok := st.byFlow[id]
			if !ok {
				if k, seen := st.missing[id]; !seen || s.key.less(k) {
					st.missing[id] = s.key
				}
				continue
			}
			if p.key.less(s.key) {
				parent = p
			}
			break
		}
	}

	if !ts.sinkKnown {
		track, err := st.trackOf(tr.UUID)
		if err != nil {
			return err
		}
		ts.sinkTrack, ts.sinkKnown = track, true
		ts.device = track != 0 && c.isDevice(track)
	}
	track := ts.sinkTrack
	sp := event.Span{Name: s.name, Start: s.start, Unfinished: true}
	// The sink copies what it keeps of the arguments: one buffer serves
	// every event.
	sp.Args, sp.Step, sp.StepNum = appendArgs(st.args[:0], e.args, &s.unfinished)
	for _, f := range e.flows {
		if f&ParentFlowBit == 0 {
			sp.Args = append(sp.Args, event.Arg{Kind: event.ArgFlow, Num: f})
		}
	}
	st.args = sp.Args[:0] // with the flows' room, which every launch needs
	sp.Track = track
	s.track = track
	if ts.device {
		// It goes out at its END: its arguments wait in storage of its
		// own, which the slice keeps when it is made again.
		s.device, s.args = true, append(s.args[:0], sp.Args...)
		if s.complete {
			st.deviceActivity(s)
		}
		return nil
	}
	if parent != nil {
		if parent.device && parent.id == 0 {
			return restart("a slice under device activity that has not ended")
		}
		sp.Parent = parent.id
	}
	if s.complete && !s.unfinished {
		sp.Unfinished, sp.End = false, s.start+s.dur
	} else if end >= 0 && !s.unfinished {
		// Its END is next on the track: it goes out ended, and the END
		// only closes it (end).
		s.dur, s.sent = end-s.start, true
		sp.Unfinished, sp.End = false, end
	}
	s.id = c.b.Span(sp)
	st.see(s.start, s.start+max(s.dur, 0))
	st.enclose(ts, s)
	return nil
}

// deviceActivity passes on a device slice as activity, as the converter
// does.
func (st *streamer) deviceActivity(s *openSlice) {
	end := s.start + max(s.dur, 0)
	s.id = st.c.b.ActivityOf(event.ActivityUnknown, s.track, s.name, s.start, end, s.args)
	clear(s.args) // the sink copied what it keeps
	s.args = s.args[:0]
	st.see(s.start, end)
}

// end applies an END: it closes the topmost open slice (of its name, if
// it has one), as closeSlice does.
func (st *streamer) end(ts *trackStream, e *pendingEvent) {
	stack := ts.open
	k := len(stack) - 1
	for k >= 0 && stack[k].complete {
		k--
	}
	if e.hasName {
		for lim := max(len(stack)-maxEndSearch, 0); k >= lim && (stack[k].complete || stack[k].name != e.name); k-- {
		}
		if k < len(stack)-maxEndSearch {
			k = -1
		}
	}
	if k < 0 {
		return
	}
	s := stack[k]
	s.dur = e.at.ts - s.start
	if k == len(stack)-1 { // the innermost slice, nearly always: no shift
		stack[k] = nil
		ts.open = stack[:k]
	} else {
		ts.open = slices.Delete(stack, k, k+1)
	}
	defer st.release(s)
	if s.device {
		st.deviceActivity(s)
		return
	}
	if !s.unfinished && !s.sent {
		st.c.b.EndSpan(s.id, s.start+s.dur)
	}
	st.see(s.start, s.start+max(s.dur, 0))
}

// newSlice returns a zeroed openSlice to fill in (but for the storage of
// its arguments, empty): one released (which release zeroed), else one
// of a block made at a time.
func (st *streamer) newSlice() *openSlice {
	if n := len(st.free); n > 0 {
		s := st.free[n-1]
		st.free = st.free[:n-1]
		return s
	}
	if len(st.slab) == 0 {
		st.slab = make([]openSlice, 256)
	}
	s := &st.slab[0]
	st.slab = st.slab[1:]
	return s
}

// release drops one of the places that hold s (a track's stack of open
// slices, its slices that may enclose an instant, the parent flows); when
// none holds it any more it is made again for another slice.
func (st *streamer) release(s *openSlice) {
	if s.refs--; s.refs == 0 {
		clear(s.args)
		*s = openSlice{args: s.args[:0]} // the arguments' storage is kept
		st.free = append(st.free, s)
	}
}

// enclose keeps slice s, begun, for the instants it may enclose: the
// slices of a track in start order, those that ended by s's start
// dropped from the top (enclosingSlices' stack).
func (st *streamer) enclose(ts *trackStream, s *openSlice) {
	for n := len(ts.encl); n > 0 && ended(ts.encl[n-1], s.start); n-- {
		st.release(ts.encl[n-1])
		ts.encl[n-1] = nil
		ts.encl = ts.encl[:n-1]
	}
	ts.encl = append(ts.encl, s)
	s.refs++
}

// ended reports whether slice s is over at t.
func ended(s *openSlice, t int64) bool { return s.dur >= 0 && s.start+s.dur <= t }

// instant passes on an instant, inside the innermost slice of its track
// that contains its time.
func (st *streamer) instant(ts *trackStream, e *pendingEvent) error {
	c := st.c
	for n := len(ts.encl); n > 0 && ended(ts.encl[n-1], e.at.ts); n-- {
		st.release(ts.encl[n-1])
		ts.encl[n-1] = nil
		ts.encl = ts.encl[:n-1]
	}
	var parent uint64
	if n := len(ts.encl); n > 0 {
		if ts.encl[n-1].device && ts.encl[n-1].id == 0 {
			return restart("an instant inside device activity that has not ended")
		}
		parent = ts.encl[n-1].id
	}
	tr := &c.t.Tracks[ts.idx]
	if e.name != "" && tr.Name == "" && tr.Kind == TrackPlain {
		if _, out := c.tracks[tr.UUID]; out {
			return restart("track %d named after its events went out", tr.UUID)
		}
		tr.Name, ts.byInstant = e.name, true
	}
	st.see(e.at.ts, e.at.ts)
	var unfinished bool
	args, _, _ := appendArgs(st.args[:0], e.args, &unfinished)
	st.args = args[:0]
	if st.marks.Take(e.name, args) {
		return nil
	}
	for _, flows := range [2][]uint64{e.flows, e.terms} {
		for _, f := range flows {
			if f&ParentFlowBit == 0 {
				args = append(args, event.Arg{Kind: event.ArgFlow, Num: f})
			}
		}
	}
	st.args = args[:0]
	st.pin(tr.UUID)
	st.r.inheritID(ts.idx)
	procs := len(c.procNum)
	track := c.instantTrackOf(tr.UUID)
	if err := st.checkUndescribed(procs); err != nil {
		return err
	}
	if c.kinds[track] == event.TrackMemory {
		c.b.ActivityOf(memoryKind(e.name), track, e.name, e.at.ts, e.at.ts, memoryArgs(args))
		return nil
	}
	c.b.Instant(e.name, e.at.ts, track, parent, args)
	return nil
}

// counters passes on the queued counter samples, as the converter's
// counters does.
func (st *streamer) counters() error {
	r, c := st.r, st.c
	cs := r.counters
	slices.SortFunc(cs, func(a, b pendingCounter) int {
		return cmp.Or(cmp.Compare(a.at.ts, b.at.ts), cmp.Compare(r.trackIdx(a.track), r.trackIdx(b.track)), cmp.Compare(a.order, b.order))
	})
	if st.devices == nil {
		st.devices, st.parents = map[int64]uint32{}, map[uint64]uint32{}
	}
	for _, s := range cs {
		tr := c.byUUID[s.track]
		st.see(s.at.ts, s.at.ts)
		if tr == nil {
			c.b.Counter(unnamedCounter, "", s.at.ts, s.value)
			continue
		}
		if tr.Description == MemoryCounterDescription {
			continue
		}
		id, seen := st.parents[s.track]
		if !seen {
			st.pin(s.track)
			st.r.inheritID(st.r.tracks[s.track].idx)
			procs := len(c.procNum)
			id = c.counterParent(tr, st.devices)
			if err := st.checkUndescribed(procs); err != nil {
				return err
			}
			st.parents[s.track] = id
		}
		if id == 0 {
			c.b.Counter(tr.Name, tr.Unit, s.at.ts, s.value)
			continue
		}
		c.b.TrackCounter(id, tr.Name, tr.Unit, s.at.ts, s.value)
	}
	r.counters = cs[:0]
	return nil
}

// countParentFlows counts the devprof parent flows among ids.
func countParentFlows(ids []uint64) int {
	n := 0
	for _, id := range ids {
		if id&ParentFlowBit != 0 {
			n++
		}
	}
	return n
}
