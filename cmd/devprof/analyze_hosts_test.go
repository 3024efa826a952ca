package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
)

// writeHostRun writes one run of a three-host job into a log directory,
// each host a .pftrace of ten steps (annotate.Step's form) on its own
// monotonic clock: host-b's steps take 30 % longer and begin 2 ms after
// the others' on the wall clock. An older run with one host lies beside
// it.
func writeHostRun(t *testing.T) (logdir string) {
	t.Helper()
	logdir = t.TempDir()
	const ms = int64(1e6)
	write := func(run, host string, stepNS, lateNS, monoZero int64) {
		dir := filepath.Join(logdir, "plugins", "profile", run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		wall := int64(1_800_000_000) * 1e9
		b := event.NewBuilder(event.Meta{Host: host, Program: "train",
			Start: event.ClockAnchor{Mono: monoZero, Boot: monoZero, Wall: wall},
			Stop:  event.ClockAnchor{Mono: monoZero + 200*ms, Boot: monoZero + 200*ms, Wall: wall + 200*ms}})
		p := b.Process(event.Process{PID: 1, Name: "train"})
		tr := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
		for i := range 10 {
			start := monoZero + lateNS + int64(i)*15*ms
			b.Span(event.Span{Name: "train", Start: start, End: start + stepNS + int64(i%2)*ms/10, Track: tr, Step: true, StepNum: int64(i)})
		}
		f, err := os.Create(filepath.Join(dir, host+".pftrace"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := perfetto.Write(f, b.Snapshot(), perfetto.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	write("2026_01_01_00_00_00", "old-host", 5*ms, 0, 1000*ms)
	write("2026_01_02_00_00_00", "host-a", 10*ms, 0, 7000*ms)
	write("2026_01_02_00_00_00", "host-b", 13*ms, 2*ms, 123*ms)
	write("2026_01_02_00_00_00", "host-c", 10*ms, 0, 55000*ms)
	return logdir
}

// TestAnalyzeHosts: a log directory whose newest run has several hosts
// gets the across-hosts section (host-b named the straggler with its
// excess, its 2 ms lateness from the wall clock) and the full report of
// the slowest host, or of the host -host names.
func TestAnalyzeHosts(t *testing.T) {
	logdir := writeHostRun(t)
	code, stdout, stderr := runCLI("analyze", logdir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"Run 2026_01_02_00_00_00: 3 hosts, median host's step 10.1ms; stragglers (more than 10% slower): host-b (+29.7%)",
		"host-b      9  13.1ms", // step 0 is each host's warm-up
		"+29.7% *",
		"step starts across hosts (wall clock, 9 steps in common): spread p50 2.00ms, p90 2.00ms, max 2.00ms",
		"Host host-b (the slowest; -host NAME for another):",
		"Steps (step markers): 10; warm-up apart: step 0",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "old-host") {
		t.Errorf("the older run's host is in the report:\n%s", stdout)
	}
	code, stdout, stderr = runCLI("analyze", "-host", "host-c", "-straggler", "50", logdir)
	if code != 0 || !strings.Contains(stdout, "Host host-c (-host; -host NAME for another):") || !strings.Contains(stdout, "no straggler (none more than 50% slower)") {
		t.Errorf("-host host-c -straggler 50: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, _, stderr = runCLI("analyze", "-host", "nobody", logdir)
	if code != 1 || !strings.Contains(stderr, "has no such host (it has host-a, host-b, host-c)") {
		t.Errorf("-host nobody: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI("analyze", "-json", logdir)
	if code != 0 {
		t.Fatalf("-json: exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Run     string          `json:"run"`
		Hosts   *analysis.Hosts `json:"hosts"`
		Reports []struct {
			Host   string           `json:"host"`
			Format string           `json:"format"`
			Report *analysis.Report `json:"report"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if got.Run != "2026_01_02_00_00_00" || len(got.Reports) != 3 || got.Reports[1].Host != "host-b" || got.Reports[1].Report.Steps == nil ||
		len(got.Hosts.Stragglers) != 1 || got.Hosts.Hosts[1].LateNS != 2_000_000 {
		t.Errorf("-json: %+v", got)
	}
}

// TestAnalyzeHostUsage: -host on a single trace and a -straggler of 0
// are usage errors.
func TestAnalyzeHostUsage(t *testing.T) {
	for _, args := range [][]string{
		{"analyze", "-host", "x", realGPU("devprof-h100-libwork.pftrace")},
		{"analyze", "-straggler", "0", realGPU("devprof-h100-libwork.pftrace")},
	} {
		if code, _, stderr := runCLI(args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// TestAnalyzeHTML: -html writes the page beside the terminal report, for
// one trace and for a run of hosts; a name that is not .html is a usage
// error and writes nothing.
func TestAnalyzeHTML(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, stderr := runCLI("analyze", "-html", out, realGPU("devprof-h100-libwork.pftrace"))
	if code != 0 || !strings.Contains(stderr, "wrote "+out) || !strings.Contains(stdout, "Steps (step markers): 20") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil || strings.Count(string(page), "<svg") != 3 {
		t.Errorf("page: %v, %d charts", err, strings.Count(string(page), "<svg"))
	}
	hostsOut := filepath.Join(t.TempDir(), "run.html")
	if code, _, stderr := runCLI("analyze", "-html", hostsOut, writeHostRun(t)); code != 0 {
		t.Fatalf("hosts: exit %d, stderr %q", code, stderr)
	}
	page, err = os.ReadFile(hostsOut)
	if err != nil || !strings.Contains(string(page), "Across hosts") || !strings.Contains(string(page), `<tr class="slow"><td class="name">host-b</td>`) {
		t.Errorf("hosts page: %v\n%.2000s", err, page)
	}
	bad := filepath.Join(t.TempDir(), "report.txt")
	if code, _, _ := runCLI("analyze", "-html", bad, realGPU("devprof-h100-libwork.pftrace")); code != 2 {
		t.Errorf("-html report.txt: exit %d, want 2", code)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("-html report.txt wrote a file")
	}
}
