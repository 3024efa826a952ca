package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/devprof/devprof/perfettolink"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	timeout := fs.Duration("timeout", 0, "give up if the link is not opened within `D` (0 waits until it is)")
	if err := parse(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	return serve(path, *timeout, stdout)
}

// serve hands path to ui.perfetto.dev once, stopping early on Ctrl-C.
func serve(path string, timeout time.Duration, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := perfettolink.Serve(ctx, path, perfettolink.Options{Out: stdout, Timeout: timeout}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "devprof serve: the trace was opened; the link is used up (the Perfetto UI keeps the trace).")
	return nil
}
