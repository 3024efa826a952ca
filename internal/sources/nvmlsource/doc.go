// Package nvmlsource is the machinery of the NVML source (package
// sources/nvml holds what users set and read): a session starts it with
// the session's buffer, it describes each GPU the program's CUDA can use
// on that GPU's device track and samples the GPUs' metrics into counters
// until Stop. MemoryUsage is the one-shot query of device memory behind
// trace.DeviceUsage and the memory profiles' NVML figures.
//
// It sits between go-nvml and the recorder:
//
//	libnvidia-ml (go-nvml) → nvmlsource → internal/recorder → event model
//
// Only trace starts it (trace/sources.go); Explain, NoDriver and Expected
// are how the session words and weighs a failure to start it. Tests hand
// it a mock NVML and CUDA enumeration through internal/nvmlhook.
//
// The sampler runs on a goroutine of its own (the PCIe queries, which
// block for ~20 ms, on another) and shares nothing with the span path; a
// tick costs a few microseconds a GPU besides NVML's queries
// (BenchmarkTick). Without cgo, Start and MemoryUsage fail with
// nvml.ErrNeedsCgo.
package nvmlsource
