package tables

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// Export writes the tables of one trace into dir, as a Writer does, and
// returns their paths relative to dir (hosts last). read streams the
// trace into the sink it is given: a format's StreamFile, a reader's
// Stream.
//
// A Writer spools every event until the trace ends, because a reader
// may say only at the end what rows depend on: the clock anchor that
// maps times to Unix nanoseconds, the host, the names of tracks. Export
// instead writes rows as events come, taking those facts as they stand
// once its first events are in; if the trace's end changes any that
// rows already written took (or a stream's work comes out of order, so
// its annotated ranges can only be found once all of it is read), it
// drops those rows and reads the trace a second time into a Writer. So
// read must give the same trace each time it is called; it is called at
// most twice. Rows and files are the same either way.
//
// On an error nothing is left in dir.
func Export(dir string, meta event.Meta, o Options, read func(event.Sink) error) ([]string, error) {
	paths, _, err := export(dir, meta, o, read, liveHoldBytes)
	return paths, err
}

// liveHoldBytes is how much of a trace's start Export holds in memory
// before it writes rows: the facts a reader gives after its first events
// (a clock snapshot a few packets in, a process named after its first
// slices) are then taken as they are, and a trace that fits is written
// with every fact final, never read twice.
const liveHoldBytes = 8 << 20

// errLate says that a fact rows were written with changed at the end of
// the trace (see Export).
var errLate = errors.New("tables: the trace's end changed rows already written")

// export is Export holding hold bytes of the trace's start; it also
// reports whether the trace was read twice.
func export(dir string, meta event.Meta, o Options, read func(event.Sink) error, hold int) ([]string, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	w := newWriter(dir, meta, o)
	w.live = &liveRows{hold: hold}
	if err := read(w); err != nil {
		w.Abort()
		return nil, false, err
	}
	paths, err := w.Close()
	if !errors.Is(err, errLate) {
		return paths, false, err
	}
	sw, err := NewWriter(dir, meta, o)
	if err != nil {
		return nil, true, err
	}
	if err := read(sw); err != nil {
		sw.Abort()
		return nil, true, err
	}
	paths, err = sw.Close()
	return paths, true, err
}

// liveRows is a Writer's state while it writes rows as events come.
// Until hold bytes of events are in they wait in memory (pending); then
// the tables are opened with the facts of the moment and rows written
// from then on (d set).
type liveRows struct {
	hold int
	// pending are the events before rows are written, in blocks that
	// never move (a slice grown by appending would hold twice its
	// length at times).
	pending [][]ev
	args    []event.Arg // the current block the pending events' arguments are copied into
	bytes   int
	d       *deriver
	// late: a fact that rows already written took has changed, or will
	// have to: Close gives errLate, and nothing more is written.
	late bool
}

// Sizes of what pending holds, for its budget.
const (
	evBytes   = int(unsafe.Sizeof(ev{}))
	argBytes  = int(unsafe.Sizeof(event.Arg{}))
	argsBlock = 4096
	evsBlock  = 4096
)

// keep copies args into the current block of arguments.
func (x *liveRows) keep(args []event.Arg) []event.Arg {
	if len(args) == 0 {
		return nil
	}
	if len(x.args)+len(args) > cap(x.args) {
		x.args = make([]event.Arg, 0, max(argsBlock, len(args)))
	}
	n := len(x.args)
	x.args = append(x.args, args...)
	return x.args[n:len(x.args):len(x.args)]
}

// giveUp drops what was written: Close will give errLate.
func (x *liveRows) giveUp() {
	x.late = true
	x.discard()
}

// discard removes the tables written so far.
func (x *liveRows) discard() {
	if x.d != nil {
		x.d.set.close(false)
		x.d = nil
	}
	x.pending, x.args = nil, nil
}

// putLive takes a finished event: into pending, or straight into rows.
func (w *Writer) putLive(e *ev) {
	x := w.live
	if x.late {
		return
	}
	if x.d != nil {
		w.err = x.d.add(e)
		return
	}
	if n := len(x.pending); n == 0 || len(x.pending[n-1]) == cap(x.pending[n-1]) {
		x.pending = append(x.pending, make([]ev, 0, evsBlock))
	}
	blk := &x.pending[len(x.pending)-1]
	*blk = append(*blk, *e)
	(*blk)[len(*blk)-1].args = x.keep(e.args)
	x.bytes += evBytes + len(e.args)*argBytes
	if x.bytes >= x.hold {
		w.err = w.startRows()
	}
}

// startRows opens the tables with the facts as they stand and writes
// the pending events' rows.
func (w *Writer) startRows() error {
	x := w.live
	if w.replan {
		x.giveUp() // a stream's annotated ranges need all of its work
		return nil
	}
	run, host, session := w.o.names(&w.meta)
	set, err := openTables(w.dir, run, host, session)
	if err != nil {
		return err
	}
	// Tracks are resolved as their first rows come (resolve).
	d := newDeriver(run, host, session, &w.meta, nil, nil, nil, set)
	d.tracks = make([]trackFacts, len(w.tracks))
	d.resolve = func(id uint32) trackFacts {
		return factsOf(d.program, w.tracks[id-1], w.procs, w.streamClass(int(id-1)))
	}
	d.profilerSteps = w.markerSteps == 0
	x.d = d
	return x.replayPending(d.add)
}

// replayPending passes the pending events to fn, in the order they came,
// and lets go of them.
func (x *liveRows) replayPending(fn func(*ev) error) error {
	pending := x.pending
	x.pending, x.args = nil, nil
	for _, blk := range pending {
		for i := range blk {
			if err := fn(&blk[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeLive ends the tables of a Writer that wrote rows as events came:
// it writes them all now if the trace fit in memory, else checks that
// the facts its rows took still hold (errLate if not).
func (w *Writer) closeLive() ([]string, error) {
	x := w.live
	if w.err != nil {
		x.discard()
		return nil, fmt.Errorf("tables: writing rows: %w", w.err)
	}
	if x.late || x.d != nil && !w.factsHeld() {
		x.discard()
		return nil, errLate
	}
	if x.d == nil {
		pending := x.pending
		return w.writeAll(func(fn func(*ev) error) error {
			x.pending = pending // replayed twice where a stream's ranges are sought
			return x.replayPending(fn)
		})
	}
	d := x.d
	x.d = nil
	// Every track as it ended, for the hosts table's devices.
	d.program = programFacts(&w.meta)
	d.tracks = tracksFacts(d.program, w.tracks, w.procs, w.streamClasses())
	if err := writeHosts(d, &w.meta, w.tracks, w.o.SourceFormat); err != nil {
		d.set.close(false)
		return nil, err
	}
	return d.set.close(true)
}

// factsHeld reports whether what the trace's end says is what the rows
// written while it was read took: the run, host and session, the clock
// anchor's offset, the program's and every used track's columns, and
// whether its ProfilerStep#N spans are steps.
func (w *Writer) factsHeld() bool {
	d := w.live.d
	run, host, session := w.o.names(&w.meta)
	if run != d.run || host != d.host || session != d.session {
		return false
	}
	if w.meta.Start.Wall-w.meta.Start.Mono != d.offset || w.replan {
		return false
	}
	if d.ruleSteps > 0 && w.markerSteps > 0 {
		return false
	}
	program := programFacts(&w.meta)
	if d.programUsed && program != d.program {
		return false
	}
	for i := range d.tracks {
		if f := d.tracks[i]; f.known && f != factsOf(program, w.tracks[i], w.procs, w.streamClass(i)) {
			return false
		}
	}
	return true
}
