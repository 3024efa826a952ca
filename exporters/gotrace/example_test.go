package gotrace_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/trace"

	"github.com/devprof/devprof/exporters/gotrace"
)

// Read takes a Go execution trace, here one this example records with
// runtime/trace, and gives the model devprof's exporters write: the
// program's user regions are spans on their goroutine's track.
func ExampleRead() {
	var file bytes.Buffer // go test -trace, /debug/pprof/trace or a flight-recorder dump
	if err := trace.Start(&file); err != nil {
		fmt.Println(err) // another tracer runs, as under go test -trace
		return
	}
	ctx, task := trace.NewTask(context.Background(), "batch")
	for range 3 {
		trace.WithRegion(ctx, "work", func() {})
	}
	task.End()
	trace.Stop()

	if !gotrace.Sniff(file.Bytes()) {
		fmt.Println("not a Go execution trace")
		return
	}
	snap, err := gotrace.Read(&file, gotrace.Options{Name: "example.trace"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The trace also holds what the runtime did meanwhile (goroutine
	// states, GC, counters), which differs from run to run: count only
	// what this example made.
	var tasks, regions int
	for _, r := range snap.Events {
		switch snap.Name(r) {
		case "batch":
			tasks++
		case "work":
			regions++
		}
	}
	fmt.Println("tasks:", tasks, "regions:", regions)
	// Output:
	// tasks: 1 regions: 3
}
