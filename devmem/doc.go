// Package devmem tracks who holds device memory: every live allocation with
// its size, device, kind, tags, the annotate spans open when it was made and
// the Go call stack that made it — what jax.profiler's device memory profile
// and live_buffers show for JAX, for Go programs that drive GPUs.
//
// In devprof's flow devmem is a source. Allocations reach it two ways:
//
//   - CUDA's allocation entry points (cudaMalloc, cudaMallocAsync,
//     cudaMallocHost, cudaMallocManaged, cuMemAlloc and their frees, runtime
//     and driver), seen through CUPTI's callback API (devprof's cgo layer over libcupti). The
//     callback runs on the thread that made the call, so when a goroutine
//     called CUDA through cgo its Go stack is recorded.
//   - The explicit API, [Alloc] and [Free], for Go code that manages device
//     memory (or any other memory) itself: its own pool, another vendor's
//     API. Tags come from the call and from [WithTags] in the context; the
//     span path from the annotate spans open in it.
//
// Tracking is off until [Start] (or a trace session with DeviceMemory set)
// turns it on; while off, Alloc and Free cost one atomic load. While on,
// [LiveBuffers] and [Snapshot] list what is alive at any moment, in a trace
// session or not; package trace writes that as a pprof profile in JAX's
// layout (trace.SaveDeviceMemoryProfile), which `go tool pprof` reads
// (-top, -tags, -tagfocus, -diff_base for leaks) and `devprof memory`
// prints as a table.
//
// While a trace session records, every allocation and free the table
// records is also an event of the session's trace: an instant on the
// TrackMemory track of its device with the buffer's facts, the annotate
// step it was made in and the device's exact bytes in use and peak after
// it (event/memory.go), from which the exporters draw memory over time
// (Perfetto counters, xprof's memory_profile). Events keep the table's
// order in time; see trace.go. Outside a session nothing is written.
//
// The tracking table is bounded (Options.MaxBuffers): allocations past the
// bound are counted with their bytes, never stored. A free of a pointer the
// table does not hold, a double free and a zero-size allocation are counted
// too; none of them panics or changes the live totals. The counts travel
// with every profile as warnings.
package devmem
