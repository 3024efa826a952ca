package goruntime_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	rtrace "runtime/trace"
	"sync"

	"github.com/devprof/devprof/sources/goruntime"
	"github.com/devprof/devprof/trace"
)

// A session with the Go runtime on (ModeOn, or host tracer level 3) puts
// the runtime's GC cycles, goroutines and runtime/trace regions on the
// session's timeline beside its spans.
func ExampleOptions() {
	logdir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(logdir)
	s, err := trace.StartSession(logdir, trace.Options{
		DeviceTracerLevel: trace.Off,
		NoPerfetto:        true, NoXPlane: true, // keep the snapshot only
		GoRuntime: goruntime.Options{Mode: goruntime.ModeOn},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var wg sync.WaitGroup
	for range 3 { // three goroutines, each with a runtime/trace region
		wg.Go(func() { rtrace.WithRegion(context.Background(), "decode", func() {}) })
	}
	wg.Wait()
	runtime.GC() // at least one cycle on the GC track
	s.Stop()

	snap := s.Snapshot()
	// The runtime's own goroutines and background GC cycles differ from
	// run to run: look only at what this example caused.
	names := map[string]int{}
	for _, r := range snap.Events {
		names[snap.Name(r)]++
	}
	fmt.Println("decode regions:", names["decode"])
	fmt.Println("GC cycles seen:", names["GC"] >= 1)
	// Output:
	// decode regions: 3
	// GC cycles seen: true
}

// Runs says whether a session runs the source: ModeAuto only at host
// tracer level 3, since the execution tracer costs the program 1-2 % of
// its CPU time and the trace grows with every goroutine switch.
func ExampleOptions_Runs() {
	for _, m := range []goruntime.Mode{goruntime.ModeAuto, goruntime.ModeOn, goruntime.ModeOff} {
		o := goruntime.Options{Mode: m}
		fmt.Printf("%-4v level 2: %-5v level 3: %v\n", m, o.Runs(2), o.Runs(3))
	}
	// Output:
	// auto level 2: false level 3: true
	// on   level 2: true  level 3: true
	// off  level 2: false level 3: false
}

// Validate names each field out of range with its advanced configuration
// key.
func ExampleOptions_Validate() {
	fmt.Println(goruntime.Options{MaxBytes: 16 << 20, CPUProfile: true}.Validate())
	fmt.Println(goruntime.Options{MaxBytes: 1 << 10, MaxGoroutines: -1}.Validate())
	// Output:
	// <nil>
	// GoRuntime.MaxBytes (advanced key go_runtime_max_bytes) 1024 out of range: want 1 MiB..4 GiB, or 0 for 67108864
	// GoRuntime.MaxGoroutines (advanced key go_runtime_max_goroutines) -1 out of range: want 0..1048576
}

// ParseMode reads the values of the go_runtime key.
func ExampleParseMode() {
	for _, s := range []string{"on", "always"} {
		m, err := goruntime.ParseMode(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(m)
	}
	// Output:
	// on
	// GoRuntime.Mode (advanced key go_runtime) "always": want auto, on or off
}
