package recorder

import (
	"os"
	"sort"
	"testing"
	"time"

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
	sort.Slice(evs, func(i, j int) bool { return evs[i].Parent < evs[j].Parent })
	var worst int64
	prev := int64(-1 << 63)
	for _, r := range evs {
		before, after := int64(r.Parent), r.ID2
		if d := before - r.Start; d > worst {
			worst = d
		}
		if d := r.Start - after; d > worst {
			worst = d
		}
		if r.Start < prev {
			t.Fatalf("converted times went backwards: %d after %d", r.Start, prev)
		}
		prev = r.Start
	}
	t.Logf("%d events over %v; worst distance outside the monotonic bracket: %d ns", n, run, worst)
	if worst > 1000 {
		t.Fatalf("converted ticks are up to %d ns away from the monotonic clock, want <= 1000", worst)
	}
}
