//go:build unix

package chrome

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used:
// on a shared machine it measures a benchmark where wall time cannot.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
