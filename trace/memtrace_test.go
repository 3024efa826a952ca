package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/trace"
)

// TestMemoryOverTime records a workload whose device memory is known:
// step 0 loads 10 MiB of weights; step 1 allocates 20 and 30 MiB of
// activations, frees the 20, allocates 40 MiB of workspace (the peak:
// 80 MiB), and frees the 30 and the 40, leaving the weights. The trace
// must say so in the model, and xprof's own memory_profile tool must say
// so from the .xplane.pb (conformance/test_xprof_memory.py, with the
// manifest ExportMemoryProfile writes).
func TestMemoryOverTime(t *testing.T) {
	const MiB = 1 << 20
	s, err := trace.StartSession(t.TempDir(), trace.Options{
		DeviceMemory:      &devmem.Options{CUDA: devmem.ModeOff},
		DeviceTracerLevel: trace.Off,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pause := func() { time.Sleep(50 * time.Microsecond) } // events apart on xprof's microsecond clock
	var peakAt int64
	func() {
		sctx, st := annotate.Step(ctx, "train", 0)
		defer st.End()
		lctx, load := annotate.Begin(sctx, "load")
		devmem.Alloc(devmem.WithTags(lctx, "weights"), 0x1000_0000, 10*MiB, devmem.Attrs{})
		load.End()
		pause()
	}()
	func() {
		sctx, st := annotate.Step(ctx, "train", 1)
		defer st.End()
		act := devmem.WithTags(sctx, "activations")
		fctx, fwd := annotate.Begin(act, "forward")
		devmem.Alloc(fctx, 0x2000_0000, 20*MiB, devmem.Attrs{})
		pause()
		devmem.Alloc(fctx, 0x3000_0000, 30*MiB, devmem.Attrs{})
		pause()
		devmem.Free(0x2000_0000)
		pause()
		fwd.End()
		bctx, bwd := annotate.Begin(devmem.WithTags(sctx, "workspace"), "backward")
		devmem.Alloc(bctx, 0x4000_0000, 40*MiB, devmem.Attrs{})
		pause()
		devmem.Free(0x3000_0000)
		pause()
		devmem.Free(0x4000_0000)
		bwd.End()
		pause()
	}()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	tls := snap.MemoryTimelines(8)
	if len(tls) != 1 || tls[0].Device != 0 {
		t.Fatalf("timelines %+v, want one of device 0", tls)
	}
	tl := tls[0]
	if want := []uint64{10, 30, 60, 40, 80, 50, 10}; len(tl.InUse) != len(want) {
		t.Fatalf("in use %v, want %v MiB", tl.InUse, want)
	} else {
		for i := range want {
			if tl.InUse[i] != want[i]*MiB {
				t.Fatalf("in use %v, want %v MiB", tl.InUse, want)
			}
		}
	}
	peakAt = tl.Times[4]
	if tl.Peak != 80*MiB || tl.PeakTime != peakAt || tl.LifetimePeak != 80*MiB {
		t.Errorf("peak %d at %d (lifetime %d), want 80 MiB at the workspace's allocation (%d)", tl.Peak, tl.PeakTime, tl.LifetimePeak, peakAt)
	}
	series := map[string]uint64{}
	for _, sr := range tl.Series {
		series[sr.Key] = sr.Bytes[4]
	}
	if series["weights"] != 10*MiB || series["activations"] != 30*MiB || series["workspace"] != 40*MiB || len(series) != 3 {
		t.Errorf("at the peak the tags hold %v, want weights 10, activations 30, workspace 40 MiB", series)
	}
	m := conformance.ExpectMemoryProfile(snap)
	want := conformance.MemoryAllocator{
		Allocations: 4, Deallocations: 3, PeakBytes: 80 * MiB, PeakTimePs: (peakAt - snap.Meta.Start.Mono) * 1000,
		LifetimePeakBytes: 80 * MiB, LastBytes: 10 * MiB, PeakStep: 1, CapacityBytes: 80 * MiB,
		// Allocations live at the peak and made in its step, largest
		// first; the weights, from step 0, are what xprof calls unused
		// preallocated memory.
		Breakdown: []conformance.MemoryRow{
			{Bytes: 40 * MiB, Op: "backward", Region: "workspace", Count: 1},
			{Bytes: 30 * MiB, Op: "forward", Region: "activations", Count: 1},
			{Bytes: 10 * MiB, Op: "unused preallocated device memory", Region: "persist/dynamic", Count: 1, Special: true},
		},
	}
	if got := m.Allocators["GPU_0_devmem"]; len(m.Allocators) != 1 || !got.Equal(want) {
		t.Errorf("memory profile manifest %+v\nwant %+v", m.Allocators, want)
	}
	out := s.Outputs()
	conformance.Export(t, "devmem", out.Perfetto, snap)
	conformance.ExportXPlane(t, "devmem", out.XPlane, snap)
	conformance.ExportMemoryProfile(t, "devmem", out.XPlane, snap)
}
