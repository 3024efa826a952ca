// Package goruntimesource is the machinery of the Go-runtime source
// (package sources/goruntime holds what users set): a session starts the
// runtime's flight recorder with it, and at Stop it parses the execution
// trace through internal/gotrace into the session's buffer, links each
// span to the goroutine it began on and, when asked, labels the CPU
// profiler's samples with the span they fell in.
//
// It sits between the runtime and the recorder:
//
//	runtime/trace flight recorder → (Stop) internal/gotrace → goruntimesource → internal/recorder → event model
//
// Only trace starts it (trace/sources.go), and only trace reads what Stop
// leaves besides the report: CPUProfile, written as <host>.cpu.pb.gz, and
// LastStats.
//
// The runtime allows one flight recorder at a time, so Start fails while
// another runs. The parse at Stop costs time in proportion to the trace
// (BenchmarkParse); the trace held meanwhile is bounded by
// goruntime.Options.MaxBytes.
package goruntimesource
