//go:build cgo

package trace_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/internal/nvmlmock"
	"github.com/devprof/devprof/trace"
)

//go:noinline
func allocateWeights(fk *fakecuda.Lib) uint64 { return fk.CudaMalloc(256<<20, 0) }

// TestCUDAMemoryProfile: CUDA allocations (the fake libcupti's callbacks)
// in a saved profile, with the Go stack that made them and NVML's view of
// the device (go-nvml's mock answering as the real H100) beside them.
func TestCUDAMemoryProfile(t *testing.T) {
	fk := useFakeCUPTI(t, "13", false)
	g := nvmlmock.NewGPU(t, "../testdata/real-gpu/go-nvml-h100.json", "GPU-6b2e1c3a-0000-1111-2222-333344445555", "00000000:17:00.0")
	defer nvmlhook.Set(nvmlmock.New(g), func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: g.UUID, SMs: 132}}, nil
	})()
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	allocateWeights(fk)
	fk.CudaFree(fk.CudaMalloc(1<<20, 0))
	path := filepath.Join(t.TempDir(), "memory.pb.gz")
	if err := trace.SaveDeviceMemoryProfile(path); err != nil {
		t.Fatal(err)
	}
	m, err := pprof.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Buffers) != 1 || m.Buffers[0].Bytes != 256<<20 || m.Buffers[0].API != "cudaMalloc" || m.Buffers[0].Device != 0 {
		t.Fatalf("buffers %+v, want the 256 MiB cudaMalloc on gpu:0", m.Buffers)
	}
	var fns []string
	for _, f := range m.Buffers[0].Stack {
		fns = append(fns, f.Function)
	}
	if s := strings.Join(fns, " "); !strings.Contains(s, "trace_test.allocateWeights") || !strings.Contains(s, "trace_test.TestCUDAMemoryProfile") {
		t.Errorf("stack %v lacks the allocating Go code", fns)
	}
	want := []event.DeviceUsage{{Device: 0, Total: g.Device.Mem.Total, Used: g.Device.Mem.Total - g.Device.Mem.Free}}
	if len(m.Devices) != 1 || m.Devices[0] != want[0] {
		t.Errorf("devices %+v, want %+v (NVML's answer at capture)", m.Devices, want)
	}
	if m.Counts.Allocs != 2 || m.Counts.Frees != 1 {
		t.Errorf("counts %+v", m.Counts)
	}
}
