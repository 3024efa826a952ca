package perfetto

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
)

// TestDeviceTracks writes GPU activity (as the CUPTI source will record
// it) and checks the Perfetto layout: one process per GPU, one thread per
// stream, and launch → kernel flows.
func TestDeviceTracks(t *testing.T) {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "gpu-host", Program: "trainer", PID: 4242,
		Start: event.ClockAnchor{Mono: 0, Boot: 1e12, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 30 * ms, Boot: 1e12 + 30*ms, Wall: 1_795_000_000_030_000_000}})
	s7 := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100", ID: 7, Name: "Stream #7(Compute)"})
	s1 := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 1, ID: 3, Name: "Stream #3(Compute)"})
	for i := int64(0); i < 3; i++ {
		t0 := ms + 9*i*ms
		step := b.Span(event.Span{Name: "train", Start: t0, End: t0 + 8*ms, Step: true, StepNum: i})
		for d, track := range []uint32{s7, s1} {
			corr := uint64(10*i) + uint64(d) + 1
			b.Span(event.Span{Name: "cudaLaunchKernel", Start: t0 + int64(d+1)*ms, End: t0 + int64(d+1)*ms + 10_000, Parent: step,
				Args: []event.Arg{{Kind: event.ArgFlow, Num: corr}}})
			b.Activity(track, "gemm", t0+int64(d+1)*ms+20_000, t0+int64(d+4)*ms, []event.Arg{
				{Kind: event.ArgFlow, Num: corr}, {Key: "grid", Kind: event.ArgString, Str: "80,1,1"}, {Key: "registers", Kind: event.ArgInt, Num: 64}})
		}
	}
	s := b.Snapshot()
	var buf bytes.Buffer
	if err := Write(&buf, s, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTrace(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	procs := map[int64]string{}
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackProcess {
			procs[tk.PID] = tk.Name
		}
	}
	if procs[4243] != "GPU 0 (NVIDIA H100)" || procs[4244] != "GPU 1" || procs[4242] != "trainer" {
		t.Fatalf("processes %v", procs)
	}
	threads := map[uint64]Track{}
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackThread {
			threads[tk.UUID] = tk
		}
	}
	kernels, flowsIn := 0, 0
	launchFlows := map[uint64]bool{}
	for _, sl := range tr.Slices {
		if sl.Name == "cudaLaunchKernel" {
			for _, f := range sl.FlowIDs {
				launchFlows[f] = true
			}
		}
	}
	for _, sl := range tr.Slices {
		if sl.Name != "gemm" {
			continue
		}
		kernels++
		th := threads[sl.Track]
		if th.PID != 4243 && th.PID != 4244 || th.Name[:len("Stream #")] != "Stream #" {
			t.Fatalf("kernel on thread %+v", th)
		}
		for _, f := range sl.FlowIDs {
			if launchFlows[f] {
				flowsIn++
			}
		}
	}
	if kernels != 6 || flowsIn != 6 {
		t.Fatalf("%d kernels, %d linked to their launch; want 6 and 6", kernels, flowsIn)
	}
	path := filepath.Join(t.TempDir(), "device.pftrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "device", path, s)
}
