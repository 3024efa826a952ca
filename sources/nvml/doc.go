// Package nvml is the source of a trace session that samples each GPU's
// health beside the work the program gives it: utilization, memory,
// power, clocks and temperature as counters on the device (and PCIe
// throughput on request), through NVIDIA's NVML. It also describes each
// device (name, UUID, PCI bus id, compute capability, SMs, clocks, memory
// size and bandwidth, driver and CUDA versions), so that every output
// names it and xprof can compute kernels' occupancy.
//
// Its place in devprof's flow is at the start, as a source:
//
//	libnvidia-ml (loaded at run time, github.com/NVIDIA/go-nvml) → sources/nvml → recorder → event model → exporters
//
// A program does not call it: a session runs it while its device tracer
// is on (Options.Mode ModeAuto), or alone with ModeOn for counters
// without CUPTI, configured by trace.Options.GPUMetrics or by the
// advanced configuration keys each field of Options names:
//
//	s, err := trace.StartSession("/tmp/prof", trace.Options{
//		DeviceTracerLevel: trace.Off, // no CUPTI ...
//		GPUMetrics:        nvml.Options{Mode: nvml.ModeOn, Period: 50 * time.Millisecond}, // ... but the counters
//	})
//
// Options.Validate is what a session checks the options with; ParseMode
// reads the gpu_metrics key's values (in any case). The package holds what a program
// sets and reads (the options, the counters' names, the errors to test
// with errors.Is); the sampler itself is internal to devprof, run only by
// sessions. Outside any session, trace.DeviceUsage asks NVML once what
// each GPU says of its memory: the figure a memory breakdown (package
// membreakdown) compares tracked buffers with.
//
// Only GPUs the program's CUDA can use are sampled: NVML's devices are
// matched to CUDA ordinals by UUID through the CUDA driver, else by
// CUDA_VISIBLE_DEVICES.
//
// # Costs and limits
//
// The sampler runs on a goroutine of its own and shares nothing with the
// span path. A tick costs a few microseconds a GPU of devprof's own work
// (BenchmarkTick) plus NVML's queries (about 0.3 µs each, 4.4 µs for
// memory on an H100), every Options.Period (DefaultPeriod, 100 ms, by
// default); a PCIe query blocks for about 20 ms, so it is off by default
// and, when on, runs on a goroutine of its own. Each tick adds up to nine
// counter samples a GPU to the session's buffer. On a machine without an
// NVIDIA driver nothing is sampled and the outputs say why in one line; a
// metric a GPU does not support is left out with a warning; a GPU lost
// mid-run stops being sampled. The package needs cgo, as go-nvml does
// (without it, ErrNeedsCgo).
//
// The user guide is docs/gpu-metrics.md.
package nvml
