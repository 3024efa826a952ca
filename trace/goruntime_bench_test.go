package trace_test

import (
	"context"
	"testing"

	"github.com/devprof/devprof/internal/mlpdemo"
	"github.com/devprof/devprof/sources/goruntime"
	"github.com/devprof/devprof/trace"
)

// BenchmarkDemoGoRuntime is what the Go-runtime source costs the demo's
// training (20 steps, 4 workers, recorded at host tracer level 2): the
// training alone, timed inside a session with the source off and on (the
// runtime's tracer runs for the whole training), and the session's Stop
// with it on (the parse of the execution trace into the buffer; outputs
// are not written).
func BenchmarkDemoGoRuntime(b *testing.B) {
	for _, c := range []struct {
		name string
		mode goruntime.Mode
	}{{"off", goruntime.ModeOff}, {"on", goruntime.ModeOn}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				s, err := trace.StartSession(b.TempDir(), &trace.Options{HostTracerLevel: 2, DeviceTracerLevel: trace.Off, NoPerfetto: true, NoXPlane: true, GoRuntime: goruntime.Options{Mode: c.mode}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := mlpdemo.Run(context.Background(), mlpdemo.Config{Steps: 20, Workers: 4}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Stop()
				b.StartTimer()
			}
		})
	}
}
