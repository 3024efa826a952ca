package tracediff_test

import (
	"fmt"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tracediff"
)

// Two runs of the same loop, the second with "load" 30 µs slower (29 %
// of its base median, jitter included):
// Compare names it, and only it, as slower.
func ExampleCompare() {
	run := func(load int64) *tracediff.Profile {
		c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
		p := c.Process(event.Process{PID: 1, Name: "train"})
		tr := c.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
		t := int64(0)
		for i := range 50 {
			jitter := int64(i%5) * 1000 // run-to-run noise of a few µs
			c.Span(event.Span{Name: "load", Start: t, End: t + load + jitter, Track: tr})
			t += load + jitter
			c.Span(event.Span{Name: "compute", Start: t, End: t + 500_000 + jitter, Track: tr})
			t += 500_000 + jitter
		}
		return c.Profile()
	}
	r := tracediff.Compare(run(100_000), run(130_000), 0)
	for _, row := range r.Rows {
		fmt.Printf("%s: %v, %+.0f%%\n", row.Name, row.Verdict, 100*row.Change)
	}
	// Output:
	// load: slower, +29%
	// compute: ~, +0%
}
