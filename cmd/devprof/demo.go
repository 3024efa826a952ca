package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/mlpdemo"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/sources/goruntime"
	"github.com/devprof/devprof/trace"
)

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	logdir := fs.String("log_dir", filepath.Join(os.TempDir(), "devprof-demo"), "log directory; the trace goes to `DIR`/plugins/profile/<run>/")
	steps := fs.Int("steps", 40, "training steps")
	workers := fs.Int("workers", 4, "data-parallel worker goroutines")
	link := fs.Bool("link", false, "after training, serve the trace once to ui.perfetto.dev and wait until it is opened")
	chromeJSON := fs.Bool("chrome", true, "also write <host>.trace.json.gz (Chrome JSON)")
	goRuntime := fs.Bool("go_runtime", true, "also show the Go runtime: GC, stop-the-world pauses, goroutines per P and per goroutine, heap (the session's GoRuntime source)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "devprof demo: takes no arguments, got %q\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	if *steps < 1 || *workers < 1 {
		fmt.Fprintf(stderr, "devprof demo: -steps %d -workers %d: both must be at least 1\n", *steps, *workers)
		return errUsage
	}
	out, _, err := demo(context.Background(), *logdir, mlpdemo.Config{Steps: *steps, Workers: *workers, Out: stdout}, *chromeJSON, *goRuntime, stdout)
	if err != nil {
		return err
	}
	printOpenHints(stdout, out)
	if *link {
		return serve(out.Perfetto, 0, stdout)
	}
	return nil
}

// demo records the MLP workload into logdir, with the Go runtime's tracks
// when goRuntime is set, and returns what was written and the recorded
// events.
func demo(ctx context.Context, logdir string, cfg mlpdemo.Config, chromeJSON, goRuntime bool, stdout io.Writer) (trace.Outputs, *event.Snapshot, error) {
	cfg.Steps = max(cfg.Steps, 1)
	fmt.Fprintf(stdout, "devprof demo: training a 3-layer MLP on spiral data (%d steps, %d workers, pure Go)\n", cfg.Steps, max(cfg.Workers, 1))
	rt := goruntime.Options{Mode: goruntime.ModeOff}
	if goRuntime {
		rt.Mode = goruntime.ModeOn
	}
	s, err := trace.StartSession(logdir, trace.Options{ChromeTrace: chromeJSON, HostTracerLevel: 2, GoRuntime: rt})
	if err != nil {
		return trace.Outputs{}, nil, err
	}
	start := time.Now()
	res, runErr := mlpdemo.Run(ctx, cfg)
	fmt.Fprintf(stdout, "devprof demo: trained in %v: loss %.3f → %.3f, accuracy %.1f%%; writing the trace…\n",
		time.Since(start).Round(time.Millisecond), res.FirstLoss, res.LastLoss, res.Accuracy)
	if err := s.Stop(); err != nil {
		return s.Outputs(), nil, err
	}
	return s.Outputs(), s.Snapshot(), runErr
}

func printOpenHints(w io.Writer, out trace.Outputs) {
	fmt.Fprintf(w, "\nWrote %s (%d dropped) to %s\n", plural(int64(out.Events), "event"), out.Dropped, out.RunDir)
	if out.Perfetto != "" {
		fmt.Fprintf(w, "  Perfetto trace:   %s\n", out.Perfetto)
	}
	if out.XPlane != "" {
		fmt.Fprintf(w, "  TensorBoard:      %s\n", out.XPlane)
	}
	if out.Chrome != "" {
		fmt.Fprintf(w, "  Chrome JSON:      %s\n", out.Chrome)
	}
	fmt.Fprintf(w, "\nOpen it:\n")
	if out.Perfetto != "" {
		fmt.Fprintf(w, "  devprof serve %s\n      one-shot link: opens the trace in ui.perfetto.dev (or drag the file onto https://ui.perfetto.dev)\n", shellQuote(out.Perfetto))
		fmt.Fprintf(w, "  devprof summary %s\n      top spans by total and self time, in the terminal\n", shellQuote(out.Perfetto))
	}
	if out.XPlane != "" {
		logdir := runstore.Dir(runstore.Dir(runstore.Dir(out.RunDir)))
		fmt.Fprintf(w, "  tensorboard --logdir %s     (or: xprof --logdir %s)\n      TensorBoard's Profile tab: trace viewer, steps and step time on the overview page\n", shellQuote(logdir), shellQuote(logdir))
	}
	if out.Chrome != "" {
		fmt.Fprintf(w, "  chrome://tracing or https://ui.perfetto.dev also open %s\n", runstore.Base(out.Chrome))
	}
}

// shellQuote quotes p for copying into a POSIX shell when it needs it.
func shellQuote(p string) string {
	for _, c := range p {
		if !(c == '/' || c == '.' || c == '_' || c == '-' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			q := "'"
			for _, c := range p {
				if c == '\'' {
					q += `'\''`
				} else {
					q += string(c)
				}
			}
			return q + "'"
		}
	}
	return p
}
