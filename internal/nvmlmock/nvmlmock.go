//go:build cgo

// Package nvmlmock is test support: go-nvml's mock NVML (pkg/nvml/mock)
// answering as a real H100 did (testdata/real-gpu/go-nvml-h100.json), for
// the NVML source's tests and for sessions run by other packages' tests
// (install it with internal/nvmlhook). It needs cgo, as go-nvml does.
package nvmlmock

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// H100 is what go-nvml answered on a real H100 (testdata/real-gpu/go-nvml-h100.json).
type H100 struct {
	Device struct {
		BusWidth   uint32 `json:"bus_width"`
		CC         [2]int `json:"cc"`
		Cores      int    `json:"cores"`
		MaxSMClock uint32 `json:"max_sm_clock"`
		Mem        struct{ Total, Free, Used uint64 }
		MemClock   uint32                                       `json:"mem_clock"`
		MemV2      struct{ Total, Reserved, Free, Used uint64 } `json:"mem_v2"`
		Name       string                                       `json:"name"`
		PowerMW    uint32                                       `json:"power_mw"`
		SMClock    uint32                                       `json:"sm_clock"`
		TempC      uint32                                       `json:"temp_c"`
		Util       struct{ Gpu, Memory uint32 }
		PCIeTXKBs  uint32 `json:"pcie_tx_kbs"`
	} `json:"device"`
}

// LoadH100 reads the real H100 answers from path.
func LoadH100(t testing.TB, path string) H100 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f H100
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// GPU is one mocked GPU: the real H100's answers, a UUID and a PCI address
// of its own, and knobs for the error paths.
type GPU struct {
	H100
	UUID, PCI string
	// Unsupported lists calls that answer ERROR_NOT_SUPPORTED: "memory",
	// "samples", "utilization", "power", "pcie".
	Unsupported map[string]bool
	// LostAfter makes power reads after this many answer
	// ERROR_GPU_IS_LOST (0: never).
	LostAfter int
	// Processes are the compute processes the GPU lists (the fixture's
	// H100 listed none).
	Processes []gonvml.ProcessInfo
	// NoNewSamples makes GetSamples answer ERROR_NOT_FOUND (nothing
	// since the last sample), as a real H100's driver did for the whole of
	// a session shorter than its utilization sampling period.
	NoNewSamples bool

	mu           sync.Mutex
	powerReads   int
	sampleValues []uint32 // utilization samples handed out, one per GetSamples call
}

// PowerReads returns how many times the GPU's power was read.
func (g *GPU) PowerReads() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.powerReads
}

func (g *GPU) ret(call string) gonvml.Return {
	if g.Unsupported[call] {
		return gonvml.ERROR_NOT_SUPPORTED
	}
	return gonvml.SUCCESS
}

// New mocks NVML with gpus, in NVML index order. Every call devprof makes
// is mocked; any other call panics, which a test would see.
func New(gpus ...*GPU) *mock.Interface {
	handles := map[gonvml.Device]*GPU{}
	byIndex := make([]gonvml.Device, len(gpus))
	for i, g := range gpus {
		byIndex[i] = &mock.Device{}
		handles[byIndex[i]] = g
	}
	of := func(d gonvml.Device) *GPU { return handles[d] }
	return &mock.Interface{
		InitFunc:     func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc: func() gonvml.Return { return gonvml.SUCCESS },
		ExtensionsFunc: func() gonvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
		},
		DeviceGetCountFunc: func() (int, gonvml.Return) { return len(gpus), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			return byIndex[i], gonvml.SUCCESS
		},
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "580.159.04", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 13000, gonvml.SUCCESS },
		DeviceGetNameFunc:              func(d gonvml.Device) (string, gonvml.Return) { return of(d).Device.Name, gonvml.SUCCESS },
		DeviceGetUUIDFunc:              func(d gonvml.Device) (string, gonvml.Return) { return of(d).UUID, gonvml.SUCCESS },
		DeviceGetPciInfoFunc: func(d gonvml.Device) (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			for i := range min(len(of(d).PCI), len(p.BusId)-1) {
				p.BusId[i] = byte(of(d).PCI[i])
			}
			return p, gonvml.SUCCESS
		},
		DeviceGetCudaComputeCapabilityFunc: func(d gonvml.Device) (int, int, gonvml.Return) {
			return of(d).Device.CC[0], of(d).Device.CC[1], gonvml.SUCCESS
		},
		DeviceGetNumGpuCoresFunc: func(d gonvml.Device) (int, gonvml.Return) { return of(d).Device.Cores, gonvml.SUCCESS },
		DeviceGetMaxClockInfoFunc: func(d gonvml.Device, c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_MEM {
				return of(d).Device.MemClock, gonvml.SUCCESS
			}
			return of(d).Device.MaxSMClock, gonvml.SUCCESS
		},
		DeviceGetMemoryBusWidthFunc: func(d gonvml.Device) (uint32, gonvml.Return) { return of(d).Device.BusWidth, gonvml.SUCCESS },
		DeviceGetMemoryInfo_v2Func: func(d gonvml.Device) (gonvml.Memory_v2, gonvml.Return) {
			m := of(d).Device.MemV2
			return gonvml.Memory_v2{Total: m.Total, Reserved: m.Reserved, Free: m.Free, Used: m.Used}, of(d).ret("memory")
		},
		DeviceGetMemoryInfoFunc: func(d gonvml.Device) (gonvml.Memory, gonvml.Return) {
			m := of(d).Device.Mem
			return gonvml.Memory{Total: m.Total, Free: m.Free, Used: m.Used}, of(d).ret("memory")
		},
		DeviceGetComputeRunningProcessesFunc: func(d gonvml.Device) ([]gonvml.ProcessInfo, gonvml.Return) {
			return of(d).Processes, gonvml.SUCCESS
		},
		DeviceGetSamplesFunc: func(d gonvml.Device, kind gonvml.SamplingType, last uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
			g := of(d)
			if ret := g.ret("samples"); ret != gonvml.SUCCESS {
				return 0, nil, ret
			}
			if g.NoNewSamples {
				return 0, nil, gonvml.ERROR_NOT_FOUND
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			v := uint32(40 + 10*(len(g.sampleValues)%6)) // 40..90 %
			g.sampleValues = append(g.sampleValues, v)
			var smp gonvml.Sample
			smp.TimeStamp = uint64(time.Now().UnixMicro())
			binary.LittleEndian.PutUint32(smp.SampleValue[:4], v)
			return gonvml.VALUE_TYPE_UNSIGNED_INT, []gonvml.Sample{smp}, gonvml.SUCCESS
		},
		DeviceGetUtilizationRatesFunc: func(d gonvml.Device) (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: 97, Memory: 35}, of(d).ret("utilization")
		},
		DeviceGetPowerUsageFunc: func(d gonvml.Device) (uint32, gonvml.Return) {
			g := of(d)
			g.mu.Lock()
			defer g.mu.Unlock()
			g.powerReads++
			if g.LostAfter > 0 && g.powerReads > g.LostAfter {
				return 0, gonvml.ERROR_GPU_IS_LOST
			}
			return g.Device.PowerMW, g.ret("power")
		},
		DeviceGetClockInfoFunc: func(d gonvml.Device, c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_MEM {
				return of(d).Device.MemClock, gonvml.SUCCESS
			}
			return of(d).Device.SMClock, gonvml.SUCCESS
		},
		DeviceGetTemperatureFunc: func(d gonvml.Device, _ gonvml.TemperatureSensors) (uint32, gonvml.Return) {
			return of(d).Device.TempC, gonvml.SUCCESS
		},
		DeviceGetPcieThroughputFunc: func(d gonvml.Device, _ gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
			return of(d).Device.PCIeTXKBs, of(d).ret("pcie")
		},
	}
}

// NewGPU returns an H100 (answers read from path) with its own UUID and
// PCI address.
func NewGPU(t testing.TB, path, uuid, pci string) *GPU {
	return &GPU{H100: LoadH100(t, path), UUID: uuid, PCI: pci, Unsupported: map[string]bool{}}
}
