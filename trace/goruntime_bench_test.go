//go:build unix

package trace_test

import (
	"context"
	"syscall"
	"testing"
	"time"

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
			// CPU time (the process's user and system time) as well as
			// wall time: on a shared machine the wall time of a run swings
			// with its neighbours, its CPU time much less.
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuTime()
				s, err := trace.StartSession(b.TempDir(), trace.Options{HostTracerLevel: 2, DeviceTracerLevel: trace.Off, NoPerfetto: true, NoXPlane: true, GoRuntime: goruntime.Options{Mode: c.mode}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := mlpdemo.Run(context.Background(), mlpdemo.Config{Steps: 20, Workers: 4}); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				b.StopTimer()
				s.Stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
