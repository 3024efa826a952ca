package recorder

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/event"
)

// The buffer is only free of GC scanning and write barriers while Record
// holds no pointers; this fails the day a field brings one back.
func TestRecordHoldsNoPointers(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		switch typ.Kind() {
		case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
			t.Errorf("%s is a %s: records must stay pointer-free", path, typ.Kind())
		case reflect.Struct:
			for i := 0; i < typ.NumField(); i++ {
				walk(typ.Field(i).Type, path+"."+typ.Field(i).Name)
			}
		case reflect.Array:
			walk(typ.Elem(), path+"[]")
		}
	}
	walk(reflect.TypeOf(Record{}), "Record")
}

func TestStrtabIDs(t *testing.T) {
	tab := newStrtab(DefaultMaxStrings, DefaultMaxStringBytes)
	base := "forward_backward"
	// Substrings share their first byte's address: the length must be part
	// of the cache key.
	a, b := base[:7], base
	ia, ib := tab.id(a), tab.id(b)
	if ia == ib || tab.id(a) != ia || tab.id(b) != ib {
		t.Fatalf("ids %d %d for %q and %q", ia, ib, a, b)
	}
	// The same contents at another address get the same id.
	c := strings.Clone(b)
	if tab.id(c) != ib {
		t.Fatalf("clone got id %d, want %d", tab.id(c), ib)
	}
	if tab.id("") != 0 {
		t.Fatal("the empty string must be id 0")
	}
	strs := tab.snapshot()
	for _, s := range []string{a, b} {
		if strs[tab.id(s)] != s {
			t.Fatalf("table maps %d to %q, want %q", tab.id(s), strs[tab.id(s)], s)
		}
	}
}

// Many goroutines interning many more names than the cache holds, each
// with fresh copies, must agree on every id.
func TestStrtabConcurrent(t *testing.T) {
	tab := newStrtab(DefaultMaxStrings, DefaultMaxStringBytes)
	const names = 3 * strCacheSize
	var wg sync.WaitGroup
	got := make([][]uint32, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]uint32, names)
			for round := 0; round < 3; round++ {
				for i := range ids {
					n := (i*7 + g*13) % names
					id := tab.id(fmt.Sprintf("name-%d", n))
					if round > 0 && ids[n] != id {
						t.Errorf("name-%d: id %d, earlier %d", n, id, ids[n])
						return
					}
					ids[n] = id
				}
			}
			got[g] = ids
		}()
	}
	wg.Wait()
	strs := tab.snapshot()
	for g := range got {
		for n, id := range got[g] {
			if want := fmt.Sprintf("name-%d", n); strs[id] != want || id != got[0][n] {
				t.Fatalf("goroutine %d: name-%d has id %d (%q), goroutine 0 says %d", g, n, id, strs[id], got[0][n])
			}
		}
	}
	if len(strs) != names+2 {
		t.Fatalf("%d strings interned, want %d", len(strs)-2, names)
	}
}

func BenchmarkStrtabHit(b *testing.B) {
	tab := newStrtab(DefaultMaxStrings, DefaultMaxStringBytes)
	tab.id("span")
	for b.Loop() {
		tab.id("span")
	}
}

// Past its bounds the table records new strings as the placeholder and
// counts them, while strings it already holds keep their ids.
func TestStrtabBounded(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		maxStrings, maxBytes int
	}{{"by count", 5, 1 << 20}, {"by bytes", 1 << 20, 12}} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newStrtab(tc.maxStrings, tc.maxBytes)
			kept := map[string]uint32{}
			for _, s := range []string{"abc", "def", "ghi"} { // 3 strings, 9 bytes: within both bounds
				kept[s] = tab.id(s)
			}
			for i := 0; i < 10; i++ {
				if id := tab.id(fmt.Sprintf("new-%d", i)); id != 1 {
					t.Fatalf("new-%d got id %d past the bound, want the placeholder's", i, id)
				}
			}
			for s, id := range kept {
				if tab.id(strings.Clone(s)) != id {
					t.Fatalf("%q lost its id", s)
				}
			}
			if got := tab.overflow.Load(); got != 10 {
				t.Fatalf("overflow %d, want 10", got)
			}
			if strs := tab.snapshot(); strs[1] != StringsFullPlaceholder || len(strs) != 5 {
				t.Fatalf("table %q", strs)
			}
		})
	}
}

// BenchmarkStrtabDistinct is the cost of a name never seen before, until
// the table is full: what a program pays per span that builds its name
// from data.
func BenchmarkStrtabDistinct(b *testing.B) {
	names := make([]string, 1<<16)
	for i := range names {
		names[i] = fmt.Sprintf("request-%08d", i)
	}
	tab := newStrtab(DefaultMaxStrings, DefaultMaxStringBytes)
	i := 0
	for b.Loop() {
		if i == len(names) {
			b.StopTimer()
			tab = newStrtab(DefaultMaxStrings, DefaultMaxStringBytes)
			i = 0
			b.StartTimer()
		}
		tab.id(names[i])
		i++
	}
}

// BenchmarkStrtabFull is the cost of a new string once the table is full
// (the lock and a map miss; nothing is kept).
func BenchmarkStrtabFull(b *testing.B) {
	tab := newStrtab(2, DefaultMaxStringBytes)
	name := "never-interned"
	for b.Loop() {
		tab.id(name)
	}
}

// A full table's replacements reach the snapshot as a warning.
func TestStringsOverflowIsWarned(t *testing.T) {
	b := NewBuffer(10, 3)
	b.strs = newStrtab(3, 1<<20) // "", the placeholder and one more
	for _, name := range []string{"kept", "lost-1", "lost-2"} {
		b.Put(&Entry{Kind: event.KindInstant}, name, nil)
	}
	s := b.Snapshot(event.Meta{})
	if len(s.Meta.Warnings) != 1 || s.Meta.Warnings[0].Code != "strings_overflow" || !strings.HasPrefix(s.Meta.Warnings[0].Text, "2 new names") {
		t.Fatalf("warnings %+v", s.Meta.Warnings)
	}
}
