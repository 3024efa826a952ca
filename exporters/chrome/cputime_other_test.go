//go:build !unix

package chrome

import "time"

// processCPU is not measured here: BenchmarkRead reports no CPU figures.
func processCPU() time.Duration { return 0 }
