// Package recorder is devprof's write side: the in-memory buffer every
// source records into while a session runs, and the clock, string table
// and activation switch around it. In the flow sources → recorder → event
// model → exporters it is the second stage; it imports only package event,
// whose Snapshot it produces when a session stops.
//
// # What it holds
//
// A [Buffer] is made of per-P chunks of pointer-free records with exactly
// the layout of [event.Record] (TestRecordLayoutMatchesModel holds the two
// together), so Stop hands the chunks to the model without copying them and
// the garbage collector never scans them. Records carry names and argument
// keys as ids into a lock-free string table; arguments past a record's two
// inline ones continue in the records that follow it. The clock is
// the CPU's tick counter where it is invariant (tsc_amd64.s), mapped to
// nanoseconds with anchors read at start and stop ([ReadClocks]); elsewhere
// the monotonic clock ([Mono]).
//
// # The hot path
//
// [Activate] publishes the session's buffer; [On] and [Active] are one
// atomic load, which is all a span costs while no session records. A span
// begin reserves a slot in its P's current chunk and fills it inside one
// pinned section (no lock, no allocation; a fresh chunk comes from a
// prefetcher most of the time); its End writes the end time with one
// atomic store, from any goroutine. A full session budget drops records
// and counts them instead of blocking.
//
// # Flight recorder and recycling
//
// [NewRing] makes a buffer that keeps only the last window: it recycles its
// oldest chunks while recording goes on and copies a window out on demand
// ([Buffer.SnapshotWindow]). Because every write into a chunk but a span's
// End happens in its P's pinned section, a chunk being recycled is never
// half-written. A plain buffer's record arrays are reused only between
// buffers, once a finalizer shows nothing refers to them (recycle.go).
//
// # Sources
//
// A source (CUPTI, NVML, the Go runtime, device memory) implements
// [Source]: a session starts it before recording and stops it at Stop,
// when it writes what it gathered into the buffer (activity on its own
// tracks, counters) and reports its drops and warnings ([SourceReport]).
//
// Nothing outside this module can start recording except a session (package
// trace), which is why the package is internal.
package recorder
