package recorder

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// TestTicksConvertWithin1us records instants for 1.5 s (10 s with
// DEVPROF_CLOCK_TEST_LONG=1), each with the monotonic clock read just
// before and after its tick, calibrating ten times over the run as a
// session does once a second, and requires every converted time to fall
// within 1 µs of its bracket and converted times never to go backwards.
func TestTicksConvertWithin1us(t *testing.T) {
	t.Logf("ticks from the TSC: %v", useTSC)
	run := 1500 * time.Millisecond
	if os.Getenv("DEVPROF_CLOCK_TEST_LONG") != "" {
		run = 10 * time.Second
	}
	b := NewBuffer(1<<23, 3)
	deadline := time.Now().Add(run)
	calEvery := run / 10
	nextCal := time.Now().Add(calEvery)
	n := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 200; i++ { // bursts of back-to-back reads test ordering
			before := nanotime()
			tick := Now()
			after := nanotime()
			if b.Put(&Entry{Kind: event.KindInstant, Start: tick, End: tick, Parent: uint64(before), ID2: after}, "", nil) == 0 {
				t.Fatal("buffer full")
			}
			n++
		}
		if time.Now().After(nextCal) {
			b.Calibrate()
			nextCal = nextCal.Add(calEvery)
		}
		time.Sleep(time.Millisecond)
	}
	s := b.Snapshot(event.Meta{})
	if len(s.Events) != n {
		t.Fatalf("%d of %d events", len(s.Events), n)
	}
	// Order by the monotonic read taken just before each tick (the
	// goroutine may have moved between Ps, and so between chunks).
	evs := append([]*event.Record(nil), s.Events...)
	sort.Slice(evs, func(i, j int) bool { return evs[i].Parent() < evs[j].Parent() })
	var worst int64
	prev := int64(-1 << 63)
	for _, r := range evs {
		before, after := int64(r.Parent()), (*Record)(unsafe.Pointer(r)).ID2
		if d := before - r.Start(); d > worst {
			worst = d
		}
		if d := r.Start() - after; d > worst {
			worst = d
		}
		if r.Start() < prev {
			t.Fatalf("converted times went backwards: %d after %d", r.Start(), prev)
		}
		prev = r.Start()
	}
	t.Logf("%d events over %v; worst distance outside the monotonic bracket: %d ns", n, run, worst)
	if worst > 1000 {
		t.Fatalf("converted ticks are up to %d ns away from the monotonic clock, want <= 1000", worst)
	}
}

// TestConverterMatchesSearch checks the converter, which remembers its
// last segment, against a binary search of every tick: ticks in order,
// in random order, on the points themselves, before the first and after
// the last, for calibrations of 2 to 40 points, and for the fallback of a
// session shorter than a millisecond (points that may repeat a tick).
func TestConverterMatchesSearch(t *testing.T) {
	reference := func(keep []calPoint, t int64) int64 {
		i := sort.Search(len(keep), func(i int) bool { return keep[i].tick > t })
		switch {
		case i == 0:
			i = 1
		case i == len(keep):
			i = len(keep) - 1
		}
		a, b := keep[i-1], keep[i]
		rate := float64(b.mono-a.mono) / float64(b.tick-a.tick)
		return a.mono + int64(math.Round(float64(t-a.tick)*rate))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]calPoint{
		"short": {{tick: 1000, mono: 50}, {tick: 1000, mono: 51}, {tick: 1500, mono: 60}, {tick: 1500, mono: 61}},
	}
	for _, n := range []int{2, 3, 10, 40} {
		var pts []calPoint
		tick, mono := int64(1e9), int64(5e8)
		for range n {
			pts = append(pts, calPoint{tick: tick, mono: mono})
			d := 2e6 + rng.Int64N(3e9)
			tick += d
			mono += d*10/27 + int64(rng.IntN(1000)) // a 2.7 GHz counter, drifting
		}
		cases[fmt.Sprint(n, " points")] = pts
	}
	for name, pts := range cases {
		c := &calibration{points: slices.Clone(pts)}
		conv := c.converter()
		keep := c.points // what converter kept: recomputed below as it does
		slices.SortFunc(keep, func(a, b calPoint) int { return cmp.Compare(a.tick, b.tick) })
		var kept []calPoint
		for _, p := range keep {
			if len(kept) == 0 || p.tick-kept[len(kept)-1].tick >= 1_000_000 {
				kept = append(kept, p)
			}
		}
		if len(kept) < 2 {
			kept = keep
		}
		lo, hi := kept[0].tick-5e9, kept[len(kept)-1].tick+5e9
		var ticks []int64
		for _, p := range kept {
			ticks = append(ticks, p.tick-1, p.tick, p.tick+1)
		}
		for tk := lo; tk < hi; tk += (hi - lo) / 5000 {
			ticks = append(ticks, tk)
		}
		shuffled := slices.Clone(ticks)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		slices.Sort(ticks)
		for _, tk := range append(ticks, shuffled...) {
			if got, want := conv(tk), reference(kept, tk); got != want {
				t.Fatalf("%s: tick %d converts to %d, want %d", name, tk, got, want)
			}
		}
	}
}
