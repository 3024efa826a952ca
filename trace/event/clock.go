package event

import (
	"time"
	_ "unsafe" // for go:linkname
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns the current time in session ticks: nanoseconds of the
// runtime's monotonic clock (CLOCK_MONOTONIC on Linux). One read costs what
// time.Since costs, without the wall-clock half of time.Now.
func Now() int64 { return nanotime() }

// ClockAnchor pairs readings of the clocks exporters convert to, taken at
// (nearly) the same instant.
type ClockAnchor struct {
	Mono int64 // session ticks (CLOCK_MONOTONIC ns)
	Boot int64 // CLOCK_BOOTTIME ns (equal to Mono where the OS has none)
	Wall int64 // Unix ns (CLOCK_REALTIME)
}

// ReadClocks takes a ClockAnchor. It reads the clocks several times and
// keeps the reading whose monotonic bracket is narrowest, so the pairing
// error is a few hundred nanoseconds at most.
func ReadClocks() ClockAnchor {
	var best ClockAnchor
	bestGap := int64(1 << 62)
	for i := 0; i < 5; i++ {
		m0 := nanotime()
		boot := boottime()
		wall := time.Now().UnixNano()
		m1 := nanotime()
		if gap := m1 - m0; gap < bestGap {
			bestGap = gap
			mid := m0 + gap/2
			if boot == 0 {
				boot = mid
			}
			best = ClockAnchor{Mono: mid, Boot: boot, Wall: wall}
		}
	}
	return best
}
