//go:build cgo

package nvmlsource

import (
	"fmt"
	"os"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/sources/nvml"
)

// MemoryUsage asks NVML once what each GPU the program's CUDA can use says
// of its memory: its size, what is in use on it (total − free, the figure
// nvidia-smi shows as used) and what this process holds there (from the
// driver's list of compute processes; 0 when the process is not in it, as
// in a container whose PID namespace the driver does not see). It is the
// "expected sum" a memory breakdown compares tracked allocations with.
// Devices whose memory NVML cannot read are left out.
func MemoryUsage(o nvml.Options) ([]event.DeviceUsage, error) {
	lib, err := library(o)
	if err != nil {
		return nil, err
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%w: %s", nvml.ErrUnavailable, explainReturn(ret))
	}
	defer lib.Shutdown()
	s := &Source{lib: lib, opts: o, warned: map[string]bool{}}
	devs, err := s.enumerate()
	if err != nil {
		return nil, err
	}
	pid := uint32(os.Getpid())
	var out []event.DeviceUsage
	for _, d := range devs {
		m, ret := lib.DeviceGetMemoryInfo(d.handle)
		if ret != gonvml.SUCCESS {
			continue
		}
		u := event.DeviceUsage{Device: d.info.Device, Total: m.Total, Used: m.Total - min(m.Free, m.Total)}
		if procs, ret := lib.DeviceGetComputeRunningProcesses(d.handle); ret == gonvml.SUCCESS {
			for _, p := range procs {
				if p.Pid == pid {
					u.Process += p.UsedGpuMemory
				}
			}
		}
		out = append(out, u)
	}
	return out, nil
}
