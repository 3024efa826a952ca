//go:build cgo

package nvmlsource

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/sources/nvml"
)

// device is one GPU being sampled.
type device struct {
	handle gonvml.Device
	index  int    // NVML's index
	track  uint32 // its TrackDevice track
	info   event.Track
	label  string // "GPU 0 (NVIDIA H100 80GB HBM3)", for warnings

	lastUtil, lastMemUtil uint64 // newest driver sample seen, µs
	pollUtil              bool   // GetSamples unsupported: poll GetUtilizationRates
	utilWritten           bool   // a utilization value is in the session

	// off and lost are shared by the sampler and the PCIe goroutine.
	off  [metricCount]atomic.Bool // metrics the device does not support
	lost atomic.Bool              // the GPU fell off the bus
}

// describe finds NVML's devices, reads what each is, matches each to its
// CUDA ordinal and registers its track.
func (s *Source) describe() error {
	devs, err := s.enumerate()
	if err != nil {
		return err
	}
	s.devices = devs
	for _, d := range s.devices {
		d.label = "GPU " + strconv.Itoa(d.info.Device)
		if d.info.DeviceName != "" {
			d.label += " (" + d.info.DeviceName + ")"
		}
		d.track = s.buf.FindTrack(event.TrackDevice, d.info.Device, 0)
		if d.track == 0 {
			d.track = s.buf.AddTrack(d.info)
		} else {
			s.buf.SetTrack(d.track, d.info)
		}
	}
	driver, _ := s.lib.SystemGetDriverVersion()
	cuda, ret := s.lib.SystemGetCudaDriverVersion()
	cudaText := "unknown"
	if ret == gonvml.SUCCESS && cuda > 0 {
		cudaText = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)
	}
	s.note("GPU metrics from NVML: driver %s, CUDA %s; %d device(s) sampled every %v", driver, cudaText, len(s.devices), period(s.opts))
	return nil
}

// enumerate finds NVML's devices, reads what each is and keeps those the
// program's CUDA can use, matched to their CUDA ordinals.
func (s *Source) enumerate() ([]*device, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%w: nvmlDeviceGetCount: %s", nvml.ErrUnavailable, ret.Error())
	}
	var all []*device
	for i := range n {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			s.warn("handle "+strconv.Itoa(i), "device_unavailable", "NVML device %d left out: %s", i, ret.Error())
			continue
		}
		d := &device{handle: h, index: i}
		d.info = s.facts(h)
		all = append(all, d)
	}
	devs := s.matchOrdinals(all)
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: no GPU that this program's CUDA can use", nvml.ErrUnavailable)
	}
	return devs, nil
}

// facts reads a device's identity and capabilities. A fact the device
// does not report is left zero.
func (s *Source) facts(h gonvml.Device) event.Track {
	t := event.Track{Kind: event.TrackDevice, Vendor: "NVIDIA"}
	if v, ret := s.lib.DeviceGetName(h); ret == gonvml.SUCCESS {
		t.DeviceName = v
	}
	if v, ret := s.lib.DeviceGetUUID(h); ret == gonvml.SUCCESS {
		t.UUID = v
	}
	if p, ret := s.lib.DeviceGetPciInfo(h); ret == gonvml.SUCCESS {
		t.PCIBusID = cString(p.BusId[:])
	}
	c := &t.Caps
	if major, minor, ret := s.lib.DeviceGetCudaComputeCapability(h); ret == gonvml.SUCCESS {
		c.ComputeCapMajor, c.ComputeCapMinor = int64(major), int64(minor)
	}
	if cores, ret := s.lib.DeviceGetNumGpuCores(h); ret == gonvml.SUCCESS && cores > 0 {
		// NVML counts CUDA cores; xprof's core_count is SMs. The CUDA
		// driver's count replaces this when it is available.
		if per := coresPerSM(c.ComputeCapMajor, c.ComputeCapMinor); per > 0 {
			c.Cores = int64(cores / per)
		}
	}
	if mhz, ret := s.lib.DeviceGetMaxClockInfo(h, gonvml.CLOCK_SM); ret == gonvml.SUCCESS {
		c.ClockRateKHz = int64(mhz) * 1000
	}
	memMHz, ret1 := s.lib.DeviceGetMaxClockInfo(h, gonvml.CLOCK_MEM)
	width, ret2 := s.lib.DeviceGetMemoryBusWidth(h)
	if ret1 == gonvml.SUCCESS && ret2 == gonvml.SUCCESS {
		// Double data rate: two transfers of the bus width per clock.
		c.MemoryBandwidth = uint64(width) / 8 * uint64(memMHz) * 1_000_000 * 2
	}
	if s.memV2 {
		if m, ret := s.lib.DeviceGetMemoryInfo_v2(h); ret == gonvml.SUCCESS {
			c.MemoryBytes = m.Total - m.Reserved // what CUDA reports as the device's memory
		}
	} else if m, ret := s.lib.DeviceGetMemoryInfo(h); ret == gonvml.SUCCESS {
		c.MemoryBytes = m.Total
	}
	return t
}

// coresPerSM is how many CUDA cores an SM of a compute capability has, to
// turn NVML's core count into SMs; 0 for unknown architectures.
func coresPerSM(major, minor int64) int {
	switch {
	case major == 3:
		return 192
	case major == 5:
		return 128
	case major == 6 && minor == 0:
		return 64
	case major == 6:
		return 128
	case major == 7:
		return 64
	case major == 8 && minor == 0:
		return 64
	case major >= 8:
		return 128 // 8.6, 8.7, 8.9, 9.0, 10.x, 12.x
	}
	return 0
}

// matchOrdinals gives each device the ordinal the program's CUDA (and so
// CUPTI) uses for it, and leaves out devices the program cannot use. NVML
// numbers every GPU of the machine in PCI order; CUDA numbers only those
// CUDA_VISIBLE_DEVICES lets it see, in CUDA_DEVICE_ORDER. The CUDA driver
// says which UUID has which ordinal; without it CUDA_VISIBLE_DEVICES does,
// and without that the orders are taken to agree.
func (s *Source) matchOrdinals(all []*device) []*device {
	cuda, err := cudaDevices()
	if err == nil {
		byUUID := map[string]nvmlhook.CUDADevice{}
		for _, c := range cuda {
			byUUID[c.UUID] = c
		}
		var out []*device
		for _, d := range all {
			c, ok := byUUID[d.info.UUID]
			if !ok {
				continue // not visible to this program's CUDA
			}
			d.info.Device = c.Ordinal
			if c.SMs > 0 {
				d.info.Caps.Cores = int64(c.SMs)
			}
			out = append(out, d)
		}
		s.note("NVML devices matched to CUDA ordinals by UUID (CUDA driver)")
		return out
	}
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		var out []*device
		for ordinal, entry := range strings.Split(v, ",") {
			entry = strings.TrimSpace(entry)
			for _, d := range all {
				if n, err := strconv.Atoi(entry); err == nil && n == d.index ||
					entry != "" && strings.HasPrefix(d.info.UUID, entry) {
					d.info.Device = ordinal
					out = append(out, d)
					break
				}
			}
		}
		s.note("NVML devices matched to CUDA ordinals by CUDA_VISIBLE_DEVICES=%s (CUDA driver not usable: %v)", v, err)
		return out
	}
	for _, d := range all {
		d.info.Device = d.index
	}
	s.note("CUDA ordinals taken to be NVML's indices (CUDA driver not usable: %v)", err)
	return all
}

// cString returns the string in a NUL-terminated byte array.
func cString[T ~int8 | ~uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(bytes.TrimSpace(out))
}
