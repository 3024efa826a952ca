package recorder

import (
	"github.com/devprof/devprof/event"
	"sync"
	"sync/atomic"
	"unsafe"
)

// strtab interns the strings of one buffer (names, argument keys, string
// argument values) so that records carry 32-bit ids instead of pointers.
//
// The hot path must not take a lock or hash the string's bytes: a span
// name is almost always a literal, and a literal has one address for the
// life of the program. So ids are cached by (data pointer, length) in a
// small direct-mapped table read with plain atomic loads. That key is sound
// because the table keeps every string it caches alive: while the session
// lasts no other string can occupy the same bytes, so a given pointer and
// length always mean the same contents and the same id.
type strtab struct {
	cache [strCacheSize]strCacheEntry

	mu    sync.Mutex
	ids   map[string]uint32
	strs  []string // id -> string; strs[0] == "", strs[1] == StringsFullPlaceholder
	bytes int      // total length of strs

	// Bounds on distinct strings and their bytes: a program that makes
	// names or string values from data (a file name, a request id) would
	// otherwise grow the table for as long as the session runs. Past
	// either bound a new string is recorded as StringsFullPlaceholder and
	// counted in overflow.
	maxStrings, maxBytes int
	overflow             atomic.Int64
}

// Default bounds of a session's string table: 256 Ki distinct strings or
// 32 MiB of string bytes, whichever comes first. At the measured ~600 ns
// and ~100 bytes of table per new string, that is ~0.15 s and ~30 MiB
// spent on interning at most; fixed names cost nothing past their first
// use.
const (
	DefaultMaxStrings     = 1 << 18
	DefaultMaxStringBytes = 32 << 20
)

// StringsFullPlaceholder is what a name, argument key or string value
// reads as when it was first met after the string table was full.
const StringsFullPlaceholder = "(devprof: string table full)"

// strCacheSize is the number of cached (pointer, length) → id pairs: a
// power of two, big enough that a program's hot names rarely collide.
const (
	strCacheBits = 10
	strCacheSize = 1 << strCacheBits
)

// strCacheEntry is one cached pair. ptr is written last and read first and
// again last, so a reader never takes an id from a half-replaced entry
// (see lookup).
type strCacheEntry struct {
	ptr atomic.Uintptr
	val atomic.Uint64 // length<<32 | id
}

func newStrtab(maxStrings, maxBytes int) *strtab {
	return &strtab{
		ids:        map[string]uint32{"": 0, StringsFullPlaceholder: 1},
		strs:       []string{"", StringsFullPlaceholder},
		maxStrings: maxStrings,
		maxBytes:   maxBytes,
	}
}

// id returns the id of s, interning it on first use.
func (t *strtab) id(s string) uint32 {
	if id, ok := t.cached(s); ok {
		return id
	}
	return t.intern(s)
}

// cached returns the id of s and true when the cache holds it: id's fast
// path, a few loads, small enough to inline into the hot paths (StartSpan
// looks a span's name and key up with it; a call each was ~3 ns of a span
// on the 2-core VM, paired). When it returns false, intern is the way on.
func (t *strtab) cached(s string) (uint32, bool) {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	e := t.entry(p, len(s))
	// Re-reading ptr after val rejects a val that belongs to an entry
	// written in between; an unchanged ptr with a matching length can only
	// hold this string's id. (The zero entry maps the empty string to 0.)
	v := e.val.Load()
	return uint32(v), e.ptr.Load() == p && uint32(v>>32) == uint32(len(s)) && e.ptr.Load() == p
}

// entry is the cache entry of the string at p of length n: a
// multiplicative hash of the address, whose top bits pick the entry.
func (t *strtab) entry(p uintptr, n int) *strCacheEntry {
	return &t.cache[((uint64(p)^uint64(n)<<17)*0x9E3779B97F4A7C15)>>(64-strCacheBits)]
}

// intern is the slow path of id: the map, under the lock.
func (t *strtab) intern(s string) uint32 {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.ids[s]
	if !ok {
		if len(t.strs) >= t.maxStrings || t.bytes+len(s) > t.maxBytes {
			// Not cached: the table does not hold s, so its address
			// says nothing about its contents later.
			t.overflow.Add(1)
			return 1
		}
		t.bytes += len(s)
		id = uint32(len(t.strs))
		t.strs = append(t.strs, s)
		t.ids[s] = id
	}
	// Cache only the string the table holds: another copy of the same
	// contents is not kept alive by the table, so its address could later
	// hold different bytes.
	if len(s) > 0 && unsafe.StringData(t.strs[id]) == unsafe.StringData(s) && uint64(len(s)) < 1<<32 {
		e := t.entry(p, len(s))
		e.ptr.Store(0)
		e.val.Store(uint64(len(s))<<32 | uint64(id))
		e.ptr.Store(p)
	}
	return id
}

// arg returns a as the buffer stores it.
func (t *strtab) arg(a *event.Arg) slotArg {
	sa := slotArg{num: a.Num, key: t.id(a.Key), kind: a.Kind}
	if a.Kind == event.ArgString {
		sa.num = uint64(t.id(a.Str))
	}
	return sa
}

// packedArg returns a (annotate's form) as the buffer stores it.
func (t *strtab) packedArg(a *Arg) slotArg {
	sa := slotArg{num: a.Num, key: t.id(a.Key), kind: a.Kind()}
	if sa.kind == event.ArgString {
		sa.num = uint64(t.id(a.Str()))
	}
	return sa
}

// packedArgs is args for annotate's form of the arguments.
func (t *strtab) packedArgs(buf []slotArg, args []Arg) []slotArg {
	out := buf[:0]
	if len(args) > cap(buf) {
		out = make([]slotArg, 0, len(args))
	}
	for i := range args {
		out = append(out, t.packedArg(&args[i]))
	}
	return out
}

// args returns args as the buffer stores them, in buf when it has room
// (the caller's stack array) else in a new slice: the form of an event
// with more arguments than a record holds.
func (t *strtab) args(buf []slotArg, args []event.Arg) []slotArg {
	out := buf[:0]
	if len(args) > cap(buf) {
		out = make([]slotArg, 0, len(args))
	}
	for i := range args {
		out = append(out, t.arg(&args[i]))
	}
	return out
}

// snapshot returns the id → string table as it is now.
func (t *strtab) snapshot() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.strs[:len(t.strs):len(t.strs)]
}

// name returns the string of id ("" for an id the table does not hold).
func (t *strtab) name(id uint32) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(id) < len(t.strs) {
		return t.strs[id]
	}
	return ""
}
