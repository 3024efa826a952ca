package annotate_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/trace"
)

// record runs fn under a session in a temporary directory and prints what
// the session kept, by name.
func record(fn func(ctx context.Context)) {
	dir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(dir)
	s, err := trace.StartSession(dir, trace.Options{DeviceTracerLevel: trace.Off, NoPerfetto: true, NoXPlane: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fn(context.Background())
	s.Stop()
	snap := s.Snapshot()
	evs := slices.Clone(snap.Events) // buffer order is per P: print in time order
	slices.SortFunc(evs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	for _, r := range evs {
		fmt.Print(r.Kind(), " ", snap.Name(r))
		if r.Kind() == event.KindCounter {
			_, v := snap.Counter(r)
			fmt.Print(" = ", v)
		} else {
			for _, a := range snap.Args(r) {
				fmt.Printf(" %s=%v", a.Key, a.Value())
			}
		}
		fmt.Println()
	}
}

func ExampleBegin() {
	record(func(ctx context.Context) {
		ctx, fw := annotate.Begin(ctx, "forward", annotate.Int("batch", 32))
		_, mm := annotate.Begin(ctx, "matmul") // a child: ctx carries its parent
		mm.End()
		fw.End()
	})
	// Output:
	// span forward batch=32
	// span matmul
}

// BeginInt records what Begin with one Int64 argument records, with the
// key and value passed in registers (the hot-loop form).
func ExampleBeginInt() {
	record(func(ctx context.Context) {
		ctx, fw := annotate.BeginInt(ctx, "forward", "batch", 32)
		_, mm := annotate.BeginInt(ctx, "matmul", "n", -1024) // a child, as with Begin
		mm.End()
		fw.End()
	})
	// Output:
	// span forward batch=32
	// span matmul n=-1024
}

// BeginLeaf is a span with nothing begun inside it: it takes its parent
// from ctx, as Begin does, and returns no context.
func ExampleBeginLeaf() {
	record(func(ctx context.Context) {
		ctx, fw := annotate.Begin(ctx, "forward")
		for i := range 2 {
			annotate.BeginLeaf(ctx, "matmul", annotate.Int("i", i)).End() // children of forward
		}
		fw.End()
	})
	// Output:
	// span forward
	// span matmul i=0
	// span matmul i=1
}

func ExampleStep() {
	record(func(ctx context.Context) {
		for step := range 2 {
			_, st := annotate.Step(ctx, "train", int64(step))
			annotate.Counter{Name: "loss"}.Set(1 / float64(step+1))
			st.End()
		}
	})
	// Output:
	// span train
	// counter loss = 1
	// span train
	// counter loss = 0.5
}

// Device attributes the GPU work launched inside it to the span; with no
// device tracer running (as here) it records the span like Begin.
func ExampleDevice() {
	record(func(ctx context.Context) {
		_, span := annotate.Device(ctx, "gemm", annotate.Int("n", 1024))
		// launch kernels here, on this goroutine (cgo into CUDA)
		span.End()
	})
	// Output:
	// span gemm n=1024
}

// An Arg reads back as the event model's argument, the form a snapshot's
// Args returns for it.
func ExampleArg_EventArg() {
	for _, a := range []annotate.Arg{annotate.Int("batch", 32), annotate.String("mode", "train"), annotate.Duration("wait", 1500*time.Microsecond)} {
		e := a.EventArg()
		fmt.Printf("%s = %v (%T)\n", e.Key, e.Value(), e.Value())
	}
	// Output:
	// batch = 32 (int64)
	// mode = train (string)
	// wait = 1.5ms (time.Duration)
}
