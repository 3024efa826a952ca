// Package cuptiwrap is devprof's source of GPU activity: a thin cgo layer
// over NVIDIA's CUPTI activity API, loaded at run time with dlopen.
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
// Record layouts differ between CUDA releases (CUDA 11.8 writes Kernel8
// records of 200 bytes, 12.x Kernel9 of 208, 13.x Kernel10/11 of 216 and
// more); the parser advances with the library's own
// cuptiActivityGetNextRecord and reads only the fields every version keeps at
// the same offset, plus a few gated on the detected [LibraryInfo.Layout].
// The offsets live in shim.h, which abicheck/abi_check.c checks against
// the real CUPTI headers (scripts/cupti-deps installs them on Debian).
//
// Tests drive the whole path with a stand-in library,
// testdata/fakecupti/fakecupti.c, which package fakecuda compiles
// and can call into from other packages' tests.
package cuptiwrap
