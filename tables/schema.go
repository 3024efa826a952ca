package tables

// SchemaVersion is the version of the tables' schema that this package
// writes, stored in every file's key-value metadata under
// MetadataSchemaVersion. It grows when a column is added or its meaning
// changes; a column is never renamed or removed within a major schema, so
// a reader of version N reads a file of version N-1 by name, the columns
// the older file lacks reading as their zero values (docs/tables.md).
const SchemaVersion = 1

// MetadataSchemaVersion and MetadataTable are the keys of a file's
// key-value metadata that say which schema version and which table it
// holds, so a file moved out of its hive path still says what it is.
const (
	MetadataSchemaVersion = "schema_version"
	MetadataTable         = "devprof_table"
)

// The tables' names: each is the first element of its files' paths
// (<table>/run=<run>/host=<host>/<session>.parquet).
const (
	TableSpans    = "spans"
	TableInstants = "instants"
	TableCounters = "counters"
	TableKernels  = "kernels"
	TableMemory   = "memory"
	TableFlows    = "flows"
	TableSteps    = "steps"
	TableHosts    = "hosts"
)

// Tables lists every table in the order an export publishes them: hosts
// last, so that a (run, host, session) listed in hosts is one whose other
// tables are all in place (see docs/tables.md on reading a bucket while
// an export is being published).
var Tables = []string{TableSpans, TableInstants, TableCounters, TableKernels, TableMemory, TableFlows, TableSteps, TableHosts}

// Every row starts with the run (the run directory's name, a session's
// SessionID), the host and the session (one trace of that host in that
// run), which are also the hive partitions of its file's path, so that a
// file read on its own still says whose it is. Times are Unix nanoseconds
// (the trace's monotonic times mapped through its clock anchor), so the
// rows of every host of a run line up; durations are nanoseconds. A
// device column is -1 where there is no device; a string column is ""
// where there is no value. Where a column reads an argument of the model
// (event.ArgGrid, event.ArgBytes, ...), an event without that argument
// has the column's zero value.

// Span is one row of the spans table: a host span (annotations, a
// file's threads' slices, Go runtime states).
type Span struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	// ID identifies the span within its session; ParentID is its
	// enclosing span's (0: a root).
	ID       int64  `parquet:"id,delta"`
	ParentID int64  `parquet:"parent_id,delta"`
	Name     string `parquet:"name,dict"`
	StartNS  int64  `parquet:"start_ns,delta"`
	EndNS    int64  `parquet:"end_ns,delta"`
	DurNS    int64  `parquet:"dur_ns,delta"`
	// Finished is false for a span still open when the trace stopped:
	// it ends at the trace's stop time.
	Finished bool `parquet:"finished"`
	// Track is the name of the registered track the span sits on ("" for
	// the program's own lanes); ThreadID its OS thread id for a host
	// thread's track; Device its device's ordinal for a device's.
	Track    string `parquet:"track,dict"`
	ThreadID int64  `parquet:"thread_id,delta"`
	Device   int32  `parquet:"device"`
	// PID and Process are the process the span belongs to.
	PID     int64  `parquet:"pid,delta"`
	Process string `parquet:"process,dict"`
	// Step marks a training-loop step (also a row of steps), StepNum its
	// number.
	Step    bool  `parquet:"step"`
	StepNum int64 `parquet:"step_num,delta"`
	// Args are the span's arguments as one JSON object ("" for none).
	Args string `parquet:"args,dict"`
}

// Instant is one row of the instants table: a point event.
type Instant struct {
	Run      string `parquet:"run,dict"`
	Host     string `parquet:"host,dict"`
	Session  string `parquet:"session,dict"`
	Name     string `parquet:"name,dict"`
	TimeNS   int64  `parquet:"ts_ns,delta"`
	ParentID int64  `parquet:"parent_id,delta"`
	Track    string `parquet:"track,dict"`
	ThreadID int64  `parquet:"thread_id,delta"`
	Device   int32  `parquet:"device"`
	PID      int64  `parquet:"pid,delta"`
	Process  string `parquet:"process,dict"`
	Args     string `parquet:"args,dict"`
}

// Counter is one row of the counters table: one sample of a counter
// series (the program's, a process's, a thread's or a device's:
// utilization, memory, power).
type Counter struct {
	Run      string  `parquet:"run,dict"`
	Host     string  `parquet:"host,dict"`
	Session  string  `parquet:"session,dict"`
	Name     string  `parquet:"name,dict"`
	Unit     string  `parquet:"unit,dict"`
	TimeNS   int64   `parquet:"ts_ns,delta"`
	Value    float64 `parquet:"value"`
	Track    string  `parquet:"track,dict"`
	ThreadID int64   `parquet:"thread_id,delta"`
	Device   int32   `parquet:"device"`
	PID      int64   `parquet:"pid,delta"`
	Process  string  `parquet:"process,dict"`
}

// Kernel is one row of the kernels table: device activity other than
// allocations and frees (kernels, copies, memsets, synchronizations, the
// host's API calls into the device library).
type Kernel struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	ID      int64  `parquet:"id,delta"`
	// Kind is event.ActivityKind's name: kernel, memcpy, memset, sync,
	// api, overhead, unknown.
	Kind    string `parquet:"kind,dict"`
	Name    string `parquet:"name,dict"`
	StartNS int64  `parquet:"start_ns,delta"`
	EndNS   int64  `parquet:"end_ns,delta"`
	DurNS   int64  `parquet:"dur_ns,delta"`
	// Device is the device ordinal (-1 for a host thread's API calls),
	// Stream the stream id (Track.ID: the OS thread id on a host
	// thread's track), Track the track's name.
	Device int32  `parquet:"device"`
	Stream int64  `parquet:"stream,delta"`
	Track  string `parquet:"track,dict"`
	// CorrelationID links a kernel to the API call that launched it
	// (their shared flow id; 0 when none).
	CorrelationID int64 `parquet:"correlation_id,delta"`
	// Grid and Block are a kernel's launch shape ("x,y,z").
	Grid                string `parquet:"grid,dict"`
	Block               string `parquet:"block,dict"`
	RegistersPerThread  int64  `parquet:"registers_per_thread"`
	StaticSharedMemory  int64  `parquet:"static_shared_memory"`
	DynamicSharedMemory int64  `parquet:"dynamic_shared_memory"`
	// Bytes is a copy's or memset's size; CopyKind a copy's direction
	// (HtoD, DtoH, ...); the memory kinds and devices those of its ends.
	Bytes         int64  `parquet:"bytes"`
	CopyKind      string `parquet:"copy_kind,dict"`
	SrcMemoryKind string `parquet:"src_memory_kind,dict"`
	DstMemoryKind string `parquet:"dst_memory_kind,dict"`
	SrcDevice     int32  `parquet:"src_device"`
	DstDevice     int32  `parquet:"dst_device"`
	// Annotation is the host annotation the work was launched in.
	Annotation string `parquet:"annotation,dict"`
	// Args are the activity's other arguments (those no column above
	// holds) as one JSON object ("" for none).
	Args string `parquet:"args,dict"`
}

// Memory is one row of the memory table: an allocation or a free that a
// device-memory tracker recorded (event/memory.go's arguments).
type Memory struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	// Kind is "alloc" or "free".
	Kind   string `parquet:"kind,dict"`
	TimeNS int64  `parquet:"ts_ns,delta"`
	Device int32  `parquet:"device"`
	Track  string `parquet:"track,dict"`
	// Address is the pointer or handle, Bytes the size allocated or
	// freed, MemoryKind the memory's kind.
	Address    int64  `parquet:"address"`
	Bytes      int64  `parquet:"bytes"`
	MemoryKind string `parquet:"memory_kind,dict"`
	// Tags are the allocation's tags joined with ","; Site the path of
	// the annotate spans open where it was made ("train/step/forward");
	// API the allocating entry point ("cudaMalloc"; "" for the explicit
	// API); Step the annotate step it was made in.
	Tags string `parquet:"tags,dict"`
	Site string `parquet:"site,dict"`
	API  string `parquet:"api,dict"`
	Step int64  `parquet:"step"`
	// BytesInUse and PeakBytesInUse are what the tracker held on the
	// device just after the event, and the most it ever held.
	BytesInUse     int64 `parquet:"bytes_in_use"`
	PeakBytesInUse int64 `parquet:"peak_bytes_in_use"`
	// Carried marks the allocation of a buffer live before the trace
	// began, written at the tracker's first event.
	Carried bool `parquet:"carried"`
}

// Flow is one row of the flows table: one event's end of a flow (the
// events that share a FlowID are linked: a launch and its kernel, the
// user's annotate.Flow). Its name and track are its event's: a join on
// EventID with the table EventTable names.
type Flow struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	FlowID  int64  `parquet:"flow_id,delta"`
	// EventID is the span's or kernel's id (0 for an instant);
	// EventTable the table it is in (spans, instants, kernels, memory).
	EventID    int64  `parquet:"event_id,delta"`
	EventTable string `parquet:"event_table,dict"`
	TimeNS     int64  `parquet:"ts_ns,delta"`
}

// Step is one row of the steps table: a training-loop step span (also in
// spans, with the same id).
type Step struct {
	Run      string `parquet:"run,dict"`
	Host     string `parquet:"host,dict"`
	Session  string `parquet:"session,dict"`
	StepNum  int64  `parquet:"step_num,delta"`
	SpanID   int64  `parquet:"span_id,delta"`
	Name     string `parquet:"name,dict"`
	StartNS  int64  `parquet:"start_ns,delta"`
	EndNS    int64  `parquet:"end_ns,delta"`
	DurNS    int64  `parquet:"dur_ns,delta"`
	Finished bool   `parquet:"finished"`
	Track    string `parquet:"track,dict"`
}

// Host is one row of the hosts table: the session itself (Device -1)
// and each device it saw, with the device's facts. The counts and the
// time span are the session's, repeated on its devices' rows.
type Host struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	Program string `parquet:"program,dict"`
	PID     int64  `parquet:"pid"`
	StartNS int64  `parquet:"start_ns"`
	StopNS  int64  `parquet:"stop_ns"`
	// Device is -1 on the session's own row; on a device's row, its
	// ordinal and its facts.
	Device            int32  `parquet:"device"`
	DeviceName        string `parquet:"device_name,dict"`
	Vendor            string `parquet:"vendor,dict"`
	UUID              string `parquet:"uuid,dict"`
	PCIBusID          string `parquet:"pci_bus_id,dict"`
	ClockRateKHz      int64  `parquet:"clock_rate_khz"`
	Cores             int64  `parquet:"cores"`
	MemoryBytes       int64  `parquet:"memory_bytes"`
	MemoryBandwidth   int64  `parquet:"memory_bandwidth"`
	ComputeCapability string `parquet:"compute_capability,dict"`
	// The rows the session has in each table.
	Spans    int64 `parquet:"spans"`
	Instants int64 `parquet:"instants"`
	Counters int64 `parquet:"counters"`
	Kernels  int64 `parquet:"kernels"`
	Memory   int64 `parquet:"memory_events"`
	Flows    int64 `parquet:"flows"`
	Steps    int64 `parquet:"steps"`
	// DroppedEvents is how many events the recording lost (all sources);
	// Warnings how many warnings the trace carries.
	DroppedEvents int64 `parquet:"dropped_events"`
	Warnings      int64 `parquet:"warnings"`
	// SourceFormat is the format the trace was read from ("perfetto",
	// "xplane", ...; "session" for a session's own snapshot).
	SourceFormat string `parquet:"source_format,dict"`
}
