// Package trace starts and stops devprof's trace sessions. It is what a
// program calls to record itself, and the one place where devprof's flow
// is wired together:
//
//	sources → recorder → event model → exporters → files, servers
//
// While a session runs, its sources append to one in-memory recorder:
// package annotate (the program's own spans, steps, instants, counters),
// and the sources of the session's source table, each turned on by a
// field of Options — GPU activity through CUPTI (GPU, package
// sources/cupti), GPU metrics through NVML (GPUMetrics, sources/nvml),
// the Go runtime's execution trace (GoRuntime, sources/goruntime) and
// device-memory tracking (DeviceMemory, package devmem). Stop turns the
// recorder into the event model (package event) without copying it, and
// writes it through the format table (package exporters/formats) into the
// run directory, where TensorBoard's profile plugin also looks:
//
//	<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/
//	    <host>.pftrace         Perfetto: devprof serve, or ui.perfetto.dev
//	    <host>.xplane.pb       TensorBoard profile: tensorboard --logdir <logdir>, or xprof
//	    <host>.trace.json.gz   Chrome JSON, with Options.ChromeTrace
//	    <host>.memory.pb.gz    device memory live at Stop (pprof), when tracked
//	    <host>.cpu.pb.gz       CPU samples by span (pprof), with GoRuntime.CPUProfile
//
// # Sessions
//
// The one-line form mirrors jax.profiler.trace; its stop prints where the
// files went and the commands that open them:
//
//	stop := trace.Start("/tmp/prof")
//	defer stop()
//
// StartSession takes Options and returns the errors instead:
//
//	s, err := trace.StartSession("/tmp/prof", trace.Options{
//		HostTracerLevel: 3,                  // verbose annotations and the Go runtime
//		ChromeTrace:     true,               // also <host>.trace.json.gz
//		AdvancedConfig:  map[string]any{"gpu_metrics_period_ms": 50},
//	})
//	if err != nil {
//		return err
//	}
//	defer s.Stop()
//
// Options follow JAX's ProfileOptions: host tracer level 2 and device
// tracer level 1 by default, and AdvancedConfig takes JAX's
// advanced_configuration keys (ConfigKeys lists them), each translated to
// a typed option and validated with it before anything starts. Only one
// session runs at a time (ErrAlreadyStarted). After Stop, Outputs names
// the files written and Snapshot is what they were written from.
//
// Besides sessions that write a run directory, the package has:
//
//   - Capture: a session that writes no files and returns the XSpace,
//     which package profileserver serves to jax.collect_profile and
//     xprof's CAPTURE PROFILE button;
//   - Options.FlightRecorder: tracing always on in a bounded ring, whose
//     last window Session.FlightSnapshot, Session.WriteFlightSnapshot or
//     FlightSnapshot take at any time without stopping;
//   - SaveDeviceMemoryProfile, WriteDeviceMemoryProfile and DeviceUsage:
//     who holds device memory now, outside any session.
//
// The log directory may also be a bucket URL (s3://, gs://, azblob://):
// the files are written locally first and each is uploaded whole when
// Stop ends. The program links the cloud driver of each scheme it uses
// with gocloud.dev's blank import (gocloud.dev/blob/s3blob, gcsblob,
// azureblob): none is linked by default, since they add tens of
// megabytes to a binary; without it StartSession fails naming the import.
//
// Two environment variables change sessions without a change to the
// program: DEVPROF_DISABLE=1 turns every session into a no-op, and
// DEVPROF_DEVICE_TRACER=off turns the device tracer (CUPTI, and NVML's
// GPU metrics in their default auto mode) off, as DeviceTracerLevel: Off
// does. On a machine without a GPU a session records the host and says,
// in its outputs and once on standard error, why there is no device
// activity.
//
// # Costs
//
// The recorder holds 88 bytes an event, allocated as events come, up to
// Options.MaxEvents (a million by default, about 90 MiB); past it events
// are dropped without blocking the program and every output says how
// many. What an annotation costs is in package annotate. Stop does the
// rest of the work: encoding and deflating a million events into the
// Perfetto and TensorBoard files takes about a third of a second on two
// cores (BenchmarkStop1M, package bench) and, beyond the recorder, about
// 64 MiB of heap.
//
// The user guides are docs/api.md (sessions and their options),
// docs/outputs.md (the files and their viewers), docs/capture.md (remote
// capture and the flight recorder), docs/object-storage.md (buckets),
// docs/gpu-activity.md, docs/gpu-metrics.md, docs/go-runtime.md and
// docs/device-memory.md (the sources), and docs/performance.md.
package trace
