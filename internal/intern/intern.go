// Package intern numbers strings for the exporters' interning tables
// (Perfetto's interned names, XPlane's metadata maps). It sits on the
// export side of devprof's flow: exporters look up every event's name and
// argument keys, and most lookups are of the same few strings.
package intern

import "unsafe"

// Table gives each distinct string an id, 1, 2, 3... in order of first
// use. The zero Table is ready to use; a Table is not safe for concurrent
// use.
//
// Lookups first try a small cache keyed by the string's address and
// length: names read from a snapshot share one backing array per distinct
// string, so a hit costs a few loads instead of hashing the bytes. The
// cache holds the strings it maps, so an address it remembers cannot be
// reused for other bytes while the table lives.
type Table struct {
	ids   map[string]int64
	cache [cacheSize]entry
}

const (
	cacheBits = 8
	cacheSize = 1 << cacheBits
)

type entry struct {
	s  string
	id int64
}

// ID returns the id of s and whether s was new to the table.
func (t *Table) ID(s string) (id int64, added bool) {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	e := &t.cache[((uint64(p)^uint64(len(s))<<17)*0x9E3779B97F4A7C15)>>(64-cacheBits)]
	if len(e.s) == len(s) && unsafe.StringData(e.s) == unsafe.StringData(s) && e.id != 0 {
		return e.id, false
	}
	if t.ids == nil {
		t.ids = map[string]int64{}
	}
	id, ok := t.ids[s]
	if !ok {
		id = int64(len(t.ids) + 1)
		t.ids[s] = id
	}
	*e = entry{s, id}
	return id, !ok
}
