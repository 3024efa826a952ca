package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
)

func realGPU(name string) string { return filepath.Join("..", "..", "testdata", "real-gpu", name) }

func TestAnalyzeText(t *testing.T) {
	code, stdout, stderr := runCLI("analyze", realGPU("devprof-h100-libwork.pftrace"))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"Steps (step markers): 20; warm-up apart: step 0 3.86ms; over the other 19:",
		"device 0  8.44ms    175µs  2.1%",
		"Idle time by cause, over every stream (5.10ms in 99 gaps): host wait 4.74ms (93.1%), kernel wait 353µs (6.9%)",
		"354µs  host_wait  +3.68ms  0",
		"_Z5saxpyifPKfPf  compute     20   102µs  58.4%",
		"tiny kernels launched most inside: gpu_step 40 (175µs)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestAnalyzeJSON(t *testing.T) {
	path := realGPU("kineto-h100-libwork.json.gz")
	code, stdout, stderr := runCLI("analyze", "-json", "-top", "3", path)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		File     string   `json:"file"`
		Format   string   `json:"format"`
		Warnings []string `json:"warnings"`
		analysis.Report
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if got.File != path || got.Format != "chrome" || got.Warnings == nil {
		t.Errorf("file %q format %q warnings %v", got.File, got.Format, got.Warnings)
	}
	if len(got.Devices) != 1 || got.Devices[0].ComputeNS != 1353738 || len(got.Idle.Largest) != 3 || got.Kernels.Count != 1000 {
		t.Errorf("report %+v", got.Report)
	}
}

// TestAnalyzeDirectory: a log directory stands for its newest run's
// trace, named on stderr.
func TestAnalyzeDirectory(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "plugins", "profile", "2025_01_01_00_00_00")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(realGPU("jax-h100-train.xplane.pb"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "host.xplane.pb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("analyze", dir)
	if code != 0 || !strings.Contains(stderr, "reading its newest trace") || !strings.Contains(stdout, "Steps (step markers): 8; warm-up apart: step 0") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// TestAnalyzeNoDevice: a trace of the host alone (JAX on a CPU) has
// steps but no device rows.
func TestAnalyzeNoDevice(t *testing.T) {
	code, stdout, stderr := runCLI("analyze", filepath.Join("..", "..", "testdata", "jax-cpu.xplane.pb"))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "Steps (step markers): 5; warm-up apart: step 0") || !strings.Contains(stdout, "Devices: no device work in the trace") ||
		strings.Contains(stdout, "device busy") || strings.Contains(stdout, "Kernels:") {
		t.Errorf("report:\n%s", stdout)
	}
}

// TestAnalyzeUsage: -h is help on stdout; a bad flag is a usage error
// (exit 2) before any file is read.
func TestAnalyzeUsage(t *testing.T) {
	code, stdout, stderr := runCLI("analyze", "-h")
	if code != 0 || !strings.Contains(stdout, "Usage: devprof analyze") || stderr != "" {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	missing := filepath.Join(t.TempDir(), "missing.pftrace")
	for _, args := range [][]string{
		{"-top", "0", missing},
		{"-warmup", "-2", missing},
		{"-tiny_kernel", "0s", missing},
		{"-kernel_wait", "-1us", missing},
		{"-max_events", "-1", missing},
		{"-bogus", missing},
		{},
		{missing, missing},
	} {
		code, stdout, stderr := runCLI(append([]string{"analyze"}, args...)...)
		if code != 2 || stdout != "" || strings.Contains(stderr, "no such file") {
			t.Errorf("analyze %q: exit %d, stdout %q, stderr %q; want a usage error before reading", args, code, stdout, stderr)
		}
	}
}

// TestAnalyzeBadInput: every file of testdata/bad is refused in one line
// naming it, exit 1, nothing on stdout.
func TestAnalyzeBadInput(t *testing.T) {
	entries, err := os.ReadDir("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		want, ok := badCorpus[e.Name()]
		if !ok {
			continue
		}
		in := filepath.Join("testdata", "bad", e.Name())
		code, stdout, stderr := runCLI("analyze", in)
		line := strings.TrimSuffix(stderr, "\n")
		if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof analyze: ") || !strings.Contains(line, in) || !strings.Contains(line, want) {
			t.Errorf("analyze %s: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", in, code, stdout, stderr, want)
		}
	}
}

// withAnalyzeOnTwoCores runs f with readAnalysis's Analyzer behind a
// pipe (piped) or on the reader's goroutine.
func withAnalyzeOnTwoCores(piped bool, f func()) {
	was := analyzeOnTwoCores
	defer func() { analyzeOnTwoCores = was }()
	analyzeOnTwoCores = func() bool { return piped }
	f()
}

// gpuTraceFile writes a GPU-shaped trace of about n events as a
// .pftrace: steps of launch calls on a host thread, each linked by a
// flow to a kernel, a copy or a collective on one of three streams.
func gpuTraceFile(t *testing.T, n int) string {
	t.Helper()
	b := event.NewBuilder(event.Meta{Host: "gpu-host", Program: "train"})
	host := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	var streams [3]uint32
	for i := range streams {
		streams[i] = b.Track(event.Track{Kind: event.TrackDeviceStream, Device: i / 2, ID: int64(7 + i), Name: fmt.Sprintf("Stream #%d", 7+i)})
	}
	kernels := []string{"gemm", "softmax", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "layer_norm"}
	var ends [3]int64
	var step uint64
	t0 := int64(0)
	for i := range n / 2 {
		if i%200 == 0 {
			if step != 0 {
				b.EndSpan(step, t0)
			}
			step = b.Span(event.Span{Name: "train", Start: t0, Track: host, Step: true, StepNum: int64(i / 200), Unfinished: true})
			t0++
		}
		args := []event.Arg{{Kind: event.ArgFlow, Num: uint64(i + 1)}}
		b.Span(event.Span{Name: "cudaLaunchKernel", Start: t0, End: t0 + 2000, Track: host, Args: args})
		s := i % 3
		start := max(ends[s]+int64(i%5)*3000, t0+4000)
		dur := int64(1000 + (i%9)*2500)
		if i%7 == 0 {
			b.ActivityOf(event.ActivityMemcpy, streams[s], "Memcpy HtoD", start, start+dur, args)
		} else {
			b.ActivityOf(event.ActivityKernel, streams[s], kernels[i%len(kernels)], start, start+dur, args)
		}
		ends[s] = start + dur
		t0 += 3000 + int64(i%11)*400
	}
	b.EndSpan(step, t0)
	path := filepath.Join(t.TempDir(), "gpu.pftrace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := perfetto.Write(f, b.Snapshot(), perfetto.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAnalyzePipedSameAsDirect: devprof analyze prints the same bytes,
// text and -json, with exit code and stderr, whether the Analyzer runs
// behind a pipe (two cores) or on the reader's goroutine: every trace
// file of testdata and the shared fixtures, the bad inputs, a synthetic
// GPU trace, a Go execution trace, a -max_events read (the whole-file
// path), and a run directory of three hosts (each host's analysis
// finished while the next is read), whole or with one host damaged.
func TestAnalyzePipedSameAsDirect(t *testing.T) {
	var inputs []string
	for _, pattern := range []string{"../../testdata/*.pb", "../../testdata/golden/*", "../../testdata/real-gpu/*", "../../testdata/real-gpu/h200/*",
		"../../../shared/fixtures/real-gpu/*", "testdata/bad/*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, m...)
	}
	goTrace := filepath.Join(t.TempDir(), "go.trace")
	if err := os.WriteFile(goTrace, goroutinesTraceFile(t, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, gpuTraceFile(t, 20_000), goTrace)
	var runs [][]string
	for _, in := range inputs {
		if st, err := os.Stat(in); err != nil || st.IsDir() {
			continue
		}
		runs = append(runs, []string{"analyze", in}, []string{"analyze", "-json", "-top", "3", in})
	}
	logdir := writeHostRun(t)
	runs = append(runs, []string{"analyze", logdir}, []string{"analyze", "-json", logdir}, []string{"analyze", "-host", "host-a", logdir})
	// Runs whose first, middle or last host's trace is damaged: the same
	// error, whatever was read or finished beside it.
	damaged := map[string]string{}
	for _, host := range []string{"host-a", "host-b", "host-c"} {
		dir := writeHostRun(t)
		path := filepath.Join(dir, "plugins", "profile", "2026_01_02_00_00_00", host+".pftrace")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Half the file, then a packet longer than what is left.
		if err := os.WriteFile(path, append(data[:len(data)/2:len(data)/2], 0x0a, 0xff, 0xff, 0x03), 0o644); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, []string{"analyze", dir})
		damaged[dir] = host
	}
	runs = append(runs,
		[]string{"analyze", "-json", "-max_events", "500", realGPU("devprof-h100-libwork.pftrace")})
	reports := 0
	for _, args := range runs {
		type result struct {
			code           int
			stdout, stderr string
		}
		var direct, piped result
		withAnalyzeOnTwoCores(false, func() { direct.code, direct.stdout, direct.stderr = runCLI(args...) })
		withAnalyzeOnTwoCores(true, func() { piped.code, piped.stdout, piped.stderr = runCLI(args...) })
		if piped != direct {
			t.Errorf("%q piped: exit %d, stderr %q, stdout:\n%s\ndirectly: exit %d, stderr %q, stdout:\n%s",
				args, piped.code, piped.stderr, piped.stdout, direct.code, direct.stderr, direct.stdout)
		}
		if direct.code == 0 {
			reports++
		}
		if host, ok := damaged[args[len(args)-1]]; ok && (direct.code != 1 || !strings.Contains(direct.stderr, host+".pftrace")) {
			t.Errorf("%q (%s damaged): exit %d, stderr %q", args, host, direct.code, direct.stderr)
		}
	}
	if reports < 40 {
		t.Errorf("%d of %d runs made a report: where are the fixtures?", reports, len(runs))
	}
}
