package trace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/tables"
	"github.com/devprof/devprof/trace"
)

// TestSessionTables: a session with Tables writes its Parquet tables
// there at Stop, partitioned by its run and host, with its spans and
// steps; a second session of the same run and host is refused rather
// than merged, and leaves the first one's files as they were.
func TestSessionTables(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "tables")
	run := func(opts trace.Options) (*trace.Session, error) {
		s, err := trace.StartSession(t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 5 {
			sctx, step := annotate.Step(ctx, "train", int64(i))
			_, sp := annotate.Begin(sctx, "forward")
			sp.End()
			step.End()
		}
		return s, s.Stop()
	}
	s, err := run(trace.Options{SessionID: "job-7", Hostname: "node-1", Tables: tables.Session(dst)})
	if err != nil {
		t.Fatal(err)
	}
	if out := s.Outputs(); out.Tables != dst {
		t.Fatalf("Outputs.Tables %q, want %q", out.Tables, dst)
	}
	files, _ := filepath.Glob(filepath.Join(dst, "*", "run=job-7", "host=node-1", "node-1.parquet"))
	if len(files) != 8 {
		t.Fatalf("tables written %q, want the 8 tables", files)
	}
	spans := readTable[tables.Span](t, filepath.Join(dst, "spans", "run=job-7", "host=node-1", "node-1.parquet"))
	steps := readTable[tables.Step](t, filepath.Join(dst, "steps", "run=job-7", "host=node-1", "node-1.parquet"))
	hosts := readTable[tables.Host](t, filepath.Join(dst, "hosts", "run=job-7", "host=node-1", "node-1.parquet"))
	forward := 0
	for _, sp := range spans {
		if sp.Name == "forward" {
			forward++
		}
	}
	if forward != 5 || len(steps) != 5 || len(hosts) == 0 || hosts[0].Spans != int64(len(spans)) || hosts[0].StartNS < 1e18 {
		t.Errorf("%d forward spans, %d steps, hosts %+v; want 5, 5 and the session's row with Unix times", forward, len(steps), hosts)
	}
	before, err := os.ReadFile(filepath.Join(dst, "spans", "run=job-7", "host=node-1", "node-1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(trace.Options{SessionID: "job-7", Hostname: "node-1", Tables: tables.Session(dst)}); err == nil || !strings.Contains(err.Error(), "already there") {
		t.Errorf("the same run and host again: %v, want it refused", err)
	}
	after, _ := os.ReadFile(filepath.Join(dst, "spans", "run=job-7", "host=node-1", "node-1.parquet"))
	if string(before) != string(after) {
		t.Error("the refused session changed the first one's table")
	}
	if _, err := run(trace.Options{SessionID: "job-7", Hostname: "node-2", Tables: tables.Session(dst)}); err != nil {
		t.Errorf("another host of the same run: %v", err)
	}
}

func readTable[T tables.Row](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tables.Read[T](f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}
