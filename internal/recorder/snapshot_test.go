package recorder

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// TestSnapshotConvertsChunksInParallel records enough instants, from
// several goroutines and so in many chunks, for Snapshot to convert its
// chunks on two goroutines, with records left uncommitted among them, and
// checks what the two halves produce together: every committed record
// once, in chunk and index order (IDs rising), none of the uncommitted
// ones, and every time converted within 1 µs of the monotonic reads
// around its tick.
func TestSnapshotConvertsChunksInParallel(t *testing.T) {
	const goroutines, each = 4, parallelConvertMin / 2
	b := NewBuffer(2*goroutines*each, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var uncommitted []uint64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				before := nanotime()
				tick := Now()
				after := nanotime()
				if b.Put(&Entry{Kind: event.KindInstant, Start: tick, End: tick, Parent: uint64(before), ID2: after}, "", nil) == 0 {
					t.Error("buffer full")
					return
				}
				if i%(each/4) == each/8 && g%2 == 0 {
					// A record reserved and never committed, mid-chunk.
					sl, k, s := b.pin(1)
					r := &sl.recs[k]
					r.setID(sl.base + uint64(k) + 1)
					r.Kind = event.KindInstant
					b.unpin(s)
					mu.Lock()
					uncommitted = append(uncommitted, r.ID)
					mu.Unlock()
				}
				if i%5000 == 0 {
					b.Calibrate()
					time.Sleep(50 * time.Microsecond) // let the goroutines interleave
				}
			}
		}()
	}
	wg.Wait()
	s := b.Snapshot(event.Meta{})
	if want := goroutines * each; len(s.Events) != want {
		t.Fatalf("%d events, want %d", len(s.Events), want)
	}
	if len(uncommitted) == 0 {
		t.Fatal("no uncommitted record was made")
	}
	for _, id := range uncommitted {
		if s.Lookup(id) != nil {
			t.Errorf("uncommitted record %d is in the snapshot", id)
		}
	}
	var worst int64
	for i, r := range s.Events {
		if i > 0 && r.ID() <= s.Events[i-1].ID() {
			t.Fatalf("event %d has ID %d after ID %d: not in chunk order", i, r.ID(), s.Events[i-1].ID())
		}
		before, after := int64(r.Parent()), (*Record)(unsafe.Pointer(r)).ID2
		worst = max(worst, before-r.Start(), r.Start()-after)
	}
	if worst > 1000 {
		t.Fatalf("a converted time is %d ns outside the monotonic reads around its tick", worst)
	}
}
