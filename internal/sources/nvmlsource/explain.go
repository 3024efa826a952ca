package nvmlsource

import (
	"errors"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/sources/nvml"
)

// CodeUnavailable is the warning code of a source that could not start.
const CodeUnavailable = "unavailable"

// Explain turns an error from Start into the warning the outputs carry.
func Explain(err error) event.Warning {
	return event.Warning{Source: nvml.SourceName, Code: CodeUnavailable, Text: "GPU metrics off: " + err.Error()}
}

// NoDriver reports whether Start failed only because the machine has no
// NVIDIA driver (any CPU machine).
func NoDriver(err error) bool {
	return errors.Is(err, nvml.ErrUnavailable) && strings.Contains(err.Error(), "no libnvidia-ml")
}

// Expected reports whether Start failed for a reason that is no news when
// the metrics only ran because the device tracer did: no NVIDIA driver, or
// a build without cgo (the CUPTI source says so already).
func Expected(err error) bool { return NoDriver(err) || errors.Is(err, nvml.ErrNeedsCgo) }
