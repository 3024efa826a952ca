// Package cuptiwrap is devprof's source of GPU activity: a thin cgo layer
// over NVIDIA's CUPTI activity API (and its callback API, for the memory
// hooks), loaded at run time with dlopen.
//
// In the recording flow it sits at the device end. CUPTI fills activity
// buffers (kernels, copies, memsets, allocations, synchronizations, CUDA
// runtime and driver API calls, external correlations) on its own threads;
// this package hands those buffers to a Go goroutine that parses each record
// into a [Record] and passes batches to a sink function. The trace session
// owns the sink and turns the records into events on GPU and host tracks,
// linking API calls to the device work they launched through
// [Record.CorrelationID] and to Go spans through external correlation ids.
//
// devprof builds and runs without CUDA: nothing here includes a CUDA header
// or links libcupti. [Start] searches for the library (see [Options.Library]),
// and on a machine without an NVIDIA driver it returns an [*Error] that says
// so (errors.Is(err, [ErrNoDevice])); the session then records host activity
// only. Without cgo, Start returns [ErrNeedsCgo].
//
// CUPTI is process-global, so only one [Collector] runs at a time.
//
// # Memory hooks
//
// [StartMemoryHooks] reports every CUDA allocation and free (cudaMalloc,
// cudaMallocAsync, cudaMallocHost, cudaMallocManaged, cuMemAlloc_v2, …, and
// their frees: the runtime and driver entry points listed there) to a
// handler, through CUPTI's callback API rather than its activity buffers:
// the handler runs synchronously on the thread that made the CUDA call,
// once the call returned success and before it returns to its caller. A
// Go program calling CUDA through cgo thus runs the handler on the very
// goroutine that allocated, and runtime.Callers there sees its Go stack:
// what a device-memory profile needs. Each [MemoryCall] carries the
// address, size, memory kind, device, stream and the correlation id that
// the call's API and MEMORY2 activity records carry too, so the two views
// line up when a Collector runs beside the hooks.
//
// CUPTI allows one subscriber per process. The Collector and the hooks
// share it (the first to start subscribes, the last to stop unsubscribes),
// so both run at once and start and stop in any order; another CUPTI
// client in the process fails either with [ErrProfilerConflict]. The C
// callback calls into Go only while hooks run, and only for the
// allocation and free callback ids they enable; a driver allocation made
// inside a runtime one on the same thread (cudaMalloc calling
// cuMemAlloc_v2) is counted, not reported again. [HookStats] counts what
// was skipped.
//
// Record layouts differ between CUDA releases (CUDA 11.8 writes Kernel8
// records of 200 bytes, 12.x Kernel9 of 208, 13.x Kernel10/11 of 216 and
// more); the parser advances with the library's own
// cuptiActivityGetNextRecord and reads only the fields every version keeps at
// the same offset, plus a few gated on the detected [LibraryInfo.Layout].
// The offsets live in shim.h, which abicheck/abi_check.c checks against
// the real CUPTI headers (scripts/cupti-deps installs them on Debian), as
// it checks the callback ids, the callback data and the CUDA API
// parameter structs the memory hooks read.
//
// Tests drive the whole path with a stand-in library,
// testdata/fakecupti/fakecupti.c, which package fakecuda compiles
// and can call into from other packages' tests: it also plays CUDA
// allocations and frees through the callback API, from Go through cgo or
// from a thread C created.
package cuptiwrap
