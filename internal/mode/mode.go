// Package mode is the one switch of devprof's optional parts: auto, on or
// off. Each part (sources/nvml, sources/goruntime) names it by type alias
// and gives auto its own meaning, so that all spell, print and parse it
// the same way.
package mode

import (
	"fmt"
	"strings"
)

// Mode says when an optional part runs. The zero value is Auto, so that
// an Options left zero gets each part's default.
type Mode uint8

const (
	// Auto lets the part decide from the rest of the configuration.
	Auto Mode = iota
	// On runs it whatever else is configured.
	On
	// Off never runs it.
	Off
)

// String returns the mode's name as the advanced configuration keys and
// flags take it: "auto", "on" or "off".
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case On:
		return "on"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Valid reports whether m is one of Auto, On and Off: a Mode is a number,
// and an Options field may hold any.
func (m Mode) Valid() bool { return m <= Off }

// Parse reads a mode by name, in any case and with surrounding space
// ignored ("auto", "On", " OFF"), since the names come from flags,
// environment variables and JAX's options as people type them. what names
// the setting in the error, e.g. "GPUMetrics.Mode (advanced key
// gpu_metrics)".
func Parse(s, what string) (Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, m := range []Mode{Auto, On, Off} {
		if name == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%s %q: want auto, on or off", what, s)
}
