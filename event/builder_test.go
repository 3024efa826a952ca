package event

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestBuilderInternsByContent holds the Builder's string ids to the
// strings' contents, whatever their addresses: substrings of one buffer
// share an address and differ in length, equal strings made apart
// differ in address, and more names than the cache remembers evict each
// other. It also checks that Snapshot lists every record but the
// continuation ones, in ID order, across segments with and without them.
func TestBuilderInternsByContent(t *testing.T) {
	buf := strings.Repeat("abcdefgh", 40)
	var names []string
	for n := 1; n <= 300; n++ {
		names = append(names, buf[:n]) // one address, 300 lengths
	}
	for i := range 200 {
		names = append(names, "name"+strconv.Itoa(i%50)) // equal contents, new addresses
	}
	rng := uint64(7)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(n))
	}
	b := NewBuilder(Meta{})
	type want struct {
		name string
		args []Arg
	}
	var wants []want
	for i := range 5 * builderSegment {
		name := names[next(len(names))]
		var args []Arg
		if next(8) == 0 { // now and then more than a record holds
			for j := range 1 + next(6) {
				args = append(args, Arg{Key: names[next(len(names))], Kind: ArgString, Str: names[next(len(names))]})
				if j%2 == 1 {
					args[j] = Arg{Key: "n" + strconv.Itoa(j), Kind: ArgInt, Num: uint64(i)}
				}
			}
		}
		b.Span(Span{Name: name, Start: int64(i), End: int64(i) + 1, Track: 0, Args: args})
		wants = append(wants, want{name, args})
	}
	s := b.Snapshot()
	if len(s.Events) != len(wants) {
		t.Fatalf("%d events, want %d", len(s.Events), len(wants))
	}
	for i, r := range s.Events {
		if i > 0 && r.id <= s.Events[i-1].id {
			t.Fatalf("event %d has ID %d after %d", i, r.id, s.Events[i-1].id)
		}
		if r.kind != KindSpan || s.Lookup(r.id) != r {
			t.Fatalf("event %d: kind %v, Lookup(%d) = %p, want %p", i, r.kind, r.id, s.Lookup(r.id), r)
		}
		if got := s.Name(r); got != wants[i].name {
			t.Fatalf("event %d: name %q, want %q", i, got, wants[i].name)
		}
		got := s.Args(r)
		if len(got) != len(wants[i].args) {
			t.Fatalf("event %d: %d args, want %d", i, len(got), len(wants[i].args))
		}
		for j := range got {
			if got[j] != wants[i].args[j] {
				t.Fatalf("event %d arg %d: %+v, want %+v", i, j, got[j], wants[i].args[j])
			}
		}
	}
	distinct := map[string]bool{"": true}
	for _, n := range names {
		distinct[n] = true
	}
	for _, w := range wants {
		for _, a := range w.args {
			distinct[a.Key] = true
			distinct[a.Str] = true
		}
	}
	if s.NumStrings() != len(distinct) {
		t.Errorf("%d strings in the table, want %d distinct ones", s.NumStrings(), len(distinct))
	}
}

// TestBuilderInternsManyNames interns more distinct names than the
// Builder's name index first holds, each twice (a goroutine's name on a
// trace's Ps, run after run), from strings made apart so that only
// their contents match: the index must grow without losing one, and give
// an equal name its first id.
func TestBuilderInternsManyNames(t *testing.T) {
	const n = 20_000
	b := NewBuilder(Meta{})
	tr := b.Track(Track{Kind: TrackHostThread, Name: "P0"})
	ids := make([]uint64, 0, 2*n)
	for round := range 2 {
		for i := range n {
			name := "G" + strconv.Itoa(i) + " main.worker"
			ids = append(ids, b.TrackSlice(tr, name, int64(round*n+i), int64(round*n+i), nil))
		}
	}
	s := b.Snapshot()
	if got, want := s.NumStrings(), n+1; got != want {
		t.Errorf("%d strings in the table, want %d", got, want)
	}
	for i := range n {
		first, again := s.Lookup(ids[i]), s.Lookup(ids[n+i])
		want := "G" + strconv.Itoa(i) + " main.worker"
		if s.Name(first) != want || s.Name(again) != want || first.nameID != again.nameID {
			t.Fatalf("name %d: %q (id %d) and %q (id %d), want %q under one id", i, s.Name(first), first.nameID, s.Name(again), again.nameID, want)
		}
	}
}

// TestBeginTrackSliceIsSpan holds BeginTrackSlice to the span Span adds
// for the same fields: the same records (with overflow arguments, ended
// or not), and a child on no track takes the same lane.
func TestBeginTrackSliceIsSpan(t *testing.T) {
	var args []Arg
	for i := range 2*inlineArgs + 1 {
		args = append(args, Arg{Key: "k" + strconv.Itoa(i), Kind: ArgInt, Num: uint64(i)})
	}
	build := func(begin func(b *Builder, tr uint32, name string, start int64, args []Arg) uint64) *Snapshot {
		b := NewBuilder(Meta{})
		tr := b.Track(Track{Kind: TrackHostThread, Name: "G1"})
		for i := range 3 * builderSegment {
			id := begin(b, tr, "running", int64(i)*10, args[:i%len(args)])
			if i%3 != 0 {
				b.EndSpan(id, int64(i)*10+5)
			}
			if i%100 == 0 {
				b.Span(Span{Name: "child", Start: int64(i) * 10, End: int64(i)*10 + 1, Parent: id})
			}
		}
		return b.Snapshot()
	}
	got := build(func(b *Builder, tr uint32, name string, start int64, args []Arg) uint64 {
		return b.BeginTrackSlice(tr, name, start, args)
	})
	want := build(func(b *Builder, tr uint32, name string, start int64, args []Arg) uint64 {
		return b.Span(Span{Name: name, Start: start, Track: tr, Args: args, Unfinished: true})
	})
	if len(got.Events) != len(want.Events) {
		t.Fatalf("%d events, want %d", len(got.Events), len(want.Events))
	}
	for i := range got.Events {
		g, w := got.Events[i], want.Events[i]
		if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(got.Args(g), want.Args(w)) || got.Name(g) != want.Name(w) {
			t.Fatalf("event %d: %+v %v, want %+v %v", i, g, got.Args(g), w, want.Args(w))
		}
	}
}
