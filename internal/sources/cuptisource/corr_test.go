package cuptisource

import "testing"

func TestCorrTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi uint32
		n      int
	}{{"dense", 100, 200, 50}, {"sparse", 1, 1 << 30, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newCorrTable(tc.lo, tc.hi, tc.n)
			if (tab.dense != nil) != (tc.name == "dense") {
				t.Fatalf("dense %v", tab.dense != nil)
			}
			want := map[uint32]uint32{tc.lo: 0, tc.lo + 1: 7, tc.hi: 3, tc.hi + 5: 9, 0: 4, 150: ^uint32(0)}
			for id, v := range want {
				tab.set(id, v)
			}
			for id, v := range want {
				if got, ok := tab.get(id); !ok || got != v {
					t.Errorf("get(%d) = %d, %v; want %d", id, got, ok, v)
				}
			}
			if _, ok := tab.get(tc.lo + 2); ok {
				t.Error("an id never set is present")
			}
		})
	}
}
