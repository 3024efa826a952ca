package main

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/trace"
)

// recordMemory records a session whose device memory is known: per
// device 2 GiB of weights, then three steps that each allocate 1 GiB of
// activations and 512 MiB of gradients and free them, and on device 1 a
// 64 MiB cache per step that is never freed.
func recordMemory(t *testing.T) string {
	t.Helper()
	logdir := t.TempDir()
	s, err := trace.StartSession(logdir, trace.Options{DeviceTracerLevel: trace.Off, SessionID: "run",
		DeviceMemory: &devmem.Options{CUDA: devmem.ModeOff}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	addr := uint64(0x1000)
	alloc := func(ctx context.Context, dev int, bytes uint64, tag string) uint64 {
		addr += bytes
		devmem.Alloc(ctx, addr, bytes, devmem.Attrs{Device: dev, Tags: []string{tag}})
		return addr
	}
	for d := range 2 {
		alloc(ctx, d, 2<<30, "weights")
	}
	for i := range 3 {
		sctx, st := annotate.Step(ctx, "train", int64(i))
		for d := range 2 {
			a := alloc(sctx, d, 1<<30, "activations")
			g := alloc(sctx, d, 512<<20, "gradients")
			devmem.Free(a)
			devmem.Free(g)
			if d == 1 {
				alloc(sctx, d, 64<<20, "cache")
			}
		}
		st.End()
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	return logdir
}

func TestMemoryTimeline(t *testing.T) {
	logdir := recordMemory(t)
	plot := filepath.Join(t.TempDir(), "timeline.png")
	code, out, errOut := runCLI("memory", "timeline", "-json", "-plot", plot, logdir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Devices []struct {
			Device int    `json:"device"`
			Events int    `json:"events"`
			Peak   uint64 `json:"peak_bytes"`
			End    uint64 `json:"end_bytes"`
			AtPeak []struct {
				Name  string `json:"name"`
				Bytes uint64 `json:"bytes"`
			} `json:"at_peak"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Devices) != 2 {
		t.Fatalf("%d devices, want 2:\n%s", len(got.Devices), out)
	}
	for _, d := range got.Devices {
		cache := uint64(0)
		if d.Device == 1 {
			cache = 3 * 64 << 20 // the peak is in the last step, after two caches and before the third
			cache -= 64 << 20
		}
		wantPeak := 2<<30 + 1<<30 + 512<<20 + cache
		wantEnd := uint64(2 << 30)
		if d.Device == 1 {
			wantEnd += 3 * 64 << 20
		}
		if d.Peak != wantPeak || d.End != wantEnd {
			t.Errorf("gpu:%d peak %d, end %d; want %d, %d", d.Device, d.Peak, d.End, wantPeak, wantEnd)
		}
		at := map[string]uint64{}
		for _, s := range d.AtPeak {
			at[s.Name] = s.Bytes
		}
		if at["Parameters"] != 2<<30 || at["Activations"] != 1<<30 || at["Gradients"] != 512<<20 || at["Others"] != cache {
			t.Errorf("gpu:%d at its peak: %v", d.Device, at)
		}
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the plot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 400 {
		t.Errorf("plot of %v pixels, want a readable size", b)
	}

	code, out, errOut = runCLI("memory", "timeline", "-tags", "-top", "1", logdir)
	if code != 0 || !strings.Contains(out, "gpu:1: peak") || !strings.Contains(out, "weights") || !strings.Contains(out, "other tags") {
		t.Errorf("-tags -top 1: exit %d\n%s%s", code, out, errOut)
	}
}

func TestMemoryTimelineNeedsMemoryEvents(t *testing.T) {
	logdir := t.TempDir()
	s, err := trace.StartSession(logdir, trace.Options{DeviceTracerLevel: trace.Off})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := annotate.Begin(context.Background(), "work")
	sp.End()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("memory", "timeline", logdir)
	if code != 1 || !strings.Contains(errOut, "no device-memory events") || !strings.Contains(errOut, "device_memory") {
		t.Errorf("exit %d, stderr %q: want 1 and how to record memory", code, errOut)
	}
	for _, args := range [][]string{{"memory", "timeline"}, {"memory", "timeline", "-top", "0", logdir}, {"memory", "timeline", "-plot", "x.jpg", logdir}} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}

// TestSummarySkipsMemoryEvents: allocations and frees are instants of a
// memory track, not spans: summary leaves them to memory timeline.
func TestSummarySkipsMemoryEvents(t *testing.T) {
	logdir := recordMemory(t)
	code, out, errOut := runCLI("summary", "-top", "0", logdir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "alloc" || f[0] == "free") {
			t.Errorf("summary lists a memory event: %q\n%s", line, out)
		}
	}
	if !strings.Contains(out, "train") {
		t.Errorf("summary lacks the steps:\n%s", out)
	}
}

// TestSummaryFlowDropsAreNotLowTotals: flows a reader dropped for lack of
// a second end cost no span, and summary says so — as flows, not "events
// dropped", and without "totals are low".
func TestSummaryFlowDropsAreNotLowTotals(t *testing.T) {
	code, out, errOut := runCLI("summary", "../../testdata/real-gpu/kineto-h100-libwork.json.gz")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "warning: 5501 one-ended flows dropped (chrome flows: 5501): flows are arrows between events; every span and event is counted\n") ||
		strings.Contains(out, "totals are low") || strings.Contains(out, "events dropped") {
		t.Errorf("summary of the Kineto trace:\n%s", out)
	}
}

// TestMemoryTimelineHostPanel: a trace with pinned host memory beside a
// GPU's: the plot has the GPU's panel, then host memory's, titled and
// labelled as such with its own MiB axis, and the tables name it host.
func TestMemoryTimelineHostPanel(t *testing.T) {
	logdir := t.TempDir()
	s, err := trace.StartSession(logdir, trace.Options{DeviceTracerLevel: trace.Off, SessionID: "run",
		DeviceMemory: &devmem.Options{CUDA: devmem.ModeOff}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	devmem.Alloc(ctx, 0x10000, 4<<20, devmem.Attrs{Device: -1, Kind: "pinned", Tags: []string{"data"}})
	devmem.Alloc(ctx, 0x1000000, 2<<30, devmem.Attrs{Device: 0, Tags: []string{"weights"}})
	devmem.Free(0x10000)
	devmem.Alloc(ctx, 0x20000, 2<<20, devmem.Attrs{Device: -1, Kind: "pinned", Tags: []string{"data"}})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "t.svg")
	code, out, errOut := runCLI("memory", "timeline", "-plot", svg, logdir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "\nhost: peak 4.0 MiB") || !strings.Contains(out, "\ngpu:0: peak 2.0 GiB") || strings.Index(out, "\nhost:") < strings.Index(out, "\ngpu:0:") {
		t.Errorf("want gpu:0, then host with its 4 MiB peak:\n%s", out)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, w := range []string{">gpu:0<", ">host<", "Device memory (GiB)", "Host memory (MiB)", "Device and host memory over time, by category"} {
		if !strings.Contains(text, w) {
			t.Errorf("the plot lacks %q", w)
		}
	}
	if strings.Contains(text, "gpu:-1") {
		t.Errorf("the plot names gpu:-1")
	}
	if os.Getenv("DEVPROF_KEEP_PLOT") != "" {
		runCLI("memory", "timeline", "-plot", os.Getenv("DEVPROF_KEEP_PLOT"), logdir)
	}
}
