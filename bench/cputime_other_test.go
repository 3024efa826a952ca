//go:build !linux

package bench

// threadCPU is 0 where the thread's CPU clock is not read: cpu-ns/op then
// reads 0.
func threadCPU() int64 { return 0 }
