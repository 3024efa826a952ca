// Package annotate is how a Go program marks up its own work for devprof:
// spans with typed arguments, the steps of a training loop, instants,
// counters and flows. It is devprof's counterpart of runtime/trace's
// regions and tasks, and of JAX's and TensorFlow's TraceMe, at the cost of
// a clock read or two.
//
// Its place in devprof's flow is at the start: it is a source.
//
//	sources (annotate, GPU, NVML, Go runtime) → recorder → event model → exporters → files, servers
//
// Every call appends to the event buffer of the running session (package
// trace) and nothing else; when the session stops, the buffer becomes an
// event.Snapshot that the exporters write as Perfetto, TensorBoard and
// Chrome JSON files. With no session running, every call does nothing, so
// annotations can stay in production code.
//
// # Spans
//
// A span carries its parent through a context.Context, across goroutines
// too:
//
//	func trainStep(ctx context.Context, batch []float32) {
//		ctx, span := annotate.Begin(ctx, "forward", annotate.Int("batch", len(batch)))
//		defer span.End()
//		for i := range layers {
//			annotate.BeginLeaf(ctx, "matmul", annotate.Int("layer", i)).End()
//		}
//	}
//
// The entry points:
//
//   - Begin starts a span and returns the context that carries it to
//     children; Run wraps a function in one.
//   - BeginInt is Begin with one integer argument passed in registers, for
//     hot loops; it records exactly what Begin with Int64 records.
//   - BeginLeaf starts a span that nothing is begun inside, as
//     runtime/trace's StartRegion: it returns no context, which makes it
//     the cheapest span.
//   - BeginLevel records a span only at a high enough host tracer level
//     (LevelInfo at the default level 2, LevelVerbose at 3), as TraceMe's
//     levels do.
//   - Step marks one step of a loop, which TensorBoard's overview page and
//     devprof summary turn into step time.
//   - Device is a span whose GPU work (kernels, copies launched on the same
//     goroutine before End) carries its name in every output.
//   - Instant records a point in time; Counter.Set one sample of a numeric
//     series (a loss, a queue length); Flow with NewFlowID links events
//     with an arrow, as a batch handed from a loader to a training step.
//
// A span's End may run on another goroutine than its Begin; ending it
// twice keeps the first end. The zero Span is valid, and its End does
// nothing.
//
// # Costs and limits
//
// With no session running, Begin costs one atomic load (1.4 ns on the
// project's 2-core VM) and returns ctx unchanged. With a session running a span
// takes no lock and allocates nothing: its record is written into the
// current P's chunk of the session's buffer, and the context Begin returns
// is the span's own slot there. On that VM a span costs about what two
// time.Since calls do (70 ns; BenchmarkSpanOn, BeginLeaf slightly less),
// a fifth of a runtime/trace region with the execution tracer on.
//
// Names, argument keys and string values are interned in the session's
// string table: a string the table has seen costs nothing more; a new one
// takes the table's slow path, a lock and a map insert (a few hundred
// nanoseconds, BenchmarkSpanOnDistinctNames), and the table keeps it for
// the session. Names built from data (a request id, a file name) are
// better passed as arguments of a fixed-name span, and numbers as number
// arguments. The table is bounded (262,144 strings or 32 MiB): past that,
// new strings read as "(devprof: string table full)" and every output says
// how many were replaced. Events past the session's trace.Options.MaxEvents
// are dropped without blocking the program, and every output says how many.
//
// The user guide is docs/api.md; docs/performance.md has the figures and
// the benchmarks that make them.
package annotate
