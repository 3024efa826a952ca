package nvml

import (
	"errors"
	"fmt"
	"time"

	"github.com/devprof/devprof/internal/mode"
)

// SourceName names the source in warnings, notes and drop counts.
const SourceName = "nvml"

// Mode says when a session samples GPU metrics. It is the one mode type
// of devprof's optional parts (goruntime.Mode is the same type), printed
// as the gpu_metrics key takes it.
type Mode = mode.Mode

const (
	// ModeAuto samples while the session's device tracer is on.
	ModeAuto = mode.Auto
	// ModeOn samples even with the device tracer off.
	ModeOn = mode.On
	// ModeOff never samples.
	ModeOff = mode.Off
)

// ParseMode reads a mode by name ("auto", "on", "off", in any case), as
// the gpu_metrics key takes it.
func ParseMode(s string) (Mode, error) {
	return mode.Parse(s, "GPUMetrics.Mode (advanced key gpu_metrics)")
}

// DefaultPeriod is how often the source samples when Options.Period is 0.
// Ten samples a second show a training step's phases at the usual step
// lengths (tens of milliseconds and up) while costing a few microseconds a
// tick per GPU (BenchmarkTick); utilization itself comes from the driver's
// own timestamped samples (every 1/6 s to 1 s, by product), whatever the
// period.
const DefaultPeriod = 100 * time.Millisecond

// Options configure the NVML source (trace.Options.GPUMetrics). The zero
// value samples every DefaultPeriod while the device tracer is on.
type Options struct {
	// Mode says when to sample. Advanced key: gpu_metrics.
	Mode Mode
	// Period is the sampling period, 10 ms to 1 min; 0 means
	// DefaultPeriod. Advanced key: gpu_metrics_period_ms.
	Period time.Duration
	// PCIe also samples PCIe throughput. Each query blocks for ~20 ms
	// (NVML measures over a window), so it is off by default and, when
	// on, runs on a goroutine of its own. Advanced key: gpu_metrics_pcie.
	PCIe bool
	// Library is the libnvidia-ml to load, a path; "" lets the dynamic
	// loader find libnvidia-ml.so.1.
	Library string
}

// Validate reports every field out of range, naming the field and its
// advanced configuration key.
func (o Options) Validate() error {
	var errs []error
	if !o.Mode.Valid() {
		errs = append(errs, fmt.Errorf("GPUMetrics.Mode %d: want ModeAuto, ModeOn or ModeOff", o.Mode))
	}
	if o.Period != 0 && (o.Period < 10*time.Millisecond || o.Period > time.Minute) {
		errs = append(errs, fmt.Errorf("GPUMetrics.Period (advanced key gpu_metrics_period_ms) %v out of range: want 10ms..1m, or 0 for %v", o.Period, DefaultPeriod))
	}
	return errors.Join(errs...)
}

// Runs reports whether a session samples with these options, given
// whether its device tracer is on.
func (o Options) Runs(deviceTracer bool) bool {
	return o.Mode == ModeOn || o.Mode == ModeAuto && deviceTracer
}

// ErrUnavailable is wrapped by every error that says NVML cannot be used
// (no NVIDIA driver, no GPU the program's CUDA can use): a session's
// start, trace.DeviceUsage.
var ErrUnavailable = errors.New("NVML unavailable")

// ErrNeedsCgo is the error of everything that needs NVML in a build
// without cgo.
var ErrNeedsCgo = errors.New("GPU metrics need cgo (NVML is loaded through go-nvml): build with CGO_ENABLED=1 and a C compiler")

// Counter series names and units, as every output shows them (declared
// in every build, cgo or not: they are what a reader of a trace looks for).
const (
	CounterUtil        = "GPU utilization"               // %
	CounterMemUtil     = "memory controller utilization" // %
	CounterMemUsed     = "memory used"                   // bytes
	CounterMemReserved = "memory reserved"               // bytes (NVML v2 drivers)
	CounterMemTotal    = "memory total"                  // bytes
	CounterPower       = "power"                         // W
	CounterSMClock     = "SM clock"                      // MHz
	CounterMemClock    = "memory clock"                  // MHz
	CounterTemp        = "temperature"                   // °C
	CounterPCIeTX      = "PCIe TX"                       // bytes/s
	CounterPCIeRX      = "PCIe RX"                       // bytes/s
)
