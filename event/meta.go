package event

import "math"

// Meta is what a trace says about itself besides its events.
type Meta struct {
	Host    string // host name as it appears in file names and outputs
	PID     int
	Program string // process name shown in the outputs

	Start, Stop ClockAnchor // clock readings at session start and stop

	HostTracerLevel   int
	DeviceTracerLevel int
	// MaxEvents is the recorder's bound on events (0: unknown).
	MaxEvents int64
	// Drops counts lost events per source, one entry per source; Dropped
	// is their total.
	Drops []Drops
	// Warnings are problems worth showing to the user (a source that
	// failed, records a source lost).
	Warnings []Warning
	// Notes are facts about how the trace was made (which clock a device
	// source used).
	Notes []Note
	// GoRuntime holds the Go runtime's figures over a whole Go execution
	// trace, as its reader counted them before any bound on rows or
	// events cut what the tracks show; nil when no reader counted them
	// (summaries then count what the tracks hold).
	GoRuntime *GoRuntime
}

// GoRuntime is what a Go execution trace says of the runtime over the
// whole file: what devprof summary's Go-runtime section prints. Times
// are nanoseconds.
type GoRuntime struct {
	// GCs counts GC cycles (concurrent mark phases); GCTotal is their
	// total length.
	GCs     int
	GCTotal int64
	// Pauses counts stop-the-world pauses; PauseTotal and PauseMax are
	// their total and longest.
	Pauses               int
	PauseTotal, PauseMax int64
	// Assists counts mark assists (goroutines made to help the
	// collector); AssistTotal is their total length.
	Assists     int
	AssistTotal int64
	// Goroutines counts distinct goroutines; PeakGoroutines is the most
	// that existed at once.
	Goroutines, PeakGoroutines int
	// CPUSamples counts CPU profile samples.
	CPUSamples int
	// Regions are runtime/trace user regions and Tasks user tasks, by
	// name.
	Regions, Tasks []GoRegion
}

// GoRegion is one name's count and total length among a Go trace's user
// regions or tasks.
type GoRegion struct {
	Name  string
	Count int
	Total int64
}

// Dropped returns how many events the trace lost, over all sources
// (saturating rather than wrapping on absurd counts read from files).
func (m *Meta) Dropped() int64 {
	var n int64
	for _, d := range m.Drops {
		if d.Events > 0 {
			n += d.Events
			if n < 0 {
				return math.MaxInt64
			}
		}
	}
	return n
}

// AddDrops adds n lost events to source's entry of Drops, creating the
// entry on first use, so that each source appears once. n <= 0 changes
// nothing.
func (m *Meta) AddDrops(source string, n int64) {
	if n <= 0 {
		return
	}
	for i := range m.Drops {
		if m.Drops[i].Source == source {
			m.Drops[i].Events = max(m.Drops[i].Events+n, m.Drops[i].Events)
			return
		}
	}
	m.Drops = append(m.Drops, Drops{Source: source, Events: n})
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
	// Source names what made the note ("cupti").
	Source string
	// Text is one line for people.
	Text string
}

// Drops counts the events one source lost: the recorder when its buffer
// was full, a device source for records the device library could not
// deliver or that exceeded its bound.
type Drops struct {
	// Source names the source that lost them ("recorder", "cupti").
	Source string
	// Events is how many were lost.
	Events int64
}

// DropsRecorder is the Drops source of events the recorder's buffer had
// no room for (Meta.MaxEvents).
const DropsRecorder = "recorder"
