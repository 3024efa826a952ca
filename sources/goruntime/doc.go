// Package goruntime is the source of a trace session that puts the Go
// runtime on the session's timeline: GC cycles and stop-the-world pauses,
// which goroutine ran on each P, each goroutine's states (running,
// runnable, blocked and on what, in a system call) with its runtime/trace
// regions and logs, user tasks, and heap, heap-goal, goroutine and
// GOMAXPROCS counters, beside the program's spans and its GPU's kernels.
//
// Its place in devprof's flow is at the start, as a source:
//
//	runtime/trace's flight recorder → sources/goruntime (at Stop, through internal/gotrace) → recorder → event model → exporters
//
// While the session records, the Go execution tracer runs into memory (the
// runtime's flight recorder); when the session stops, the source parses
// that trace (golang.org/x/exp/trace, through internal/gotrace, the
// converter exporters/gotrace also reads files with) into the session's
// buffer, on the session's one monotonic clock.
//
// A program does not call it: a session runs it at host tracer level 3
// (Options.Mode ModeAuto), or at any level with ModeOn, configured by
// trace.Options.GoRuntime or by the advanced configuration keys each
// field of Options names:
//
//	s, err := trace.StartSession("/tmp/prof", trace.Options{
//		GoRuntime: goruntime.Options{Mode: goruntime.ModeOn, CPUProfile: true},
//	})
//
// Options.Validate is what a session checks the options with; ParseMode
// reads the go_runtime key's values (in any case). The package holds what a program
// sets (the options and their mode); starting the tracer, parsing its
// trace and linking spans to goroutines are internal to devprof, run only
// by sessions.
//
// # Spans and goroutines
//
// Each host span is linked to the goroutine it began on: the recorder
// knows which P a span was reserved on (at no cost to the span), and the
// trace knows which goroutine ran on that P at that moment. A root span,
// or one that began on another goroutine than its parent, gets a slice
// under it on that goroutine's track, which Perfetto links to it. With
// Options.CPUProfile the CPU profiler's samples (carried in the trace)
// are matched the same way to the spans they fell in: on the timeline,
// and as a pprof profile labelled span=<name> that the session writes as
// <host>.cpu.pb.gz, for go tool pprof -tagfocus span=forward.
//
// # Costs and limits
//
// The execution tracer costs the program what runtime/trace documents
// (a few percent of its CPU time: 1 to 2.5 % on the demo's training);
// spans pay nothing more, since the links are made at Stop. Stop parses
// about two million trace events a second into the session's buffer. The
// trace held in memory is bounded by Options.MaxBytes (64 MiB by default):
// a longer session keeps its last part, and the outputs say from when the
// runtime is shown. At most Options.MaxGoroutines goroutines (1000 by
// default) get a track of their own; the Ps' tracks still show the others
// run. The parsed events count against the session's MaxEvents. The
// runtime allows one flight recorder and one CPU profile per process: a
// program that runs its own leaves the session without them, with a
// warning saying why. Since the trace is read at Stop, a flight
// recorder's snapshots (trace.Options.FlightRecorder) hold no runtime
// tracks; the stopped session's outputs do.
//
// The user guide is docs/go-runtime.md.
package goruntime
