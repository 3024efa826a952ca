package main

import (
	"fmt"
	"io"
	"time"
)

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "devprof convert: want IN and OUT, got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	in, out := fs.Arg(0), fs.Arg(1)
	if formatOf(out) == formatUnknown {
		_, err := writeTrace(out, nil) // reports the naming rule
		return err
	}
	start := time.Now()
	fmt.Fprintf(stderr, "devprof convert: reading %s…\n", in)
	s, inFmt, err := readTrace(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "devprof convert: read %d events (%s) in %v; writing %s…\n", len(s.Events), inFmt, time.Since(start).Round(time.Millisecond), out)
	outFmt, err := writeTrace(out, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s, %d events) → %s (%s) in %v\n", in, inFmt, len(s.Events), out, outFmt, time.Since(start).Round(time.Millisecond))
	for _, w := range s.Meta.Warnings {
		fmt.Fprintf(stderr, "devprof convert: note: %s\n", w.Text)
	}
	return nil
}
