package recorder

import (
	"github.com/devprof/devprof/event"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"time"
	_ "unsafe" // for go:linkname
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// useTSC selects the time-stamp counter as the tick source: on amd64 with an
// invariant TSC, unless DEVPROF_CLOCK=mono asks for the runtime's clock.
var useTSC = invariantTSC() && os.Getenv("DEVPROF_CLOCK") != "mono"

// Now returns the current time in ticks. Ticks are raw time-stamp counter
// readings where the TSC is invariant (one instruction, no system call),
// else nanoseconds of the runtime's monotonic clock. Buffers convert ticks
// to monotonic nanoseconds when they are snapshotted, using calibration
// points taken with Calibrate.
func Now() int64 {
	if useTSC {
		return rdtsc()
	}
	return nanotime()
}

// Mono returns the runtime's monotonic clock in nanoseconds: the timeline
// snapshots are converted to (Meta.Start.Mono and on).
func Mono() int64 { return nanotime() }

// ReadClocks takes an event.ClockAnchor. It reads the clocks several times and
// keeps the reading whose monotonic bracket is narrowest, so the pairing
// error is a few hundred nanoseconds at most.
func ReadClocks() event.ClockAnchor {
	var best event.ClockAnchor
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
			best = event.ClockAnchor{Mono: mid, Boot: boot, Wall: wall}
		}
	}
	return best
}

// calPoint pairs a tick with the monotonic time it was read at.
type calPoint struct{ tick, mono int64 }

// calibration maps ticks to monotonic nanoseconds, piecewise linearly
// between points taken over the session (start, every second or so, stop),
// so that drift between the two clocks stays bounded.
type calibration struct {
	mu     sync.Mutex
	points []calPoint
	keep   int // most points kept, the newest (a flight recorder runs for days); 0: all
}

// add takes one calibration point: a tick read between two monotonic
// reads, choosing the narrowest of a few tries.
func (c *calibration) add() {
	best, gap := calPoint{}, int64(math.MaxInt64)
	for i := 0; i < 7; i++ {
		m0 := nanotime()
		t := rdtsc()
		m1 := nanotime()
		if m1-m0 < gap {
			gap = m1 - m0
			best = calPoint{tick: t, mono: m0 + (m1-m0)/2}
		}
	}
	c.mu.Lock()
	c.points = append(c.points, best)
	if c.keep > 0 && len(c.points) > c.keep {
		c.points = slices.Delete(c.points, 0, len(c.points)-c.keep/2)
	}
	c.mu.Unlock()
}

// converter returns a function mapping ticks to monotonic nanoseconds. The
// function remembers the segment of its last call (a snapshot converts
// records mostly in time order, two stamps per span), so it is not for
// concurrent use: take one per goroutine.
func (c *calibration) converter() func(int64) int64 { return c.converters(1)[0] }

// converters returns n converters over the same calibration points, one
// per goroutine converting parts of one snapshot: taken apart, a
// calibration added between them would convert its parts differently.
func (c *calibration) converters(n int) []func(int64) int64 {
	c.mu.Lock()
	pts := append([]calPoint(nil), c.points...)
	c.mu.Unlock()
	sort.Slice(pts, func(i, j int) bool { return pts[i].tick < pts[j].tick })
	// Drop points too close to their neighbour to give a stable rate.
	var keep []calPoint
	for _, p := range pts {
		if len(keep) > 0 && p.tick-keep[len(keep)-1].tick < 1_000_000 {
			continue
		}
		keep = append(keep, p)
	}
	if len(keep) < 2 {
		keep = pts // a session shorter than a millisecond: use what there is
	}
	rate := func(a, b calPoint) float64 { return float64(b.mono-a.mono) / float64(b.tick-a.tick) }
	out := make([]func(int64) int64, n)
	if len(keep) < 2 || keep[len(keep)-1].tick == keep[0].tick {
		for i := range out {
			out[i] = func(t int64) int64 { return t } // cannot happen: start and stop points differ
		}
		return out
	}
	// Each segment's rate is computed once (the same division, so the same
	// value, as per call), and the segment of t is looked up only when t
	// leaves the last one: a million records cost a million binary
	// searches and divisions before, a fifth of a snapshot's time.
	np := len(keep)
	rates := make([]float64, np)
	for i := 1; i < np; i++ {
		rates[i] = rate(keep[i-1], keep[i])
	}
	for k := range out {
		out[k] = segmentConverter(keep, rates)
	}
	return out
}

// segmentConverter maps ticks onto the piecewise-linear segments between
// the points keep (sorted, at least two) at their rates (rates[i] is the
// segment ending at keep[i]).
func segmentConverter(keep []calPoint, rates []float64) func(int64) int64 {
	n := len(keep)
	last := 1 // the last call's sort.Search result, before clamping
	return func(t int64) int64 {
		i := last
		// i is the first point after t, as sort.Search finds it, when
		// the point before it is not after t and it is (keep is sorted).
		if (i > 0 && keep[i-1].tick > t) || (i < n && keep[i].tick <= t) {
			i = sort.Search(n, func(i int) bool { return keep[i].tick > t })
			last = i
		}
		switch {
		case i == 0:
			i = 1
		case i == n:
			i = n - 1
		}
		a := keep[i-1]
		return a.mono + int64(math.Round(float64(t-a.tick)*rates[i]))
	}
}
