package gpucheck

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/sources/nvml"
)

// What scripts/gpu-lease recorded on an NVIDIA H200 (driver 580.159.04,
// CUDA 13.0, CUPTI API 130001; lease.log has the run): the tests below
// hold later work, done without a GPU, to that hardware's truth.
const h200 = "../../testdata/real-gpu/h200"

func readH200(t *testing.T, name string) *event.Snapshot {
	t.Helper()
	path := filepath.Join(h200, name)
	var s *event.Snapshot
	var err error
	if strings.HasSuffix(name, ".xplane.pb") {
		s, err = xplane.ReadFile(path)
	} else {
		s, err = perfetto.ReadFile(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The gpu-check run (20 steps of devprof_workload: a saxpy, a 1 ms spin,
// 1 MiB each way), read back from both files devprof wrote.
func TestH200WorkloadAsLaunched(t *testing.T) {
	w := Workload{
		Kernels: []Kernel{
			{Name: "saxpy(int, float, float const*, float*)", Count: 20, Grid: "4096,1,1", Block: "256,1,1"},
			{Name: "spin(long long)", Count: 20, Grid: "1,1,1", Block: "1,1,1", SpinNs: int64(time.Millisecond), SlackNs: 20_000},
		},
		Copies: []Copy{{Kind: "HtoD", Bytes: 1 << 20, Count: 20}, {Kind: "DtoH", Bytes: 1 << 20, Count: 20}},
	}
	for _, name := range []string{"gpucheck.pftrace", "gpucheck.xplane.pb", "gpucheck-2.pftrace"} {
		s := readH200(t, name)
		for _, p := range Check(s, w) {
			t.Errorf("%s: %s", name, p)
		}
		// Every kernel keeps its symbol beside its demangled name, and
		// every flow has both ends (the H100 run found 343 of 543 with one).
		ends := map[uint64]int{}
		kernels := 0
		for _, r := range s.Events {
			var mangled string
			for _, a := range s.Args(r) {
				switch {
				case a.Kind == event.ArgFlow:
					ends[a.Num]++
				case a.Key == event.ArgMangledName:
					mangled = a.Str
				}
			}
			if r.Kind() == event.KindActivity && strings.Contains(s.Name(r), "(") && strings.HasPrefix(mangled, "_Z") {
				kernels++
			}
		}
		if kernels != 40 {
			t.Errorf("%s: %d kernels with a demangled name and their symbol, want 40", name, kernels)
		}
		for id, n := range ends {
			if n < 2 {
				t.Errorf("%s: flow %d has %d end", name, id, n)
			}
		}
		if len(ends) < 80 {
			t.Errorf("%s: %d flows, want one per launch and copy (80)", name, len(ends))
		}
		for _, wn := range s.Meta.Warnings {
			t.Errorf("%s: warning on a clean run: %+v", name, wn)
		}
	}
}

// deviceFacts is what scripts/gpucheck/device_facts.py read from the CUDA
// driver on the machine.
type deviceFacts struct {
	Name                    string `json:"name"`
	TotalMemory             uint64 `json:"total_memory"`
	ClockRateKHz            int64  `json:"clock_rate_khz"`
	SMs                     int64  `json:"multiprocessor_count"`
	Major                   int64  `json:"compute_capability_major"`
	Minor                   int64  `json:"compute_capability_minor"`
	BandwidthBytesPerSecond uint64 `json:"bandwidth_bytes_per_s"`
}

func loadFacts(t *testing.T) deviceFacts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h200, "device-facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f deviceFacts
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// capsOf returns the capabilities a snapshot gives GPU 0, from its device
// track or, where a reader puts them there (XSpace), its stream tracks.
func capsOf(s *event.Snapshot) (event.DeviceCaps, string) {
	for _, tr := range s.Tracks {
		if (tr.Kind == event.TrackDevice || tr.Kind == event.TrackDeviceStream) && tr.Device == 0 && tr.Caps.Cores > 0 {
			return tr.Caps, tr.DeviceName
		}
	}
	return event.DeviceCaps{}, ""
}

// The device facts NVML gave devprof are the CUDA driver's, and TSL's
// (JAX's profiler, on the same machine) are the same figures.
func TestH200DeviceFactsAreTheDriversAndTSLs(t *testing.T) {
	f := loadFacts(t)
	want := event.DeviceCaps{ClockRateKHz: f.ClockRateKHz, Cores: f.SMs, MemoryBytes: f.TotalMemory,
		MemoryBandwidth: f.BandwidthBytesPerSecond, ComputeCapMajor: f.Major, ComputeCapMinor: f.Minor}
	if want.Cores != 132 || want.ComputeCapMajor != 9 || f.Name != "NVIDIA H200" {
		t.Fatalf("device-facts.json: %+v: not the H200 this fixture was recorded on", f)
	}
	// gpucheck-2.pftrace is a second lease's (another H200, after the
	// Perfetto writer learnt to carry the capabilities): the earlier
	// .pftrace files have none to read.
	for _, name := range []string{"gpucheck.xplane.pb", "window.xplane.pb", "jax-tsl.xplane.pb", "gpucheck-2.pftrace"} {
		got, dev := capsOf(readH200(t, name))
		if got != want || dev != f.Name {
			t.Errorf("%s: GPU 0 %q %+v, the driver says %q %+v", name, dev, got, f.Name, want)
		}
	}
}

// smiSample is one line of nvidia-smi --query-gpu … -lms 100, as
// scripts/gpu-lease asked for it (TZ=UTC).
type smiSample struct {
	wall                              int64
	util, memMiB, power, smMHz, tempC float64
}

func loadSmi(t *testing.T) []smiSample {
	t.Helper()
	f, err := os.Open(filepath.Join(h200, "nvidia-smi.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// timestamp, utilization.gpu, utilization.memory, memory.used,
	// memory.total, power.draw, clocks.sm, clocks.mem, temperature.gpu
	var out []smiSample
	for _, r := range rows[1:] {
		ts, err := time.Parse("2006/01/02 15:04:05.000", strings.TrimSpace(r[0]))
		if err != nil {
			t.Fatal(err)
		}
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(strings.TrimSpace(r[i]), 64)
			if err != nil {
				t.Fatalf("nvidia-smi.csv: %q: %v", r, err)
			}
			return v
		}
		out = append(out, smiSample{ts.UnixNano(), num(1), num(3), num(5), num(6), num(8)})
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// During phases of known load (idle; idle holding 16 GiB; every SM
// spinning; a copy loop; idle again), the counters the NVML source
// recorded on the device agree with nvidia-smi sampled beside it every
// 100 ms. Both are compared over the middle of each phase (its first
// 500 ms left out: the driver's utilization is a windowed average and
// power settles over about a second), by median. On the H200 the medians
// were equal but for utilization (NVML 99-99.5 % where nvidia-smi said
// 100 while busy) and memory (nvidia-smi's MiB are rounded): the
// tolerances below are those differences with a little room.
func TestH200NVMLAgreesWithNvidiaSmi(t *testing.T) {
	s := readH200(t, "window.pftrace")
	b, err := os.ReadFile(filepath.Join(h200, "window.phases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w Window
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	// The phases' spans in the trace place them on its timeline; their
	// wall-clock bounds place nvidia-smi's samples.
	spans := map[string]*event.Record{}
	for _, r := range s.Events {
		if r.Kind() == event.KindSpan && strings.HasPrefix(s.Name(r), "phase ") {
			spans[strings.TrimPrefix(s.Name(r), "phase ")] = r
		}
	}
	type series struct {
		t []int64
		v []float64
	}
	nv := map[string]*series{}
	for _, r := range s.Events {
		if r.Kind() != event.KindCounter {
			continue
		}
		if tr, ok := s.TrackOf(r); !ok || tr.Device != 0 || tr.Kind != event.TrackDevice && tr.Kind != event.TrackDeviceStream {
			continue
		}
		_, v := s.Counter(r)
		x := nv[s.Name(r)]
		if x == nil {
			x = &series{}
			nv[s.Name(r)] = x
		}
		x.t, x.v = append(x.t, r.Start()), append(x.v, v)
	}
	smi := loadSmi(t)
	const settle = int64(500 * time.Millisecond)
	type tol struct {
		nvml string
		smi  func(smiSample) float64
		abs  float64 // agreement: |median NVML - median smi| <= abs + rel*|median smi|
		rel  float64
		unit float64 // NVML's unit in smi's (bytes per MiB)
	}
	checks := []tol{
		{nvml.CounterUtil, func(x smiSample) float64 { return x.util }, 2, 0, 1},
		{nvml.CounterMemUsed, func(x smiSample) float64 { return x.memMiB }, 1, 0, 1 << 20}, // nvidia-smi rounds to MiB
		{nvml.CounterPower, func(x smiSample) float64 { return x.power }, 1, 0.01, 1},
		{nvml.CounterSMClock, func(x smiSample) float64 { return x.smMHz }, 0, 0, 1},
		{nvml.CounterTemp, func(x smiSample) float64 { return x.tempC }, 1, 0, 1},
	}
	for _, p := range w.Phases {
		sp := spans[p.Name]
		if sp == nil {
			t.Fatalf("no span for phase %q in the trace", p.Name)
		}
		for _, c := range checks {
			x := nv[c.nvml]
			if x == nil {
				t.Fatalf("no NVML %q series", c.nvml)
			}
			var a, bv []float64
			for i, ts := range x.t {
				if ts >= sp.Start()+settle && ts <= sp.End() {
					a = append(a, x.v[i]/c.unit)
				}
			}
			for _, m := range smi {
				if m.wall >= p.WallStart+settle && m.wall <= p.WallEnd {
					bv = append(bv, c.smi(m))
				}
			}
			if len(a) < 3 || len(bv) < 3 {
				t.Errorf("phase %s %s: %d NVML and %d nvidia-smi samples", p.Name, c.nvml, len(a), len(bv))
				continue
			}
			ma, mb := median(a), median(bv)
			t.Logf("phase %-4s %-16s NVML %10.2f (%2d)  nvidia-smi %10.2f (%2d)", p.Name, c.nvml, ma, len(a), mb, len(bv))
			if math.Abs(ma-mb) > c.abs+c.rel*math.Abs(mb) {
				t.Errorf("phase %s: %s median %.2f, nvidia-smi %.2f", p.Name, c.nvml, ma, mb)
			}
		}
	}
}

// The leak run: device memory allocated through a cgo binding from three
// Go call sites; the profiles before and after ten steps differ by the
// ten blocks loadCache leaked, and by nothing else.
func TestH200LeakRunProfiles(t *testing.T) {
	read := func(name string) *event.DeviceMemory {
		m, err := pprof.ReadFile(filepath.Join(h200, name))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base, after := read("leak.base.memory.pb.gz"), read("leak.after.memory.pb.gz")
	through := func(m *event.DeviceMemory, fn string) (bytes uint64, n int) {
		for _, b := range m.Buffers {
			if b.API != "cudaMalloc" || b.Source != "cuda" || b.Kind != "device" || b.Device != 0 {
				t.Errorf("buffer %+v: want a cudaMalloc of device memory on GPU 0 seen through CUDA", b)
			}
			if stackHas(b.Stack, fn) {
				bytes += b.Bytes * uint64(max(b.Count, 1))
				n += max(b.Count, 1)
			}
		}
		return bytes, n
	}
	for _, c := range []struct {
		fn           string
		before, grew uint64
	}{{"main.loadWeights", 4 * 32 << 20, 0}, {"main.loadCache", 2 * 4 << 20, 10 * 4 << 20}} {
		b0, _ := through(base, c.fn)
		b1, _ := through(after, c.fn)
		if b0 != c.before || b1-b0 != c.grew {
			t.Errorf("%s: %d bytes live before, %d after; want %d and %d more", c.fn, b0, b1, c.before, c.grew)
		}
	}
	if b, n := through(after, "main.trainStep"); n != 12 || b != 12*4<<20 {
		t.Errorf("after: %d buffers, %d bytes through trainStep, want the 12 leaked blocks", n, b)
	}
	// What NVML said of the device when the profile was saved, which the
	// breakdown's Untrackable row sets against the tracked buffers: the
	// process held more than its tracked buffers (its CUDA context), the
	// device no less than the process, within the device's size.
	if len(after.Devices) != 1 {
		t.Fatalf("NVML's figures: %+v, want GPU 0's", after.Devices)
	}
	d := after.Devices[0]
	tracked, _ := through(after, "main.")
	if d.Device != 0 || d.Process <= tracked || d.Used < d.Process || d.Total < d.Used || d.Total < 140<<30 {
		t.Errorf("NVML's figures %+v with %d bytes tracked: want process > tracked, used >= process, total >= used and an H200's size", d, tracked)
	}
}
