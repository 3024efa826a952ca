package event

// Meta is what a trace says about itself besides its events.
type Meta struct {
	Host    string // host name as it appears in file names and outputs
	PID     int
	Program string // process name shown in the outputs

	Start, Stop ClockAnchor // clock readings at session start and stop

	HostTracerLevel   int
	DeviceTracerLevel int
	MaxEvents         int64
	Dropped           int64    // events lost because the buffer was full
	Warnings          []string // problems worth showing to the user (e.g. a source that failed)
	Notes             []string // facts about how the trace was made (e.g. which clock a device source used)
}

// BootNanos converts a time on the snapshot's timeline to CLOCK_BOOTTIME
// nanoseconds.
func (m *Meta) BootNanos(t int64) int64 { return t - m.Start.Mono + m.Start.Boot }

// ClockAnchor pairs readings of the clocks exporters convert to, taken at
// (nearly) the same instant.
type ClockAnchor struct {
	Mono int64 // CLOCK_MONOTONIC ns: the timeline of snapshots
	Boot int64 // CLOCK_BOOTTIME ns (equal to Mono where the OS has none)
	Wall int64 // Unix ns (CLOCK_REALTIME)
}

// Warning is a problem a trace reports about itself: a source that could
// not start, records a source lost. Every format carries the same three
// fields, so a warning reads back as it was written.
type Warning struct {
	// Source names what raised it: "recorder", "cupti", a reader's format.
	Source string
	// Code is a stable machine-readable id within the source
	// ("unavailable", "records_dropped"); "" for warnings read from files
	// that carry only text.
	Code string
	// Text is one line for people.
	Text string
}

// Note is a fact about how a trace was made (which clock a device
// source used and how exactly it was mapped).
type Note struct {
	Source string
	Text   string
}

// Drops counts the events one source lost: the recorder when its buffer
// was full, a device source for records the device library could not
// deliver or that exceeded its bound.
type Drops struct {
	Source string
	Events int64
}
