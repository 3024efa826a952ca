//go:build unix

package gotrace_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (user and
// system): on a shared machine a rate per CPU second says more than one
// per wall second.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
