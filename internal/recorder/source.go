package recorder

import "github.com/devprof/devprof/event"

// Source is what a session runs beside annotations: a producer of events
// (device activity, counters, memory) that it starts on the session's
// buffer and stops before the snapshot. Each source is one package under
// sources/ with a Start function taking the buffer and its own typed
// options (which it validates itself); the session's source table
// (trace/sources.go) holds one row per source.
type Source interface {
	// Stop ends collection and writes whatever the source still holds into
	// the buffer. The session calls it once, after annotations have
	// stopped and before the snapshot.
	Stop() SourceReport
}

// SourceReport is what a source says when it stops, as structure: every
// exporter renders it, and every reader gives it back.
type SourceReport struct {
	Warnings []event.Warning
	Notes    []event.Note
	// Dropped counts events the source lost (a device library's dropped
	// records, records over its bound); the session adds them to the
	// snapshot's drops under the source's name.
	Dropped int64
	// GoRuntime is the Go runtime's figures over its whole trace (the Go
	// runtime's source), which the rows it kept may not all show; the
	// session puts them in the snapshot's metadata.
	GoRuntime *event.GoRuntime
}
