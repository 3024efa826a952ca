//go:build cgo

package cuptisource

import (
	"runtime"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/cupti"
)

// BenchmarkLaunch is devprof's own cost per CUDA call while the CUPTI
// source runs, measured with the fake libcupti: each iteration is one
// kernel launch (an external correlation, a runtime API record and the
// kernel record, as CUPTI delivers them), and the timer also covers
// flushing, parsing and writing every record into the session buffer at
// Stop. "untraced" is the fake's own launch with no source (the floor the
// fake itself costs); the difference is devprof's. loop-ns/launch is what
// the program's loop pays while it runs (the collector's drain goroutine
// shares the machine with it); stop-ns/launch is the work left for Stop
// (sorting, attributing and writing the records), after the program's
// own work.
func BenchmarkLaunch(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "untraced"
		if traced {
			name = "traced"
		}
		b.Run(name, func(b *testing.B) {
			b.Setenv("FAKECUPTI_SCRIPT", "0") // only the launches below
			path, fk := useFake(b, "13", 0)
			b.Setenv("FAKECUPTI_BUFFER_LIMIT", "4194304") // whole buffers, as CUPTI fills them
			buf := recorder.NewBuffer(1<<26, 3)
			if !recorder.Activate(buf) {
				b.Fatal("another buffer is active")
			}
			defer recorder.Deactivate(buf)
			var src *Source
			if traced {
				var err error
				if src, err = Start(buf, cupti.Options{Library: path, FlushPeriod: 100 * time.Millisecond, MaxRecords: 1 << 26}); err != nil {
					b.Fatal(err)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c := buf.Correlator()
			if traced {
				if err := c.Push(1, 1, "step"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				fk.Launch("_Z6matmulPfS_S_i", 0, 7)
			}
			loop := time.Since(start)
			b.ReportMetric(float64(loop.Nanoseconds())/float64(b.N), "loop-ns/launch")
			if traced {
				c.Pop()
				start = time.Now()
				src.Stop()
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "stop-ns/launch")
				rep := src.Report()
				b.StopTimer()
				if rep.Stats.Dropped != 0 {
					b.Fatalf("%d records dropped (%+v)", rep.Stats.Dropped, rep.Stats)
				}
			}
		})
	}
}
