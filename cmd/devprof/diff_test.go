package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// diffOps are a synthetic training step's phases and their typical
// lengths (µs).
var diffOps = []struct {
	name string
	us   float64
}{
	{"data_load", 800}, {"embed", 300}, {"attention", 1200}, {"mlp", 900},
	{"layernorm", 150}, {"loss", 100}, {"backward", 2500}, {"allreduce", 1500},
	{"optimizer", 600}, {"log_metrics", 50},
}

// diffRun writes a synthetic run to path (its format by its name):
// steps train_step spans, each with every op a child span launching a
// kernel on a device stream; every duration has lognormal noise (5 %)
// and one in fifty an outlier 1.5 to 3 times as long. slow multiplies
// the named ops' durations.
func diffRun(t *testing.T, path string, seed uint64, steps int, slow map[string]float64) *event.Snapshot {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	noisy := func(us float64) int64 {
		d := us * 1000 * math.Exp(0.05*rng.NormFloat64())
		if rng.IntN(50) == 0 {
			d *= 1.5 + 1.5*rng.Float64()
		}
		return int64(d)
	}
	b := event.NewBuilder(event.Meta{Host: "host", PID: 1, Program: "train"})
	host := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	dev := b.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7, Name: "Stream #7", DeviceName: "GPU"})
	ts, devFree := int64(1000), int64(0)
	for range steps {
		step := b.Span(event.Span{Name: "train_step", Start: ts, Track: host, Unfinished: true})
		for _, op := range diffOps {
			f := 1.0
			if s, ok := slow[op.name]; ok {
				f = s
			}
			d := noisy(op.us * f)
			b.Span(event.Span{Name: op.name, Start: ts, End: ts + d, Track: host, Parent: step})
			k := noisy(op.us * 0.6)
			ks := max(devFree, ts+5000)
			b.ActivityOf(event.ActivityKernel, dev, op.name+"_kernel", ks, ks+k, nil)
			devFree = ks + k
			ts += d + 1000
		}
		b.EndSpan(step, ts)
		ts += 2000
	}
	b.Meta().Stop.Mono = max(ts, devFree)
	s := b.Snapshot()
	if path != "" {
		f, err := formats.ForPath(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := formats.WriteFile(path, f, s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// firstRow returns the table's first row after its heading.
func firstRow(t *testing.T, stdout string) string {
	t.Helper()
	_, table, ok := strings.Cut(stdout, "\n\n")
	lines := strings.Split(table, "\n")
	if !ok || len(lines) < 2 || !strings.Contains(lines[0], "count") {
		t.Fatalf("no table in\n%s", stdout)
	}
	return strings.TrimSpace(lines[1])
}

func TestDiffSelfIsNoChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.pftrace")
	diffRun(t, path, 1, 200, nil)
	code, stdout, stderr := runCLI("diff", "-threshold", "0", path, path)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "no change: none of 21 names changed beyond noise") || strings.Contains(stdout, "slower") || strings.Contains(stdout, "faster") {
		t.Errorf("a run against itself:\n%s", stdout)
	}
}

// TestDiffInjectedSlowdown: of two runs of the same work with their own
// noise, the one with attention 20 % slower has attention first, slower,
// and fails -threshold 10 naming it (and no other name); -json says the
// same.
func TestDiffInjectedSlowdown(t *testing.T) {
	dir := t.TempDir()
	base, slow := filepath.Join(dir, "base.pftrace"), filepath.Join(dir, "new.pftrace")
	diffRun(t, base, 1, 200, nil)
	diffRun(t, slow, 2, 200, map[string]float64{"attention": 1.2})
	code, stdout, stderr := runCLI("diff", "-threshold", "10", base, slow)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q\n%s", code, stderr, stdout)
	}
	if row := firstRow(t, stdout); !strings.HasPrefix(row, "span attention ") || !strings.HasSuffix(row, "slower") {
		t.Errorf("first row %q, want attention, slower\n%s", row, stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "devprof diff: 1 name significantly slower by more than 10%: span \"attention\" +") {
		t.Errorf("stderr %q", stderr)
	}

	code, stdout, _ = runCLI("diff", "-json", "-threshold", "10", base, slow)
	var out diffJSON
	if err := json.Unmarshal([]byte(stdout), &out); code != 1 || err != nil {
		t.Fatalf("-json: exit %d, %v", code, err)
	}
	first := out.Rows[0]
	if first.Name != "attention" || first.Kind != "span" || first.Verdict != "slower" || first.Change == nil || *first.Change < 0.15 || *first.Change > 0.25 ||
		first.P == nil || *first.P > 1e-6 || first.Base.Count != 200 || len(out.Slower) != 1 || out.Slower[0].Name != "attention" || len(out.Rows) != 21 {
		t.Errorf("-json: first row %+v, slower %v, %d rows", first, out.Slower, len(out.Rows))
	}
	if out.Base.Format != "perfetto" || out.Base.Events == 0 || out.Threshold == nil || *out.Threshold != 10 {
		t.Errorf("-json: base %+v threshold %v", out.Base, out.Threshold)
	}
}

// TestDiffFasterPasses: an op 20 % faster is reported faster and fails
// no threshold.
func TestDiffFasterPasses(t *testing.T) {
	dir := t.TempDir()
	base, fast := filepath.Join(dir, "base.pftrace"), filepath.Join(dir, "new.pftrace")
	diffRun(t, base, 1, 200, nil)
	diffRun(t, fast, 2, 200, map[string]float64{"backward": 0.8})
	code, stdout, stderr := runCLI("diff", "-threshold", "5", base, fast)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if row := firstRow(t, stdout); !strings.HasPrefix(row, "span backward ") || !strings.HasSuffix(row, "faster") || !strings.Contains(row, " -") {
		t.Errorf("first row %q, want backward, faster", row)
	}
}

// TestDiffAcrossFormats: the same run written by the exporters as
// Perfetto, XSpace and Chrome JSON compares as no change in every pair,
// as does the real H100 trace against its XSpace.
func TestDiffAcrossFormats(t *testing.T) {
	dir := t.TempDir()
	s := diffRun(t, "", 1, 100, nil)
	var paths []string
	for _, name := range []string{"run.pftrace", "run.xplane.pb", "run.trace.json.gz"} {
		path := filepath.Join(dir, name)
		f, err := formats.ForPath(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := formats.WriteFile(path, f, s); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	pairs := [][2]string{{paths[0], paths[1]}, {paths[1], paths[2]}, {paths[2], paths[0]},
		{"../../testdata/real-gpu/devprof-h100-libwork.pftrace", "../../testdata/real-gpu/devprof-h100-libwork.xplane.pb"}}
	for _, p := range pairs {
		code, stdout, stderr := runCLI("diff", "-threshold", "0", "-json", p[0], p[1])
		var out diffJSON
		if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil {
			t.Fatalf("%s against %s: exit %d, %v, stderr %q", p[0], p[1], code, err, stderr)
		}
		for _, row := range out.Rows {
			if row.Verdict != "~" && row.Verdict != "too few" || row.Base.Count != row.New.Count || row.Base.Total != row.New.Total || row.Impact != 0 {
				t.Errorf("%s against %s: %s %q %s, counts %d %d, totals %d %d", filepath.Base(p[0]), filepath.Base(p[1]), row.Kind, row.Name, row.Verdict,
					row.Base.Count, row.New.Count, row.Base.Total, row.New.Total)
			}
		}
		if len(out.Rows) == 0 {
			t.Errorf("%s against %s: no rows", p[0], p[1])
		}
	}
}

// TestDiffTinySamples: with four steps a side even a doubling is not
// called (four against four apart has exact p = 2/70 < 0.05), and no
// threshold fails.
func TestDiffTinySamples(t *testing.T) {
	dir := t.TempDir()
	base, slow := filepath.Join(dir, "base.pftrace"), filepath.Join(dir, "new.pftrace")
	diffRun(t, base, 1, 4, nil)
	diffRun(t, slow, 2, 4, map[string]float64{"attention": 2})
	code, stdout, stderr := runCLI("diff", "-threshold", "0", "-top", "0", base, slow)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if strings.Count(stdout, " too few\n") != 21 || !strings.Contains(stdout, "no change") {
		t.Errorf("want every row too few:\n%s", stdout)
	}
}

// TestDiffRealFixtures: every real trace in testdata reads, and against
// itself (as a file, and as a log directory holding it) is no change.
func TestDiffRealFixtures(t *testing.T) {
	fixtures, err := filepath.Glob("../../testdata/real-gpu/*.*")
	if err != nil {
		t.Fatal(err)
	}
	h200, _ := filepath.Glob("../../testdata/real-gpu/h200/*.pftrace")
	fixtures = append(fixtures, h200...)
	read := 0
	for _, path := range fixtures {
		if !strings.HasSuffix(path, ".pftrace") && !strings.HasSuffix(path, ".xplane.pb") && !strings.HasSuffix(path, ".json.gz") {
			continue // not a trace (a manifest, NVML's answers)
		}
		read++
		code, stdout, stderr := runCLI("diff", "-threshold", "0", path, path)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "no change: none of ") || strings.Contains(stdout, "none of 0 names") {
			t.Errorf("%s: exit %d, stderr %q\n%s", path, code, stderr, stdout)
		}
	}
	if read < 6 {
		t.Errorf("read %d fixtures", read)
	}

	logDir := t.TempDir()
	run := filepath.Join(logDir, "plugins", "profile", "2025_01_01_00_00_00")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../testdata/real-gpu/h200/gpucheck.pftrace")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "host.pftrace"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("diff", logDir, "../../testdata/real-gpu/h200/gpucheck.pftrace")
	if code != 0 || !strings.Contains(stderr, "reading its newest trace") || !strings.Contains(stdout, "no change") {
		t.Errorf("log directory against its trace: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
}

// TestDiffUsageErrors: bad flags and argument counts exit 2 before any
// file is read (the files named do not exist).
func TestDiffUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"only.pftrace"},
		{"a.pftrace", "b.pftrace", "c.pftrace"},
		{"-alpha", "0", "a.pftrace", "b.pftrace"},
		{"-alpha", "1.5", "a.pftrace", "b.pftrace"},
		{"-alpha", "NaN", "a.pftrace", "b.pftrace"},
		{"-threshold", "-1", "a.pftrace", "b.pftrace"},
		{"-threshold", "NaN", "a.pftrace", "b.pftrace"},
		{"-top", "-1", "a.pftrace", "b.pftrace"},
		{"-max_events", "-1", "a.pftrace", "b.pftrace"},
		{"-bogus", "a.pftrace", "b.pftrace"},
	} {
		code, stdout, stderr := runCLI(append([]string{"diff"}, args...)...)
		if code != 2 || stdout != "" || strings.Contains(stderr, "no such file") || stderr == "" {
			t.Errorf("diff %v: exit %d, stdout %q, stderr %q; want exit 2 and a usage error", args, code, stdout, stderr)
		}
	}
	if code, stdout, _ := runCLI("diff", "-h"); code != 0 || !strings.Contains(stdout, "Usage: devprof diff") {
		t.Errorf("diff -h: exit %d\n%s", code, stdout)
	}
}

// TestDiffBadInput: a bad file or directory as either side exits 1 with
// one line naming it, and prints nothing on stdout.
func TestDiffBadInput(t *testing.T) {
	good := "../../testdata/real-gpu/h200/gpucheck.pftrace"
	dir := t.TempDir()
	inputs := map[string]string{filepath.Join(dir, "missing.pftrace"): "no such file", dir: "is a directory, not a trace file"}
	for name, want := range badCorpus {
		inputs[filepath.Join("testdata", "bad", name)] = want
	}
	for in, want := range inputs {
		for _, args := range [][]string{{"diff", in, good}, {"diff", good, in}} {
			code, stdout, stderr := runCLI(args...)
			line := strings.TrimSuffix(stderr, "\n")
			if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof diff: ") || !strings.Contains(line, in) || !strings.Contains(line, want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, one line naming it and saying %q", args, code, stdout, stderr, want)
			}
		}
	}
}
