//go:build !unix

package pprof

import "runtime/metrics"

// cpuSeconds is the CPU time the Go runtime counts as spent (user code,
// the collector and the scavenger) on every core, where the kernel's
// count is not at hand.
func cpuSeconds() float64 {
	s := []metrics.Sample{
		{Name: "/cpu/classes/user:cpu-seconds"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/scavenge/total:cpu-seconds"},
	}
	metrics.Read(s)
	return s[0].Value.Float64() + s[1].Value.Float64() + s[2].Value.Float64()
}
