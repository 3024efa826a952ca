package spanstats_test

import (
	"fmt"
	"os"
	"time"

	"github.com/devprof/devprof/internal/spanstats"
)

func Example() {
	const ms = int64(time.Millisecond)
	spans := []spanstats.Span{
		{Name: "train_step", Start: 0, Dur: 100 * ms, Track: 1, Parent: -1},
		{Name: "forward", Start: 10 * ms, Dur: 30 * ms, Track: 1, Parent: 0},
		{Name: "backward", Start: 45 * ms, Dur: 50 * ms, Track: 1, Parent: 0},
		{Name: "matmul", Start: 12 * ms, Dur: 20 * ms, Track: 1, Parent: 1},
		{Name: "matmul", Start: 50 * ms, Dur: 35 * ms, Track: 1, Parent: 2},
		// Begun under train_step on another goroutine: it does not reduce
		// train_step's self time.
		{Name: "prefetch", Start: 5 * ms, Dur: 60 * ms, Track: 2, Parent: 0},
	}
	t := spanstats.Compute(spans)
	if err := t.Sort("self"); err != nil {
		panic(err)
	}
	fmt.Printf("%d spans on %d tracks over %v\n", t.Spans, t.Tracks, t.Wall)
	t.Write(os.Stdout, 0)
	// Output:
	// 6 spans on 2 tracks over 100ms
	// Name        Count   Total    Self    Mean     Min     Max  % wall
	// prefetch        1  60.0ms  60.0ms  60.0ms  60.0ms  60.0ms   60.0%
	// matmul          2  55.0ms  55.0ms  27.5ms  20.0ms  35.0ms   55.0%
	// train_step      1   100ms  20.0ms   100ms   100ms   100ms  100.0%
	// backward        1  50.0ms  15.0ms  50.0ms  50.0ms  50.0ms   50.0%
	// forward         1  30.0ms  10.0ms  30.0ms  30.0ms  30.0ms   30.0%
}
