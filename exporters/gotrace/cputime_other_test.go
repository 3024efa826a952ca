//go:build !unix

package gotrace_test

import "time"

// processCPU is unknown here: BenchmarkRead then reports no rate per CPU
// second.
func processCPU() time.Duration { return 0 }
