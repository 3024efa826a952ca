package cuptiwrap

import "errors"

// MemoryCall is one CUDA allocation or free seen by the memory hooks
// ([StartMemoryHooks]). The handler gets a pointer to a value the hooks
// reuse: it must copy what it keeps before returning.
type MemoryCall struct {
	// Free is set for frees, clear for allocations.
	Free bool
	// Address is the pointer allocated or freed.
	Address uint64
	// Bytes is the size allocated (pitch×height for pitched allocations);
	// 0 for frees, whose parameters carry no size.
	Bytes uint64
	// Kind is the memory's CUpti_ActivityMemoryKind, from the entry point:
	// 3 device, 2 pinned host, 5 managed (see [MemoryKindName]).
	Kind uint8
	// Device is the CUDA device ordinal of the call's context
	// (cuptiGetDeviceId); -1 when CUPTI cannot say.
	Device int32
	// Stream is the stream handle of the async variants (0 is the legacy
	// default stream); 0 for the others.
	Stream uint64
	// Async is set for the stream-ordered entry points (cudaMallocAsync,
	// cudaFreeAsync, cuMemAllocFromPoolAsync, …).
	Async bool
	// Correlation is CUPTI's correlation id of the call: the id its API
	// record ([KindRuntime] or [KindDriver]) and its [KindMemory] record
	// carry, when a [Collector] records them.
	Correlation uint32
	// API is the entry point, named as API records name it: CUPTI's
	// callback name less its _vNNNN tag, e.g. "cudaMalloc",
	// "cudaMallocAsync_ptsz", "cuMemAlloc_v2". It is one of a fixed set of
	// strings: keeping it costs nothing.
	API string
}

// HookOptions configures [StartMemoryHooks].
type HookOptions struct {
	// Library is the libcupti to load, searched as [Options.Library] is
	// (empty: $DEVPROF_CUPTI_LIB, else the usual sonames and CUDA toolkit
	// directories). Hooks and a running [Collector] must end up with the
	// same library: there is one CUPTI subscriber per process.
	Library string
}

// HookStats counts what the memory hooks saw.
type HookStats struct {
	// Calls is how many allocations and frees were handed to the handler.
	Calls int64
	// Failed counts hooked calls that returned an error: they allocated or
	// freed nothing and were not reported.
	Failed int64
	// Nested counts driver allocations and frees made inside a hooked
	// runtime call on the same thread (cudaMalloc calls cuMemAlloc_v2):
	// the runtime call is reported instead, so one cudaMalloc is one
	// MemoryCall.
	Nested int64
	// NullFrees counts frees of a NULL pointer, which CUDA accepts as a
	// no-op: not reported.
	NullFrees int64
	// Unhooked lists entry points the loaded library has no callback id
	// for (a CUPTI older than the entry point, e.g. cudaMallocAsync before
	// CUDA 11.2): calls to them are not seen.
	Unhooked []string
}

// Errors of [StartMemoryHooks] besides [Start]'s ([*Error], [*LoadError],
// [ErrNeedsCgo]).
var (
	// ErrHooksRunning: memory hooks are already running in this process.
	ErrHooksRunning = errors.New("cuptiwrap: memory hooks are already running in this process (CUPTI's callbacks are process-global): Stop them first")
	// ErrHooksUnsupported: the loaded libcupti lacks the callback API the
	// hooks need (cuptiEnableCallback, cuptiGetDeviceId); activity
	// collection with [Start] still works with it.
	ErrHooksUnsupported = errors.New("cuptiwrap: this libcupti cannot hook CUDA allocations")
)
