package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/s3test"
	"github.com/devprof/devprof/tables"
	"github.com/devprof/devprof/trace"
)

// exportSums are what DuckDB must find of one session in the tables:
// each table's rows and its sums, as the model has them.
type exportSums struct {
	Spans, SpanDur       int64
	Instants             int64
	Counters             int64
	CounterSum           float64
	Kernels, KernelDur   int64
	KernelBytes          int64
	Memory, MemoryBytes  int64
	Flows                int64
	Steps, StepDur       int64
	HostSpans, HostFlows int64 // the hosts row's counts
}

// modelSums computes exportSums from the model a reader builds. A
// Chrome file's GPU streams are threads of its devices' processes
// (event.StreamOf): their slices are kernels (the fixtures annotate no
// range on a stream, which would stay a span).
func modelSums(s *event.Snapshot) exportSums {
	var x exportSums
	var args []event.Arg
	for _, r := range s.Events {
		args = s.AppendArgs(args[:0], r)
		end, _ := s.EndOf(r)
		for _, a := range args {
			if a.Kind == event.ArgFlow {
				x.Flows++
			}
		}
		kind := r.Kind()
		if tr, ok := s.TrackOf(r); ok && kind == event.KindSpan && tr.Kind == event.TrackHostThread {
			if _, _, stream := event.StreamOf(tr, s.Processes); stream {
				kind = event.KindActivity
			}
		}
		switch kind {
		case event.KindSpan:
			x.Spans++
			x.SpanDur += end - r.Start()
			if r.IsStep() {
				x.Steps++
				x.StepDur += end - r.Start()
			}
		case event.KindInstant:
			x.Instants++
		case event.KindCounter:
			x.Counters++
			_, v := s.Counter(r)
			x.CounterSum += v
		case event.KindActivity:
			var bytes int64
			for _, a := range args {
				if a.Key == event.ArgBytes {
					bytes = int64(a.Num)
				}
			}
			if k := r.Activity(); k == event.ActivityAlloc || k == event.ActivityFree {
				x.Memory++
				x.MemoryBytes += bytes
			} else {
				x.Kernels++
				x.KernelDur += end - r.Start()
				x.KernelBytes += bytes
			}
		}
	}
	x.HostSpans, x.HostFlows = x.Spans, x.Flows
	return x
}

// duckSums asks DuckDB (.venv) for every session's exportSums in the
// tables under root, reading them as an engine does: a glob over each
// table with hive partitioning.
func duckSums(t *testing.T, root string) map[string]exportSums {
	t.Helper()
	py := venvPython(t)
	const script = `
import duckdb, json, sys
root = sys.argv[1]
def q(table, cols):
    sql = "select run || '/' || host || '/' || session, %s from read_parquet('%s/%s/**/*.parquet', hive_partitioning=true) group by all" % (cols, root, table)
    return {r[0]: r[1:] for r in duckdb.sql(sql).fetchall()}
out = {}
def put(table, cols, names):
    for k, v in q(table, cols).items():
        d = out.setdefault(k, {})
        for n, x in zip(names, v):
            d[n] = float(x) if isinstance(x, float) else int(x or 0)
put("spans", "count(*), sum(dur_ns)", ["Spans", "SpanDur"])
put("instants", "count(*)", ["Instants"])
put("counters", "count(*), sum(value)", ["Counters", "CounterSum"])
put("kernels", "count(*), sum(dur_ns), sum(bytes)", ["Kernels", "KernelDur", "KernelBytes"])
put("memory", "count(*), sum(bytes)", ["Memory", "MemoryBytes"])
put("flows", "count(*)", ["Flows"])
put("steps", "count(*), sum(dur_ns)", ["Steps", "StepDur"])
put("hosts", "max(spans), max(flows)", ["HostSpans", "HostFlows"])
json.dump(out, sys.stdout)
`
	cmd := exec.Command(py, "-c", script, root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	var m map[string]exportSums
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("duckdb's answer %q: %v", out, err)
	}
	return m
}

// sameSums compares with a relative tolerance on the float sum, which
// DuckDB adds up in its own order.
func sameSums(a, b exportSums) bool {
	if math.Abs(a.CounterSum-b.CounterSum) > 1e-9*math.Max(1, math.Abs(a.CounterSum)) {
		return false
	}
	a.CounterSum, b.CounterSum = 0, 0
	return a == b
}

// TestExportRealTracesDuckDB exports every real-GPU trace (six formats'
// writers: devprof, JAX, TSL, Kineto) with devprof export and reads the
// tables back with DuckDB: each session's counts and sums per table are
// the model's.
func TestExportRealTracesDuckDB(t *testing.T) {
	var files []string
	for _, pat := range []string{"*.pftrace", "*.xplane.pb", "*.json.gz", "h200/*.pftrace", "h200/*.xplane.pb"} {
		m, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real-gpu", pat))
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("%d real-GPU traces", len(files))
	}
	dst := t.TempDir()
	want := map[string]exportSums{}
	for _, f := range files {
		run := strings.ReplaceAll(filepath.Base(f), ".", "_") // one run per file: two formats of one trace are two runs
		code, stdout, stderr := runCLI("export", "-run", run, f, dst)
		if code != 0 {
			t.Fatalf("export %s: exit %d: %s", f, code, stderr)
		}
		if !strings.Contains(stdout, "1 trace") {
			t.Errorf("export %s said %q", f, stdout)
		}
		snap, _, err := formats.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		in := inputOf(f, "")
		host := snap.Meta.Host
		if host == "" {
			host = in.session
		}
		want[run+"/"+host+"/"+in.session] = modelSums(snap)
	}
	got := duckSums(t, dst)
	if len(got) != len(want) {
		t.Errorf("DuckDB found %d sessions, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !sameSums(g, w) {
			t.Errorf("%s:\n DuckDB %+v\n model  %+v", k, g, w)
		}
	}
}

// TestExportRunDirectory exports a directory of traces: one session per
// host, in the first of the session formats it has; a second export of
// it is refused and changes nothing.
func TestExportRunDirectory(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "real-gpu", "h200")
	dst := filepath.Join(t.TempDir(), "tables")
	code, stdout, stderr := runCLI("export", src, dst)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "5 traces") {
		t.Errorf("stdout %q", stdout)
	}
	var sessions []string
	for _, p := range mustGlob(t, filepath.Join(dst, "hosts", "run=h200", "host=*", "*.parquet")) {
		sessions = append(sessions, strings.TrimSuffix(filepath.Base(p), ".parquet"))
	}
	slices.Sort(sessions)
	if strings.Join(sessions, ",") != "gpucheck,gpucheck-2,jax-tsl,leak,window" {
		t.Errorf("sessions %v", sessions)
	}
	for _, table := range tables.Tables {
		if n := len(mustGlob(t, filepath.Join(dst, table, "run=h200", "host=*", "*.parquet"))); n != 5 {
			t.Errorf("%s: %d files, want 5", table, n)
		}
	}
	before := treeOf(t, dst)
	code, _, stderr = runCLI("export", src, dst)
	if code != 1 || !strings.Contains(stderr, "already there") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("second export: exit %d, %q", code, stderr)
	}
	if after := treeOf(t, dst); after != before {
		t.Errorf("a refused export changed the tables:\n%s\n---\n%s", before, after)
	}
}

func mustGlob(t *testing.T, pat string) []string {
	t.Helper()
	m, err := filepath.Glob(pat)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// treeOf lists every file under root with its size and time.
// (Directories' times change as staging comes and goes beside them.)
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir() {
			fmt.Fprintf(&b, "%s %d %v\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// TestExportS3MultiHost: three hosts' sessions of one job write one run
// into a bucket (the real S3 server); devprof export reads the log
// directory from the bucket and writes the tables into the bucket, one
// partition per host, which DuckDB reads with each host's counts.
func TestExportS3MultiHost(t *testing.T) {
	srv := s3test.Start(t)
	logdir := srv.URL("logs")
	hosts := []string{"worker-0", "worker-1", "worker-2"}
	for _, h := range hosts {
		recordS3Session(t, logdir, trace.Options{Hostname: h, SessionID: "job1"})
	}
	code, stdout, stderr := runCLI("export", logdir, srv.URL("tables"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "3 traces") {
		t.Errorf("stdout %q", stdout)
	}
	want := map[string]exportSums{}
	for _, h := range hosts {
		snap, _, err := formats.Read(srv.Path("logs/plugins/profile/job1/" + h + ".pftrace"))
		if err != nil {
			t.Fatal(err)
		}
		want["job1/"+h+"/"+h] = modelSums(snap)
	}
	got := duckSums(t, srv.Path("tables"))
	if len(got) != len(want) {
		t.Errorf("DuckDB found %v, want %d sessions", got, len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !sameSums(g, w) {
			t.Errorf("%s:\n DuckDB %+v\n model  %+v", k, g, w)
		}
	}
	// Each host's spans line up in Unix time: their starts are within
	// the seconds the test ran.
	for _, h := range hosts {
		f, err := os.Open(srv.Path("tables/" + tables.PartitionPath(tables.TableSpans, "job1", h, h)))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		spans, err := tables.Read[tables.Span](f, st.Size())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range spans {
			if d := time.Since(time.Unix(0, s.StartNS)); d < 0 || d > 10*time.Minute {
				t.Fatalf("%s: span %q starts %v ago, not in Unix time", h, s.Name, d)
			}
		}
	}
	// Exporting again is refused: the objects are create-only.
	code, _, stderr = runCLI("export", logdir, srv.URL("tables"))
	if code != 1 || !strings.Contains(stderr, "already there") {
		t.Errorf("second export: exit %d, %q", code, stderr)
	}
}

// TestExportBadInput: usage errors exit 2 before reading anything; a
// missing or broken input, or a destination that is a file, exits 1 with
// one line, and leaves nothing behind: no partition of a trace read
// before the broken one, no staging, no destination directory.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join("..", "..", "testdata", "real-gpu", "h200", "leak.pftrace")
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "a.pftrace"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "b.pftrace"), data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "file")
	if err := os.WriteFile(aFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no args", []string{"export"}, 2, "want SRC and DST"},
		{"one arg", []string{"export", good}, 2, "want SRC and DST"},
		{"negative max_events", []string{"export", "-max_events", "-1", good, filepath.Join(dir, "o1")}, 2, "-max_events -1"},
		{"missing", []string{"export", filepath.Join(dir, "nope.pftrace"), filepath.Join(dir, "o2")}, 1, "no such file"},
		{"truncated second trace", []string{"export", run, filepath.Join(dir, "o3")}, 1, "b.pftrace"},
		{"not a trace", []string{"export", aFile, filepath.Join(dir, "o4")}, 1, "file"},
		{"destination is a file", []string{"export", good, aFile}, 1, "is a file, not a directory"},
		{"empty directory", []string{"export", t.TempDir(), filepath.Join(dir, "o5")}, 1, "holds no trace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(c.args...)
			if code != c.code || !strings.Contains(stderr, c.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.err)
			}
			if c.code == 1 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("more than one line: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			for _, o := range []string{"o1", "o2", "o3", "o4", "o5"} {
				if _, err := os.Stat(filepath.Join(dir, o)); !os.IsNotExist(err) {
					t.Errorf("%s left behind: %v", o, err)
				}
			}
			if d, _ := os.ReadFile(aFile); string(d) != "x" {
				t.Errorf("the file named as destination changed: %q", d)
			}
		})
	}
	// Into an existing directory: it stays as it was.
	existing := t.TempDir()
	if code, _, _ := runCLI("export", run, existing); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if ents, _ := os.ReadDir(existing); len(ents) != 0 {
		t.Errorf("left in the destination: %v", ents)
	}
	code, stdout, _ := runCLI("export", "-h")
	if code != 0 || !strings.Contains(stdout, "Usage: devprof export") || !strings.Contains(stdout, "-run") {
		t.Errorf("-h: exit %d, %q", code, stdout)
	}
}

// exportChildEnv makes the test binary run devprof with the arguments it
// holds (separated by \x1f) instead of the tests, for tests that signal
// a running export.
const exportChildEnv = "DEVPROF_EXPORT_TEST_ARGS"

func init() {
	if args := os.Getenv(exportChildEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
}

// bigTrace writes a Perfetto trace of n spans, for an export that takes
// long enough to be interrupted.
func bigTrace(t *testing.T, n int) string {
	t.Helper()
	b := event.NewBuilder(event.Meta{Host: "big", Start: event.ClockAnchor{Wall: 1_700_000_000_000_000_000}})
	tr := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	for i := range n {
		b.Span(event.Span{Name: fmt.Sprint("op", i%100), Start: int64(i) * 100, End: int64(i)*100 + 50, Track: tr,
			Args: []event.Arg{{Key: "i", Kind: event.ArgInt, Num: uint64(i)}}})
	}
	m := b.Meta()
	m.Stop = event.ClockAnchor{Mono: int64(n) * 100}
	path := filepath.Join(t.TempDir(), "big.pftrace")
	if err := formats.WriteFile(path, formats.Perfetto, b.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInterruptedExportLeavesNothing: devprof export of a large trace,
// interrupted by SIGINT or SIGTERM while it writes its staging directory,
// dies of the signal and leaves neither staging nor the destination it
// made.
func TestInterruptedExportLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a trace of 2M spans")
	}
	src := bigTrace(t, 2_000_000)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "tables")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), exportChildEnv+"="+strings.Join([]string{"export", src, dst}, "\x1f"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(time.Minute)
			for {
				// The spans table is open in staging: rows are being
				// written (the trace's start is read by then).
				if len(mustGlob(t, filepath.Join(dst, ".devprof-export-*", "spans", "run=*", "host=*", "*.parquet"))) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no table being written in a minute; %s", stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("devprof ended with %v, want killed by %v; %s", err, sig, stderr.String())
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

// TestCollectTablesS3: devprof collect --tables captures ten hosts into a
// log directory in the bucket and exports the run as tables into the
// bucket too: one partition per host, whose counts DuckDB reads equal to
// each host's trace in the run.
func TestCollectTablesS3(t *testing.T) {
	srv := s3test.Start(t)
	const hosts = 10
	var addrs []string
	for i := range hosts {
		addrs = append(addrs, startCollectChild(t, fmt.Sprint("h", i)))
	}
	code, _, stderr := runCLI("collect", "--log_dir", srv.URL("logs"), "--tables", srv.URL("tables"), "--no_perfetto_link", strings.Join(addrs, ","), "300")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("exported %d traces", hosts)) {
		t.Errorf("stderr %q", stderr)
	}
	runs := mustGlob(t, srv.Path("logs/plugins/profile/*"))
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	run := filepath.Base(runs[0])
	want := map[string]exportSums{}
	for _, addr := range addrs {
		host := fileHostName(addr)
		snap, _, err := formats.Read(filepath.Join(runs[0], host+".xplane.pb"))
		if err != nil {
			t.Fatal(err)
		}
		if snap.Meta.Host != "" {
			host = snap.Meta.Host
		}
		want[run+"/"+host+"/"+fileHostName(addr)] = modelSums(snap)
	}
	got := duckSums(t, srv.Path("tables"))
	if len(got) != hosts {
		t.Errorf("DuckDB found %d sessions, want %d: %v", len(got), hosts, got)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !sameSums(g, w) || w.Spans == 0 {
			t.Errorf("%s:\n DuckDB %+v\n model  %+v", k, g, w)
		}
	}
}

// TestExportGoTrace: a Go execution trace (read by its own bounded
// reader) exports as any other trace: DuckDB's counts and sums are the
// model's.
func TestExportGoTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prog.trace")
	if err := os.WriteFile(path, goroutinesTraceFile(t, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if code, _, stderr := runCLI("export", "-run", "r", "-host", "h", path, dst); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	snap, f, err := formats.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f != formats.GoTrace {
		t.Fatalf("read as %s", f.Name)
	}
	want := modelSums(snap)
	if want.Spans == 0 || want.Counters == 0 {
		t.Fatalf("model %+v: want spans and counters", want)
	}
	got := duckSums(t, dst)
	if g := got["r/h/prog"]; len(got) != 1 || !sameSums(g, want) {
		t.Errorf("DuckDB %+v\nmodel %+v", got, want)
	}
}

// TestExportPipedMatchesDirect: an export whose Writer runs behind a
// sinkpipe.Pipe (two cores) writes the very files of one that does not,
// byte for byte, for every real trace and a Go execution trace.
func TestExportPipedMatchesDirect(t *testing.T) {
	var srcs []string
	for _, pat := range []string{"*.pftrace", "*.xplane.pb", "*.json.gz", "h200/*.pftrace"} {
		m, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real-gpu", pat))
		srcs = append(srcs, m...)
	}
	goTrace := filepath.Join(t.TempDir(), "prog.trace")
	if err := os.WriteFile(goTrace, goroutinesTraceFile(t, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs = append(srcs, goTrace)
	if len(srcs) < 6 {
		t.Fatalf("found only %v", srcs)
	}
	was := exportOnTwoCores
	defer func() { exportOnTwoCores = was }()
	export := func(src string, piped bool) map[string][]byte {
		exportOnTwoCores = func() bool { return piped }
		dst := t.TempDir()
		if code, _, stderr := runCLI("export", "-run", "r", "-host", "h", src, dst); code != 0 {
			t.Fatalf("export %s (piped %v): exit %d: %s", src, piped, code, stderr)
		}
		files := map[string][]byte{}
		err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dst, p)
			files[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	for _, src := range srcs {
		direct, piped := export(src, false), export(src, true)
		if len(direct) == 0 || len(direct) != len(piped) {
			t.Errorf("%s: %d files direct, %d piped", src, len(direct), len(piped))
		}
		for name, b := range direct {
			if !bytes.Equal(b, piped[name]) {
				t.Errorf("%s: %s differs when piped", src, name)
			}
		}
	}
}
