package xplane_test

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/xplane"
)

// Write turns a snapshot, here built with event.NewBuilder as a reader
// builds one, into an XSpace; Read turns it back into a snapshot, as it
// does the .xplane.pb files JAX and TensorFlow write.
func ExampleWrite() {
	const s = int64(1e9)
	b := event.NewBuilder(event.Meta{
		Host: "example", Program: "train", PID: 42,
		Start: event.ClockAnchor{Mono: s, Boot: s, Wall: 1_700_000_000 * s},
		Stop:  event.ClockAnchor{Mono: 2 * s, Boot: 2 * s, Wall: 1_700_000_001 * s},
	})
	step := b.Span(event.Span{Name: "train", Start: s + 1_000, End: s + 9_000, Step: true, StepNum: 7})
	b.Span(event.Span{Name: "matmul", Start: s + 2_000, End: s + 5_000, Parent: step,
		Args: []event.Arg{{Key: "n", Kind: event.ArgInt, Num: 1024}}})

	var buf bytes.Buffer // <logdir>/plugins/profile/<run>/<host>.xplane.pb in a session
	if err := xplane.Write(&buf, b.Snapshot()); err != nil {
		fmt.Println(err)
		return
	}
	snap, err := xplane.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("host:", snap.Meta.Host)
	evs := slices.Clone(snap.Events)
	slices.SortStableFunc(evs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	for _, r := range evs {
		end, _ := snap.EndOf(r)
		fmt.Printf("%v %s at %d ns for %d ns", r.Kind(), snap.Name(r), r.Start()-snap.Meta.Start.Mono, end-r.Start())
		for _, a := range snap.Args(r) {
			fmt.Printf(" %s=%v", a.Key, a.Value())
		}
		fmt.Println()
	}
	// Output:
	// host: example
	// span train at 1000 ns for 8000 ns
	// span matmul at 2000 ns for 3000 ns n=1024
}
