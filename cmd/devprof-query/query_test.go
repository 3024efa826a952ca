//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/tables"
)

// realTraces are the real-GPU fixtures (devprof, JAX, TSL, Kineto).
func realTraces(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pftrace", "*.xplane.pb", "*.json.gz", "h200/*.pftrace", "h200/*.xplane.pb"} {
		m, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real-gpu", pat))
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("%d real-GPU traces", len(files))
	}
	return files
}

// exportStreamed writes one trace file's tables under dir as devprof
// export does (its reader streaming into the tables' Writer) and
// returns the model the same file reads into.
func exportStreamed(t *testing.T, dir, path string, o tables.Options) *event.Snapshot {
	t.Helper()
	f, err := formats.Detect(path)
	if err != nil {
		t.Fatal(err)
	}
	o.SourceFormat = f.Name
	w, err := tables.NewWriter(dir, event.Meta{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StreamFile(path, w, formats.ReadOptions{}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	snap, _, err := formats.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// queryRows runs text on the tables under root and returns its rows as
// column → value.
func queryRows(t *testing.T, root, text string) []map[string]any {
	t.Helper()
	names, err := tablesUnder(root)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openTables(root, names)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(text)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// num is an integer column's value, whatever width DuckDB gave it.
func num(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case *big.Int:
		return x.Int64()
	case float64:
		return int64(x)
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}

func namedSQL(t *testing.T, name string) string {
	t.Helper()
	q, err := lookupQuery(name)
	if err != nil {
		t.Fatal(err)
	}
	return q.sql
}

// key is a session's partition.
func key(r map[string]any) string { return fmt.Sprintf("%v/%v/%v", r["run"], r["host"], r["session"]) }

// checkSteps holds the steps query's row of each session to the
// analysis's step section; sessions without steps have no row.
func checkSteps(t *testing.T, rows []map[string]any, reports map[string]*analysis.Report) {
	t.Helper()
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[key(r)] = r
	}
	for k, rep := range reports {
		r, ok := got[k]
		if rep.Steps == nil || rep.Steps.Wall.Count == 0 {
			if ok {
				t.Errorf("%s: the steps query has a row %v for a trace without steps", k, r)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no steps row; analysis has %d steps", k, len(rep.Steps.All))
			continue
		}
		st := rep.Steps
		want := map[string]int64{"steps": int64(len(st.All)), "warmup": int64(st.Warmup), "measured": int64(st.Wall.Count),
			"mean_ns": st.Wall.Mean, "min_ns": st.Wall.Min, "p50_ns": st.Wall.P50, "p90_ns": st.Wall.P90, "p99_ns": st.Wall.P99, "max_ns": st.Wall.Max}
		for c, w := range want {
			if g := num(t, r[c]); g != w {
				t.Errorf("%s: steps %s = %d, analysis %d", k, c, g, w)
			}
		}
	}
	if len(got) > len(reports) {
		t.Errorf("steps: %d rows for %d sessions", len(got), len(reports))
	}
}

// checkKernels holds the kernels query's top names of each session to
// the analysis's kernel section. Sessions in noKernels keep their GPU
// work as host slices (Chrome JSON: Kineto's, JAX's), which the
// kernels table does not hold: the query must find nothing there.
func checkKernels(t *testing.T, rows []map[string]any, reports map[string]*analysis.Report, noKernels map[string]bool) {
	t.Helper()
	got := map[string][]map[string]any{}
	for _, r := range rows {
		got[key(r)] = append(got[key(r)], r)
	}
	for k, rep := range reports {
		g := got[k]
		if noKernels[k] {
			if len(g) != 0 {
				t.Errorf("%s: kernels rows %v where the table holds no device work", k, g)
			}
			continue
		}
		if len(g) != len(rep.Kernels.Top) {
			t.Errorf("%s: %d kernel names, analysis %d", k, len(g), len(rep.Kernels.Top))
			continue
		}
		for i, w := range rep.Kernels.Top {
			r := g[i]
			if r["name"] != w.Name || r["category"] != w.Category || num(t, r["rank"]) != int64(i+1) ||
				num(t, r["count"]) != w.Count || num(t, r["total_ns"]) != w.TotalNS || num(t, r["mean_ns"]) != w.MeanNS ||
				num(t, r["p50_ns"]) != w.P50NS || num(t, r["p99_ns"]) != w.P99NS {
				t.Errorf("%s: kernel %d:\n query    %v\n analysis %+v", k, i+1, r, w)
			}
		}
	}
}

// checkDevices holds the devices query's rows to each device's temporal
// breakdown.
func checkDevices(t *testing.T, rows []map[string]any, reports map[string]*analysis.Report, noKernels map[string]bool) {
	t.Helper()
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[fmt.Sprintf("%s#%d", key(r), num(t, r["device"]))] = r
	}
	n := 0
	for k, rep := range reports {
		if noKernels[k] {
			continue
		}
		for _, d := range rep.Devices {
			n++
			r, ok := got[fmt.Sprintf("%s#%d", k, d.Ordinal)]
			if !ok {
				t.Errorf("%s: no row for device %d", k, d.Ordinal)
				continue
			}
			want := map[string]int64{"wall_ns": d.WallNS, "compute_ns": d.ComputeNS, "communication_ns": d.CommunicationNS,
				"memory_ns": d.MemoryNS, "idle_ns": d.IdleNS, "start_ns": d.StartNS + rep.StartNS}
			for c, w := range want {
				if c == "start_ns" {
					continue // the tables' times are Unix, the report's the trace's own
				}
				if g := num(t, r[c]); g != w {
					t.Errorf("%s device %d: %s = %d, analysis %d", k, d.Ordinal, c, g, w)
				}
			}
		}
	}
	if len(got) != n {
		t.Errorf("devices: %d rows, analysis has %d devices", len(got), n)
	}
}

// TestNamedQueriesMatchAnalysisOnRealTraces exports every real-GPU
// trace and holds each named query to devprof analyze's figures on the
// same trace.
func TestNamedQueriesMatchAnalysisOnRealTraces(t *testing.T) {
	dir := t.TempDir()
	reports := map[string]*analysis.Report{}
	noKernels := map[string]bool{}
	for _, f := range realTraces(t) {
		run := strings.ReplaceAll(strings.TrimPrefix(f, filepath.Join("..", "..", "testdata", "real-gpu")+"/"), ".", "_")
		run = strings.ReplaceAll(run, "/", "_")
		snap := exportStreamed(t, dir, f, tables.Options{Run: run, Host: "gpu-host", Session: "s"})
		k := run + "/gpu-host/s"
		reports[k] = analysis.Analyze(snap, analysis.Options{})
		if fm, _ := formats.Detect(f); fm == formats.Chrome {
			noKernels[k] = true
		}
	}
	// The comparison must cover something on every front.
	var steps, kernels int
	for k, r := range reports {
		if r.Steps != nil && r.Steps.Wall.Count > 0 {
			steps++
		}
		if !noKernels[k] && r.Kernels.Count > 0 {
			kernels++
		}
	}
	if steps < 5 || kernels < 8 || len(noKernels) != 2 {
		t.Fatalf("the fixtures give %d traces with steps, %d with kernels, %d Chrome JSON", steps, kernels, len(noKernels))
	}
	checkSteps(t, queryRows(t, dir, namedSQL(t, "steps")), reports)
	checkKernels(t, queryRows(t, dir, namedSQL(t, "kernels")), reports, noKernels)
	checkDevices(t, queryRows(t, dir, namedSQL(t, "devices")), reports, noKernels)
	// Each trace is a run of one host here: no stragglers.
	for _, r := range queryRows(t, dir, namedSQL(t, "stragglers")) {
		if r["straggler"] != false || num(t, r["p50_ns"]) != reports[key(r)].Steps.Wall.P50 {
			t.Errorf("stragglers: %v", r)
		}
	}
}

// syntheticHost is one host's trace of a data-parallel job: 12 steps of
// about stepNS (the first five times longer: warm-up), each launching a
// GEMM, a ReLU and an all-reduce on three streams of device 0 that
// overlap (the all-reduce partly under the ReLU), and a copy on a
// fourth, with flows from the launch calls.
func syntheticHost(host string, stepNS, wallOffset int64) *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: host, Start: event.ClockAnchor{Mono: 0, Boot: 0, Wall: 1_800_000_000_000_000_000 + wallOffset}})
	th := b.Track(event.Track{Kind: event.TrackHostThread, ID: 100, Name: "train"})
	var streams [4]uint32
	for i := range streams {
		streams[i] = b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: int64(7 + i), Name: fmt.Sprintf("Stream #%d", 7+i)})
	}
	t := int64(1_000_000)
	flow := uint64(0)
	for i := range 12 {
		d := stepNS + int64(i%3)*1000
		if i == 0 {
			d = 5 * stepNS
		}
		b.Span(event.Span{Name: "step", Start: t, End: t + d, Track: th, Step: true, StepNum: int64(i)})
		for k, name := range []string{"gemm_f32", "relu", "ncclDevKernel_AllReduce_Sum_f32"} {
			flow++
			launch := t + int64(k)*d/5 + 1000
			args := []event.Arg{{Kind: event.ArgFlow, Num: flow}}
			b.ActivityOf(event.ActivityAPI, th, "cudaLaunchKernel", launch, launch+2000, args)
			start := launch + 5000
			if k == 2 {
				start = t + 6000 + 2*d/5 // under the ReLU's end, then alone
			}
			b.ActivityOf(event.ActivityKernel, streams[k], name, start, start+d/4+int64(k)*100, args)
		}
		b.ActivityOf(event.ActivityMemcpy, streams[3], "Memcpy HtoD", t+7*d/10, t+7*d/10+d/8, []event.Arg{{Key: event.ArgBytes, Kind: event.ArgInt, Num: 1 << 20}})
		t += d + 20_000
	}
	return b.Snapshot()
}

// TestNamedQueriesMatchAnalysisAcrossHosts exports a synthetic run of
// five hosts, one a straggler and one just under the threshold, and
// holds the named queries to Analyze and CompareHosts on the same
// snapshots.
func TestNamedQueriesMatchAnalysisAcrossHosts(t *testing.T) {
	dir := t.TempDir()
	steps := map[string]int64{"worker-0": 1_000_000, "worker-1": 1_020_000, "worker-2": 1_400_000, "worker-3": 1_090_000, "worker-4": 990_000}
	reports := map[string]*analysis.Report{}
	var hosts []analysis.HostReport
	for h, d := range steps {
		snap := syntheticHost(h, d, int64(len(h))*1000)
		if _, err := tables.WriteSnapshot(dir, snap, tables.Options{Run: "job7", Host: h, Session: h, SourceFormat: "session"}); err != nil {
			t.Fatal(err)
		}
		rep := analysis.Analyze(snap, analysis.Options{})
		reports["job7/"+h+"/"+h] = rep
		hosts = append(hosts, analysis.HostReport{Host: h, Report: rep, WallOffsetNS: snap.Meta.Start.Wall - snap.Meta.Start.Mono})
	}
	checkSteps(t, queryRows(t, dir, namedSQL(t, "steps")), reports)
	checkKernels(t, queryRows(t, dir, namedSQL(t, "kernels")), reports, nil)
	checkDevices(t, queryRows(t, dir, namedSQL(t, "devices")), reports, nil)
	for _, rep := range reports {
		if d := rep.Devices[0]; d.CommunicationNS == 0 || d.MemoryNS == 0 || d.OverlapNS == 0 || d.IdleNS == 0 {
			t.Fatalf("the synthetic trace does not exercise every category: %+v", d.Breakdown)
		}
	}

	cmp := analysis.CompareHosts(hosts, 0)
	if !slices.Equal(cmp.Stragglers, []string{"worker-2"}) {
		t.Fatalf("CompareHosts names %v: the synthetic run is not what this test expects", cmp.Stragglers)
	}
	rows := queryRows(t, dir, namedSQL(t, "stragglers"))
	var stragglers []string
	for _, r := range rows {
		if r["straggler"] == true {
			stragglers = append(stragglers, r["host"].(string))
		}
		if g := num(t, r["median_ns"]); g != cmp.MedianStepNS {
			t.Errorf("%s: median host's step %d, CompareHosts %d", r["host"], g, cmp.MedianStepNS)
		}
		for _, hs := range cmp.Hosts {
			if hs.Host == r["host"] && (num(t, r["p50_ns"]) != hs.Wall.P50 || num(t, r["steps"]) != int64(hs.Steps) ||
				fmt.Sprintf("%.9f", r["excess"]) != fmt.Sprintf("%.9f", hs.Excess)) {
				t.Errorf("%s:\n query        %v\n CompareHosts %+v", hs.Host, r, hs)
			}
		}
	}
	if len(rows) != len(steps) || !slices.Equal(stragglers, cmp.Stragglers) {
		t.Errorf("stragglers query: %v (%d rows), CompareHosts %v", stragglers, len(rows), cmp.Stragglers)
	}
}

// runQuery runs the command and returns its exit status and output.
func runQuery(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// exportedFixture exports one real trace into a fresh directory.
func exportedFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	exportStreamed(t, dir, filepath.Join("..", "..", "testdata", "real-gpu", "h200", "gpucheck.pftrace"), tables.Options{Run: "r1", Session: "gpucheck"})
	return dir
}

func TestCLIOutputs(t *testing.T) {
	dir := exportedFixture(t)
	const sql = "select name, count(*) as n, sum(dur_ns) as total, avg(dur_ns) as mean, null as nothing from kernels where device >= 0 group by name order by total desc, name"
	code, table, stderr := runQuery(dir, sql)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "name") || !strings.HasPrefix(lines[1], "----") ||
		!strings.HasPrefix(lines[2], "spin(long long)") || !strings.HasSuffix(lines[len(lines)-1], "rows)") {
		t.Errorf("table:\n%s", table)
	}

	code, js, stderr := runQuery("-json", dir, sql)
	if code != 0 {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(js), &objs); err != nil {
		t.Fatalf("-json printed %q: %v", js, err)
	}
	if len(objs) != len(lines)-3 || objs[0]["name"] != "spin(long long)" || objs[0]["n"] != 20.0 || objs[0]["nothing"] != nil {
		t.Errorf("-json: %v", objs)
	}
	if !strings.HasPrefix(js, `[`+"\n"+`{"name":"spin(long long)","n":20,"total":`) {
		t.Errorf("-json keys not in column order: %.80s", js)
	}

	code, c, stderr := runQuery(dir, "-csv", sql)
	if code != 0 {
		t.Fatalf("-csv: exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(c)).ReadAll()
	if err != nil || len(recs) != len(objs)+1 || !slices.Equal(recs[0], []string{"name", "n", "total", "mean", "nothing"}) ||
		recs[1][0] != "spin(long long)" || recs[1][1] != "20" || recs[1][4] != "" {
		t.Errorf("-csv: %q, %v", recs, err)
	}

	// -max_rows cuts the table, not -json.
	code, table, _ = runQuery("-max_rows", "1", dir, "select * from range(5)")
	if code != 0 || !strings.Contains(table, "(1 rows shown of 5") {
		t.Errorf("-max_rows 1: exit %d:\n%s", code, table)
	}

	// Every named query runs, and -list names them all.
	code, list, _ := runQuery("-list")
	for _, q := range namedQueries() {
		if !strings.Contains(list, q.name+" ") {
			t.Errorf("-list lacks %s:\n%s", q.name, list)
		}
		if code, out, stderr := runQuery("-q", q.name, dir); code != 0 || !strings.Contains(out, "gpucheck") {
			t.Errorf("-q %s: exit %d: %s%s", q.name, code, out, stderr)
		}
	}
	if code != 0 || len(namedQueries()) < 4 {
		t.Errorf("-list: exit %d, %d queries", code, len(namedQueries()))
	}
}

func TestCLIErrors(t *testing.T) {
	dir := exportedFixture(t)
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{dir, "selec * from spans"}, 1, "Parser Error"},
		{[]string{dir, "select nope from spans"}, 1, `"nope"`},
		{[]string{dir, "select * from no_such_table"}, 1, "no_such_table"},
		{[]string{empty, "select 1"}, 1, "holds no exported tables"},
		{[]string{filepath.Join(empty, "missing"), "select 1"}, 1, "no such file"},
		{[]string{dir}, 2, "want DST and SQL"},
		{[]string{dir, "  "}, 2, "empty"},
		{[]string{"-q", "nope", dir}, 2, `no query named "nope"`},
		{[]string{"-q", "steps", dir, "select 1"}, 2, "takes one argument"},
		{[]string{"-json", "-csv", dir, "select 1"}, 2, "pick one"},
		{[]string{"-max_rows", "0", dir, "select 1"}, 2, "-max_rows"},
		{[]string{"-bogus", dir, "select 1"}, 2, "bogus"},
	} {
		code, stdout, stderr := runQuery(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", c.args, code, stdout, stderr, c.code, c.want)
		}
		if c.code == 1 && strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: the error is not one line: %q", c.args, stderr)
		}
	}
	// A file, not the export's directory.
	f := filepath.Join(empty, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runQuery(f, "select 1"); code != 1 || !strings.Contains(stderr, "not a directory") {
		t.Errorf("a file: exit %d, %q", code, stderr)
	}
}
