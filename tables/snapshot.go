package tables

import (
	"cmp"
	"os"

	"github.com/devprof/devprof/event"
)

// WriteSnapshot writes the tables of a finished snapshot (a session's)
// into dir, as a Writer would of the same trace streamed, and returns
// their paths relative to dir, hosts last. Its clock anchor and ends are
// known, so no spool is needed: rows go straight to the tables. Row ids
// are the snapshot's record IDs. On an error no table file is left.
func WriteSnapshot(dir string, s *event.Snapshot, o Options) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &s.Meta
	run, host, session := o.names(m)
	set, err := openTables(dir, run, host, session)
	if err != nil {
		return nil, err
	}
	d := newDeriver(run, host, session, m, s.Tracks, s.Processes, nil, set)
	d.annotated, d.profilerSteps = snapshotStreams(s, d)
	var e ev
	for _, r := range s.Events {
		e = ev{kind: r.Kind(), activity: r.Activity(), id: r.ID(), parent: r.Parent(), name: s.Name(r), start: r.Start(), args: s.AppendArgs(e.args[:0], r)}
		if r.Kind() == event.KindActivity || r.OnTrack() {
			e.track = r.Lane()
		}
		e.end, e.finished = s.EndOf(r)
		if r.IsStep() {
			e.step, e.stepNum = true, r.StepNum()
		}
		if r.Kind() == event.KindCounter {
			e.unit, e.value = s.Counter(r)
			e.args = e.args[:0] // the sample's value, not an argument
		}
		if err = d.add(&e); err != nil {
			break
		}
	}
	if err == nil {
		err = writeHosts(d, m, s.Tracks, cmp.Or(o.SourceFormat, "session"))
	}
	if err != nil {
		set.close(false)
		return nil, err
	}
	return set.close(true)
}

// snapshotStreams applies the rules a Writer applies as events come to a
// snapshot's: it returns the annotated ranges of its devices' streams
// (each stream's work in start order, ties in id order) and whether it
// marks no step (so that its ProfilerStep#N spans are its steps).
func snapshotStreams(s *event.Snapshot, d *deriver) (map[uint64]bool, bool) {
	trackOf := func(r *event.Record) uint32 {
		if r.Kind() == event.KindActivity || r.OnTrack() {
			return r.Lane()
		}
		return 0
	}
	// Only a stream with spans can hold an annotated range.
	spans := map[uint32]bool{}
	markers := false
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan {
			continue
		}
		if t := trackOf(r); d.facts(t).stream {
			spans[t] = true
		} else if r.IsStep() {
			markers = true
		}
	}
	annotated := map[uint64]bool{}
	if len(spans) == 0 {
		return annotated, !markers
	}
	ops := map[uint32][]streamOp{}
	var args []event.Arg
	for _, r := range s.Events {
		t := trackOf(r)
		span := r.Kind() == event.KindSpan
		if !spans[t] || !span && r.Kind() != event.KindActivity {
			continue
		}
		kind := r.Activity()
		if span {
			kind = event.ActivityUnknown
		}
		name := s.Name(r)
		args = s.AppendArgs(args[:0], r)
		if _, work := event.WorkKind(kind, name, args); work {
			end, _ := s.EndOf(r)
			ops[t] = append(ops[t], streamOp{id: r.ID(), start: r.Start(), end: end, candidate: span && mayAnnotate(name, args)})
		}
	}
	for t, o := range ops {
		d.tracks[t-1].replan = true
		annotations(o, annotated)
	}
	return annotated, !markers
}

// Session returns what trace.Options.Tables takes to make a session's
// Stop also write its tables into dst, a directory or a bucket URL
// (published there by the session, create-only, hosts last). A program
// that never calls it links no Parquet code.
func Session(dst string) SessionTables { return SessionTables{dst} }

// SessionTables is a session's table output: its destination, and how
// its snapshot becomes tables (trace.TableWriter).
type SessionTables struct{ dst string }

// Dest returns the destination the session publishes the tables to.
func (t SessionTables) Dest() string { return t.dst }

// WriteTables writes s's tables into the local directory dir as
// WriteSnapshot does, the run and host columns set to the session's,
// and returns their paths relative to dir, hosts last.
func (t SessionTables) WriteTables(dir string, s *event.Snapshot, run, host string) ([]string, error) {
	return WriteSnapshot(dir, s, Options{Run: run, Host: host, Session: host, SourceFormat: "session"})
}
