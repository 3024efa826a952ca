// Package cupti is the source of a trace session that records what a
// program does on its NVIDIA GPUs: kernels, copies, memsets, allocations,
// synchronizations and the CUDA calls that launched them, through NVIDIA's
// CUPTI activity API, on the same timeline as the program's spans. It is
// what Kineto and TSL's device tracer do for PyTorch and JAX, for Go
// programs that call CUDA through cgo.
//
// Its place in devprof's flow is at the start, as a source:
//
//	libcupti (loaded at run time) → sources/cupti → recorder → event model → exporters
//
// A program does not call it: a session runs it while its device tracer
// is on (the default, trace.Options.DeviceTracerLevel), configured by
// trace.Options.GPU or by the advanced configuration keys each field of
// Options names:
//
//	s, err := trace.StartSession("/tmp/prof", trace.Options{
//		GPU: cupti.Options{MaxRecords: 2_000_000, FlushPeriod: 500 * time.Millisecond},
//	})
//
// and a program attributes device work to its own spans with
// annotate.Device. Options.Validate is what a session checks the options
// with. The package holds what a program sets and reads (the options,
// SourceName and the codes of the warnings the source leaves in a
// trace's metadata); the collector itself is internal to devprof, run
// only by sessions, which turn a failure to load CUPTI into a warning
// the outputs carry (CodeUnavailable) and one line on standard error.
//
// What it writes, on the session timeline:
//   - kernels, copies, memsets, allocations and synchronizations as
//     activity of their event.ActivityKind on one track per device and
//     stream ("Stream #7(Compute,MemcpyH2D)"), with the model's neutral
//     arguments (grid, block, registers, shared memory; bytes, copy kind,
//     memory kinds), from which exporters/xplane derives xprof's stats;
//   - CUDA runtime and driver API calls on one track per OS thread;
//   - a flow from each API call to the device work it launched (CUPTI's
//     correlation id), and the id of the device as device_id on the call;
//   - for device work launched inside annotate.Device, the span's name as
//     its annotation argument (CUPTI external correlation);
//   - a counter of the bytes each device has allocated.
//
// CUPTI stamps records with its own clock (CLOCK_REALTIME unless told
// otherwise). When the session starts, the source measures the offset to
// the session's monotonic clock with several paired reads and keeps the
// narrowest; the outputs note which clock was used and how exact the
// pairing was.
//
// # Costs and limits
//
// libcupti is loaded with dlopen when a session starts, so a program
// builds and runs without CUDA; the source needs cgo. Without a GPU, a
// driver or libcupti the session records the host alone and says why in
// one line. CUPTI fills activity buffers (Options.BufferSize, at most
// Options.MaxBuffers at once) and hands them over every
// Options.FlushPeriod; the source parses them as they come (cuptiwrap
// reads tens of millions of records a second) and keeps the records, 192
// bytes each, until the session stops, since an API call, the span that
// launched it and its kernel may arrive in different buffers, and then
// writes them into the session's buffer. When every buffer is full CUPTI
// drops records, and records past Options.MaxRecords are dropped too, all
// counted in every output. Tracing slows the GPU work itself about as much
// as other CUPTI tracers do: on an H200, a loop of 46 short kernel
// launches a step ran 1.14 times slower traced (median of 20 rounds),
// against 1.09 under Kineto (scripts/gpu-check; the log is
// testdata/real-gpu/h200/lease-2.log).
//
// The user guide is docs/gpu-activity.md: what each output shows, where
// libcupti is looked for, and what each failure means.
package cupti
