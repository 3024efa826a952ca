package event_test

import (
	"fmt"

	"github.com/devprof/devprof/event"
)

// A Builder makes the same Snapshot a session or a reader makes; code that
// analyses traces walks it the same way whatever the trace came from.
func ExampleBuilder() {
	b := event.NewBuilder(event.Meta{Host: "worker-0", Program: "train", Stop: event.ClockAnchor{Mono: 10_000}})
	step := b.Span(event.Span{Name: "step", Start: 1_000, End: 9_000, Step: true, StepNum: 7})
	b.Span(event.Span{Name: "forward", Start: 2_000, End: 5_000, Parent: step,
		Args: []event.Arg{{Key: "batch", Kind: event.ArgInt, Num: 32}}})
	gpu := b.Track(event.Track{Kind: event.TrackDevice, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3"})
	b.TrackCounter(gpu, "GPU utilization", "%", 3_000, 87)
	s := b.Snapshot()

	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindSpan:
			end, _ := s.EndOf(r)
			fmt.Println(r.Kind(), s.Name(r), end-r.Start(), "ns", s.Args(r))
		case event.KindCounter:
			unit, v := s.Counter(r)
			dev, _ := s.TrackOf(r)
			fmt.Println(r.Kind(), s.Name(r), v, unit, "on", dev.DeviceName)
		}
	}
	// Output:
	// span step 8000 ns []
	// span forward 3000 ns [{batch 1 32 }]
	// counter GPU utilization 87 % on NVIDIA H100 80GB HBM3
}
