package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/sources/nvmlsource"
	"github.com/devprof/devprof/sources/nvml"
)

// ErrDisabled is returned by Capture when DEVPROF_DISABLE turns sessions
// off: a capture that records nothing would look like a program that did
// nothing.
var ErrDisabled = errors.New("devprof is disabled in this process (DEVPROF_DISABLE is set)")

// Captured is what Capture recorded.
type Captured struct {
	// Snapshot holds the events.
	Snapshot *event.Snapshot
	// XSpace is the capture as a TensorBoard profile: the bytes of a
	// <host>.xplane.pb, written by the format table's XPlane writer.
	XSpace []byte
	// Host is the host name the capture carries (Options.Hostname, or
	// the machine's).
	Host string
	// Early is true when the capture ended before its duration because
	// ctx was done.
	Early bool
}

// Capture records a session that writes no files: it runs with opts
// (validated as StartSession validates them, advanced configuration
// included) for d, or until ctx is done if that comes first, and returns
// what was recorded. d <= 0 records until ctx is done. The output options
// (NoPerfetto, ChromeTrace, PerfettoLink, SessionID, …) do not apply, and
// device memory tracked during it goes into the trace but into no
// separate profile. It fails with ErrAlreadyStarted while another
// session runs, and with ErrDisabled under DEVPROF_DISABLE. A remote
// capture (package profileserver) runs through it.
func Capture(ctx context.Context, d time.Duration, opts Options) (*Captured, error) {
	s, err := startSession("", opts, true)
	if err != nil {
		return nil, err
	}
	early := false
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-ctx.Done():
		early = true
	}
	if err := s.Stop(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := formats.XPlane.Write(&b, s.snap, false); err != nil {
		return nil, fmt.Errorf("writing the capture as an XSpace: %w", err)
	}
	return &Captured{Snapshot: s.snap, XSpace: b.Bytes(), Host: s.meta.Host, Early: early}, nil
}

// describe says which session this is, for the error a second session
// gets.
func (s *Session) describe() string {
	started := time.Unix(0, s.meta.Start.Wall).Format(time.TimeOnly)
	if s.capture {
		return "a capture without files (trace.Capture, a remote capture) started " + started
	}
	return fmt.Sprintf("started %s, writing to %s", started, s.logdir)
}

// State describes the running session, for reports such as a profile
// server's Monitor.
type State struct {
	Start   time.Time // when it started
	Logdir  string    // its log directory; "" for a capture
	Capture bool      // started by Capture (a remote capture) rather than Start/StartSession
	Host    string    // the host name its outputs carry
	Program string    // the program name its outputs carry
	// HostTracerLevel and DeviceTracerLevel are the levels it records at
	// (0: off).
	HostTracerLevel, DeviceTracerLevel int
	// FlightRecorder is set when the session keeps a ring (see
	// Options.FlightRecorder): FlightSnapshot takes its last window.
	FlightRecorder *FlightRecorderOptions
}

// Running reports the session running now, if any.
func Running() (State, bool) {
	running.Lock()
	defer running.Unlock()
	s := current
	if s == nil {
		return State{}, false
	}
	st := State{
		Start:             time.Unix(0, s.meta.Start.Wall),
		Logdir:            s.logdir,
		Capture:           s.capture,
		Host:              s.meta.Host,
		Program:           s.meta.Program,
		HostTracerLevel:   s.cfg.hostLevel,
		DeviceTracerLevel: s.cfg.deviceLevel,
	}
	if f := s.cfg.flight; f != nil {
		fr := *f
		st.FlightRecorder = &fr
	}
	return st, true
}

// DeviceUsage returns each NVIDIA device's memory as NVML reports it now
// (total, used by every process, and this process's share when the
// driver says). It fails without an NVIDIA driver (the error wraps
// nvml.ErrUnavailable) or in a build without cgo (nvml.ErrNeedsCgo).
func DeviceUsage() ([]event.DeviceUsage, error) {
	return nvmlsource.MemoryUsage(nvml.Options{})
}
