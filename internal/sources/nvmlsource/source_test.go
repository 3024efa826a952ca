//go:build cgo

package nvmlsource

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"go.uber.org/goleak"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/internal/nvmlmock"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/nvml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fixture = "../../../testdata/real-gpu/go-nvml-h100.json"

func newGPU(t testing.TB, uuid, pci string) *nvmlmock.GPU {
	return nvmlmock.NewGPU(t, fixture, uuid, pci)
}

// record runs the source over lib for about d and returns the snapshot
// and the report.
func record(t *testing.T, lib *mock.Interface, cuda func() ([]nvmlhook.CUDADevice, error), o nvml.Options, d time.Duration) (*event.Snapshot, recorder.SourceReport) {
	t.Helper()
	defer nvmlhook.Set(lib, cuda)()
	buf := recorder.NewBuffer(1<<16, 3)
	meta := event.Meta{Start: recorder.ReadClocks()}
	src, err := Start(buf, o)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	rep := src.Stop()
	meta.Stop = recorder.ReadClocks()
	return buf.Snapshot(meta), rep
}

const uuidA, uuidB = "GPU-6b2e1c3a-0000-1111-2222-333344445555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"

// countersOf returns each series of a device as its samples' values, in
// time order.
func countersOf(s *event.Snapshot, device int) map[string][]float64 {
	var recs []*event.Record
	for _, r := range s.Events {
		if tr, ok := s.TrackOf(r); ok && r.Kind() == event.KindCounter && tr.Device == device {
			recs = append(recs, r)
		}
	}
	slices.SortStableFunc(recs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	out := map[string][]float64{}
	for _, r := range recs {
		unit, v := s.Counter(r)
		out[s.Name(r)+" ("+unit+")"] = append(out[s.Name(r)+" ("+unit+")"], v)
	}
	return out
}

func TestFactsAndCounters(t *testing.T) {
	g := newGPU(t, uuidA, "00000000:17:00.0")
	cuda := func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA, SMs: 132}}, nil
	}
	s, rep := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond}, 60*time.Millisecond)
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings %+v", rep.Warnings)
	}
	if len(s.Tracks) != 1 {
		t.Fatalf("tracks %+v", s.Tracks)
	}
	f := g.Device
	want := event.Track{Kind: event.TrackDevice, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", Vendor: "NVIDIA", UUID: uuidA, PCIBusID: "00000000:17:00.0",
		Caps: event.DeviceCaps{ClockRateKHz: 1_980_000, Cores: 132, MemoryBytes: f.MemV2.Total - f.MemV2.Reserved, MemoryBandwidth: 3_352_320_000_000, ComputeCapMajor: 9}}
	if s.Tracks[0] != want {
		t.Errorf("device\n%+v\nwant\n%+v", s.Tracks[0], want)
	}
	c := countersOf(s, 0)
	for series, v := range map[string]float64{
		"power (W)": 69.859, "SM clock (MHz)": 345, "memory clock (MHz)": 2619, "temperature (°C)": 36,
		"memory used (bytes)": 0, "memory reserved (bytes)": 503316480, "memory total (bytes)": 85520809984,
	} {
		got := c[series]
		if len(got) < 3 {
			t.Errorf("%s: %d samples in 60 ms at 10 ms, want several", series, len(got))
			continue
		}
		for _, x := range got {
			if x != v {
				t.Errorf("%s = %v, want %v", series, x, v)
				break
			}
		}
	}
	// Utilization is the driver's own samples, each once, at its time
	// (the mock hands out 40, 50, 60, ... to the GPU and memory-controller
	// queries in turn).
	util, memUtil := c["GPU utilization (%)"], c["memory controller utilization (%)"]
	if len(util) < 3 || util[0] != 40 || util[1] != 60 || memUtil[0] != 50 || memUtil[1] != 70 {
		t.Errorf("utilization samples %v and %v, want 40, 60, ... and 50, 70, ...", util, memUtil)
	}
	for _, r := range s.Events {
		if r.Start() < s.Meta.Start.Mono-1_000_000 || r.Start() > s.Meta.Stop.Mono+1_000_000 {
			t.Errorf("%s at %d, outside the session [%d, %d]", s.Name(r), r.Start(), s.Meta.Start.Mono, s.Meta.Stop.Mono)
		}
	}
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[len(rep.Notes)-1].Text, "driver 580.159.04, CUDA 13.0") {
		t.Errorf("notes %+v", rep.Notes)
	}
}

// NVML numbers GPUs in PCI order, CUDA its visible ones in its own:
// samples land on the CUDA ordinal (what CUPTI's device ids are), and a
// GPU the program cannot use is not sampled.
func TestDevicesMatchedToCUDAOrdinals(t *testing.T) {
	a, b := newGPU(t, uuidA, "00000000:17:00.0"), newGPU(t, uuidB, "00000000:65:00.0")
	b.Device.Name = "second"
	// CUDA_VISIBLE_DEVICES=1: CUDA sees only NVML's device 1, as ordinal 0.
	cuda := func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidB, SMs: 132}}, nil
	}
	s, _ := record(t, nvmlmock.New(a, b), cuda, nvml.Options{Period: 10 * time.Millisecond}, 30*time.Millisecond)
	if len(s.Tracks) != 1 || s.Tracks[0].UUID != uuidB || s.Tracks[0].Device != 0 || s.Tracks[0].DeviceName != "second" {
		t.Fatalf("tracks %+v, want only NVML's device 1 as ordinal 0", s.Tracks)
	}
	if len(countersOf(s, 0)["power (W)"]) == 0 {
		t.Error("no samples on ordinal 0")
	}

	// Without the CUDA driver, CUDA_VISIBLE_DEVICES says the order.
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,0")
	noCUDA := func() ([]nvmlhook.CUDADevice, error) { return nil, errors.New("libcuda.so.1 not loadable") }
	s, rep := record(t, nvmlmock.New(a, b), noCUDA, nvml.Options{Period: 10 * time.Millisecond}, 30*time.Millisecond)
	byOrdinal := map[int]string{}
	for _, tr := range s.Tracks {
		byOrdinal[tr.Device] = tr.UUID
	}
	if byOrdinal[0] != uuidB || byOrdinal[1] != uuidA {
		t.Errorf("ordinals %v, want 0: %s, 1: %s", byOrdinal, uuidB, uuidA)
	}
	if !strings.Contains(rep.Notes[0].Text, "CUDA_VISIBLE_DEVICES=1,0") {
		t.Errorf("notes %+v", rep.Notes)
	}
}

// After a failed Init no other NVML call is made: the mock has no other
// function, and any call would panic.
func TestInitFailureMakesNoOtherCall(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}
	defer nvmlhook.Set(lib, nil)()
	_, err := Start(recorder.NewBuffer(100, 3), nvml.Options{})
	if !errors.Is(err, nvml.ErrUnavailable) || !NoDriver(err) || !strings.Contains(Explain(err).Text, "no libnvidia-ml.so.1") {
		t.Fatalf("Start: %v", err)
	}
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	if _, err := Start(recorder.NewBuffer(100, 3), nvml.Options{}); NoDriver(err) || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("Start with the driver not loaded: %v (a driver problem deserves its line)", err)
	}
}

// A metric the GPU does not support is left out with one warning while the
// others go on; without the driver's samples, utilization is polled.
func TestUnsupportedMetrics(t *testing.T) {
	g := newGPU(t, uuidA, "")
	g.Unsupported["power"], g.Unsupported["samples"] = true, true
	cuda := func() ([]nvmlhook.CUDADevice, error) { return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil }
	s, rep := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond}, 40*time.Millisecond)
	c := countersOf(s, 0)
	if len(c["power (W)"]) != 0 || len(c["temperature (°C)"]) < 3 {
		t.Errorf("power %v, temperature %v", c["power (W)"], c["temperature (°C)"])
	}
	if u := c["GPU utilization (%)"]; len(u) < 3 || u[0] != 97 || c["memory controller utilization (%)"][0] != 35 {
		t.Errorf("polled utilization %v / %v", u, c["memory controller utilization (%)"])
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Code != "not_supported" || !strings.Contains(rep.Warnings[0].Text, "power not supported") {
		t.Errorf("warnings %+v, want one not_supported for power", rep.Warnings)
	}
	if g.PowerReads() != 1 {
		t.Errorf("power read %d times after NOT_SUPPORTED, want once", g.PowerReads())
	}
}

// A GPU lost mid-session stops its sampling with a warning; Stop returns
// and what was sampled before stays.
func TestGPULost(t *testing.T) {
	g := newGPU(t, uuidA, "")
	g.LostAfter = 2
	cuda := func() ([]nvmlhook.CUDADevice, error) { return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil }
	s, rep := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 5 * time.Millisecond}, 50*time.Millisecond)
	if got := len(countersOf(s, 0)["power (W)"]); got != 2 {
		t.Errorf("%d power samples, want the 2 before the GPU was lost", got)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Code != "gpu_lost" {
		t.Errorf("warnings %+v", rep.Warnings)
	}
	if g.PowerReads() != 3 {
		t.Errorf("power read %d times, want 3 (none after the loss)", g.PowerReads())
	}
}

func TestPCIeOnItsOwnGoroutine(t *testing.T) {
	g := newGPU(t, uuidA, "")
	cuda := func() ([]nvmlhook.CUDADevice, error) { return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil }
	s, _ := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond, PCIe: true}, 30*time.Millisecond)
	c := countersOf(s, 0)
	if tx := c["PCIe TX (bytes/s)"]; len(tx) == 0 || tx[0] != float64(g.Device.PCIeTXKBs)*1024 {
		t.Errorf("PCIe TX %v", tx)
	}
	s, _ = record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond}, 20*time.Millisecond)
	if tx := countersOf(s, 0)["PCIe TX (bytes/s)"]; len(tx) != 0 {
		t.Errorf("PCIe sampled while off: %v", tx)
	}
}

// The PCIe goroutine and the sampler share the device's state: an
// unsupported PCIe counter and a GPU lost mid-run, each seen by one of
// them, must neither race (go test -race) nor stop the other's metrics
// wrongly.
func TestPCIeAndSamplerShareDeviceState(t *testing.T) {
	g := newGPU(t, uuidA, "")
	g.Unsupported["pcie"] = true
	g.LostAfter = 4
	cuda := func() ([]nvmlhook.CUDADevice, error) { return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil }
	s, rep := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 2 * time.Millisecond, PCIe: true}, 40*time.Millisecond)
	c := countersOf(s, 0)
	if len(c["PCIe TX (bytes/s)"]) != 0 || len(c["power (W)"]) != 4 {
		t.Errorf("PCIe %v, power %v: want no PCIe and the 4 power samples before the loss", c["PCIe TX (bytes/s)"], c["power (W)"])
	}
	codes := map[string]int{}
	for _, w := range rep.Warnings {
		codes[w.Code]++
	}
	if codes["not_supported"] != 1 || codes["gpu_lost"] != 1 {
		t.Errorf("warnings %+v", rep.Warnings)
	}
}

// BenchmarkTick is the sampler's own cost per tick for one GPU (the mock
// answers at once; real NVML adds ~280 ns a query and 4.4 µs for memory
// on an H100, testdata/real-gpu/go-nvml-h100.json).
func BenchmarkTick(b *testing.B) {
	g := newGPU(b, uuidA, "")
	defer nvmlhook.Set(nvmlmock.New(g), func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil
	})()
	src, err := Start(recorder.NewBuffer(1<<26, 3), nvml.Options{Period: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Stop()
	b.ReportAllocs()
	for b.Loop() {
		src.tick(false)
	}
}

// TestShortSessionStillHasUtilization: a real H100's driver had no
// utilization sample newer than a 0.3 s session's start (it samples every
// 1/6 s to 1 s), and 3 of 6 such runs recorded no utilization at all;
// the last tick polls then, so every session has one.
func TestShortSessionStillHasUtilization(t *testing.T) {
	g := newGPU(t, uuidA, "")
	g.NoNewSamples = true
	cuda := func() ([]nvmlhook.CUDADevice, error) { return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: uuidA}}, nil }
	s, rep := record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond}, 50*time.Millisecond)
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings %+v", rep.Warnings)
	}
	c := countersOf(s, 0)
	if u, m := c["GPU utilization (%)"], c["memory controller utilization (%)"]; len(u) != 1 || u[0] != 97 || len(m) != 1 || m[0] != 35 {
		t.Errorf("utilization %v, memory controller %v: want one polled value each (97, 35) at the end", u, m)
	}
	// With the driver's samples coming in, nothing is polled.
	g.NoNewSamples = false
	s, _ = record(t, nvmlmock.New(g), cuda, nvml.Options{Period: 10 * time.Millisecond}, 50*time.Millisecond)
	if u := c["GPU utilization (%)"]; slices.Contains(countersOf(s, 0)["GPU utilization (%)"], 97) || len(u) == 0 {
		t.Errorf("utilization %v: a polled value beside the driver's samples", countersOf(s, 0)["GPU utilization (%)"])
	}
}
