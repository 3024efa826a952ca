//go:build unix

package trace_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/trace"
)

// spinForward and spinBackward burn d of the process's CPU time (not
// wall time: on a loaded machine the profiler samples CPU time).
//
//go:noinline
func spinForward(d time.Duration) {
	for c0 := cpuTime(); cpuTime()-c0 < d; {
	}
}

//go:noinline
func spinBackward(d time.Duration) {
	for c0 := cpuTime(); cpuTime()-c0 < d; {
	}
}

// TestGoRuntimeCPUProfile: with GoRuntime.CPUProfile the CPU samples are
// attributed to the spans they fell in, on the timeline and in
// <host>.cpu.pb.gz, so that go tool pprof -tagfocus span=forward answers
// where forward's CPU time went.
func TestGoRuntimeCPUProfile(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir, trace.Options{DeviceTracerLevel: trace.Off, NoXPlane: true,
		AdvancedConfig: map[string]any{"go_runtime": "on", "go_runtime_cpu_profile": true}})
	ctx := context.Background()
	for range 3 {
		_, f := annotate.Begin(ctx, "forward")
		spinForward(100 * time.Millisecond)
		f.End()
		_, b := annotate.Begin(ctx, "backward")
		spinBackward(100 * time.Millisecond)
		b.End()
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	out := s.Outputs()
	if out.CPU == "" {
		t.Fatal("no CPU profile written")
	}
	f, err := os.Open(out.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	// Each span's samples are in its own function, not the other's.
	in := map[string]map[string]int{}
	for _, sm := range p.Sample {
		span := ""
		if l := sm.Label[gotrace.ArgSpan]; len(l) == 1 {
			span = l[0]
		}
		if in[span] == nil {
			in[span] = map[string]int{}
		}
		for _, loc := range sm.Location {
			for _, ln := range loc.Line {
				in[span][ln.Function.Name]++
			}
		}
	}
	fw, bw := in["forward"], in["backward"]
	t.Logf("%d samples; forward: %d in spinForward, %d in spinBackward; backward: %d, %d", len(p.Sample),
		fw["github.com/devprof/devprof/trace_test.spinForward"], fw["github.com/devprof/devprof/trace_test.spinBackward"],
		bw["github.com/devprof/devprof/trace_test.spinBackward"], bw["github.com/devprof/devprof/trace_test.spinForward"])
	if fw["github.com/devprof/devprof/trace_test.spinForward"] < 10 || fw["github.com/devprof/devprof/trace_test.spinBackward"] > 0 ||
		bw["github.com/devprof/devprof/trace_test.spinBackward"] < 10 || bw["github.com/devprof/devprof/trace_test.spinForward"] > 0 {
		t.Errorf("samples by span and function: %v", in)
	}
	// go tool pprof reads it and focuses on a span by its label.
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	top, err := exec.Command(goCmd, "tool", "pprof", "-tagfocus", "span=forward", "-top", out.CPU).CombinedOutput()
	if err != nil || !strings.Contains(string(top), "spinForward") || strings.Contains(string(top), "spinBackward") {
		t.Errorf("go tool pprof -tagfocus span=forward: %v\n%s", err, top)
	}
	// On the timeline: samples on the goroutine's row, with their span.
	snap := s.Snapshot()
	spans := 0
	for _, r := range snap.Events {
		if r.Kind() == event.KindInstant && snap.Name(r) == gotrace.InstantCPUSample {
			for _, a := range snap.Args(r) {
				if a.Key == gotrace.ArgSpan && (a.Str == "forward" || a.Str == "backward") {
					spans++
				}
			}
		}
	}
	if spans < 20 {
		t.Errorf("%d CPU samples on the timeline carry their span, want at least 20", spans)
	}
}
