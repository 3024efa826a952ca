package trace_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/trace"
)

// A flight-recorder session records for as long as it runs within its
// bound, and a snapshot taken while goroutines record holds the last
// window only, counts what it left out, and is written as a run that
// reads back exactly (and passes the Perfetto checker under scripts/test).
func TestFlightRecorderSession(t *testing.T) {
	logdir := t.TempDir()
	const window = 300 * time.Millisecond
	s, err := trace.StartSession(logdir, trace.Options{
		DeviceTracerLevel: trace.Off,
		Hostname:          "flight",
		FlightRecorder:    &trace.FlightRecorderOptions{Window: window, MaxEvents: 16 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var spans atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, outer := annotate.Begin(ctx, "request", annotate.Int("g", g))
				_, inner := annotate.Begin(c, "work")
				inner.End()
				outer.End()
				spans.Add(2)
				if i%64 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	// Until the ring has come round at least once.
	for spans.Load() < 64<<10 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(window) // and the window is full of recording
	snap, err := s.FlightSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if len(snap.Events) == 0 || int64(len(snap.Events)) > 16<<10 {
		t.Fatalf("%d events in the snapshot, want 1..%d; %v %v %+v", len(snap.Events), 16<<10, snap.Meta.Drops, snap.Meta.Notes, snap.Meta.Stop)
	}
	cutoff := snap.Meta.Stop.Mono - int64(window)
	for _, r := range snap.Events {
		if end, _ := snap.EndOf(r); end < cutoff {
			t.Fatalf("event %q ended at %d, before the window (from %d)", snap.Name(r), end, cutoff)
		}
	}
	var lost int64
	for _, d := range snap.Meta.Drops {
		if d.Source == recorder.DropsFlightRecorder {
			lost = d.Events
		}
	}
	if lost == 0 {
		t.Fatalf("the ring came round but nothing is counted as left out: %v", snap.Meta.Drops)
	}
	if snap.Meta.Start.Mono < cutoff-int64(time.Millisecond) {
		t.Fatalf("the snapshot begins %v before its window", time.Duration(cutoff-snap.Meta.Start.Mono))
	}
	t.Logf("%d spans recorded, %d in the snapshot, %d left out", spans.Load(), len(snap.Events), lost)

	// Recording went on: a span begun after the snapshot is in the next.
	_, after := annotate.Begin(context.Background(), "after-snapshot")
	after.End()
	out, err := s.WriteFlightSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if out.Perfetto == "" || out.XPlane == "" || filepath.Dir(filepath.Dir(out.RunDir)) != filepath.Join(logdir, "plugins") {
		t.Fatalf("outputs %+v", out)
	}
	back, _, err := formats.Read(out.Perfetto)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range back.Events {
		found = found || back.Name(r) == "after-snapshot"
	}
	if !found {
		t.Fatal("the second snapshot lacks the span begun after the first")
	}
	if back.Meta.Dropped() != out.Dropped || out.Dropped == 0 {
		t.Fatalf("the file says %d dropped, the snapshot %d", back.Meta.Dropped(), out.Dropped)
	}
	if _, _, err := formats.Read(out.XPlane); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FlightSnapshot(); !errors.Is(err, trace.ErrStopped) {
		t.Fatalf("FlightSnapshot after Stop: %v, want ErrStopped", err)
	}
	// Stop writes the last window too.
	final := s.Snapshot()
	if final == nil || s.Outputs().Perfetto == "" {
		t.Fatalf("Stop wrote %+v", s.Outputs())
	}
	checkSpansMultiset(t, s.Outputs().Perfetto, final)
	conformance.Export(t, "flight", s.Outputs().Perfetto, final)
	conformance.ExportXPlane(t, "flight", s.Outputs().XPlane, final)
}

// A flight-recorder snapshot needs a running flight recorder.
func TestFlightSnapshotNeedsAFlightRecorder(t *testing.T) {
	if _, err := trace.FlightSnapshot(); !errors.Is(err, trace.ErrNoFlightRecorder) {
		t.Fatalf("with no session: %v", err)
	}
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FlightSnapshot(); !errors.Is(err, trace.ErrNoFlightRecorder) {
		t.Fatalf("of a plain session: %v", err)
	}
	if _, err := trace.FlightSnapshot(); !errors.Is(err, trace.ErrNoFlightRecorder) {
		t.Fatalf("with a plain session running: %v", err)
	}
	s.Stop()
}

// The advanced keys make a session a flight recorder, and bad values are
// named.
func TestFlightRecorderKeys(t *testing.T) {
	s, err := trace.StartSession(t.TempDir(), trace.Options{
		DeviceTracerLevel: trace.Off,
		AdvancedConfig:    map[string]any{"flight_recorder_window_ms": 1000, "flight_recorder_max_events": 50000},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := trace.Running(); !ok || st.FlightRecorder == nil || *st.FlightRecorder != (trace.FlightRecorderOptions{Window: time.Second, MaxEvents: 50000}) {
		t.Fatalf("Running() = %+v, %v: want the flight recorder's options", st, ok)
	}
	_, sp := annotate.Begin(context.Background(), "x")
	sp.End()
	c, err := trace.FlightSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.XSpace) == 0 || c.Snapshot.Meta.MaxEvents != 50000 || len(c.Snapshot.Events) != 1 {
		t.Fatalf("snapshot: %d XSpace bytes, MaxEvents %d, %d events", len(c.XSpace), c.Snapshot.Meta.MaxEvents, len(c.Snapshot.Events))
	}
	s.Stop()
	for _, o := range []trace.Options{
		{AdvancedConfig: map[string]any{"flight_recorder_window_ms": "1s"}},
		{FlightRecorder: &trace.FlightRecorderOptions{Window: -time.Second}},
		{FlightRecorder: &trace.FlightRecorderOptions{MaxEvents: -1}},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}

// A span still open when the snapshot is taken is in it, shown as open
// (ending at the snapshot's time), and ends normally in the ring.
func TestFlightSnapshotOpenSpan(t *testing.T) {
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off, FlightRecorder: &trace.FlightRecorderOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	_, open := annotate.Begin(context.Background(), "open")
	snap, err := s.FlightSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	open.End()
	if len(snap.Events) != 1 || snap.Events[0].Ended() {
		t.Fatalf("snapshot %d events, want the open span, open", len(snap.Events))
	}
	if end, finished := snap.EndOf(snap.Events[0]); finished || end != snap.Meta.Stop.Mono {
		t.Fatalf("open span ends at %d (finished %v), want the snapshot's time %d", end, finished, snap.Meta.Stop.Mono)
	}
	later, _ := s.FlightSnapshot()
	if !later.Events[0].Ended() {
		t.Fatal("the End after the first snapshot is not in the next")
	}
}
