package trace

import (
	"context"
	"fmt"
	"os"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/runstore"
)

// TableWriter is what Options.Tables takes: where a session's tables go
// and how its snapshot becomes them. tables.Session returns one; the
// interface keeps the Parquet code out of programs that never ask for
// tables.
type TableWriter interface {
	// Dest is the directory or bucket URL the tables are published to.
	Dest() string
	// WriteTables writes s's tables into the local directory dir and
	// returns their paths relative to dir (slash-separated), hosts last.
	WriteTables(dir string, s *event.Snapshot, run, host string) ([]string, error)
}

// writeTables writes snap's tables (Options.Tables) into a temporary
// directory, then publishes them create-only, hosts table last, so that
// a reader that joins on hosts sees a session whole or not at all. A
// second session of the same host in the same run is refused, not
// merged.
func writeTables(w TableWriter, snap *event.Snapshot, run, host string) error {
	staging, err := os.MkdirTemp("", "devprof-tables-")
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	defer os.RemoveAll(staging)
	files, err := w.WriteTables(staging, snap, run, host)
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	if _, err := runstore.Publish(context.Background(), staging, files, w.Dest()); err != nil {
		return fmt.Errorf("tables into %s: %w", runstore.Display(w.Dest()), err)
	}
	return nil
}
