//go:build cgo

package gpucheck

import (
	"context"
	"runtime"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/trace"
)

// The checks pass on a session that recorded exactly what was launched:
// the fake libcupti's kernels (grid 1,1,1, block 128,1,1, 2 µs each).
func TestCheckOfAFakeSession(t *testing.T) {
	t.Setenv("FAKECUPTI_LAYOUT", "13")
	t.Setenv("FAKECUPTI_SCRIPT", "0")
	lib := fakecuda.Build(t)
	t.Setenv("DEVPROF_CUPTI_LIB", lib)
	fk, err := fakecuda.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.StartSession(t.TempDir(), trace.Options{AdvancedConfig: map[string]any{"gpu_metrics": "off"},
		DeviceMemory: &devmem.Options{CUDA: devmem.ModeOn}})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, dev := annotate.Device(context.Background(), "work")
		for range 5 {
			fk.Launch("_Z4spinl", 0, 7)
		}
		dev.End()
		holdMemory(fk)
	}()
	mem, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	w := Workload{Kernels: []Kernel{{Name: "spin(long)", Count: 5, Grid: "1,1,1", Block: "128,1,1", SpinNs: 2000, SlackNs: 10}}}
	if problems := Check(s.Snapshot(), w); len(problems) != 0 {
		t.Errorf("problems on a faithful session: %q", problems)
	}
	w.Kernels[0].Count = 6
	if problems := Check(s.Snapshot(), w); len(problems) != 1 {
		t.Errorf("a wrong count gave %q", problems)
	}
	held := []Alloc{
		{API: "cudaMalloc", Kind: "device", Bytes: 4 << 20, Count: 2, Caller: "gpucheck.holdMemory"},
		{API: "cudaMallocHost", Kind: "pinned", Bytes: 1 << 20, Count: 1, Caller: "gpucheck.holdMemory"},
	}
	if problems := CheckMemory(mem, held, 3); len(problems) != 0 {
		t.Errorf("memory problems on a faithful session: %q", problems)
	}
	held[0].Count = 3
	if problems := CheckMemory(mem, held, 3); len(problems) != 1 {
		t.Errorf("a wrong buffer count gave %q", problems)
	}
	// The collector and the hooks shared CUPTI: the trace has the
	// allocations' MEMORY2 records on their streams, and the tracker's own
	// allocation and free events on the memory tracks of their devices.
	allocs := map[event.TrackKind]int{}
	frees := map[event.TrackKind]int{}
	snap := s.Snapshot()
	for _, r := range snap.Events {
		tr, _ := snap.TrackOf(r)
		switch r.Activity() {
		case event.ActivityAlloc:
			allocs[tr.Kind]++
		case event.ActivityFree:
			frees[tr.Kind]++
		}
	}
	if allocs[event.TrackDeviceStream] != 6 || allocs[event.TrackMemory] != 6 || frees[event.TrackMemory] != 3 {
		t.Errorf("allocation records on streams %d, on memory tracks %d (and %d frees); want 6, 6 (3 held, 3 freed) and 3",
			allocs[event.TrackDeviceStream], allocs[event.TrackMemory], frees[event.TrackMemory])
	}
}

// holdMemory allocates what the workload of scripts/gpu-check holds (two
// device buffers and a pinned one) and three it frees again.
func holdMemory(fk *fakecuda.Lib) {
	fk.CudaMalloc(4<<20, 0)
	fk.CudaMalloc(4<<20, 0)
	fk.CudaMallocHost(1<<20, 0)
	for range 3 {
		fk.CudaFree(fk.CudaMalloc(1<<20, 0))
	}
}
