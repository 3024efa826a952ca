//go:build cgo

package nvmlsource

import (
	"encoding/binary"
	"math"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/nvml"
)

// metric is one series the sampler reads.
type metric uint8

const (
	metricUtil metric = iota
	metricMemUtil
	metricMemory
	metricPower
	metricSMClock
	metricMemClock
	metricTemp
	metricPCIe
	metricCount
)

var metricNames = [...]string{"GPU utilization", "memory controller utilization", "memory", "power", "SM clock", "memory clock", "temperature", "PCIe throughput"}

// run samples every period until Stop, then once more.
func (s *Source) run() {
	defer s.done.Done()
	t := time.NewTicker(period(s.opts))
	defer t.Stop()
	for {
		s.tick(false)
		select {
		case <-t.C:
		case <-s.stop:
			s.tick(true)
			return
		}
	}
}

// tick takes one sample of every metric of every device still there;
// final is the last tick, at Stop.
func (s *Source) tick(final bool) {
	now := recorder.Mono()
	for _, d := range s.devices {
		if !d.lost.Load() {
			s.sample(d, now, final)
		}
	}
}

// ok reports whether an NVML call of metric m succeeded. A metric the
// device does not support is left out from then on, and a lost GPU is not
// sampled again, each with a warning; other failures skip the sample.
func (s *Source) ok(d *device, m metric, ret gonvml.Return) bool {
	switch ret {
	case gonvml.SUCCESS:
		return true
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		d.off[m].Store(true)
		s.warn(d.label+"/"+metricNames[m], "not_supported", "%s: %s not supported; left out", d.label, metricNames[m])
	case gonvml.ERROR_GPU_IS_LOST:
		d.lost.Store(true)
		s.warn(d.label+"/lost", "gpu_lost", "%s: the GPU fell off the bus; its metrics stop here", d.label)
	default:
		s.warn(d.label+"/"+metricNames[m]+"/"+ret.Error(), "query_failed", "%s: reading %s failed: %s", d.label, metricNames[m], ret.Error())
	}
	return false
}

func (s *Source) counter(d *device, name, unit string, t int64, v float64) {
	s.buf.TrackCounterMono(d.track, name, unit, t, v)
}

// sample reads one device's metrics at now (the driver's utilization
// samples keep their own times); final is the last tick.
func (s *Source) sample(d *device, now int64, final bool) {
	h := d.handle
	s.utilization(d, now, final)
	if !d.off[metricMemory].Load() {
		s.memory(d, now)
	}
	if !d.off[metricPower].Load() && !d.lost.Load() {
		if mw, ret := s.lib.DeviceGetPowerUsage(h); s.ok(d, metricPower, ret) {
			s.counter(d, nvml.CounterPower, "W", now, float64(mw)/1000)
		}
	}
	if !d.off[metricSMClock].Load() && !d.lost.Load() {
		if mhz, ret := s.lib.DeviceGetClockInfo(h, gonvml.CLOCK_SM); s.ok(d, metricSMClock, ret) {
			s.counter(d, nvml.CounterSMClock, "MHz", now, float64(mhz))
		}
	}
	if !d.off[metricMemClock].Load() && !d.lost.Load() {
		if mhz, ret := s.lib.DeviceGetClockInfo(h, gonvml.CLOCK_MEM); s.ok(d, metricMemClock, ret) {
			s.counter(d, nvml.CounterMemClock, "MHz", now, float64(mhz))
		}
	}
	if !d.off[metricTemp].Load() && !d.lost.Load() {
		if c, ret := s.lib.DeviceGetTemperature(h, gonvml.TEMPERATURE_GPU); s.ok(d, metricTemp, ret) {
			s.counter(d, nvml.CounterTemp, "°C", now, float64(c))
		}
	}
}

// utilization writes the driver's own utilization samples taken since the
// last tick, at their times; where the driver keeps none, it polls. A
// session shorter than the driver's sampling period (1/6 s to 1 s) may see
// no sample of its own: its last tick then polls, so that every session
// says how busy the GPU was.
func (s *Source) utilization(d *device, now int64, final bool) {
	if d.lost.Load() {
		return
	}
	if !d.pollUtil {
		ok, n := s.samples(d, gonvml.GPU_UTILIZATION_SAMPLES, &d.lastUtil, nvml.CounterUtil)
		d.utilWritten = d.utilWritten || n > 0
		switch {
		case ok:
			s.samples(d, gonvml.MEMORY_UTILIZATION_SAMPLES, &d.lastMemUtil, nvml.CounterMemUtil)
			if !final || d.utilWritten {
				return
			}
		case d.lost.Load():
			return
		default:
			d.pollUtil = true
		}
	}
	if d.off[metricUtil].Load() {
		return
	}
	if u, ret := s.lib.DeviceGetUtilizationRates(d.handle); s.ok(d, metricUtil, ret) {
		s.counter(d, nvml.CounterUtil, "%", now, float64(u.Gpu))
		s.counter(d, nvml.CounterMemUtil, "%", now, float64(u.Memory))
		d.utilWritten = true
	}
}

// samples writes the samples of one kind newer than *last and says how
// many it wrote; ok is false when the driver keeps no such samples (the
// caller polls instead).
func (s *Source) samples(d *device, kind gonvml.SamplingType, last *uint64, name string) (ok bool, written int) {
	vt, got, ret := s.lib.DeviceGetSamples(d.handle, kind, *last)
	switch ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_NOT_FOUND:
		return true, 0 // no sample since the last one
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		return false, 0
	default:
		s.ok(d, metricUtil, ret)
		return !d.lost.Load(), 0
	}
	for _, smp := range got {
		if smp.TimeStamp <= *last {
			continue
		}
		*last = smp.TimeStamp
		t := int64(smp.TimeStamp)*1000 - s.offset
		if t < s.start {
			continue
		}
		s.counter(d, name, "%", t, sampleValue(vt, smp.SampleValue))
		written++
	}
	return true, written
}

// sampleValue decodes a driver sample of value type vt.
func sampleValue(vt gonvml.ValueType, b [8]byte) float64 {
	switch vt {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b[:4]))
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(b[:4])))
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(b[:])))
	}
	return float64(binary.LittleEndian.Uint64(b[:])) // unsigned long (long)
}

// memory writes used, reserved (v2 drivers) and total device memory.
func (s *Source) memory(d *device, now int64) {
	if d.lost.Load() {
		return
	}
	if s.memV2 {
		if m, ret := s.lib.DeviceGetMemoryInfo_v2(d.handle); s.ok(d, metricMemory, ret) {
			s.counter(d, nvml.CounterMemUsed, "bytes", now, float64(m.Used))
			s.counter(d, nvml.CounterMemReserved, "bytes", now, float64(m.Reserved))
			s.counter(d, nvml.CounterMemTotal, "bytes", now, float64(m.Total))
		}
		return
	}
	if m, ret := s.lib.DeviceGetMemoryInfo(d.handle); s.ok(d, metricMemory, ret) {
		s.counter(d, nvml.CounterMemUsed, "bytes", now, float64(m.Used))
		s.counter(d, nvml.CounterMemTotal, "bytes", now, float64(m.Total))
	}
}

// runPCIe samples PCIe throughput on its own goroutine: each query blocks
// for NVML's ~20 ms measuring window.
func (s *Source) runPCIe() {
	defer s.done.Done()
	for {
		for _, d := range s.devices {
			if d.lost.Load() || d.off[metricPCIe].Load() {
				continue
			}
			for _, c := range []struct {
				counter gonvml.PcieUtilCounter
				name    string
			}{{gonvml.PCIE_UTIL_TX_BYTES, nvml.CounterPCIeTX}, {gonvml.PCIE_UTIL_RX_BYTES, nvml.CounterPCIeRX}} {
				kbs, ret := s.lib.DeviceGetPcieThroughput(d.handle, c.counter)
				if !s.ok(d, metricPCIe, ret) {
					break
				}
				s.counter(d, c.name, "bytes/s", recorder.Mono(), float64(kbs)*1024)
			}
		}
		select {
		case <-s.stop:
			return
		case <-time.After(period(s.opts)):
		}
	}
}
