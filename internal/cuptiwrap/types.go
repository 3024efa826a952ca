package cuptiwrap

import (
	"fmt"
	"time"
)

// Options configures a [Collector]. The zero value is ready to use.
type Options struct {
	// Library is the libcupti to load: a path or a soname dlopen can
	// find. Empty means: $DEVPROF_CUPTI_LIB if set, else a search of the
	// usual sonames and CUDA toolkit directories (see [Start]).
	Library string
	// BufferSize is the size in bytes of each activity buffer handed to
	// CUPTI: 0 means 4 MiB; otherwise 64 KiB to 256 MiB (rounded up to a
	// multiple of 8). NVIDIA recommends 1 to 10 MB.
	BufferSize int
	// MaxBuffers caps how many buffers exist at once (0 means 32). When
	// all are in use, CUPTI's next request gets no buffer and CUPTI drops
	// records instead of the program growing without bound; the drops
	// show up in [Stats.CUPTIDropped] and [Stats.DeclinedBuffers].
	MaxBuffers int
	// FlushPeriod is how often completed records are pushed to the sink
	// while collecting: 0 means 1s, negative means only at [Collector.Flush]
	// and [Collector.Stop] (or when a buffer fills). CUPTI's own periodic
	// flush is used when the library has it (CUDA 11.1+), a Go ticker
	// otherwise.
	FlushPeriod time.Duration
	// MaxRecords bounds how many records reach the sink, like XLA's
	// gpu_max_activity_api_events; later ones are counted in
	// [Stats.OverLimit]. 0 means no bound.
	MaxRecords int64
}

// Defaults and bounds of [Options].
const (
	DefaultBufferSize  = 4 << 20
	MinBufferSize      = 64 << 10
	MaxBufferSize      = 256 << 20
	DefaultMaxBuffers  = 32
	MaxMaxBuffers      = 4096
	DefaultFlushPeriod = time.Second
)

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.BufferSize == 0:
		o.BufferSize = DefaultBufferSize
	case o.BufferSize < MinBufferSize || o.BufferSize > MaxBufferSize:
		return o, fmt.Errorf("cuptiwrap: cuptiwrap.Options.BufferSize %d out of range: use 0 (default %d) or %d..%d bytes",
			o.BufferSize, DefaultBufferSize, MinBufferSize, MaxBufferSize)
	}
	o.BufferSize = (o.BufferSize + 7) &^ 7
	switch {
	case o.MaxBuffers == 0:
		o.MaxBuffers = DefaultMaxBuffers
	case o.MaxBuffers < 1 || o.MaxBuffers > MaxMaxBuffers:
		return o, fmt.Errorf("cuptiwrap: cuptiwrap.Options.MaxBuffers %d out of range: use 0 (default %d) or 1..%d",
			o.MaxBuffers, DefaultMaxBuffers, MaxMaxBuffers)
	}
	if o.FlushPeriod == 0 {
		o.FlushPeriod = DefaultFlushPeriod
	}
	if o.FlushPeriod > 0 && o.FlushPeriod < time.Millisecond {
		// CUPTI takes whole milliseconds.
		o.FlushPeriod = time.Millisecond
	}
	if o.MaxRecords < 0 {
		return o, fmt.Errorf("cuptiwrap: cuptiwrap.Options.MaxRecords %d is negative: use 0 for no bound", o.MaxRecords)
	}
	return o, nil
}

// Kind says which CUPTI activity a [Record] came from.
type Kind uint8

// The kinds of [Record]. The zero Kind is not used.
const (
	KindKernel              Kind = iota + 1 // CONCURRENT_KERNEL (or KERNEL)
	KindMemcpy                              // MEMCPY: host/device copies
	KindMemcpyPeer                          // MEMCPY2: peer-to-peer copies between devices
	KindMemset                              // MEMSET
	KindMemory                              // MEMORY2: allocations and frees
	KindSync                                // SYNCHRONIZATION
	KindRuntime                             // RUNTIME: CUDA runtime API calls
	KindDriver                              // DRIVER: CUDA driver API calls
	KindOverhead                            // OVERHEAD: time CUPTI or the driver spent on itself
	KindExternalCorrelation                 // EXTERNAL_CORRELATION: ids pushed by the program
	numKinds
)

var kindNames = [numKinds]string{
	KindKernel:              "kernel",
	KindMemcpy:              "memcpy",
	KindMemcpyPeer:          "memcpy-peer",
	KindMemset:              "memset",
	KindMemory:              "memory",
	KindSync:                "sync",
	KindRuntime:             "runtime",
	KindDriver:              "driver",
	KindOverhead:            "overhead",
	KindExternalCorrelation: "external-correlation",
}

// String returns a short lower-case name, e.g. "kernel" or "memcpy-peer".
func (k Kind) String() string {
	if k > 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Kinds lists every Kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, 0, numKinds-1)
	for k := KindKernel; k < numKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Record is one parsed CUPTI activity record. Which fields are set depends
// on Kind; the rest are zero. Strings point into caches and stay valid after
// the sink returns; the Record itself is overwritten (the batch is reused).
type Record struct {
	Kind Kind
	// Start and End are CUPTI timestamps in ns: CLOCK_REALTIME unless the
	// library was told otherwise. 0 means unknown (CUPTI writes 0 when it
	// could not time a kernel). Memory records: Start = End = the event.
	Start, End uint64

	DeviceID, ContextID, StreamID uint32
	// CorrelationID links an API record to the device records it caused
	// and to the external-correlation records of its thread.
	CorrelationID uint32
	// Name: the kernel's (mangled) name, the API function (from
	// cuptiGetCallbackName with the "_v3020"-style version tag removed,
	// or "cbid N"), the overhead, sync or memory operation, or e.g.
	// "Memcpy HtoD".
	Name string

	// API records.
	CBID                uint32
	ProcessID, ThreadID uint32 // ThreadID is the Linux TID (also set for thread overhead records)
	ReturnValue         int32  // cudaError_t or CUresult

	// Kernels.
	Grid, Block                 [3]int32
	Registers                   uint16 // per thread
	StaticShared, DynamicShared int32  // bytes per block

	// Copies, memsets and memory records.
	Bytes                      uint64
	CopyKind, SrcKind, DstKind uint8  // see CopyKindName, MemoryKindName
	SrcDevice, DstDevice       uint32 // peer copies
	MemsetValue                uint32

	// Memory records (and MemoryKind for memsets).
	MemoryOp   uint8 // 1 allocation, 2 release (MemoryOpName)
	Address    uint64
	MemoryKind uint8 // MemoryKindName

	// Synchronization records.
	SyncType uint32 // SyncTypeName

	// External-correlation records: the id the program pushed.
	ExternalKind uint32 // ExternalKindName; devprof pushes CUSTOM0 (3)
	ExternalID   uint64

	// GraphID is the CUDA graph a kernel, copy or memset belongs to (0
	// none); read only from libraries writing CUDA 11.8+ layouts.
	GraphID uint32
	// DeviceLaunched marks device-side launches; only CUDA 13 layouts
	// carry it.
	DeviceLaunched bool
	// OverheadKind is the CUpti_ActivityOverheadKind of overhead records.
	OverheadKind uint32
}

// Stats summarizes a collection.
type Stats struct {
	// Delivered is the number of records handed to the sink.
	Delivered int64
	// Dropped is every record the sink did not get: CUPTIDropped +
	// OverLimit.
	Dropped int64
	// CUPTIDropped is what cuptiActivityGetNumDroppedRecords reported at
	// Stop: records CUPTI lost, for example because it got no buffer.
	CUPTIDropped int64
	// OverLimit counts records past Options.MaxRecords.
	OverLimit int64
	// Buffers is the number of completed buffers parsed.
	Buffers int64
	// DeclinedBuffers counts buffer requests answered with no buffer
	// because MaxBuffers were in use. The records CUPTI could not write
	// are in CUPTIDropped, so this is not added to Dropped.
	DeclinedBuffers int64
	// AllocatedBuffers is how many buffers were allocated in all.
	AllocatedBuffers int64
	// Unknown counts records of kinds this package does not parse.
	Unknown int64
	// WalkErrors counts buffers whose walk ended with an error other than
	// "no more records"; the rest of such a buffer is lost.
	WalkErrors int64
	// PerKind is Delivered by kind.
	PerKind map[Kind]int64
}

// LibraryInfo describes the libcupti a [Collector] loaded.
type LibraryInfo struct {
	// Path is what was passed to dlopen; Resolved is the file the dynamic
	// loader actually mapped (symlinks followed when possible).
	Path, Resolved string
	// Soname is the library's DT_SONAME, e.g. "libcupti.so.11.8".
	Soname string
	// APIVersion is cuptiGetVersion's value: 18 for CUDA 11.8 (and
	// 12.0/12.1), 20..28 for later 12.x, 130000+ for 13.x.
	APIVersion uint32
	// Layout names the record layouts the library writes: "11" (before
	// 11.8), "11.8", "12" or "13".
	Layout string
	// MissingOptional lists optional entry points the library lacks, e.g.
	// cuptiActivityFlushPeriod before CUDA 11.1.
	MissingOptional []string
	// UnavailableKinds lists kinds the library refused as unsupported;
	// collection went on without them.
	UnavailableKinds []Kind
}

var copyKindNames = [...]string{"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"}

// CopyKindName names a CUpti_ActivityMemcpyKind: "HtoD", "DtoH", "DtoD",
// "PtoP", …
func CopyKindName(k uint8) string {
	if int(k) < len(copyKindNames) {
		return copyKindNames[k]
	}
	return fmt.Sprintf("CopyKind(%d)", k)
}

var memcpyNames = [...]string{"Memcpy Unknown", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH",
	"Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"}

func memcpyName(k uint8) string {
	if int(k) < len(memcpyNames) {
		return memcpyNames[k]
	}
	return "Memcpy"
}

var memoryKindNames = [...]string{"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "DeviceStatic", "ManagedStatic"}

// MemoryKindName names a CUpti_ActivityMemoryKind: "Pageable", "Pinned",
// "Device", "Managed", …
func MemoryKindName(k uint8) string {
	if int(k) < len(memoryKindNames) {
		return memoryKindNames[k]
	}
	return fmt.Sprintf("MemoryKind(%d)", k)
}

// MemoryOpName names a memory record's operation: "alloc" or "free".
func MemoryOpName(op uint8) string {
	switch op {
	case 1:
		return "alloc"
	case 2:
		return "free"
	}
	return "memory"
}

var syncTypeNames = [...]string{"Synchronize", "EventSynchronize", "StreamWaitEvent", "StreamSynchronize", "ContextSynchronize"}

// SyncTypeName names a CUpti_ActivitySynchronizationType, e.g.
// "StreamSynchronize".
func SyncTypeName(t uint32) string {
	if int(t) < len(syncTypeNames) {
		return syncTypeNames[t]
	}
	return "Synchronize"
}

// OverheadKindName names a CUpti_ActivityOverheadKind, e.g.
// "CUPTI buffer flush".
func OverheadKindName(k uint32) string {
	switch k {
	case 1:
		return "Driver compiler"
	case 1 << 16:
		return "CUPTI buffer flush"
	case 2 << 16:
		return "CUPTI instrumentation"
	case 3 << 16:
		return "CUPTI resource"
	// CUDA 12.3 and later; values from CUDA 13.0's cupti_activity.h.
	case 4 << 16:
		return "Runtime-triggered module loading"
	case 5 << 16:
		return "Lazy function loading"
	case 6 << 16:
		return "Command buffer full"
	case 7 << 16:
		return "Activity buffer request"
	case 8 << 16:
		return "UVM activity init"
	}
	// The kind stays in the name so that a later CUPTI's new kind can be
	// looked up (an H100 run showed 2.8 ms of unnamed overhead).
	return fmt.Sprintf("CUPTI overhead (kind %#x)", k)
}

// ExternalKindName names a CUpti_ExternalCorrelationKind: "CUSTOM0" etc.
func ExternalKindName(k uint32) string {
	switch k {
	case 1:
		return "UNKNOWN"
	case 2:
		return "OPENACC"
	case 3:
		return "CUSTOM0"
	case 4:
		return "CUSTOM1"
	case 5:
		return "CUSTOM2"
	}
	return fmt.Sprintf("ExternalKind(%d)", k)
}

// trimVersionTag drops the "_v3020"-style suffix of callback-id names
// (cudaLaunchKernel_v7000 is the program's cudaLaunchKernel). Short tags
// such as cuMemAlloc_v2 stay: they are part of the driver symbol's name.
func trimVersionTag(s string) string {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if digits := len(s) - i; digits >= 4 && i >= 2 && s[i-2:i] == "_v" {
		return s[:i-2]
	}
	return s
}
