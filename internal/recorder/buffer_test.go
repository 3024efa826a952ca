package recorder

import (
	"slices"
	"sync"
	"testing"

	"github.com/devprof/devprof/event"
)

func TestSlotsFor(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 255: 128, 1000: 128} {
		if got := SlotsFor(n); got != want {
			t.Errorf("SlotsFor(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestReserveExactBudgetAcrossGoroutines(t *testing.T) {
	const max = 5000
	b := NewBuffer(max, 3)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2*max; i++ {
				b.Put(&Entry{Kind: event.KindInstant}, "", nil)
			}
		}()
	}
	wg.Wait()
	// A device source's drops, already in the meta, stay beside the
	// recorder's.
	s := b.Snapshot(event.Meta{Drops: []event.Drops{{Source: "cupti", Events: 3}}})
	// Every event is either kept or counted. A P's chunk is its own (no
	// other P takes its leftover room), so what the shards of the Ps that
	// stopped writing first had left can go unused: at most one chunk of
	// the last, small ones per shard.
	want := []event.Drops{{Source: "cupti", Events: 3}, {Source: event.DropsRecorder, Events: 16*max - int64(len(s.Events))}}
	if len(s.Events) > max || len(s.Events) < max-len(b.shards)*(max/(2*len(b.shards))) || !slices.Equal(s.Meta.Drops, want) {
		t.Fatalf("kept %d of %d, drops %v, want %v", len(s.Events), max, s.Meta.Drops, want)
	}
	for _, r := range s.Events {
		if s.Lookup(r.ID()) != r {
			t.Fatalf("Lookup(%d) does not find its record", r.ID())
		}
	}
	if s.Lookup(0) != nil || s.Lookup(max*10) != nil {
		t.Fatal("Lookup of unknown ids")
	}
}

func TestUncommittedRecordsAreInvisible(t *testing.T) {
	b := NewBuffer(10, 3)
	sl, i, s := b.pin(1)
	r := &sl.recs[i]
	r.setID(sl.base + uint64(i) + 1)
	r.Kind = event.KindSpan
	b.unpin(s)
	snap := b.Snapshot(event.Meta{})
	if len(snap.Events) != 0 || snap.Lookup(r.ID) != nil {
		t.Fatal("an uncommitted record was exported")
	}
}
