package event

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// build makes a snapshot from a compact description: each span is
// name, start, end, parent name ("" for none), optional track.
type spec struct {
	name       string
	start, end int64
	parent     string
	track      uint32
}

func build(t *testing.T, tracks []Track, specs ...spec) *Snapshot {
	t.Helper()
	b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 1000}})
	for _, tr := range tracks {
		b.Track(tr)
	}
	ids := map[string]uint64{}
	for _, s := range specs {
		if s.end < 0 {
			b.Instant(s.name, s.start, s.track, ids[s.parent], nil)
			continue
		}
		ids[s.name] = b.Span(Span{Name: s.name, Start: s.start, End: s.end, Parent: ids[s.parent], Track: s.track})
	}
	return b.Snapshot()
}

func rowsOf(s *Snapshot) string {
	l := s.Layout()
	var out []string
	for _, r := range l.Rows {
		var names []string
		for _, p := range r.Spans {
			n := s.Name(p.Record)
			if p.Displaced {
				n += "*"
			}
			names = append(names, n)
		}
		for _, i := range r.Instants {
			names = append(names, "!"+s.Name(i))
		}
		out = append(out, r.Name+": "+strings.Join(names, " "))
	}
	return strings.Join(out, " | ")
}

func TestLayout(t *testing.T) {
	cases := []struct {
		name  string
		specs []spec
		want  string
	}{
		{"nested", []spec{{"a", 0, 100, "", 0}, {"b", 10, 50, "a", 0}, {"c", 60, 90, "a", 0}},
			"a (lane 1): a b c"},
		{"sequential roots of one name share a row", []spec{{"step", 0, 10, "", 0}, {"step", 10, 20, "", 0}, {"step", 25, 30, "", 0}},
			"step (lane 1): step step step"},
		{"roots of other names get their own rows", []spec{{"load", 0, 10, "", 0}, {"save", 10, 20, "", 0}, {"load", 25, 30, "", 0}},
			"load (lane 1): load load | save (lane 2): save"},
		{"no worker on the row of a finished pipeline", []spec{{"main", 0, 100, "", 0}, {"pipeline", 0, 40, "", 0},
			{"w1", 10, 90, "main", 0}, {"w2", 50, 90, "main", 0}},
			"main (lane 1): main w1 | pipeline (lane 2): pipeline | w2 (lane 3): w2*"},
		{"overlapping siblings", []spec{{"p", 0, 100, "", 0}, {"x", 10, 60, "p", 0}, {"y", 20, 70, "p", 0}, {"y1", 30, 40, "y", 0}},
			"p (lane 1): p x | y (lane 2): y* y1"},
		{"child outlives parent", []spec{{"p", 0, 50, "", 0}, {"late", 40, 80, "p", 0}},
			"p (lane 1): p | late (lane 2): late*"},
		{"zero-length child at parent end is displaced", []spec{{"p", 0, 50, "", 0}, {"z", 50, 50, "p", 0}},
			"p (lane 1): p z*"},
		{"equal intervals nest parent first", []spec{{"p", 0, 50, "", 0}, {"c", 0, 50, "p", 0}},
			"p (lane 1): p c"},
		{"instants follow their span", []spec{{"p", 0, 50, "", 0}, {"i", 10, -1, "p", 0}, {"loose", 5, -1, "", 0}},
			"p (lane 1): p !i"},
	}
	for _, c := range cases {
		s := build(t, nil, c.specs...)
		if got := rowsOf(s); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestLayoutTracksAndActivity(t *testing.T) {
	tracks := []Track{
		{Kind: TrackHostThread, ID: 11, Name: "python"},
		{Kind: TrackDeviceStream, Device: 0, ID: 7},
	}
	b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 1000}})
	th := b.Track(tracks[0])
	st := b.Track(tracks[1])
	p := b.Span(Span{Name: "fwd", Start: 0, End: 100, Track: th})
	b.Span(Span{Name: "op", Start: 10, End: 20, Parent: p, Track: th})
	b.Span(Span{Name: "lane", Start: 0, End: 5})
	b.Activity(st, "k1", 0, 50, nil)
	b.Activity(st, "k2", 40, 60, nil) // overlaps k1: an overflow row of the stream
	b.Instant("mark", 30, th, 0, nil)
	s := b.Snapshot()
	got := rowsOf(s)
	want := "python: fwd op !mark | Stream #7: k1 | lane (lane 1): lane | Stream #7 (2): k2"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	l := s.Layout()
	if tr, ok := s.Track(&l.Rows[3]); !ok || tr.ID != 7 || l.Rows[3].Sub != 1 {
		t.Fatalf("overflow row %+v", l.Rows[3])
	}
}

func TestWalkOrder(t *testing.T) {
	s := build(t, nil,
		spec{"p", 0, 100, "", 0}, spec{"a", 0, 30, "p", 0}, spec{"a1", 10, 30, "a", 0},
		spec{"b", 30, 30, "p", 0}, spec{"i", 30, -1, "p", 0}, spec{"c", 40, 100, "p", 0})
	l := s.Layout()
	var seq []string
	l.Rows[0].Walk(func(typ RowEventType, p *Placed, inst *Record) {
		switch typ {
		case RowBegin:
			seq = append(seq, fmt.Sprintf("B%s@%d", s.Name(p.Record), p.start))
		case RowEnd:
			seq = append(seq, fmt.Sprintf("E%s@%d", s.Name(p.Record), p.End))
		case RowInstant:
			seq = append(seq, fmt.Sprintf("I%s@%d", s.Name(inst), inst.start))
		}
	})
	got := strings.Join(seq, " ")
	want := "Bp@0 Ba@0 Ba1@10 Ea1@30 Ea@30 Bb@30 Eb@30 Ii@30 Bc@40 Ec@100 Ep@100"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestUnfinishedSpanEndsAtStop(t *testing.T) {
	b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 500}})
	b.Span(Span{Name: "open", Start: 100, Unfinished: true})
	s := b.Snapshot()
	end, fin := s.EndOf(s.Events[0])
	if end != 500 || fin {
		t.Fatalf("end %d finished %v", end, fin)
	}
}

func TestManyArgsRoundTrip(t *testing.T) {
	b := NewBuilder(Meta{})
	var args []Arg
	for i := 0; i < 9; i++ {
		args = append(args, Arg{Key: fmt.Sprint("k", i), Kind: ArgInt, Num: uint64(i)})
	}
	b.Span(Span{Name: "x", Start: 0, End: 1, Args: args})
	b.Span(Span{Name: "y", Start: 2, End: 3})
	s := b.Snapshot()
	if len(s.Events) != 2 {
		t.Fatalf("%d events", len(s.Events))
	}
	got := s.Args(s.Events[0])
	if len(got) != 9 || got[8].Key != "k8" || got[8].Int() != 8 {
		t.Fatalf("args %v", got)
	}
}

// Many spans tied on start and end, nested in a chain: the layout breaks
// the ties by depth and must keep the chain's order.
func TestLayoutManyTies(t *testing.T) {
	b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 10}})
	var parent uint64
	const n = 20000
	for i := 0; i < n; i++ {
		parent = b.Span(Span{Name: fmt.Sprint(i), Start: 0, End: 10, Parent: parent})
	}
	s := b.Snapshot()
	l := s.Layout()
	if len(l.Rows) != 1 || len(l.Rows[0].Spans) != n {
		t.Fatalf("%d rows", len(l.Rows))
	}
	for i, p := range l.Rows[0].Spans {
		if s.Name(p.Record) != fmt.Sprint(i) || p.Displaced {
			t.Fatalf("span %d is %q", i, s.Name(p.Record))
		}
	}
}

func TestUniqueKeys(t *testing.T) {
	in := []Arg{{Key: "a"}, {Key: "b"}, {Kind: ArgFlow, Num: 1}, {Key: "a"}, {Key: "a"}}
	out := UniqueKeys(in)
	var keys []string
	for _, a := range out {
		keys = append(keys, a.Key)
	}
	if got := strings.Join(keys, ","); got != "a,b,,a (2),a (3)" {
		t.Fatalf("keys %s", got)
	}
	if in[3].Key != "a" {
		t.Fatal("input modified")
	}
	plain := []Arg{{Key: "a"}, {Key: "b"}}
	if n := testing.AllocsPerRun(100, func() { UniqueKeys(plain) }); n != 0 {
		t.Fatalf("%v allocs without duplicates", n)
	}
}

// The run merge of sortedSpans must give exactly what sorting gives, for
// buffers that are sorted, cut into a few long runs, or shuffled.
func TestSortedSpansMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []string{"sorted", "runs", "shuffled", "ties"} {
		b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 1 << 40}})
		type sp struct{ start, end int64 }
		var in []sp
		for i := 0; i < 5000; i++ {
			start := int64(i * 10)
			if shape == "ties" {
				start = int64(i / 7 * 10)
			}
			in = append(in, sp{start, start + 5 + int64(rng.IntN(50))})
		}
		switch shape {
		case "runs": // interleave four sorted runs, as goroutines moving between Ps leave them
			var out []sp
			for r := 0; r < 4; r++ {
				for i := r; i < len(in); i += 4 {
					out = append(out, in[i])
				}
			}
			in = out
		case "shuffled", "ties":
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		}
		for i, x := range in {
			b.Span(Span{Name: fmt.Sprint(i), Start: x.start, End: x.end})
		}
		s := b.Snapshot()
		order := func(a, b spanKey) int {
			if c := cmp.Compare(a.r.start, b.r.start); c != 0 {
				return c
			}
			if c := cmp.Compare(b.end, a.end); c != 0 {
				return c
			}
			return cmp.Compare(a.r.id, b.r.id)
		}
		got := s.sortedSpans(make([]uint32, 0, len(s.Events)), order, func() {})
		want := slices.Clone(got)
		slices.SortFunc(want, func(a, b uint32) int {
			ra, rb := s.Events[a], s.Events[b]
			return order(spanKey{ra, ra.End()}, spanKey{rb, rb.End()})
		})
		if len(got) != len(in) {
			t.Fatalf("%s: %d spans, want %d", shape, len(got), len(in))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: position %d holds span %d, sorting puts %d there", shape, i, s.Events[got[i]].id, s.Events[want[i]].id)
			}
		}
	}
}

// An event whose continuation records end its chunk must be written and
// read without stepping past the segment (go test -race enables checkptr,
// which fails on such pointer arithmetic).
func TestArgsEndingAChunk(t *testing.T) {
	b := NewBuilder(Meta{})
	for i := 0; i < builderSegment-2; i++ {
		b.Instant("filler", int64(i), 0, 0, nil)
	}
	args := []Arg{{Key: "a", Kind: ArgInt, Num: 1}, {Key: "b", Kind: ArgInt, Num: 2}, {Key: "c", Kind: ArgString, Str: "three"}}
	id := b.Span(Span{Name: "last", Start: 1, End: 2, Args: args})
	s := b.Snapshot()
	r := s.Lookup(id)
	if r == nil || id != builderSegment-1 {
		t.Fatalf("span id %d, want %d (its two records end the first segment)", id, builderSegment-1)
	}
	got := s.Args(r)
	if len(got) != 3 || got[0].Key != "a" || got[1].Num != 2 || got[2].Str != "three" {
		t.Fatalf("args %+v", got)
	}
}

// A compact layout must give every row's spans exactly as Layout's Spans
// hold them, and walk them the same, on snapshots with lanes, tracks,
// displaced children, unfinished spans and instants.
func TestCompactLayoutMatchesLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		b := NewBuilder(Meta{Stop: ClockAnchor{Mono: 100_000}})
		tracks := []uint32{0, b.Track(Track{Kind: TrackHostThread, ID: 7}), b.Track(Track{Kind: TrackHostThread, ID: 8})}
		var ids []uint64
		for i := range 2000 {
			start := int64(rng.IntN(90_000))
			var parent uint64
			if len(ids) > 0 && rng.IntN(3) > 0 {
				parent = ids[rng.IntN(len(ids))] // often overlapping or outliving it: displaced
			}
			sp := Span{Name: fmt.Sprint("s", i%5), Start: start, End: start + int64(rng.IntN(5000)), Parent: parent,
				Track: tracks[rng.IntN(len(tracks))], Unfinished: rng.IntN(20) == 0}
			ids = append(ids, b.Span(sp))
			if rng.IntN(10) == 0 {
				b.Instant("i", start+1, sp.Track, ids[len(ids)-1], nil)
			}
		}
		s := b.Snapshot()
		full, compact := s.Layout(), s.CompactLayout()
		if len(full.Rows) != len(compact.Rows) || len(full.Rows) < 2 {
			t.Fatalf("round %d: %d rows, compact %d", round, len(full.Rows), len(compact.Rows))
		}
		displaced := 0
		for i := range full.Rows {
			f, c := &full.Rows[i], &compact.Rows[i]
			if c.Spans != nil {
				t.Fatalf("round %d: compact row %d has Spans", round, i)
			}
			if f.Name != c.Name || f.Track != c.Track || f.Sub != c.Sub || !slices.Equal(f.Instants, c.Instants) {
				t.Fatalf("round %d: row %d is %q/%d/%d, compact %q/%d/%d", round, i, f.Name, f.Track, f.Sub, c.Name, c.Track, c.Sub)
			}
			if f.Len() != len(f.Spans) || c.Len() != f.Len() {
				t.Fatalf("round %d: row %d has %d spans, compact %d", round, i, len(f.Spans), c.Len())
			}
			for k := range f.Spans {
				if got := c.Span(k); got != f.Spans[k] || f.Span(k) != f.Spans[k] {
					t.Fatalf("round %d: row %d span %d is %+v, compact %+v", round, i, k, f.Spans[k], got)
				}
				if f.Spans[k].Displaced {
					displaced++
				}
			}
			if a, b := walkOf(f), walkOf(c); !slices.Equal(a, b) {
				t.Fatalf("round %d: row %d walks %v, compact %v", round, i, a, b)
			}
		}
		if displaced == 0 {
			t.Fatalf("round %d: no displaced span to compare", round)
		}
	}
}

// walkOf lists what Walk hands fn for a row.
func walkOf(r *Row) []string {
	var out []string
	r.Walk(func(typ RowEventType, p *Placed, inst *Record) {
		if p != nil {
			out = append(out, fmt.Sprint(typ, p.id, p.End, p.Finished, p.Displaced))
		} else {
			out = append(out, fmt.Sprint(typ, inst.id))
		}
	})
	return out
}
