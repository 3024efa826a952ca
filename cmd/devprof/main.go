// Command devprof records, inspects and serves traces of Go programs.
//
// It sits at the end of devprof's flow: `demo` runs a built-in workload
// under a trace session (sources → buffer → exporters), and `serve` and
// `summary` read the files the exporters wrote. `memory` reads
// device-memory profiles (exporters/pprof), which are not traces, and
// `memory breakdown` breaks them down by category (membreakdown), writing
// MXNet's CSV and plots (exporters/memplot); `memory timeline` draws a
// device's memory over a trace that recorded device-memory tracking.
//
// Usage:
//
//	devprof demo [-log_dir DIR] [-steps N] [-workers N] [-link] [-chrome=false] [-go_runtime=false]
//	devprof serve [-timeout D] [-max_events N] [-max_goroutines N] FILE
//	devprof summary [-top N] [-sort KEY] [-json] [-max_events N] [-max_goroutines N] FILE
//	devprof memory [-n N] [-bytes] [-stack] [-base BEFORE] [-json] [-max_rows N] FILE
//	devprof memory breakdown [-keywords FILE] [-csv OUT] [-csv_columns 2|5] [-plot OUT.svg|OUT.png] [-expected_sum BYTES] [-json] [-max_rows N] INPUT
//	devprof memory timeline [-keywords FILE] [-tags] [-top N] [-plot OUT.svg|OUT.png] [-json] [-max_rows N] INPUT
//	devprof collect [--log_dir DIR] [--host_tracer_level N] [--device_tracer_level N] [--python_tracer_level N] [--no_perfetto_link] [--timeout D] [--tables DST] ADDR[,ADDR…] DURATION_MS | --snapshot ADDR[,ADDR…]
//	devprof convert [-max_events N] [-max_goroutines N] IN OUT
//	devprof analyze [-top N] [-json] [-warmup N] [-tiny_kernel D] [-kernel_wait D] [-html OUT] [-host NAME] [-straggler PCT] [-max_events N] [-max_goroutines N] FILE|RUN|LOGDIR
//	devprof diff [-threshold PCT] [-alpha A] [-top N] [-json] [-max_events N] [-max_goroutines N] BASE NEW
//	devprof export [-run NAME] [-host NAME] [-max_events N] [-max_goroutines N] SRC DST
//	devprof version
//
// Flags may come before or after the file arguments, as with the go
// command. Run `devprof <command> -h` for the flags of a command and an
// example, and `devprof -h` for the environment variables devprof reads.
// Exit status: 0 done, 1 failed, 2 usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// A command is one of devprof's commands; a name of two words
// ("memory breakdown") is a subcommand, run when both words lead the
// arguments.
type command struct {
	name, args, short string
	example           string // one command line, shown by -h
	run               func(args []string, stdout, stderr io.Writer) error
}

// commands is filled in by init: the run functions refer back to it for
// their usage text.
var commands []command

func init() {
	commands = []command{
		{"demo", "[-log_dir DIR] [-steps N] [-workers N] [-link] [-chrome=false] [-go_runtime=false]", "train a small MLP in Go under a trace session and write its trace",
			"devprof demo -steps 100 -link", runDemo},
		{"serve", "[-timeout D] [-max_events N] [-max_goroutines N] FILE", "serve a trace once to ui.perfetto.dev (one-shot link); .xplane.pb and Chrome JSON are converted to Perfetto first",
			"devprof serve /tmp/prof/plugins/profile/2025_01_02_03_04_05/host.pftrace", runServe},
		{"summary", "[-top N] [-sort KEY] [-json] [-max_events N] [-max_goroutines N] FILE", "print the top spans of a trace (.pftrace, .xplane.pb or .json) by total and self time",
			"devprof summary /tmp/prof -top 5 -sort self", runSummary},
		{"memory", "[-n N] [-bytes] [-stack] [-base BEFORE] [-json] [-max_rows N] FILE", "list who holds device memory in a memory profile (pprof: devprof's or jax.profiler.save_device_memory_profile's), largest first; with -base, what grew since BEFORE, by allocation site (by category: devprof memory breakdown)",
			"devprof memory -base before.pb.gz after.pb.gz", runMemory},
		{"memory breakdown", "[-keywords FILE] [-csv OUT] [-csv_columns 2|5] [-plot OUT.svg|OUT.png] [-expected_sum BYTES] [-json] [-max_rows N] INPUT",
			"break device memory down by category (MXNet's GPU memory profiler: keyword dictionary, Others, Untrackable against NVML's figures or -expected_sum) from a memory profile, or a run or log directory's newest one",
			"devprof memory breakdown -keywords keywords.yaml -plot memory.png /tmp/prof", runBreakdown},
		{"memory timeline", "[-keywords FILE] [-tags] [-top N] [-plot OUT.svg|OUT.png] [-json] [-max_rows N] INPUT",
			"device memory over a trace recorded with device-memory tracking, per device, stacked by category (or by tag set): the split at each device's peak, and with -plot the whole timeline",
			"devprof memory timeline -plot timeline.png /tmp/prof", runTimeline},
		{"collect", "[--log_dir DIR] [--host_tracer_level N] [--device_tracer_level N] [--python_tracer_level N] [--no_perfetto_link] [--timeout D] [--tables DST] ADDR[,ADDR…] DURATION_MS | --snapshot ADDR[,ADDR…]",
			"capture a profile from running profile servers (package profileserver, jax.profiler.start_server) with jax.collect_profile's flags: one run directory with one <host>.xplane.pb per host; --snapshot ADDR[,ADDR…] takes their flight-recorder snapshots (the seconds they kept) instead",
			"devprof collect 127.0.0.1:9999 2000 --log_dir /tmp/prof", runCollect},
		{"convert", "[-max_events N] [-max_goroutines N] IN OUT", "convert between .xplane.pb (TensorBoard, JAX, TensorFlow), .pftrace(.gz) (Perfetto) and .json(.gz) (Chrome); a Go execution trace (go test -trace, /debug/pprof/trace) converts to any of them",
			"devprof convert jax-host.xplane.pb jax.pftrace", runConvert},
		{"analyze", "[-top N] [-json] [-warmup N] [-tiny_kernel D] [-kernel_wait D] [-html OUT] [-host NAME] [-straggler PCT] [-max_events N] [-max_goroutines N] FILE|RUN|LOGDIR", "what a trace says: step times, each GPU's time as compute, communication, memory and idle, idle gaps with their cause, kernels and launches (HTA's definitions); for a run of several hosts, their steps side by side, the stragglers and the skew of step starts", "devprof analyze /tmp/prof", runAnalyze},
		{"diff", "[-threshold PCT] [-alpha A] [-top N] [-json] [-max_events N] [-max_goroutines N] BASE NEW", "compare two traces (files, run or log directories) per span and kernel name: count and duration changes with a Mann-Whitney U test, \"~\" where the change is noise; -threshold exits 1 when something got significantly slower", "devprof diff -threshold 5 base.pftrace new.pftrace", runDiff},
		{"export", "[-run NAME] [-host NAME] [-max_events N] [-max_goroutines N] SRC DST", "write traces (a file, a run or log directory, a bucket URL) as Parquet tables (spans, kernels, counters, memory, flows, steps, hosts) in hive partitions run=…/host=…/ of a directory or a bucket, for DuckDB, Spark and other engines (docs/tables.md)", "devprof export /tmp/prof /tmp/tables", runExport},
		{"query", "[-q NAME] [-json | -csv] [-max_rows N] [-list] DST ['SQL']", "run SQL, or a named query (-q steps|kernels|devices|stragglers), on the tables devprof export wrote, through DuckDB: runs the devprof-query command, installed apart (docs/tables.md)", "devprof query -q kernels /tmp/tables", runQuery},
		{"version", "", "print devprof's version (the module version it was built at)",
			"devprof version", runVersion},
	}
}

// envVars are the environment variables devprof's packages read, listed
// by devprof -h (a test checks the list against the tree).
var envVars = []struct{ name, doc string }{
	{"DEVPROF_DISABLE", "any value but 0 or false turns every trace session into a no-op"},
	{"DEVPROF_DEVICE_TRACER", "off turns the device tracer (CUPTI, and NVML metrics in auto mode) off, as DeviceTracerLevel: trace.Off"},
	{"DEVPROF_CUPTI_LIB", "the libcupti to load (a path or soname), instead of searching for one"},
	{"DEVPROF_VERBOSE", "1 lists every place searched for libcupti when none is found"},
	{"DEVPROF_CLOCK", "mono uses the monotonic clock instead of the CPU's time-stamp counter"},
	{"DEVPROF_STORE_TIMEOUT", "bounds each upload or download of a log directory on object storage (s3://, gs://, azblob://), retries included (a Go duration; default 10m)"},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// lookup returns the command args name and how many of its words name
// it: a subcommand before its command.
func lookup(args []string) (*command, int) {
	var best *command
	n := 0
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(words) > n && len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			best, n = &commands[i], len(words)
		}
	}
	return best, n
}

// errUsage marks an error already reported with usage text.
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 { // devprof help CMD [SUB], as go help CMD
			return run(append(slices.Clone(args[1:]), "-h"), stdout, stderr)
		}
		usage(stdout)
		return 0
	case "-version", "--version":
		args[0] = "version"
	}
	if c, n := lookup(args); c != nil {
		if wantsHelp(args[n:]) {
			// Help is output asked for: on stdout, so that | less shows it.
			stderr = stdout
		}
		err := c.run(args[n:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		var status exitStatus
		if errors.As(err, &status) {
			return int(status) // reported by the command that ran
		}
		fmt.Fprintf(stderr, "devprof %s: %v\n", c.name, err)
		return 1
	}
	if near := nearestCommand(args[0]); near != "" {
		fmt.Fprintf(stderr, "devprof: unknown command %q; did you mean %q?\nRun 'devprof -h' for the list of commands.\n", args[0], near)
		return 2
	}
	fmt.Fprintf(stderr, "devprof: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// wantsHelp reports whether args ask for a command's help (-h, -help,
// --help before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// nearestCommand returns the command name closest to a mistyped one
// (within two edits, or one for a short word), or "".
func nearestCommand(word string) string {
	best, bestD := "", 3
	if len(word) <= 4 {
		bestD = 2
	}
	for _, c := range commands {
		name, _, _ := strings.Cut(c.name, " ")
		if d := editDistance(word, name); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "devprof records traces of Go programs for Perfetto and TensorBoard.\n\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  devprof %s\n        %s\n", strings.TrimSpace(c.name+" "+c.args), c.short)
	}
	fmt.Fprintf(w, "\nFlags may come before or after file arguments. Run 'devprof <command> -h' for a command's flags and an example.\n")
	fmt.Fprintf(w, "Exit status: 0 done, 1 failed, 2 usage error.\n\nEnvironment (read by programs using package trace, and by devprof demo):\n\n")
	for _, e := range envVars {
		fmt.Fprintf(w, "  %s\n        %s\n", e.name, e.doc)
	}
}

// newFlags returns a FlagSet for a subcommand that prints its usage on -h
// and reports errors (not exits) to the caller.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("devprof "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, c := range commands {
		if c.name == name {
			fs.Usage = func() {
				fmt.Fprintf(stderr, "Usage: devprof %s\n\n%s.\n", strings.TrimSpace(c.name+" "+c.args), upperFirst(c.short))
				hasFlags := false
				fs.VisitAll(func(*flag.Flag) { hasFlags = true })
				if hasFlags { // no heading over nothing
					fmt.Fprintf(stderr, "\nFlags (before or after the arguments):\n")
					fs.PrintDefaults()
				}
				fmt.Fprintf(stderr, "\nExample:\n  %s\n", c.example)
			}
		}
	}
	return fs
}

// parse parses flags wherever they are among the arguments, as the go
// command and most CLIs do (devprof summary run.pftrace -top 5), leaving
// the rest as fs.Args(); "--" ends the flags. Flag errors map to errUsage
// (the flag package already printed them).
func parse(fs *flag.FlagSet, args []string) error {
	args = canonicalFlags(fs, args)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Parsing "--" alone sets fs.Args() to the positional arguments and
	// leaves the flags as set.
	return fs.Parse(append([]string{"--"}, pos...))
}

// flagAliases are earlier spellings of flags, kept working silently:
// every flag is now spelled with underscores, as pprof's and
// jax.collect_profile's are (-log_dir, -max_events).
var flagAliases = map[string]string{"logdir": "log_dir"}

// canonicalFlags rewrites a flag spelled the earlier way (-logdir,
// -go-runtime, -expected-sum) to the one fs defines, leaving everything
// after "--" and every flag fs knows as it is.
func canonicalFlags(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		dashes := len(a) - len(strings.TrimLeft(a, "-"))
		name, value, hasValue := strings.Cut(a[dashes:], "=")
		if dashes == 0 || dashes > 2 || name == "" || fs.Lookup(name) != nil {
			out = append(out, a)
			continue
		}
		alias, ok := flagAliases[name]
		if !ok {
			alias = strings.ReplaceAll(name, "-", "_")
		}
		if fs.Lookup(alias) == nil {
			out = append(out, a)
			continue
		}
		a = a[:dashes] + alias
		if hasValue {
			a += "=" + value
		}
		out = append(out, a)
	}
	return out
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

// plural formats n things: "1 event", "2 events".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// runVersion prints the module version devprof was built at: a tag for
// go install ...@version, "(devel)" for a build from a clone, with the VCS
// revision when the build recorded one.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	version, extra := "(unknown)", []string{runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				extra = append(extra, "revision "+s.Value)
			case "vcs.modified":
				if s.Value == "true" {
					extra = append(extra, "modified")
				}
			}
		}
	}
	fmt.Fprintf(stdout, "devprof %s (%s)\n", version, strings.Join(extra, ", "))
	return nil
}
