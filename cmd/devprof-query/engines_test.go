//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/internal/s3test"
	"github.com/devprof/devprof/tables"
)

// requireSpark is the environment variable that makes the Spark test
// fail, not skip, without PySpark or Java (scripts/test sets it).
const requireSpark = "DEVPROF_REQUIRE_SPARK"

// venvPython returns the conformance virtualenv's interpreter (.venv at
// the module root, made by scripts/pyenv). Without it the test skips,
// except under scripts/test (DEVPROF_CONFORMANCE_DIR set), where a skip
// would hide a failure.
func venvPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		if conformance.Dir() != "" {
			t.Fatalf("DEVPROF_CONFORMANCE_DIR is set but the conformance virtualenv is missing (%v): run scripts/pyenv", err)
		}
		t.Skipf("no conformance virtualenv (%v): run scripts/pyenv, or scripts/test", err)
	}
	return py
}

// otherEngine runs conformance/tables_query.py: every named query on
// the tables under root with engine, its rows by query name.
func otherEngine(t *testing.T, py, engine, root string, env []string, tableNames ...string) map[string][]map[string]any {
	t.Helper()
	args := append([]string{filepath.Join("..", "..", "conformance", "tables_query.py"), engine, root, "queries"}, tableNames...)
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", engine, err, stderr.String())
	}
	var got map[string][]map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s's answer %.200q: %v", engine, out, err)
	}
	return got
}

// ownRows are devprof-query's rows of a named query as JSON gives them
// back (numbers as float64), for comparing with another engine's.
func ownRows(t *testing.T, root, name string) []map[string]any {
	t.Helper()
	code, out, stderr := runQuery("-json", "-q", name, root)
	if code != 0 {
		t.Fatalf("-q %s: exit %d: %s", name, code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// sameRows compares two engines' rows of one query, in order: integers
// and strings exactly, fractions to 1e-12 relative.
func sameRows(t *testing.T, engine, query string, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s -q %s: %d rows, devprof-query %d", engine, query, len(got), len(want))
		return
	}
	for i := range want {
		for c, w := range want[i] {
			g, ok := got[i][c]
			same := ok && fmt.Sprint(g) == fmt.Sprint(w)
			if gf, isF := g.(float64); ok && !same && isF {
				if wf, isW := w.(float64); isW {
					same = math.Abs(gf-wf) <= 1e-12*math.Max(1, math.Abs(wf))
				}
			}
			if !same {
				t.Errorf("%s -q %s row %d column %s: %v, devprof-query %v\n %v\n %v", engine, query, i, c, g, w, got[i], want[i])
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s -q %s row %d: columns %v, devprof-query %v", engine, query, i, got[i], want[i])
		}
	}
}

// queryFixtures exports the real traces and the synthetic run of five
// hosts into one directory: what the engines are compared on.
func queryFixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range realTraces(t) {
		run := strings.ReplaceAll(filepath.Base(f), ".", "_")
		exportStreamed(t, dir, f, tables.Options{Run: run, Session: strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))})
	}
	for h, d := range map[string]int64{"worker-0": 1_000_000, "worker-1": 1_020_000, "worker-2": 1_400_000, "worker-3": 1_090_000} {
		if _, err := tables.WriteSnapshot(dir, syntheticHost(h, d, 0), tables.Options{Run: "job7", Host: h, Session: h}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSparkRunsNamedQueries runs every named query unchanged on Spark
// (PySpark in local mode, reading the hive partitions): each row equals
// devprof-query's, which the other tests hold to devprof analyze.
func TestSparkRunsNamedQueries(t *testing.T) {
	py := venvPython(t)
	missing := func(what string, err error) {
		msg := fmt.Sprintf("%s (%v): run scripts/pyenv (PySpark, conformance/requirements.txt) and install a JRE (apt-get install openjdk-17-jre-headless)", what, err)
		if os.Getenv(requireSpark) == "1" {
			t.Fatal(msg + "; " + requireSpark + "=1 forbids skipping")
		}
		t.Skip(msg)
	}
	if err := exec.Command(py, "-c", "import pyspark").Run(); err != nil {
		missing("no PySpark in .venv", err)
	}
	if _, err := exec.LookPath("java"); err != nil && os.Getenv("JAVA_HOME") == "" {
		missing("no Java", err)
	}
	if testing.Short() {
		t.Skip("-short: Spark takes a JVM's start")
	}
	dir := queryFixtures(t)
	got := otherEngine(t, py, "spark", dir, nil)
	for _, q := range namedQueries() {
		want := ownRows(t, dir, q.name)
		if len(want) == 0 {
			t.Fatalf("-q %s found nothing to compare", q.name)
		}
		sameRows(t, "spark", q.name, got[q.name], want)
	}
}

// TestDuckDBReadsS3 puts the exported tables in the S3 test server and
// has Python DuckDB read them from there (through s3fs: DuckDB's httpfs
// extension is downloaded at run time, which the tests cannot) and
// devprof-query download them (s3:// DST): both find devprof-query's
// rows on the local copy.
func TestDuckDBReadsS3(t *testing.T) {
	py := venvPython(t)
	dir := queryFixtures(t)
	srv := s3test.Start(t)
	var n int
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		n++
		return runstore.Put(context.Background(), srv.URL("tables/"+filepath.ToSlash(rel)), path, runstore.PutOptions{})
	})
	if err != nil || n < 8 {
		t.Fatalf("%d files uploaded: %v", n, err)
	}
	got := otherEngine(t, py, "duckdb", srv.URL("tables"), srv.Env(), tables.Tables...)
	for _, q := range namedQueries() {
		want := ownRows(t, dir, q.name)
		sameRows(t, "duckdb on s3", q.name, got[q.name], want)
		sameRows(t, "devprof-query on s3", q.name, ownRows(t, srv.URL("tables"), q.name), want)
	}
	if code, _, stderr := runQuery(srv.URL("nothing"), "select 1"); code != 1 || !strings.Contains(stderr, "holds no exported tables") {
		t.Errorf("an empty bucket prefix: exit %d, %q", code, stderr)
	}
}
