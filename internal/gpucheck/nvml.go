package gpucheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
)

// MetricNames are the NVML source's counter names (sources/nvml's
// Counter* constants; the driver passes them, so that this package reads
// the event model alone, as any consumer of a trace does).
type MetricNames struct {
	MemTotal, MemUsed, Util, Power, SMClock, Temp string
}

// Metrics is what the NVML source recorded of one device: its facts and
// each counter series' values in time order.
type Metrics struct {
	Device event.Track
	Series map[string][]float64 // by counter name
}

// MetricsOf returns what s holds of CUDA device ordinal dev from the NVML
// source (ok false when there is no device track for it).
func MetricsOf(s *event.Snapshot, dev int) (m Metrics, ok bool) {
	for _, t := range s.Tracks {
		if t.Kind == event.TrackDevice && t.Device == dev {
			m.Device, ok = t, true
			break
		}
	}
	m.Series = map[string][]float64{}
	type sample struct {
		t int64
		v float64
	}
	byName := map[string][]sample{}
	for _, r := range s.Events {
		if r.Kind() != event.KindCounter {
			continue
		}
		if t, tok := s.TrackOf(r); !tok || t.Device != dev || (t.Kind != event.TrackDevice && t.Kind != event.TrackDeviceStream) {
			continue
		}
		_, v := s.Counter(r)
		byName[s.Name(r)] = append(byName[s.Name(r)], sample{r.Start(), v})
	}
	for name, ss := range byName {
		slices.SortStableFunc(ss, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
		for _, x := range ss {
			m.Series[name] = append(m.Series[name], x.v)
		}
	}
	return m, ok
}

// CheckMetrics returns every way NVML's record of device dev is not what a
// real NVIDIA GPU that held at least heldBytes of device memory reports:
// named facts, and samples of memory, power, clock and temperature in
// their physical ranges.
func CheckMetrics(s *event.Snapshot, dev int, heldBytes uint64, names MetricNames) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	m, ok := MetricsOf(s, dev)
	if !ok {
		return []string{fmt.Sprintf("no device track for GPU %d (NVML's facts are missing)", dev)}
	}
	d := m.Device
	if !strings.Contains(d.DeviceName, "NVIDIA") || !strings.HasPrefix(d.UUID, "GPU-") || d.PCIBusID == "" {
		bad("GPU %d facts: name %q UUID %q PCI bus %q", dev, d.DeviceName, d.UUID, d.PCIBusID)
	}
	if d.Caps.MemoryBytes == 0 || d.Caps.Cores == 0 || d.Caps.ComputeCapMajor == 0 || d.Caps.ClockRateKHz == 0 || d.Caps.MemoryBandwidth == 0 {
		bad("GPU %d capabilities incomplete: %+v", dev, d.Caps)
	}
	in := func(name string, lo, hi float64) []float64 {
		vs := m.Series[name]
		if len(vs) == 0 {
			bad("GPU %d: no %q samples", dev, name)
		}
		for _, v := range vs {
			if v < lo || v > hi {
				bad("GPU %d: %q sample %g outside [%g, %g]", dev, name, v, lo, hi)
				break
			}
		}
		return vs
	}
	total := in(names.MemTotal, 1<<30, 1<<42)
	used := in(names.MemUsed, 0, 1<<42)
	if len(total) > 0 && len(used) > 0 {
		if slices.Max(used) > total[0] {
			bad("GPU %d: memory used %g above total %g", dev, slices.Max(used), total[0])
		}
		// NVML counts every process's memory (and on v2 drivers, not the
		// driver's reservation), so the workload's buffers are a floor.
		if slices.Max(used) < float64(heldBytes) {
			bad("GPU %d: memory used peaked at %g bytes, the workload held %d", dev, slices.Max(used), heldBytes)
		}
	}
	in(names.Util, 0, 100)
	in(names.Power, 1, 2000)
	in(names.SMClock, 1, 5000)
	in(names.Temp, 1, 110)
	return problems
}
