package analysis_test

import (
	"fmt"
	"time"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
)

// A trace streamed into an Analyzer: three steps, each launching one
// kernel that the device runs for half a millisecond. Readers stream a
// file the same way (formats.StreamFile(path, a, …)).
func ExampleAnalyzer() {
	a := analysis.NewAnalyzer(event.Meta{}, analysis.Options{Warmup: -1})
	p := a.Process(event.Process{PID: 1, Name: "train"})
	host := a.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
	gpu := a.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7, Name: "Stream #7", Process: p})
	const ms = int64(time.Millisecond)
	for i := range 3 {
		t := int64(i) * 2 * ms
		a.Span(event.Span{Name: "step", Start: t, End: t + 2*ms, Track: host, Step: true, StepNum: int64(i)})
		a.ActivityOf(event.ActivityKernel, gpu, "gemm", t+ms, t+ms+ms/2, nil)
	}
	r := a.Report()
	fmt.Println("steps:", len(r.Steps.All), "p50", time.Duration(r.Steps.Wall.P50))
	d := r.Devices[0]
	fmt.Printf("device %d: compute %v, idle %v of %v\n", d.Ordinal, time.Duration(d.ComputeNS), time.Duration(d.IdleNS), time.Duration(d.WallNS))
	fmt.Println("idle gaps:", r.Idle.Gaps, "kernels:", r.Kernels.Count)
	// Output:
	// steps: 3 p50 2ms
	// device 0: compute 1.5ms, idle 3ms of 4.5ms
	// idle gaps: 2 kernels: 3
}
