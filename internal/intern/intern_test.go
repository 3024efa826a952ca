package intern

import (
	"fmt"
	"strings"
	"testing"
)

func TestTableIDs(t *testing.T) {
	var tab Table
	base := "forward_backward"
	if id, added := tab.ID(base); id != 1 || !added {
		t.Fatalf("first string: id %d added %v", id, added)
	}
	// A prefix shares the address: the length keeps them apart.
	if id, added := tab.ID(base[:7]); id != 2 || !added {
		t.Fatalf("prefix: id %d added %v", id, added)
	}
	// Another copy of the same bytes is the same string.
	if id, added := tab.ID(strings.Clone(base)); id != 1 || added {
		t.Fatalf("copy: id %d added %v", id, added)
	}
	// The empty string is a string like any other.
	if id, added := tab.ID(""); id != 3 || !added {
		t.Fatalf("empty: id %d added %v", id, added)
	}
	// More strings than the cache holds, looked up twice.
	for round := 0; round < 2; round++ {
		for i := 0; i < 3*cacheSize; i++ {
			id, added := tab.ID(fmt.Sprintf("name-%d", i))
			if want := int64(i + 4); id != want || added != (round == 0) {
				t.Fatalf("round %d name-%d: id %d added %v, want %d", round, i, id, added, want)
			}
		}
	}
}

func BenchmarkTableHit(b *testing.B) {
	var tab Table
	tab.ID("span")
	for b.Loop() {
		tab.ID("span")
	}
}
