package bench

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time the calling OS thread has used, in ns
// (CLOCK_THREAD_CPUTIME_ID). On a shared machine wall time per op moves
// with whatever else runs; the time the benchmark's own thread spent on a
// CPU does not (much), so the span benchmarks report it beside ns/op as
// cpu-ns/op. Callers lock their goroutine to its thread.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}
