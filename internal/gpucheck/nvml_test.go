package gpucheck

import (
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/sources/nvml"
)

// metricsSnapshot is what NVML recorded of an H100 (the figures the real
// run printed), with edit applied to its samples first.
func metricsSnapshot(facts bool, edit func(map[string]float64)) *event.Snapshot {
	b := event.NewBuilder(event.Meta{Stop: event.ClockAnchor{Mono: 1_000}})
	dev := event.Track{Kind: event.TrackDevice, Device: 0}
	if facts {
		dev.DeviceName, dev.UUID, dev.PCIBusID = "NVIDIA H100 80GB HBM3", "GPU-508f0ce1-d3a9-d523-11a7-cb323e95b238", "00000000:00:06.0"
		dev.Caps = event.DeviceCaps{ClockRateKHz: 1_980_000, Cores: 132, MemoryBytes: 85_000_000_000, MemoryBandwidth: 3_352_320_000_000, ComputeCapMajor: 9}
	}
	tr := b.Track(dev)
	host := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1})
	v := map[string]float64{nvml.CounterMemTotal: 85520809984, nvml.CounterMemUsed: 575471616, nvml.CounterUtil: 1,
		nvml.CounterPower: 75.0, nvml.CounterSMClock: 1980, nvml.CounterTemp: 40}
	if edit != nil {
		edit(v)
	}
	for name, x := range v {
		b.TrackCounter(tr, name, "", 10, x)
	}
	b.TrackCounter(host, nvml.CounterTemp, "", 10, 500) // a host's series is not the GPU's
	return b.Snapshot()
}

var names = MetricNames{MemTotal: nvml.CounterMemTotal, MemUsed: nvml.CounterMemUsed, Util: nvml.CounterUtil,
	Power: nvml.CounterPower, SMClock: nvml.CounterSMClock, Temp: nvml.CounterTemp}

func TestCheckMetrics(t *testing.T) {
	for _, c := range []struct {
		name  string
		facts bool
		edit  func(map[string]float64)
		held  uint64
		want  string // a substring of the one problem; "" for none
	}{
		{"agrees", true, nil, 10 << 20, ""},
		{"no facts", false, nil, 10 << 20, "facts"},
		{"used below held", true, nil, 1 << 30, "the workload held"},
		{"used above total", true, func(v map[string]float64) { v[nvml.CounterMemUsed] = 9e10 }, 0, "above total"},
		{"no power", true, func(v map[string]float64) { delete(v, nvml.CounterPower) }, 0, `no "power" samples`},
		{"hot", true, func(v map[string]float64) { v[nvml.CounterTemp] = 300 }, 0, "outside"},
	} {
		got := CheckMetrics(metricsSnapshot(c.facts, c.edit), 0, c.held, names)
		if c.want == "" && len(got) > 0 || c.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "; "), c.want)) {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
	if got := CheckMetrics(metricsSnapshot(true, nil), 1, 0, names); len(got) != 1 || !strings.Contains(got[0], "no device track") {
		t.Errorf("GPU 1 of a one-GPU trace: %q", got)
	}
}
