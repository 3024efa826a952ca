package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/perfettolink"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	timeout := fs.Duration("timeout", 0, "give up if the link is not opened within `D` (0 waits until it is)")
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkMaxEvents("serve", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("serve", *maxGoroutines, stderr); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if path, err = inputFile("serve", path, stderr); err != nil {
		return err
	}
	// A file that is not a trace would be served, opened and fail in the
	// UI, using up the link; reading it here says what is wrong instead.
	s, f, err := readTraceWith("serve", path, stderr, readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines})
	if err != nil {
		return err
	}
	if f == formats.Perfetto && runstore.IsURL(path) {
		// perfettolink serves a local file: the object's own bytes.
		local, done, err := fetch(path)
		if err != nil {
			return err
		}
		defer done()
		path = local
	} else if f != formats.Perfetto {
		// The UI does not open an XSpace at all, and reads Chrome JSON with
		// its own importer; a Perfetto trace converted from what devprof
		// read opens in either case and shows what devprof summary shows.
		// The converted file is kept beside the input when it can be, so
		// that the file the link names (and the UI's "drag it here") is
		// still there afterwards; else it is a temporary file, and the
		// message says it goes.
		conv := renamed(path, f, formats.Perfetto)
		kept := !runstore.IsURL(path)
		if kept {
			if _, err := os.Stat(conv); err == nil || !errors.Is(err, os.ErrNotExist) {
				kept = false // never overwrite what is there
			} else if err := formats.WriteFile(conv, formats.Perfetto, s); err != nil {
				kept = false // a directory we may not write: a temporary file instead
			}
		}
		if kept {
			fmt.Fprintf(stdout, "devprof serve: %s is a %s; serving it converted to Perfetto, kept as %s\n", path, f.Display, conv)
		} else {
			tmp, err := os.MkdirTemp("", "devprof-serve-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			conv = filepath.Join(tmp, filepath.Base(conv))
			if err := formats.WriteFile(conv, formats.Perfetto, s); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "devprof serve: %s is a %s; serving it converted to Perfetto in a temporary file, removed when serve ends (devprof convert keeps one)\n", path, f.Display)
		}
		path = conv
	}
	return serve(path, *timeout, stdout)
}

// renamed suggests a name for path converted from format from to format
// to: from's extension replaced by to's usual one, or to's appended when
// path is misnamed, so the suggestion never overwrites the input.
func renamed(path string, from, to *formats.Format) string {
	base := strings.TrimSuffix(path, ".gz")
	for _, e := range from.Extensions {
		if strings.HasSuffix(strings.ToLower(base), e) {
			base = base[:len(base)-len(e)]
			break
		}
	}
	return base + to.Extensions[0]
}

// serveAddr is where serve listens; "" is perfettolink's default, the
// only address ui.perfetto.dev fetches from. Tests listen elsewhere.
var serveAddr = ""

// serve hands path to ui.perfetto.dev once, stopping early on Ctrl-C.
func serve(path string, timeout time.Duration, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := perfettolink.Serve(ctx, path, perfettolink.Options{Addr: serveAddr, Out: stdout, Timeout: timeout}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "devprof serve: the trace was opened; the link is used up (the Perfetto UI keeps the trace).")
	return nil
}
