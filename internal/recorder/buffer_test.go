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
				if r := b.Reserve(1); r != nil {
					r.Kind = event.KindInstant
					r.Commit()
				}
			}
		}()
	}
	wg.Wait()
	// A device source's drops, already in the meta, stay beside the
	// recorder's.
	s := b.Snapshot(event.Meta{Drops: []event.Drops{{Source: "cupti", Events: 3}}})
	want := []event.Drops{{Source: "cupti", Events: 3}, {Source: event.DropsRecorder, Events: 16*max - max}}
	if len(s.Events) != max || !slices.Equal(s.Meta.Drops, want) || s.Meta.Dropped() != 16*max-max+3 {
		t.Fatalf("kept %d, drops %v (total %d), want %v", len(s.Events), s.Meta.Drops, s.Meta.Dropped(), want)
	}
	for _, r := range s.Events {
		if s.Lookup(r.ID) != r {
			t.Fatalf("Lookup(%d) does not find its record", r.ID)
		}
	}
	if s.Lookup(0) != nil || s.Lookup(max*10) != nil {
		t.Fatal("Lookup of unknown ids")
	}
}

func TestUncommittedRecordsAreInvisible(t *testing.T) {
	b := NewBuffer(10, 3)
	r := b.Reserve(1)
	r.Kind = event.KindSpan
	r.SetName(b, "half-written")
	s := b.Snapshot(event.Meta{})
	if len(s.Events) != 0 || s.Lookup(r.ID) != nil {
		t.Fatal("an uncommitted record was exported")
	}
}
