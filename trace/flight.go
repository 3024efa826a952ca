package trace

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// ErrNoFlightRecorder is returned when a flight-recorder snapshot is asked
// of a session that is not one (see Options.FlightRecorder), or when no
// session runs.
var ErrNoFlightRecorder = errors.New("no flight recorder is running (start a session with trace.Options.FlightRecorder)")

// ErrStopped is returned by a stopped session's FlightSnapshot: what it
// recorded is its Snapshot.
var ErrStopped = errors.New("the session has stopped (its last window is Session.Snapshot)")

// FlightSnapshot returns the last window of a running flight-recorder
// session (Options.FlightRecorder) as a new snapshot, without stopping
// it: recording goes on while the ring is copied. Spans still open are
// open in it, ending at the snapshot's time as at a Stop. Events the ring
// overwrote or that ended before the window are counted in its
// Meta.Drops (as "flight_recorder") and said in a note.
func (s *Session) FlightSnapshot() (*event.Snapshot, error) {
	return s.flightSnapshot(0)
}

func (s *Session) flightSnapshot(window time.Duration) (*event.Snapshot, error) {
	if s.buf == nil {
		return nil, ErrDisabled
	}
	if !s.buf.Ring() {
		return nil, ErrNoFlightRecorder
	}
	s.flightMu.Lock() // Stop waits for a snapshot under way, and changes meta only after it
	defer s.flightMu.Unlock()
	if s.stopped {
		return nil, ErrStopped
	}
	meta := s.meta
	meta.Stop = event.ClockAnchor{} // the snapshot's time, read by the ring once it holds still
	return s.buf.SnapshotWindow(meta, window), nil
}

// WriteFlightSnapshot takes FlightSnapshot and writes it as a run of its
// own, <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/, in the formats
// the session's options ask for, exactly as Stop writes a run: so
// TensorBoard, xprof, devprof serve and devprof summary open it as they
// open any run. The session goes on recording.
func (s *Session) WriteFlightSnapshot() (Outputs, error) {
	snap, err := s.FlightSnapshot()
	if err != nil {
		return Outputs{}, err
	}
	if s.capture {
		return Outputs{}, errors.New("a capture session (trace.Capture) has no log directory to write into")
	}
	return s.writeRun(snap, nil, nil, time.Now().Format("2006_01_02_15_04_05"))
}

// FlightSnapshot takes the running flight recorder's last window (see
// Session.FlightSnapshot) with the running session's own window, and
// returns it with its XSpace as a Capture does: what a profile server's
// GetSnapshot answers. It fails with ErrNoFlightRecorder when no session
// runs or the running one records no ring (Options.FlightRecorder).
func FlightSnapshot() (*Captured, error) {
	running.Lock()
	s := current
	running.Unlock()
	if s == nil {
		return nil, ErrNoFlightRecorder
	}
	snap, err := s.FlightSnapshot()
	if errors.Is(err, ErrStopped) {
		return nil, ErrNoFlightRecorder // it stopped since it was found
	}
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := formats.XPlane.Write(&b, snap, false); err != nil {
		return nil, fmt.Errorf("writing the snapshot as an XSpace: %w", err)
	}
	return &Captured{Snapshot: snap, XSpace: b.Bytes(), Host: s.meta.Host}, nil
}
