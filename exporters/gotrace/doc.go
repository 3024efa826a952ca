// Package gotrace reads Go execution traces — the files of go test
// -trace, /debug/pprof/trace and runtime/trace's FlightRecorder — into
// devprof's event model, so that a Go program's own trace opens in
// Perfetto, TensorBoard's trace viewer or any Chrome JSON viewer, and
// sums up in devprof summary, like any other trace.
//
// It is a reader only (devprof writes no Go execution traces): one input
// of the format table (package exporters/formats), beside the readers of
// the formats devprof writes:
//
//	trace.out → gotrace.Decode → event.Sink (the model for convert and serve, or summary's totals) → exporters
//
// It shares its converter (internal/gotrace, over golang.org/x/exp/trace)
// with the Go-runtime source of a session (package sources/goruntime), so
// a file and a session show the same tracks: GC cycles and stop-the-world
// pauses, which goroutine ran on each P (each execution named by the
// goroutine's start function), each goroutine's states (its track named
// by its id and start function) with its user regions and logs, user
// tasks, CPU samples, and heap, goroutine and GOMAXPROCS counters.
//
// # Reading
//
// Sniff tells a Go execution trace by its first bytes, whatever the file
// is called. Read turns one, gzip-compressed or not, into an
// event.Snapshot; Decode streams one into an event.Sink:
//
//	f, err := os.Open("trace.out")
//	…
//	snap, err := gotrace.Read(f, gotrace.Options{Name: "trace.out"})
//	if err != nil {
//		return err // not a Go trace, a Go version x/exp/trace does not read, a damaged file
//	}
//	if g := snap.Meta.GoRuntime; g != nil { // counted over the whole file
//		fmt.Println(g.GCs, "GC cycles,", g.Goroutines, "goroutines")
//	}
//
// Traces of the Go versions golang.org/x/exp/trace reads are read; a
// trace cut short is read up to where it ends, with a warning.
//
// # Costs and limits
//
// Reading streams: golang.org/x/exp/trace holds one generation of the
// trace at a time (about a second of the program), the converter keeps
// state for live goroutines only, and the snapshot keeps the first
// Options.MaxEvents events (DefaultMaxEvents, 4 M, by default); later
// ones are counted as dropped and a warning says where the cut fell. The
// collector's GC and pause slices go on past the cut, CollectorEvents
// more, and event.Meta.GoRuntime counts GC cycles, pauses and goroutines
// over the whole file whatever was cut. Options.MaxGoroutines bounds the
// goroutines that get a track of their own. So memory follows the bounds,
// not the file: a conversion costs about BytesPerEvent of memory an event
// kept, and Decode into a sink that keeps little (devprof summary's)
// holds neither the file nor the events. On one core, Decode parses at
// about half the rate golang.org/x/exp/trace alone does (BenchmarkRead).
//
// The user guide is docs/go-runtime.md ("Any Go execution trace");
// docs/reading-traces.md shows the readers' common interface, and
// docs/performance.md their figures.
package gotrace
