package trace

import (
	"context"
	"fmt"
	"os"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/tables"
)

// writeTables writes snap as Parquet tables into dst (Options.Tables):
// staged in a temporary directory, then published create-only, hosts
// table last, so that a reader that joins on hosts sees a session whole
// or not at all. The session's host is its file name's (a second session
// of the same host in the same run is refused, not merged).
func writeTables(dst string, snap *event.Snapshot, run, host string) error {
	staging, err := os.MkdirTemp("", "devprof-tables-")
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	defer os.RemoveAll(staging)
	files, err := tables.WriteSnapshot(staging, snap, tables.Options{Run: run, Host: host, Session: host, SourceFormat: "session"})
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	if _, err := runstore.Publish(context.Background(), staging, files, dst); err != nil {
		return fmt.Errorf("tables into %s: %w", runstore.Display(dst), err)
	}
	return nil
}
