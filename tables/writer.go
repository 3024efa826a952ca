package tables

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/devprof/devprof/event"
)

// Options say whose trace is exported: the run, host and session columns
// and partitions of its rows.
type Options struct {
	// Run is the run the trace belongs to: the run directory's name
	// (a session's SessionID), shared by every host of a job.
	Run string
	// Host names the host; "" takes the trace's own (event.Meta.Host),
	// else Session, else "unknown".
	Host string
	// Session tells apart the traces of one host in one run (the trace
	// file's name without its extension); "" is the host.
	Session string
	// SourceFormat names the format the trace was read from, for the
	// hosts table ("perfetto", "xplane", ...).
	SourceFormat string
}

func (o Options) names(m *event.Meta) (run, host, session string) {
	run, host, session = o.Run, o.Host, o.Session
	host = cmp.Or(host, m.Host, session, "unknown")
	if run == "" {
		run = "unknown"
	}
	if session == "" {
		session = host
	}
	return validUTF8(run), validUTF8(host), validUTF8(session)
}

// Writer is an event.Sink that exports the trace a reader streams into
// it as tables: call Close when the reader is done. It holds what a row
// needs until it is complete, not the trace: spans still open (a span
// becomes a row when it ends; those open at the end of the trace end at
// its stop time, unfinished, as the model has them), the tracks and
// processes, and the metadata. Finished events wait in a spool file in
// the export's directory until the trace's clock anchor, which readers
// fill in at the end of a file, maps their times to Unix nanoseconds;
// Close then writes the tables a row group at a time.
//
// So memory is bounded by the spans open at once (a stream that begins
// spans it never ends holds them all, as any consumer must) and by one
// row group per table, whatever the trace's length.
//
// Export, for a trace that can be read again (a file), writes rows as
// events come and costs about two thirds as much; a Writer reads it
// once.
type Writer struct {
	dir     string
	o       Options
	meta    event.Meta
	initial event.Meta

	tracks     []event.Track
	procs      []event.Process
	procTracks map[int]uint32

	nextID uint64
	// open finds the spans added Unfinished, by id, in openEvs: slots
	// reused (with their arguments' storage) once a span ends, so that a
	// reader that pairs every begin with its end (Perfetto's) costs no
	// allocation per span.
	open     map[uint64]int32
	openEvs  []ev
	openFree []int32
	spool    *spool
	err      error // the first write error; Close returns it
	closed   bool

	// streams are the tracks' readings as device streams, by track id
	// less one (see onStream).
	streams []streamState
	// replan is set once a stream's work came out of start order: Close
	// then finds its annotated ranges from the spool.
	replan bool
	// markerSteps counts the host spans marked as steps: where there are
	// none, PyTorch's ProfilerStep#N spans are the steps.
	markerSteps int64
	// collective caches event.IsCollective by name.
	collective map[string]bool

	// live is set in an Export's first reading, which writes rows as
	// events come instead of spooling them.
	live *liveRows
}

// streamState is what the Writer knows of a track as a device's stream:
// which device and stream it is (fixed by its first event, as analyze
// fixes it), and what the annotation rule needs of its work so far.
type streamState struct {
	device int
	stream int64
	ok     bool // the track is a device's stream
	used   bool // it has had an event: its reading no longer changes

	lastStart  int64
	started    bool
	disordered bool // an event began before an earlier one
	// held is a span that may be an annotated range, kept back until
	// the next work on the stream says whether it encloses it.
	held *ev
	// replan: the work came out of start order, or a span of work began
	// unfinished; its annotated ranges are found at Close from the spool.
	replan bool
}

var _ event.Sink = (*Writer)(nil)

// NewWriter returns a Writer that writes the tables of one trace into
// dir, a local directory (created if need be), under PartitionPath's
// names. meta is the metadata the trace starts with, as for
// event.NewBuilder.
func NewWriter(dir string, meta event.Meta, o Options) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s, err := newSpool(dir)
	if err != nil {
		return nil, err
	}
	w := newWriter(dir, meta, o)
	w.spool = s
	return w, nil
}

// newWriter returns a Writer with neither spool nor live rows: the caller
// gives it one.
func newWriter(dir string, meta event.Meta, o Options) *Writer {
	return &Writer{dir: dir, o: o, meta: meta, initial: meta, open: map[uint64]int32{}}
}

func (w *Writer) put(e *ev) {
	if w.err != nil {
		return
	}
	if w.live != nil {
		w.putLive(e)
		return
	}
	w.err = w.spool.put(e)
}

func (w *Writer) newID() uint64 {
	w.nextID++
	return w.nextID
}

// Track registers a track.
func (w *Writer) Track(t event.Track) uint32 {
	w.tracks = append(w.tracks, t)
	d, s, ok := event.StreamOf(t, w.procs)
	w.streams = append(w.streams, streamState{device: d, stream: s, ok: ok})
	if w.live != nil && w.live.d != nil {
		w.live.d.tracks = append(w.live.d.tracks, trackFacts{})
	}
	return uint32(len(w.tracks))
}

// SetTrackName renames a registered track. A track that had no event
// yet is read again as a device stream (or not) by its new name.
func (w *Writer) SetTrackName(id uint32, name string) {
	if id > 0 && int(id) <= len(w.tracks) {
		if x := w.live; x != nil && x.d != nil && x.d.tracks[id-1].known && w.tracks[id-1].Name != name {
			// Rows already made name it otherwise: they take the new
			// name unless some are in a row group written.
			if v := validUTF8(name); x.d.set.renameTrack(id, v) {
				x.d.tracks[id-1].name = v
			} else {
				x.giveUp()
			}
		}
		w.tracks[id-1].Name = name
		if st := &w.streams[id-1]; !st.used {
			st.device, st.stream, st.ok = event.StreamOf(w.tracks[id-1], w.procs)
		}
	}
}

// stream returns the state of track id when it is a device's stream,
// nil otherwise; the track's reading is fixed from now on.
func (w *Writer) stream(id uint32) *streamState {
	if id == 0 || int(id) > len(w.streams) {
		return nil
	}
	st := &w.streams[id-1]
	st.used = true
	if !st.ok {
		return nil
	}
	return st
}

// onStream applies the annotation rule to an event on a device's stream
// as it comes: a span that may be an annotated range is held back (and
// onStream returns true) until the next work on the stream decides it,
// then spooled marked or not. Work that comes out of start order, or a
// span of work that begins unfinished, leaves the stream to Close
// (replan), which reads its work back from the spool and sorts it: only
// then does the rule cost memory.
func (w *Writer) onStream(st *streamState, e *ev, span, unfinished bool) bool {
	if st.started && e.start < st.lastStart {
		st.disordered = true
	}
	st.started, st.lastStart = true, max(st.lastStart, e.start)
	if st.replan {
		return false
	}
	if !span && st.held == nil {
		return false // no span to decide: the kind is not needed
	}
	kind := e.activity
	if span {
		kind = event.ActivityUnknown
	}
	if _, work := event.WorkKind(kind, e.name, e.args); !work {
		return false
	}
	if st.disordered || unfinished {
		st.replan, w.replan = true, true
		if w.live != nil && w.live.d != nil {
			w.live.giveUp() // rows of the stream's work are written
		}
		if c := st.held; c != nil {
			st.held = nil
			w.put(c)
		}
		return false
	}
	if c := st.held; c != nil {
		st.held = nil
		c.annotation = encloses(c.end, e.start, e.end)
		w.put(c)
	}
	if !span || !w.mayAnnotate(e.name, e.args) {
		return false
	}
	held := new(ev)
	*held = *e
	held.args = slices.Clone(e.args)
	st.held = held
	return true
}

// mayAnnotate is the package's mayAnnotate, its collective test cached
// by name.
func (w *Writer) mayAnnotate(name string, args []event.Arg) bool {
	if k, _ := event.WorkKind(event.ActivityUnknown, name, args); k != event.ActivityKernel {
		return false
	}
	if _, linked := correlationOf(args); linked {
		return false
	}
	c, ok := w.collective[name]
	if !ok {
		if w.collective == nil || len(w.collective) >= maxInterned {
			w.collective = map[string]bool{}
		}
		c = event.IsCollective(name)
		w.collective[name] = c
	}
	return !c
}

// Process registers a process.
func (w *Writer) Process(p event.Process) int {
	p.Labels = slices.Clone(p.Labels)
	w.procs = append(w.procs, p)
	return len(w.procs)
}

// ProcessTrack returns the TrackProcess track of a process, registering
// it on first use, as event.Builder does.
func (w *Writer) ProcessTrack(process int) uint32 {
	if id, ok := w.procTracks[process]; ok {
		return id
	}
	if w.procTracks == nil {
		w.procTracks = map[int]uint32{}
	}
	id := w.Track(event.Track{Kind: event.TrackProcess, Process: process})
	w.procTracks[process] = id
	return id
}

// Span adds a span; an Unfinished one is held until EndSpan or Close.
func (w *Writer) Span(s event.Span) uint64 {
	e := ev{
		kind: event.KindSpan, id: w.newID(), parent: s.Parent, track: s.Track,
		name: s.Name, start: s.Start, end: max(s.End, s.Start), finished: !s.Unfinished,
		step: s.Step, stepNum: s.StepNum, args: s.Args,
	}
	if !s.Step {
		e.stepNum = 0
	}
	if st := w.stream(s.Track); st != nil {
		if w.onStream(st, &e, true, s.Unfinished) {
			return e.id
		}
	} else if s.Step {
		w.markerSteps++
		if w.live != nil && w.live.d != nil {
			w.live.d.profilerSteps = false
		}
	}
	if s.Unfinished {
		var i int32
		if k := len(w.openFree); k > 0 {
			i, w.openFree = w.openFree[k-1], w.openFree[:k-1]
		} else {
			i = int32(len(w.openEvs))
			w.openEvs = append(w.openEvs, ev{})
		}
		o := &w.openEvs[i]
		args := o.args[:0]
		*o = e
		o.args = append(args, e.args...)
		w.open[e.id] = i
		return e.id
	}
	w.put(&e)
	return e.id
}

// EndSpan ends a span added Unfinished; it does nothing to any other ID.
func (w *Writer) EndSpan(id uint64, end int64) {
	i, ok := w.open[id]
	if !ok {
		return
	}
	delete(w.open, id)
	e := &w.openEvs[i]
	e.end, e.finished = max(end, e.start), true
	w.put(e)
	w.openFree = append(w.openFree, i)
}

// TrackSlice adds a root span on a track.
func (w *Writer) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	e := ev{kind: event.KindSpan, id: w.newID(), track: track, name: name, start: start, end: max(end, start), finished: true, args: args}
	if st := w.stream(track); st != nil && w.onStream(st, &e, true, false) {
		return e.id
	}
	w.put(&e)
	return e.id
}

// Instant adds a point event.
func (w *Writer) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	w.stream(track)
	e := ev{kind: event.KindInstant, track: track, parent: parent, name: name, start: t, end: t, finished: true, args: args}
	w.put(&e)
}

// Counter adds a sample of one of the program's counters.
func (w *Writer) Counter(name, unit string, t int64, v float64) {
	w.TrackCounter(0, name, unit, t, v)
}

// TrackCounter adds a sample of a track's counter.
func (w *Writer) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	w.stream(track)
	e := ev{kind: event.KindCounter, track: track, name: name, unit: unit, start: t, end: t, finished: true, value: v}
	w.put(&e)
}

// ActivityOf adds device activity: an allocation or free is a row of
// memory, anything else one of kernels.
func (w *Writer) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	e := ev{kind: event.KindActivity, activity: kind, id: w.newID(), track: track, name: name, start: start, end: max(end, start), finished: true, args: args}
	if st := w.stream(track); st != nil {
		w.onStream(st, &e, false, false)
	}
	w.put(&e)
	return e.id
}

// Meta returns the metadata the reader fills in.
func (w *Writer) Meta() *event.Meta { return &w.meta }

// Reset discards everything written so far.
func (w *Writer) Reset() {
	w.meta = w.initial
	w.tracks, w.procs, w.procTracks = nil, nil, nil
	w.streams, w.replan, w.markerSteps = nil, false, 0
	w.nextID = 0
	clear(w.open)
	w.openEvs, w.openFree = w.openEvs[:0], w.openFree[:0]
	if w.live != nil {
		w.live.discard()
		w.live = &liveRows{hold: w.live.hold}
		return
	}
	if w.err == nil {
		w.err = w.spool.reset()
	}
}

// Close writes the tables of the trace into the Writer's directory and
// returns their paths, relative to it, in Tables' order (hosts last). On
// an error it leaves no table file behind. The spool is removed either
// way.
func (w *Writer) Close() ([]string, error) {
	if w.closed {
		return nil, errors.New("tables: Writer closed twice")
	}
	w.closed = true
	if w.spool != nil {
		defer w.spool.close()
	}
	// Spans still open end when the trace stopped, unfinished.
	ids := slices.Sorted(maps.Keys(w.open))
	for _, id := range ids {
		e := &w.openEvs[w.open[id]]
		e.end = max(w.meta.Stop.Mono, e.start)
		w.put(e)
	}
	clear(w.open)
	// A range still held has no work after it: not an annotation.
	for i := range w.streams {
		if c := w.streams[i].held; c != nil {
			w.streams[i].held = nil
			w.put(c)
		}
	}
	if w.live != nil {
		return w.closeLive()
	}
	if w.err != nil {
		return nil, fmt.Errorf("tables: spooling events: %w", w.err)
	}
	return w.writeAll(w.spool.replay)
}

// writeAll writes the tables of the finished trace whose events replay
// gives.
func (w *Writer) writeAll(replay func(func(*ev) error) error) ([]string, error) {
	var annotated map[uint64]bool
	if w.replan {
		var err error
		if annotated, err = w.annotationsOfReplanned(replay); err != nil {
			return nil, err
		}
	}
	run, host, session := w.o.names(&w.meta)
	set, err := openTables(w.dir, run, host, session)
	if err != nil {
		return nil, err
	}
	d := newDeriver(run, host, session, &w.meta, w.tracks, w.procs, w.streamClasses(), set)
	d.annotated = annotated
	d.profilerSteps = w.markerSteps == 0
	err = replay(d.add)
	if err == nil {
		err = writeHosts(d, &w.meta, w.tracks, w.o.SourceFormat)
	}
	if err != nil {
		set.close(false)
		return nil, err
	}
	return set.close(true)
}

// streamClasses are the tracks' readings as device streams.
func (w *Writer) streamClasses() []streamClass {
	streams := make([]streamClass, len(w.streams))
	for i := range w.streams {
		streams[i] = w.streamClass(i)
	}
	return streams
}

func (w *Writer) streamClass(i int) streamClass {
	st := &w.streams[i]
	return streamClass{device: st.device, stream: st.stream, ok: st.ok, replan: st.replan}
}

// annotationsOfReplanned reads the events back for the work of the
// streams whose events came out of start order, and returns the ids of their
// annotated ranges.
func (w *Writer) annotationsOfReplanned(replay func(func(*ev) error) error) (map[uint64]bool, error) {
	ops := map[uint32][]streamOp{}
	err := replay(func(e *ev) error {
		if e.track == 0 || int(e.track) > len(w.streams) || !w.streams[e.track-1].replan {
			return nil
		}
		span := e.kind == event.KindSpan
		if !span && e.kind != event.KindActivity {
			return nil
		}
		kind := e.activity
		if span {
			kind = event.ActivityUnknown
		}
		if _, work := event.WorkKind(kind, e.name, e.args); work {
			ops[e.track] = append(ops[e.track], streamOp{id: e.id, start: e.start, end: e.end, candidate: span && w.mayAnnotate(e.name, e.args)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	set := map[uint64]bool{}
	for _, o := range ops {
		// The spool holds events as they ended; analyze sorts them as
		// they came (by id) where they began together.
		slices.SortFunc(o, func(x, y streamOp) int { return cmp.Compare(x.id, y.id) })
		annotations(o, set)
	}
	return set, nil
}

// Abort discards the export: the spool, and nothing else is written.
func (w *Writer) Abort() {
	if !w.closed {
		w.closed = true
		if w.spool != nil {
			w.spool.close()
		}
		if w.live != nil {
			w.live.discard()
		}
	}
}

func writeHosts(d *deriver, m *event.Meta, tracks []event.Track, format string) error {
	for _, h := range hostRows(d, m, tracks, format) {
		if err := d.set.hosts.add(0, h); err != nil {
			return err
		}
	}
	return nil
}
