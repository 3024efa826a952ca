package recorder

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// ringHeld returns how many records the ring's chunks hold in all.
func ringHeld(b *Buffer) int64 {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	var n int64
	for _, c := range b.ring.fifo {
		n += int64(len(c.recs))
	}
	return n
}

// Under load from many goroutines — spans nested and ended on other
// goroutines, instants, snapshots taken meanwhile — a flight recorder
// never holds more than its bound, and every event is accounted for:
// kept in the final snapshot, or counted as overwritten or dropped.
func TestRingBoundAndAccountingUnderLoad(t *testing.T) {
	const bound = 8 << 10
	b := NewRing(bound, 3, 0)
	if b.MaxRecords() != bound {
		t.Fatalf("bound %d, want %d", b.MaxRecords(), bound)
	}
	const goroutines, perG = 64, 3000
	var emitted, maxHeld atomic.Int64
	ends := make(chan func(), 1024)
	var enders sync.WaitGroup
	for range 4 { // end spans begun on other goroutines
		enders.Add(1)
		go func() {
			defer enders.Done()
			for end := range ends {
				end()
			}
		}()
	}
	stopSnap := make(chan struct{})
	var snaps sync.WaitGroup
	snaps.Add(1)
	go func() { // snapshots while recording
		defer snaps.Done()
		for {
			select {
			case <-stopSnap:
				return
			default:
			}
			s := b.SnapshotWindow(event.Meta{}, 0)
			if int64(len(s.Events)) > bound {
				t.Errorf("a snapshot holds %d events, over the bound %d", len(s.Events), bound)
			}
			seen := map[uint64]bool{}
			for _, r := range s.Events {
				if seen[r.ID()] || s.Lookup(r.ID()) != r {
					t.Errorf("event %d twice or not found by its ID", r.ID())
					return
				}
				seen[r.ID()] = true
				if n := s.Name(r); n != "outer" && n != "inner" && n != "tick" {
					t.Errorf("event %d named %q", r.ID(), n)
					return
				}
			}
			// While a snapshot copies, the ring may hold more than its
			// bound (refills take new chunks rather than overwrite what
			// is being copied); the excess is given back after.
			maxHeld.Store(max(maxHeld.Load(), ringHeld(b)))
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				ctx, outer, _ := b.StartSpan(context.Background(), "outer", []Arg{NumArg("g", event.ArgInt, uint64(g))}, 1, 0, 0, false)
				if outer == nil {
					continue
				}
				emitted.Add(1)
				ictx, inner, _ := b.StartSpan(ctx, "inner", nil, 1, 0, 0, false)
				if inner != nil {
					emitted.Add(1)
					id := ictx.EndToken() // not from inner: the record may be recycled by now
					if i%3 == 0 {
						ends <- func() { inner.EndSpan(id, Now()) }
					} else {
						inner.EndSpan(id, Now())
					}
				}
				if b.Put(&Entry{Kind: event.KindInstant, Start: Now()}, "tick", nil) != 0 {
					emitted.Add(1)
				}
				outer.EndSpan(ctx.EndToken(), Now())
			}
		}()
	}
	wg.Wait()
	close(ends)
	enders.Wait()
	close(stopSnap)
	snaps.Wait()
	if h := ringHeld(b); h > bound {
		t.Fatalf("the ring holds %d records, over the bound %d", h, bound)
	}
	s := b.SnapshotWindow(event.Meta{}, 0)
	var overwritten, dropped int64
	for _, d := range s.Meta.Drops {
		switch d.Source {
		case DropsFlightRecorder:
			overwritten = d.Events
		case event.DropsRecorder:
			dropped = d.Events
		}
	}
	if got := int64(len(s.Events)) + overwritten; got != emitted.Load() {
		t.Fatalf("kept %d + overwritten %d = %d, but %d events were recorded (%d dropped)", len(s.Events), overwritten, got, emitted.Load(), dropped)
	}
	if overwritten == 0 || len(s.Events) == 0 {
		t.Fatalf("kept %d, overwritten %d: the ring did not come round", len(s.Events), overwritten)
	}
	if h := ringHeld(b); h > bound {
		t.Fatalf("after the last snapshot the ring holds %d records, over the bound %d", h, bound)
	}
	t.Logf("emitted %d: kept %d, overwritten %d, dropped %d; most held between snapshots %d (bound %d)", emitted.Load(), len(s.Events), overwritten, dropped, maxHeld.Load(), bound)
}

// A snapshot holds the last window: events recorded before it are left
// out and counted, and the trace begins where the window does.
func TestRingSnapshotIsTheLastWindow(t *testing.T) {
	b := NewRing(1<<16, 3, time.Second)
	// A span still open at the snapshot's time is in it, open.
	b.StartSpan(context.Background(), "open", nil, 1, 0, 0, false)
	now := nanotime()
	start := now - 10*int64(time.Second)
	for i := range 100 { // one a 100 ms over ten seconds
		at := start + int64(i)*int64(100*time.Millisecond)
		b.Put(&Entry{Kind: event.KindInstant, Flags: FlagMonoTime, Start: at, End: at, ID2: int64(i)}, "tick", nil)
	}
	meta := event.Meta{Start: event.ClockAnchor{Mono: start, Wall: 1_000_000_000}, Stop: event.ClockAnchor{Mono: now}}
	s := b.SnapshotWindow(meta, 0)
	cutoff := meta.Stop.Mono - int64(time.Second)
	var ticks, open int
	for _, r := range s.Events {
		if s.Name(r) == "open" {
			if r.Ended() {
				t.Error("the open span ended in the snapshot")
			}
			open++
			continue
		}
		ticks++
		if r.Start() < cutoff {
			t.Errorf("tick %d at %d is before the window (from %d)", (*Record)(unsafe.Pointer(r)).ID2, r.Start(), cutoff)
		}
	}
	// Ticks at start+9.0 s .. start+9.9 s are within the last second
	// before now: 10 of them; the other 90 are left out.
	if ticks != 10 || open != 1 {
		t.Fatalf("%d ticks and %d open spans in the window, want 10 and 1", ticks, open)
	}
	if got := s.Meta.Dropped(); got != 90 {
		t.Fatalf("%d counted as dropped, want the 90 older ticks (%v)", got, s.Meta.Drops)
	}
	if s.Meta.Start.Mono < cutoff || s.Meta.Start.Mono > s.Events[0].Start() {
		t.Fatalf("the trace begins at %d, want the window's start %d", s.Meta.Start.Mono, cutoff)
	}
	if d := s.Meta.Start.Mono - start; s.Meta.Start.Wall != 1_000_000_000+d {
		t.Fatalf("wall clock not shifted with the start: %d", s.Meta.Start.Wall)
	}
	// The ring is unchanged: a wider snapshot still sees all of it.
	if s := b.SnapshotWindow(meta, time.Hour); len(s.Events) != 101 {
		t.Fatalf("a one-hour snapshot holds %d events, want 101", len(s.Events))
	}
}

// An End that comes after its span's chunk was recycled leaves the later
// event in that record alone.
func TestRingLateEndLeavesRecycledRecordAlone(t *testing.T) {
	b := NewRing(1, 3, 0) // the smallest ring
	ctx, old, _ := b.StartSpan(context.Background(), "old", nil, 1, 0, 0, false)
	oldID, oldTok := ctx.ID(), ctx.EndToken()
	for i := 0; old.ID == oldID; i++ {
		if i > 10*int(b.MaxRecords()) {
			t.Fatal("the ring never came round to the old span's record")
		}
		c, r, _ := b.StartSpan(context.Background(), "new", nil, 1, 0, 0, false)
		r.EndSpan(c.EndToken(), Now())
	}
	// old's record now holds a later span; make it an open one.
	for old.Ended() {
		c, r, _ := b.StartSpan(context.Background(), "new", nil, 1, 0, 0, false)
		if r == old {
			break
		}
		r.EndSpan(c.EndToken(), Now())
	}
	if old.Ended() {
		t.Skip("could not land an open span on the recycled record")
	}
	old.EndSpan(oldTok, Now())
	if old.Ended() {
		t.Fatal("a late End of a recycled span ended the record's new span")
	}
}

// The snapshot is a copy: spans open in it stay open in it when they end
// in the ring afterwards, and the ring's records keep their ticks.
func TestRingSnapshotIsACopy(t *testing.T) {
	b := NewRing(1<<14, 3, 0)
	ctx, r, _ := b.StartSpan(context.Background(), "s", nil, 1, 0, 0, false)
	start := r.Start
	s := b.SnapshotWindow(event.Meta{}, 0)
	r.EndSpan(ctx.EndToken(), Now())
	m := s.Lookup(ctx.ID())
	if m == nil || m.Ended() {
		t.Fatalf("snapshot record %+v: want the span, open", m)
	}
	if r.Start != start || !r.Ended() {
		t.Fatal("the snapshot changed the ring's record")
	}
	if s2 := b.SnapshotWindow(event.Meta{}, 0); !s2.Lookup(ctx.ID()).Ended() {
		t.Fatal("a later snapshot does not see the End")
	}
}
