package recorder

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
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
	tab := newStrtab()
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
	tab := newStrtab()
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
	if len(strs) != names+1 {
		t.Fatalf("%d strings interned, want %d", len(strs)-1, names)
	}
}

func BenchmarkStrtabHit(b *testing.B) {
	tab := newStrtab()
	tab.id("span")
	for b.Loop() {
		tab.id("span")
	}
}
