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
type Writer struct {
	dir     string
	o       Options
	meta    event.Meta
	initial event.Meta

	tracks     []event.Track
	procs      []event.Process
	procTracks map[int]uint32

	nextID uint64
	open   map[uint64]*ev
	spool  *spool
	err    error // the first write error; Close returns it
	closed bool
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
	return &Writer{dir: dir, o: o, meta: meta, initial: meta, open: map[uint64]*ev{}, spool: s}, nil
}

func (w *Writer) put(e *ev) {
	if w.err == nil {
		w.err = w.spool.put(e)
	}
}

func (w *Writer) newID() uint64 {
	w.nextID++
	return w.nextID
}

// Track registers a track.
func (w *Writer) Track(t event.Track) uint32 {
	w.tracks = append(w.tracks, t)
	return uint32(len(w.tracks))
}

// SetTrackName renames a registered track.
func (w *Writer) SetTrackName(id uint32, name string) {
	if id > 0 && int(id) <= len(w.tracks) {
		w.tracks[id-1].Name = name
	}
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
	if s.Unfinished {
		open := new(ev)
		*open = e
		open.args = slices.Clone(e.args)
		w.open[e.id] = open
		return e.id
	}
	w.put(&e)
	return e.id
}

// EndSpan ends a span added Unfinished; it does nothing to any other ID.
func (w *Writer) EndSpan(id uint64, end int64) {
	e, ok := w.open[id]
	if !ok {
		return
	}
	delete(w.open, id)
	e.end, e.finished = max(end, e.start), true
	w.put(e)
}

// TrackSlice adds a root span on a track.
func (w *Writer) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	e := ev{kind: event.KindSpan, id: w.newID(), track: track, name: name, start: start, end: max(end, start), finished: true, args: args}
	w.put(&e)
	return e.id
}

// Instant adds a point event.
func (w *Writer) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	e := ev{kind: event.KindInstant, track: track, parent: parent, name: name, start: t, end: t, finished: true, args: args}
	w.put(&e)
}

// Counter adds a sample of one of the program's counters.
func (w *Writer) Counter(name, unit string, t int64, v float64) {
	w.TrackCounter(0, name, unit, t, v)
}

// TrackCounter adds a sample of a track's counter.
func (w *Writer) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	e := ev{kind: event.KindCounter, track: track, name: name, unit: unit, start: t, end: t, finished: true, value: v}
	w.put(&e)
}

// ActivityOf adds device activity: an allocation or free is a row of
// memory, anything else one of kernels.
func (w *Writer) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	e := ev{kind: event.KindActivity, activity: kind, id: w.newID(), track: track, name: name, start: start, end: max(end, start), finished: true, args: args}
	w.put(&e)
	return e.id
}

// Meta returns the metadata the reader fills in.
func (w *Writer) Meta() *event.Meta { return &w.meta }

// Reset discards everything written so far.
func (w *Writer) Reset() {
	w.meta = w.initial
	w.tracks, w.procs, w.procTracks = nil, nil, nil
	w.nextID = 0
	clear(w.open)
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
	defer w.spool.close()
	if w.err != nil {
		return nil, fmt.Errorf("tables: spooling events: %w", w.err)
	}
	// Spans still open end when the trace stopped, unfinished.
	ids := slices.Sorted(maps.Keys(w.open))
	for _, id := range ids {
		e := w.open[id]
		e.end = max(w.meta.Stop.Mono, e.start)
		if err := w.spool.put(e); err != nil {
			return nil, fmt.Errorf("tables: spooling events: %w", err)
		}
	}
	clear(w.open)
	run, host, session := w.o.names(&w.meta)
	set, err := openTables(w.dir, run, host, session)
	if err != nil {
		return nil, err
	}
	d := newDeriver(run, host, session, &w.meta, w.tracks, w.procs, set)
	err = w.spool.replay(d.add)
	if err == nil {
		err = writeHosts(d, &w.meta, w.tracks, w.o.SourceFormat)
	}
	if err != nil {
		set.close(false)
		return nil, err
	}
	return set.close(true)
}

// Abort discards the export: the spool, and nothing else is written.
func (w *Writer) Abort() {
	if !w.closed {
		w.closed = true
		w.spool.close()
	}
}

func writeHosts(d *deriver, m *event.Meta, tracks []event.Track, format string) error {
	for _, h := range hostRows(d, m, tracks, format) {
		if err := d.set.hosts.add(h); err != nil {
			return err
		}
	}
	return nil
}
