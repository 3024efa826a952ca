package trace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/trace"
)

func ExampleStartSession() {
	logdir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(logdir)

	s, err := trace.StartSession(logdir, trace.Options{
		DeviceTracerLevel: trace.Off, // no GPU tracing in this example
		AdvancedConfig:    map[string]any{"override_hostname": "example", "session_id": "run1"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, span := annotate.Begin(context.Background(), "work")
	span.End()
	if err := s.Stop(); err != nil {
		fmt.Println(err)
		return
	}
	out := s.Outputs()
	for _, p := range []string{out.Perfetto, out.XPlane} {
		rel, _ := filepath.Rel(logdir, p)
		fmt.Println(rel)
	}
	fmt.Println(out.Events, "event")
	// Output:
	// plugins/profile/run1/example.pftrace
	// plugins/profile/run1/example.xplane.pb
	// 1 event
}

// A service keeps tracing on in a bounded ring and writes the last
// seconds when something goes wrong.
func ExampleSession_WriteFlightSnapshot() {
	logdir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(logdir)

	s, err := trace.StartSession(logdir, trace.Options{
		DeviceTracerLevel: trace.Off,
		Hostname:          "example",
		FlightRecorder:    &trace.FlightRecorderOptions{Window: 10 * time.Second, MaxEvents: 100_000},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Stop()

	_, span := annotate.Begin(context.Background(), "handle request")
	span.End()

	// An incident: write the last ten seconds; recording goes on.
	out, err := s.WriteFlightSnapshot()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(out.Perfetto), filepath.Base(out.XPlane))
	fmt.Println(out.Events, "event")
	// Output:
	// example.pftrace example.xplane.pb
	// 1 event
}
