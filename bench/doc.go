// Package bench holds devprof's comparative benchmarks: the span hot path
// (tracing off, on, and on every core) beside its peers (two time.Since
// calls, runtime/trace regions with the execution tracer on, and an
// OpenTelemetry SDK span), the Perfetto and XPlane encoders, Stop with a
// million buffered events and a ten-million-event session end to end, all in
// one test binary so that their figures compare.
//
// It has no non-test code. Run the benchmarks, and the table that checks
// them against the performance targets, with scripts/bench; bench/cmd/benchtable
// turns `go test -bench` output into that table.
package bench
