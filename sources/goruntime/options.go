package goruntime

import (
	"errors"
	"fmt"

	"github.com/devprof/devprof/internal/mode"
)

// SourceName names the source in warnings, notes and drop counts.
const SourceName = "goruntime"

// Mode says when a session runs the Go execution tracer. It is the one
// mode type of devprof's optional parts (nvml.Mode is the same type),
// printed as the go_runtime key takes it.
type Mode = mode.Mode

const (
	// ModeAuto runs it at host tracer level 3.
	ModeAuto = mode.Auto
	// ModeOn runs it at any host tracer level.
	ModeOn = mode.On
	// ModeOff never runs it.
	ModeOff = mode.Off
)

// ParseMode reads a mode by name ("auto", "on", "off", in any case), as
// the go_runtime key takes it.
func ParseMode(s string) (Mode, error) {
	return mode.Parse(s, "GoRuntime.Mode (advanced key go_runtime)")
}

// DefaultMaxBytes is the flight recorder's window when Options.MaxBytes
// is 0: at the runtime's ~10-20 MB/s for a busy program, tens of seconds.
const DefaultMaxBytes = 64 << 20

// Options configure the Go-runtime source (trace.Options.GoRuntime). The
// zero value runs it at host tracer level 3 with the default bounds.
type Options struct {
	// Mode says when to run. Advanced key: go_runtime.
	Mode Mode
	// MaxBytes bounds the execution trace held in memory (the flight
	// recorder's window, 1 MiB to 4 GiB); past it the oldest part of the
	// session's trace is discarded and the outputs say from when the
	// runtime is shown. 0 means DefaultMaxBytes. Advanced key:
	// go_runtime_max_bytes.
	MaxBytes int64
	// MaxGoroutines bounds the goroutines that get a track of their own
	// (their states, regions and logs); the events of the rest are counted
	// as dropped, while the Ps' tracks still show them run. 0 means
	// gotrace's default (1000). Advanced key: go_runtime_max_goroutines.
	MaxGoroutines int
	// CPUProfile also runs the CPU profiler during the session, so that
	// the execution trace carries its samples (100 a second per busy
	// thread): each becomes a "CPU sample" on its goroutine's row with
	// the innermost span it fell in, and the session writes them as
	// <host>.cpu.pb.gz, labelled span=<name>, for go tool pprof
	// -tagfocus span=forward. Spans pay nothing for it: samples are
	// matched to spans at Stop. Advanced key: go_runtime_cpu_profile.
	CPUProfile bool
}

// Validate reports every field out of range, naming the field and its
// advanced configuration key.
func (o Options) Validate() error {
	var errs []error
	if !o.Mode.Valid() {
		errs = append(errs, fmt.Errorf("GoRuntime.Mode %d: want ModeAuto, ModeOn or ModeOff", o.Mode))
	}
	if o.MaxBytes != 0 && (o.MaxBytes < 1<<20 || o.MaxBytes > 4<<30) {
		errs = append(errs, fmt.Errorf("GoRuntime.MaxBytes (advanced key go_runtime_max_bytes) %d out of range: want 1 MiB..4 GiB, or 0 for %d", o.MaxBytes, DefaultMaxBytes))
	}
	if o.MaxGoroutines < 0 || o.MaxGoroutines > 1<<20 {
		errs = append(errs, fmt.Errorf("GoRuntime.MaxGoroutines (advanced key go_runtime_max_goroutines) %d out of range: want 0..1048576", o.MaxGoroutines))
	}
	return errors.Join(errs...)
}

// Runs reports whether a session runs the source with these options, at
// host tracer level hostLevel.
func (o Options) Runs(hostLevel int) bool {
	return o.Mode == ModeOn || o.Mode == ModeAuto && hostLevel >= 3
}
