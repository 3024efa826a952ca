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
// the analysis's kernel section.
func checkKernels(t *testing.T, rows []map[string]any, reports map[string]*analysis.Report) {
	t.Helper()
	got := map[string][]map[string]any{}
	for _, r := range rows {
		got[key(r)] = append(got[key(r)], r)
	}
	for k, rep := range reports {
		g := got[k]
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
func checkDevices(t *testing.T, rows []map[string]any, reports map[string]*analysis.Report) {
	t.Helper()
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[fmt.Sprintf("%s#%d", key(r), num(t, r["device"]))] = r
	}
	n := 0
	for k, rep := range reports {
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
	chrome := map[string]bool{}
	for _, f := range realTraces(t) {
		run := strings.ReplaceAll(strings.TrimPrefix(f, filepath.Join("..", "..", "testdata", "real-gpu")+"/"), ".", "_")
		run = strings.ReplaceAll(run, "/", "_")
		snap := exportStreamed(t, dir, f, tables.Options{Run: run, Host: "gpu-host", Session: "s"})
		k := run + "/gpu-host/s"
		reports[k] = analysis.Analyze(snap, analysis.Options{})
		if fm, _ := formats.Detect(f); fm == formats.Chrome {
			chrome[k] = true
		}
	}
	// The comparison must cover something on every front.
	// Chrome JSON (Kineto's, JAX's) keeps its GPU work as the slices of
	// threads of its devices' processes: those have kernels too.
	var steps, kernels, chromeKernels int
	for k, r := range reports {
		if r.Steps != nil && r.Steps.Wall.Count > 0 {
			steps++
		}
		if r.Kernels.Count > 0 {
			kernels++
			if chrome[k] {
				chromeKernels++
			}
		}
	}
	if steps < 5 || kernels < 10 || len(chrome) != 2 || chromeKernels != 2 {
		t.Fatalf("the fixtures give %d traces with steps, %d with kernels, %d Chrome JSON (%d with kernels)", steps, kernels, len(chrome), chromeKernels)
	}
	checkSteps(t, queryRows(t, dir, namedSQL(t, "steps")), reports)
	checkKernels(t, queryRows(t, dir, namedSQL(t, "kernels")), reports)
	checkDevices(t, queryRows(t, dir, namedSQL(t, "devices")), reports)
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
	checkKernels(t, queryRows(t, dir, namedSQL(t, "kernels")), reports)
	checkDevices(t, queryRows(t, dir, namedSQL(t, "devices")), reports)
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

// kinetoShaped writes a Chrome JSON trace shaped as Kineto writes one
// (the GPU's streams as threads of a process labelled "GPU n") and
// returns its path. Each of its steps is a ProfilerStep#N span on the
// host thread (its step markers too where marked), launches with
// correlation ids and flows, and on the device: the step's
// record_function range (gpu_user_annotation) around its work, a GEMM
// and a copy on stream 7, a wait (cuda_sync) there, an all-reduce on
// stream 8 under the GEMM, and on stream 9 a range that encloses
// nothing (so it is work, as analyze reads it). A first step five times
// longer is the warm-up.
func kinetoShaped(t *testing.T, dir, name string, marked bool) string {
	t.Helper()
	var ev []string
	add := func(format string, a ...any) { ev = append(ev, fmt.Sprintf(format, a...)) }
	add(`{"name":"process_name","ph":"M","pid":100,"tid":0,"args":{"name":"python3"}}`)
	add(`{"name":"process_labels","ph":"M","pid":100,"tid":0,"args":{"labels":"CPU"}}`)
	add(`{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"python3"}}`)
	add(`{"name":"process_labels","ph":"M","pid":0,"tid":0,"args":{"labels":"GPU 0"}}`)
	for _, s := range []int{7, 8, 9} {
		add(`{"name":"thread_name","ph":"M","pid":0,"tid":%d,"args":{"name":"stream %d "}}`, s, s)
	}
	ts := 1000.0
	corr := 0
	for i := range 8 {
		d := 900.0 + float64(i%3)*10
		if i == 0 {
			d *= 5
		}
		args := ""
		if marked {
			add(`{"ph":"X","cat":"user_annotation","name":"train_step","pid":100,"tid":100,"ts":%.3f,"dur":%.3f,"args":{"step_num":%d}}`, ts-1, d+2, i)
		}
		add(`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":100,"tid":100,"ts":%.3f,"dur":%.3f%s}`, i+10, ts, d, args)
		launch := func(at float64, api string, stream int, kname, cat string, start, dur float64, extra string) {
			corr++
			add(`{"ph":"X","cat":"cuda_runtime","name":"%s","pid":100,"tid":100,"ts":%.3f,"dur":4,"args":{"correlation":%d}}`, api, at, corr)
			add(`{"ph":"s","id":%d,"pid":100,"tid":100,"ts":%.3f,"cat":"ac2g","name":"ac2g"}`, corr, at)
			add(`{"ph":"X","cat":"%s","name":"%s","pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"device":0,"stream":%d,"correlation":%d%s}}`, cat, kname, stream, start, dur, stream, corr, extra)
			add(`{"ph":"f","id":%d,"pid":0,"tid":%d,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}`, corr, stream, start)
		}
		add(`{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#%d","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,"args":{"External id":%d}}`, i+10, ts+10, d-20, 1000+i)
		launch(ts+5, "cudaLaunchKernel", 7, "ampere_sgemm_128x64_nn", "kernel", ts+20, d/3, `,"grid":[128,2,1],"block":[256,1,1],"registers per thread":90`)
		launch(ts+8, "cudaLaunchKernel", 8, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", ts+30, d/2, `,"grid":[8,1,1],"block":[512,1,1]`)
		add(`{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":%.3f,"dur":5,"args":{"wait_on_stream":8}}`, ts+d/3+25)
		launch(ts+12, "cudaMemcpyAsync", 7, "Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", ts+d/2+40, d/8, `,"bytes":1048576`)
		add(`{"ph":"X","cat":"gpu_user_annotation","name":"optimizer","pid":0,"tid":9,"ts":%.3f,"dur":30,"args":{"External id":%d}}`, ts+d-60, 2000+i)
		ts += d + 50
	}
	b := []byte(`{"traceEvents":[` + strings.Join(ev, ",\n") + `]}`)
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNamedQueriesMatchAnalysisOnKinetoShapedJSON holds the named
// queries to analyze on Chrome JSON whose device work is the slices of
// a GPU process's threads: the record_function ranges on a stream are
// not kernels, a wait is not work, and PyTorch's ProfilerStep#N are the
// steps unless the trace marks its own.
func TestNamedQueriesMatchAnalysisOnKinetoShapedJSON(t *testing.T) {
	src, dir := t.TempDir(), t.TempDir()
	reports := map[string]*analysis.Report{}
	for _, marked := range []bool{false, true} {
		name := fmt.Sprintf("kineto-marked-%v", marked)
		path := kinetoShaped(t, src, name, marked)
		snap := exportStreamed(t, dir, path, tables.Options{Run: name, Host: "h", Session: "s"})
		rep := analysis.Analyze(snap, analysis.Options{})
		reports[name+"/h/s"] = rep
		want := "ProfilerStep#N"
		if marked {
			want = "step markers"
		}
		if rep.Steps == nil || rep.Steps.Source != want || len(rep.Steps.All) != 8 || rep.Steps.Warmup != 1 ||
			len(rep.Kernels.Top) != 3 || len(rep.Devices) != 1 || rep.Devices[0].CommunicationNS == 0 || rep.Devices[0].MemoryNS == 0 {
			t.Fatalf("%s: analyze does not read the trace as this test expects: %+v %+v", name, rep.Steps, rep.Kernels.Top)
		}
	}
	checkSteps(t, queryRows(t, dir, namedSQL(t, "steps")), reports)
	checkKernels(t, queryRows(t, dir, namedSQL(t, "kernels")), reports)
	checkDevices(t, queryRows(t, dir, namedSQL(t, "devices")), reports)

	// The rows themselves: kinds, streams, launch shapes, correlations,
	// the ranges left in spans on their device, the steps.
	rows := queryRows(t, dir, `select kind, name, device, stream, track, grid, block, registers_per_thread, copy_kind, src_memory_kind, dst_memory_kind, bytes,
		count(*) as n, min(correlation_id) as corr from kernels where run = 'kineto-marked-false' group by all order by kind, name`)
	got := make([]string, len(rows))
	for i, r := range rows {
		got[i] = fmt.Sprintf("%v %v dev%v s%v %q %v %v r%v %v %v>%v %vB x%v corr>0:%v", r["kind"], r["name"], r["device"], r["stream"], r["track"], r["grid"], r["block"],
			r["registers_per_thread"], r["copy_kind"], r["src_memory_kind"], r["dst_memory_kind"], r["bytes"], r["n"], num(t, r["corr"]) > 0)
	}
	want := []string{
		`kernel ampere_sgemm_128x64_nn dev0 s7 "stream 7 " 128,2,1 256,1,1 r90  > 0B x8 corr>0:true`,
		`kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL dev0 s8 "stream 8 " 8,1,1 512,1,1 r0  > 0B x8 corr>0:true`,
		`kernel optimizer dev0 s9 "stream 9 "   r0  > 0B x8 corr>0:false`,
		`memcpy Memcpy DtoH (Device -> Pinned) dev0 s7 "stream 7 "   r0 DtoH device>pinned 1048576B x8 corr>0:true`,
		`sync Stream Sync dev0 s7 "stream 7 "   r0  > 0B x8 corr>0:false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("kernels rows:\n got %q\nwant %q", got, want)
	}
	// The steps' ranges on stream 7 enclose its work: spans of the
	// device, not steps (those are the host's).
	rows = queryRows(t, dir, `select count(*) as n, count(distinct name) as names, min(name) as first, max(track) as track,
		sum(case when step then 1 else 0 end) as steps from spans where run = 'kineto-marked-false' and device = 0 and thread_id = 0`)
	if r := rows[0]; num(t, r["n"]) != 8 || num(t, r["names"]) != 8 || r["first"] != "ProfilerStep#10" || r["track"] != "stream 7 " || num(t, r["steps"]) != 0 {
		t.Errorf("the ranges on the streams in spans: %v", rows)
	}
	rows = queryRows(t, dir, `select run, count(*) as n, sum(case when name like 'ProfilerStep#%' then 1 else 0 end) as profiler, min(step_num) as first from steps group by run order by run`)
	if len(rows) != 2 || num(t, rows[0]["n"]) != 8 || num(t, rows[0]["profiler"]) != 8 || num(t, rows[0]["first"]) != 10 ||
		num(t, rows[1]["n"]) != 8 || num(t, rows[1]["profiler"]) != 0 || num(t, rows[1]["first"]) != 0 {
		t.Errorf("steps: %v", rows)
	}
	rows = queryRows(t, dir, `select count(*) as n from hosts where run = 'kineto-marked-false' and device = 0`)
	if num(t, rows[0]["n"]) != 1 {
		t.Errorf("hosts: no row for the GPU the trace saw")
	}
}
