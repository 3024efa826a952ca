// Package analysis answers the first questions a GPU program's owner asks
// of a trace: how long the steps take and how they spread, what each
// device spent its time on (compute, communication, memory, idle, on the
// union of intervals), why each device stream sat idle (waiting for the
// host, for the next launch, for another stream), which kernels dominate,
// and how the host launches them.
//
// It is an analysis over the event model and imports only package event.
// An Analyzer is an event.Sink: a reader streams a trace into it
// (exporters/formats' StreamFile, or any format's Decode) and Report
// answers once the reader is done; Analyze does the same for a Snapshot
// already in memory.
//
// # Definitions
//
// These follow Holistic Trace Analysis (HTA, for PyTorch profiler
// traces), so that the two agree on the same file:
//
//   - Device work is the kernels, copies and memsets on a device's
//     streams; synchronizations, allocations and API calls are not.
//     A kernel is communication when its name is a collective's (NCCL's
//     and RCCL's kernels, XLA's all-reduce, all-gather, reduce-scatter,
//     all-to-all, collective-permute), memory when it is a copy or a
//     memset (by kind, or by a name starting Memcpy, Memset or dma), and
//     compute otherwise.
//   - A device's window runs from the start of its first work to the end
//     of its last. Compute is the union of its compute intervals;
//     communication the union of its communication intervals less
//     compute; memory the union of all work less compute and
//     communication; idle the window less the union of all work. The
//     four add up to the window. HTA's "non-compute" is communication
//     plus memory.
//   - An idle gap is a stretch of a stream's window with no work on the
//     stream. Its cause, by the work that ends it: host wait when that
//     work's launch call began after the gap began (the host had not
//     asked for it yet; the host span the launching thread was in when
//     the gap began is named); kernel wait when the launch was pending
//     and the gap is shorter than Options.KernelWait (the device's own
//     delay between back-to-back work, HTA's consecutive_kernel_delay);
//     sync when the launch was pending, the gap longer, and another
//     stream of the device ran work during it (waiting for that
//     stream); other for the rest (HTA's "other" is sync plus other).
//     Work whose launch the trace does not link to it (no flow or
//     correlation id) is kernel wait or other, by the gap's length, as
//     HTA has it.
package analysis

import (
	"math"
	"time"
)

// Options tune an analysis. The zero value is the defaults.
type Options struct {
	// Top bounds the lists of the report (slowest steps, kernels, gaps,
	// launchers); 0 means 10.
	Top int
	// TinyKernel is the duration under which a kernel counts as tiny (a
	// launch costs about as much as it runs); 0 means 10µs.
	TinyKernel time.Duration
	// KernelWait is the gap under which a pending launch's gap is the
	// device's own delay between back-to-back work; 0 means 30µs: HTA's
	// default consecutive_kernel_delay, 30, which it applies in the
	// trace's unit, a Kineto trace's microseconds.
	KernelWait time.Duration
	// Warmup is how many first steps are warm-up, shown apart from the
	// distribution; 0 decides (see Steps.Warmup), and a negative number
	// means none.
	Warmup int
	// MemoryBudget is about how many bytes an Analyzer holds of the
	// device work, launch calls and host spans that launch, with the
	// room its slices keep to grow, before it spills them to a
	// temporary file, and about what Report holds as it reads them back
	// (see Analyzer); 0 means DefaultMemoryBudget, a negative number
	// never to spill.
	MemoryBudget int
	// TempDir is where the temporary file goes; "" means os.TempDir.
	TempDir string
}

func (o Options) memoryBudget() int {
	if o.MemoryBudget == 0 {
		return DefaultMemoryBudget
	}
	return o.MemoryBudget
}

// sortBudget is the memory budget Report's sorts divide: unbounded when
// the analysis never spills.
func (o Options) sortBudget() int {
	if b := o.memoryBudget(); b > 0 {
		return b
	}
	return math.MaxInt / 8
}

func (o Options) top() int {
	if o.Top <= 0 {
		return 10
	}
	return o.Top
}

func (o Options) tiny() int64 {
	if o.TinyKernel <= 0 {
		return int64(10 * time.Microsecond)
	}
	return int64(o.TinyKernel)
}

func (o Options) kernelWait() int64 {
	if o.KernelWait <= 0 {
		return int64(30 * time.Microsecond)
	}
	return int64(o.KernelWait)
}

// Report is what an analysis found. Times are nanoseconds on the trace's
// timeline; StartNS fields are relative to Report.StartNS, the trace's
// first event. Everything a plot needs is here: -html draws from it.
type Report struct {
	// StartNS and EndNS bound the trace's events; WallNS is their
	// difference.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	WallNS  int64 `json:"wall_ns"`
	// Events counts the events the analysis saw.
	Events int64 `json:"events"`
	// Steps is the step-time section; nil when the trace marks no steps.
	Steps *Steps `json:"steps,omitempty"`
	// Devices is the temporal breakdown per device, in ordinal order.
	Devices []Device `json:"devices"`
	// Idle is the idle time by cause over every stream, with the largest
	// gaps.
	Idle Idle `json:"idle"`
	// Kernels is the kernel section.
	Kernels Kernels `json:"kernels"`
	// Notes say what the analysis could not do exactly (a stream out of
	// order, kernels with no launch linked).
	Notes []string `json:"notes,omitempty"`
}

// Steps is the step-time section.
type Steps struct {
	// Source says how the steps were found: "step markers" (devprof's
	// annotate.Step, TSL's step markers in an XSpace, step_num) or
	// "ProfilerStep#N" (PyTorch's profiler).
	Source string `json:"source"`
	// All lists every step in start order.
	All []Step `json:"all"`
	// Warmup is how many of All's first steps are warm-up: the first
	// step, and the steps after it (at most a quarter of all) while each
	// takes more than 1.5 times the median of the steps after that
	// quarter, unless Options.Warmup says how many. They are left out of
	// the distribution and Slowest.
	Warmup int `json:"warmup"`
	// Wall, HostBusy, DeviceBusy and DeviceIdle are distributions over
	// the steps after the warm-up.
	Wall       Distribution `json:"wall"`
	HostBusy   Distribution `json:"host_busy"`
	DeviceBusy Distribution `json:"device_busy"`
	DeviceIdle Distribution `json:"device_idle"`
	// Slowest are the slowest steps after the warm-up, slowest first.
	Slowest []Step `json:"slowest"`
}

// Step is one step.
type Step struct {
	Number  int64 `json:"number"`
	StartNS int64 `json:"start_ns"`
	WallNS  int64 `json:"wall_ns"`
	// HostBusyNS is the time within the step covered by spans nested in
	// it on its thread.
	HostBusyNS int64 `json:"host_busy_ns"`
	// DeviceBusyNS is the time within the step some device ran work
	// (the union over every device); DeviceIdleNS is the rest.
	DeviceBusyNS int64 `json:"device_busy_ns"`
	DeviceIdleNS int64 `json:"device_idle_ns"`
}

// Distribution summarizes a set of durations (nearest-rank percentiles).
type Distribution struct {
	Count int   `json:"count"`
	Mean  int64 `json:"mean_ns"`
	Min   int64 `json:"min_ns"`
	P50   int64 `json:"p50_ns"`
	P90   int64 `json:"p90_ns"`
	P99   int64 `json:"p99_ns"`
	Max   int64 `json:"max_ns"`
}

// Breakdown is time by category over a window: Compute, Communication,
// Memory and Idle add up to WallNS (see the package doc).
type Breakdown struct {
	StartNS         int64 `json:"start_ns"`
	WallNS          int64 `json:"wall_ns"`
	ComputeNS       int64 `json:"compute_ns"`
	CommunicationNS int64 `json:"communication_ns"`
	MemoryNS        int64 `json:"memory_ns"`
	IdleNS          int64 `json:"idle_ns"`
	// OverlapNS is communication hidden under compute: the union of
	// communication intervals that compute also covers.
	OverlapNS int64 `json:"comm_compute_overlap_ns"`
}

// Device is one device's temporal breakdown, and each of its streams'.
type Device struct {
	Ordinal int    `json:"ordinal"`
	Name    string `json:"name,omitempty"`
	Breakdown
	Streams []Stream `json:"streams"`
}

// Stream is one stream's temporal breakdown and idle time by cause.
type Stream struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Breakdown
	Idle IdleByCause `json:"idle_by_cause"`
}

// Causes of idle gaps (see the package doc).
const (
	CauseHostWait   = "host_wait"
	CauseKernelWait = "kernel_wait"
	CauseSync       = "sync"
	CauseOther      = "other"
)

// IdleByCause is idle time (and gap counts) by cause.
type IdleByCause struct {
	HostWaitNS   int64 `json:"host_wait_ns"`
	KernelWaitNS int64 `json:"kernel_wait_ns"`
	SyncNS       int64 `json:"sync_ns"`
	OtherNS      int64 `json:"other_ns"`
	Gaps         int   `json:"gaps"`
}

func (c *IdleByCause) add(cause string, d int64) {
	switch cause {
	case CauseHostWait:
		c.HostWaitNS += d
	case CauseKernelWait:
		c.KernelWaitNS += d
	case CauseSync:
		c.SyncNS += d
	default:
		c.OtherNS += d
	}
	c.Gaps++
}

// Idle is the idle section: totals by cause over every stream and the
// largest gaps.
type Idle struct {
	IdleByCause
	Largest []Gap `json:"largest"`
}

// Gap is one idle gap of a stream.
type Gap struct {
	Device  int    `json:"device"`
	Stream  string `json:"stream"`
	StartNS int64  `json:"start_ns"`
	DurNS   int64  `json:"dur_ns"`
	Cause   string `json:"cause"`
	// Next is the work that ended the gap, Launch the host call that
	// launched it ("" when the trace does not link them).
	Next   string `json:"next"`
	Launch string `json:"launch,omitempty"`
	// HostSpan is, for a host wait, the span the launching thread was in
	// when the gap began ("" when none is known).
	HostSpan string `json:"host_span,omitempty"`
	// Step is the number of the step the gap began in, -1 if none.
	Step int64 `json:"step"`
}

// Kernels is the kernel section.
type Kernels struct {
	Count   int64 `json:"count"`
	TotalNS int64 `json:"total_ns"`
	// Top are the kernel names with the most total time, most first.
	Top []Kernel `json:"top"`
	// Launch is the launch statistics.
	Launch Launch `json:"launch"`
}

// Kernel is one kernel name's statistics.
type Kernel struct {
	Name     string `json:"name"`
	Category string `json:"category"` // compute or communication
	Count    int64  `json:"count"`
	TotalNS  int64  `json:"total_ns"`
	MeanNS   int64  `json:"mean_ns"`
	P50NS    int64  `json:"p50_ns"`
	P99NS    int64  `json:"p99_ns"`
	// Occupancy is the mean occupancy in percent over the instances whose
	// trace gives one (xprof's theoretical_occupancy_pct, Kineto's est.
	// achieved occupancy %); -1 when none does.
	Occupancy float64 `json:"occupancy_pct"`
}

// Launch is how the host launched kernels.
type Launch struct {
	// TinyNS is Options.TinyKernel; Tiny counts the kernels shorter,
	// TinyTotalNS their time.
	TinyNS      int64 `json:"tiny_threshold_ns"`
	Tiny        int64 `json:"tiny"`
	TinyTotalNS int64 `json:"tiny_total_ns"`
	// Linked counts the kernels whose launch call the trace links
	// (flows, correlation ids); Latency is the time from each one's
	// launch call's start to the kernel's start.
	Linked  int64        `json:"linked"`
	Latency Distribution `json:"latency"`
	// TinyLaunchers are the host spans that launched the most tiny
	// kernels (the span around the launch call, or the call itself).
	TinyLaunchers []Launcher `json:"tiny_launchers"`
}

// Launcher is a host span and the tiny kernels launched inside it.
type Launcher struct {
	Name    string `json:"name"`
	Kernels int64  `json:"kernels"`
	TotalNS int64  `json:"total_ns"`
}
