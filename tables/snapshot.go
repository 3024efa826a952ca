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
	d := newDeriver(run, host, session, m, s.Tracks, s.Processes, set)
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
