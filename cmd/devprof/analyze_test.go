package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/analysis"
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
