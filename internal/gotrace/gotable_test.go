package gotrace

import (
	"slices"
	"testing"

	xtrace "golang.org/x/exp/trace"
)

// TestGoTableMatchesMap holds goTable to a map through a server's
// pattern (IDs created in runs, most destroyed soon, a few kept) and
// random ones: every ID put is found until deleted, none other is, and
// ids lists exactly the live ones, in order. Deleting without moving
// the later slots of a run back loses goroutines here.
func TestGoTableMatchesMap(t *testing.T) {
	var tab goTable
	ref := map[xtrace.GoID]*goState{}
	rng := uint64(1)
	next := func(n uint64) uint64 {
		rng = rng*6364136223846793005 + 1442695040888963407
		return (rng >> 33) % n
	}
	check := func(step int) {
		if tab.n != len(ref) {
			t.Fatalf("step %d: %d held, want %d", step, tab.n, len(ref))
		}
		for id, g := range ref {
			if got := tab.get(id); got != g {
				t.Fatalf("step %d: get(%d) = %p, want %p", step, id, got, g)
			}
		}
		want := make([]xtrace.GoID, 0, len(ref))
		for id := range ref {
			want = append(want, id)
		}
		slices.Sort(want)
		if got := tab.ids(); !slices.Equal(got, want) {
			t.Fatalf("step %d: ids %v, want %v", step, got, want)
		}
	}
	nextID := xtrace.GoID(1)
	for step := range 200_000 {
		switch op := next(10); {
		case op < 5: // a new goroutine
			g := &goState{}
			tab.put(nextID, g)
			ref[nextID] = g
			nextID += xtrace.GoID(1 + next(3))
		case op < 9: // one exits, or an ID never seen goes
			id := xtrace.GoID(1 + next(uint64(nextID)))
			tab.delete(id)
			delete(ref, id)
		default:
			if id := xtrace.GoID(nextID + xtrace.GoID(next(100))); tab.get(id) != nil {
				t.Fatalf("step %d: get(%d) found a goroutine never put", step, id)
			}
		}
		if step%20_000 == 0 || len(ref) < 8 {
			check(step)
		}
	}
	check(-1)
}
