package nvml

import (
	"errors"
	"strings"

	"github.com/devprof/devprof/event"
)

// CodeUnavailable is the warning code of a source that could not start.
const CodeUnavailable = "unavailable"

// Explain turns an error from Start into the warning the outputs carry.
func Explain(err error) event.Warning {
	return event.Warning{Source: SourceName, Code: CodeUnavailable, Text: "GPU metrics off: " + err.Error()}
}

// NoDriver reports whether Start failed only because the machine has no
// NVIDIA driver (any CPU machine), which needs no line of its own on
// standard error.
func NoDriver(err error) bool {
	return errors.Is(err, ErrUnavailable) && strings.Contains(err.Error(), "no libnvidia-ml")
}
