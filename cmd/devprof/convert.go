package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/trace"
)

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", stderr)
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkMaxEvents("convert", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("convert", *maxGoroutines, stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "devprof convert: want IN and OUT, got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	in, out := fs.Arg(0), fs.Arg(1)
	outFmt, err := formats.ForPath(runstore.Display(out)) // before reading: a bad name costs nothing
	if err != nil {
		return err
	}
	if in, err = inputFile("convert", in, stderr); err != nil {
		return err
	}
	start := time.Now()
	s, inFmt, err := readTraceWith("convert", in, stderr, readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines})
	if err != nil {
		return err
	}
	// What the reader let go of (its buffers, the builder's maps) is
	// still on the heap, and with the model just built the next
	// collection is a heap's size away: the writer's layout would go on
	// top of it. Collected now, the write's peak is the model's size plus
	// the layout's (issue 38).
	runtime.GC()
	if err := writeTrace(out, outFmt, s); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s, %s) → %s (%s) in %v\n", in, inFmt.Display, plural(int64(len(s.Events)), "event"), out, outFmt.Display, time.Since(start).Round(time.Millisecond))
	for _, w := range s.Meta.Warnings {
		if w.Source == cupti.SourceName && w.Code == cupti.CodeUnavailable && deviceTracerOff() {
			continue // the user said GPU tracing is off: its absence is no news
		}
		fmt.Fprintf(stderr, "devprof convert: note: %s\n", w.Text)
	}
	return nil
}

// deviceTracerOff reports whether DEVPROF_DEVICE_TRACER turns the device
// tracer off, as trace sessions read it.
func deviceTracerOff() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(trace.EnvDeviceTracer))) {
	case "off", "0", "false":
		return true
	}
	return false
}
