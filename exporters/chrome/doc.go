// Package chrome writes and reads the Chrome Trace Event Format: the JSON
// that chrome://tracing, ui.perfetto.dev, PyTorch's profiler (Kineto) and
// many other tools read and write. devprof writes it for tools that read
// only JSON; its own formats are Perfetto's protobuf and TensorBoard's
// XSpace (packages exporters/perfetto and exporters/xplane).
//
// Its place in devprof's flow is at the end, as an exporter, and at the
// start of a second flow, as a reader:
//
//	sources → recorder → event model → exporters (chrome.Write) → <host>.trace.json.gz
//	any .json or .json.gz file → chrome.Decode → event.Sink (the model, or devprof summary's totals)
//
// A session writes <host>.trace.json.gz with trace.Options.ChromeTrace;
// devprof convert writes and reads it by name (.json, .json.gz) through
// the format table, package exporters/formats.
//
// # Writing
//
// Write encodes a snapshot as gzip-compressed JSON, WritePlain as plain
// JSON, both streamed to an io.Writer:
//
//	f, err := os.Create("run.trace.json.gz")
//	…
//	err = chrome.Write(f, snap) // snap: a *event.Snapshot, from a session or a reader
//
// Spans are complete ("X") events on the rows of the host layout, shown as
// threads of the program's process, or of their own process
// (event.Process: its pid, numeric or the string label the source had,
// with process_name, process_labels and process_sort_index metadata);
// instants are "i" events; counters are "C" events; process and thread
// names and sort indexes are "M" metadata events. Times are microseconds
// with nanosecond precision, relative to the session start.
//
// Device activity is on threads of one process per device ("GPU <n>"),
// with the device's counters. A memory tracker's allocations and frees
// (event/memory.go) are "i" events with their arguments (the address in
// hex) on a thread named after their track, in the device's process (the
// program's for host memory), and the device's memory over time is two
// counters there: "<track> in use" (bytes) and "<track> by tags", one
// argument per tag set (event.MemoryTimelines: the top 8 by peak, the
// other tags, what the trace does not account for), which the trace
// viewer stacks. The trace's warnings, notes and drop counts travel with
// it, as in every devprof output, and read back as they were.
//
// # Reading
//
// Read turns a file, plain or gzip, into an event.Snapshot; ReadFile opens
// one by path. Decode streams one into an event.Sink instead, for a
// consumer that keeps less than the whole model:
//
//	b := event.NewBuilder(event.Meta{})
//	if err := chrome.Decode(f, b); err != nil { // Read is exactly this
//		return err
//	}
//	snap := b.Snapshot()
//
// It takes both of the format's forms (a bare array of events, possibly
// cut short, and an object with traceEvents), pairs begin and end events,
// nests each thread's spans, binds flows (v1 and v2) to the slices they
// belong to and keeps every pid as a process of its own. What it cannot
// represent is counted in the snapshot's warnings (flows left with one
// end under DropsFlows); a malformed file is an error naming the byte
// offset, in the decompressed JSON, where it went wrong.
//
// # Costs and limits
//
// A file devprof wrote, read from an io.Reader that can seek (an *os.File,
// a bytes.Reader), streams: memory holds one event and each thread's open
// spans, not the file. Any other file is read whole first, since the
// format's rules (flow binding, nesting by time) look across it. On one
// core a devprof trace reads at about 2 M events a second into the model
// and 2.8 M into a sink that keeps nothing (BenchmarkRead, plain JSON;
// gzip costs a quarter more). Names, strings and arguments are bounded
// per event (4 KiB of a name, 64 KiB of a string, 255 arguments), so a
// hostile file costs about its size.
//
// The user guides are docs/outputs.md (the files and their viewers) and
// docs/reading-traces.md (reading any trace in Go); docs/performance.md
// has the readers' figures.
package chrome
