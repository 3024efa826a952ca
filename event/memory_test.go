package event

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestSortMatchesStableSort: Sort orders as a stable sort by total
// (largest first), site and address does, whatever shares its stack:
// stacks shared and not, equal sites from different stacks, glue, no
// stack, a stack whose site is worded "".
func TestSortMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	stacks := [][]Frame{
		nil,
		{{}},
		{{Function: "main.a", File: "a.go", Line: 3}},
		{{Function: "main.a", File: "a.go", Line: 3}, {Function: "main.main"}},
		{{Function: "cuda._Cfunc_malloc"}, {Function: "main.b", File: "b.go", Line: 1}},
		{{Function: "main.b", File: "b.go", Line: 1}},
	}
	for range 200 {
		m := &DeviceMemory{}
		for i := range r.IntN(300) {
			st := stacks[r.IntN(len(stacks))]
			if r.IntN(3) == 0 {
				st = slices.Clone(st)
			}
			m.Buffers = append(m.Buffers, Buffer{Bytes: uint64(r.IntN(3)), Count: r.IntN(3), Address: uint64(r.IntN(4)), Stack: st, Glue: r.IntN(2), Span: string(rune('a' + i%26))})
		}
		want := slices.Clone(m.Buffers)
		slices.SortStableFunc(want, func(a, b Buffer) int {
			return cmp.Or(cmp.Compare(b.Total(), a.Total()), cmp.Compare(a.Site(), b.Site()), cmp.Compare(a.Address, b.Address))
		})
		m.Sort()
		if !reflect.DeepEqual(m.Buffers, want) {
			t.Fatalf("Sort gives\n%+v\nwant\n%+v", m.Buffers, want)
		}
	}
}

// BenchmarkSort: a million buffers from 1024 call sites, sizes in no
// order.
func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	stacks := make([][]Frame, 1024)
	for i := range stacks {
		stacks[i] = []Frame{{Function: "main.f", File: "main.go", Line: i}, {Function: "main.main", File: "main.go", Line: 1}}
	}
	m := &DeviceMemory{Buffers: make([]Buffer, 1<<20)}
	for i := range m.Buffers {
		m.Buffers[i] = Buffer{Bytes: uint64(r.IntN(1 << 16)), Count: 1, Address: uint64(i), Stack: stacks[r.IntN(len(stacks))]}
	}
	shuffled := slices.Clone(m.Buffers)
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		copy(m.Buffers, shuffled)
		b.StartTimer()
		m.Sort()
	}
}
