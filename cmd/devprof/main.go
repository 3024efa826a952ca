// Command devprof records, inspects and serves traces of Go programs.
//
// It sits at the end of devprof's flow: `demo` runs a built-in workload
// under a trace session (sources → buffer → exporters), and `serve` and
// `summary` read the files the exporters wrote.
//
// Usage:
//
//	devprof demo [-logdir DIR] [-steps N] [-workers N] [-link]
//	devprof serve [-timeout D] FILE
//	devprof summary [-top N] [-sort total|self|count|mean|name] FILE
//	devprof convert IN OUT
//
// Run `devprof <command> -h` for the flags of a command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

type command struct {
	name, args, short string
	run               func(args []string, stdout, stderr io.Writer) error
}

// commands is filled in by init: the run functions refer back to it for
// their usage text.
var commands []command

func init() {
	commands = []command{
		{"demo", "[-logdir DIR] [-steps N] [-workers N] [-link]", "train a small MLP in Go under a trace session and write its trace", runDemo},
		{"serve", "[-timeout D] FILE", "serve a trace once to ui.perfetto.dev (one-shot link); .xplane.pb and Chrome JSON are converted to Perfetto first", runServe},
		{"summary", "[-top N] [-sort KEY] FILE", "print the top spans of a trace (.pftrace, .xplane.pb or .json) by total and self time", runSummary},
		{"convert", "IN OUT", "convert between .xplane.pb (TensorBoard, JAX, TensorFlow), .pftrace(.gz) (Perfetto) and .json(.gz) (Chrome)", runConvert},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks an error already reported with usage text.
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			}
			fmt.Fprintf(stderr, "devprof %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "devprof: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "devprof records traces of Go programs for Perfetto and TensorBoard.\n\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  devprof %s %s\n        %s\n", c.name, c.args, c.short)
	}
	fmt.Fprintf(w, "\nRun 'devprof <command> -h' for a command's flags.\n")
}

// newFlags returns a FlagSet for a subcommand that prints its usage on -h
// and reports errors (not exits) to the caller.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("devprof "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, c := range commands {
		if c.name == name {
			fs.Usage = func() {
				fmt.Fprintf(stderr, "Usage: devprof %s %s\n\n%s.\n\nFlags:\n", c.name, c.args, upperFirst(c.short))
				fs.PrintDefaults()
			}
		}
	}
	return fs
}

// parse parses flags, mapping flag errors to errUsage (the flag package
// already printed them).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// oneFile returns the single positional argument.
func oneFile(fs *flag.FlagSet) (string, error) {
	if fs.NArg() != 1 {
		fmt.Fprintf(fs.Output(), "devprof %s: want exactly one FILE argument, got %d\n", fs.Name()[len("devprof "):], fs.NArg())
		fs.Usage()
		return "", errUsage
	}
	return fs.Arg(0), nil
}
