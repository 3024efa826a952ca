package chrome_test

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
)

// demoSnapshot builds a snapshot as a reader or a session would: a step
// with a span inside it and a counter, on a timeline that starts at 1 s.
func demoSnapshot() *event.Snapshot {
	const s = int64(1e9)
	b := event.NewBuilder(event.Meta{
		Host: "example", Program: "train", PID: 42,
		Start: event.ClockAnchor{Mono: s, Boot: s, Wall: 1_700_000_000 * s},
		Stop:  event.ClockAnchor{Mono: 2 * s, Boot: 2 * s, Wall: 1_700_000_001 * s},
	})
	step := b.Span(event.Span{Name: "train", Start: s + 1_000, End: s + 9_000, Step: true, StepNum: 1})
	b.Span(event.Span{Name: "matmul", Start: s + 2_000, End: s + 5_000, Parent: step,
		Args: []event.Arg{{Key: "n", Kind: event.ArgInt, Num: 1024}}})
	b.Counter("loss", "", s+9_000, 0.25)
	return b.Snapshot()
}

// Write produces gzip-compressed JSON that Read (or chrome://tracing, or
// ui.perfetto.dev) reads back; WritePlain writes the same JSON
// uncompressed.
func ExampleWrite() {
	var buf bytes.Buffer
	if err := chrome.Write(&buf, demoSnapshot()); err != nil {
		fmt.Println(err)
		return
	}
	snap, err := chrome.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("program:", snap.Meta.Program, "pid:", snap.Meta.PID)
	evs := slices.Clone(snap.Events)
	slices.SortStableFunc(evs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	for _, r := range evs {
		switch r.Kind() {
		case event.KindCounter:
			_, v := snap.Counter(r)
			fmt.Printf("%v %s = %v\n", r.Kind(), snap.Name(r), v)
		default:
			end, _ := snap.EndOf(r)
			fmt.Printf("%v %s %d ns", r.Kind(), snap.Name(r), end-r.Start())
			for _, a := range snap.Args(r) {
				fmt.Printf(" %s=%v", a.Key, a.Value())
			}
			fmt.Println()
		}
	}
	// Output:
	// program: train pid: 42
	// span train 8000 ns
	// span matmul 3000 ns n=1024
	// counter loss = 0.25
}

// Decode streams a Chrome JSON trace, here one another tool wrote, into a
// sink; Read is Decode into an event.Builder.
func ExampleDecode() {
	const trace = `{"traceEvents": [
		{"name": "step", "ph": "X", "pid": 1, "tid": 7, "ts": 10, "dur": 50},
		{"name": "load", "ph": "B", "pid": 1, "tid": 7, "ts": 12},
		{"name": "load", "ph": "E", "pid": 1, "tid": 7, "ts": 20},
		{"name": "ready", "ph": "i", "pid": 1, "tid": 7, "ts": 30, "s": "t"}
	]}`
	b := event.NewBuilder(event.Meta{})
	if err := chrome.Decode(strings.NewReader(trace), b); err != nil {
		fmt.Println(err)
		return
	}
	snap := b.Snapshot()
	for _, r := range snap.Events {
		// times from the trace's start, here its first event
		fmt.Printf("%v %s at %d µs", r.Kind(), snap.Name(r), (r.Start()-snap.Meta.Start.Mono)/1e3)
		if end, ok := snap.EndOf(r); ok && r.Kind() == event.KindSpan {
			fmt.Printf(" for %d µs", (end-r.Start())/1e3)
		}
		fmt.Println()
	}
	// Output:
	// span step at 0 µs for 50 µs
	// span load at 2 µs for 8 µs
	// instant ready at 20 µs
}
