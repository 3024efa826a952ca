//go:build cgo

package nvmlsource

import (
	"errors"
	"os"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/internal/nvmlmock"
	"github.com/devprof/devprof/sources/nvml"
)

func TestMemoryUsage(t *testing.T) {
	a, b := newGPU(t, uuidA, "00000000:17:00.0"), newGPU(t, uuidB, "00000000:65:00.0")
	b.Processes = []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: 7 << 30}, {Pid: uint32(os.Getpid()), UsedGpuMemory: 3 << 30}}
	b.Device.Mem.Free = b.Device.Mem.Total - 10<<30
	cuda := func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidB}, {Ordinal: 1, UUID: uuidA}}, nil
	}
	defer nvmlhook.Set(nvmlmock.New(a, b), cuda)()
	got, err := MemoryUsage(nvml.Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := a.Device.Mem.Total
	want := map[int]event.DeviceUsage{
		// CUDA ordinal 0 is NVML's second GPU.
		0: {Device: 0, Total: total, Used: 10 << 30, Process: 3 << 30},
		1: {Device: 1, Total: total, Used: a.Device.Mem.Total - a.Device.Mem.Free},
	}
	if len(got) != 2 {
		t.Fatalf("usage %+v, want two devices", got)
	}
	for _, u := range got {
		if u != want[u.Device] {
			t.Errorf("device %d: %+v, want %+v", u.Device, u, want[u.Device])
		}
	}
	if want[1].Used != 503316480 {
		t.Errorf("the fixture's H100 used %d bytes; the test expects the recorded 503316480", want[1].Used)
	}
}

func TestMemoryUsageWithoutDriver(t *testing.T) {
	_, err := MemoryUsage(nvml.Options{Library: t.TempDir() + "/libnvidia-ml-missing.so.1"})
	if !errors.Is(err, nvml.ErrUnavailable) {
		t.Errorf("MemoryUsage without NVML: %v, want ErrUnavailable", err)
	}
}
