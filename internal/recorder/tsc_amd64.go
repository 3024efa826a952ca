package recorder

// rdtsc reads the time-stamp counter.
func rdtsc() int64

// cpuid executes CPUID.
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// invariantTSC reports whether the TSC ticks at a constant rate in every
// power state and is synchronised across cores (CPUID 0x80000007 EDX bit
// 8), which is what makes it usable as a clock.
func invariantTSC() bool {
	if max, _, _, _ := cpuid(0x80000000, 0); max < 0x80000007 {
		return false
	}
	_, _, _, d := cpuid(0x80000007, 0)
	return d&(1<<8) != 0
}
