//go:build unix

package pprof

import "syscall"

// cpuSeconds is the CPU time the process has used, user and system, on
// every core: what the kernel counts, not the Go runtime's estimate, so
// that time other programs on a shared machine take is not counted.
func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}
