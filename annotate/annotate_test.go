package annotate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// record runs fn with a fresh active buffer and returns its snapshot.
func record(t testing.TB, max int64, level uint8, fn func()) *event.Snapshot {
	t.Helper()
	b := recorder.NewBuffer(max, level)
	if !recorder.Activate(b) {
		t.Fatal("another buffer is active")
	}
	start := recorder.ReadClocks()
	func() {
		defer recorder.Deactivate(b)
		fn()
	}()
	return b.Snapshot(event.Meta{Start: start, Stop: recorder.ReadClocks()})
}

func byName(s *event.Snapshot) map[string]*event.Record {
	m := map[string]*event.Record{}
	for _, r := range s.Events {
		m[s.Name(r)] = r
	}
	return m
}

func TestSpanOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		_, s := Begin(ctx, "x", Int("batch", 32))
		s.End()
	}); n != 0 {
		t.Fatalf("tracing off: %v allocs per span, want 0", n)
	}
	if Enabled() {
		t.Fatal("Enabled with no session")
	}
}

func TestSpanOnAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	record(t, 1<<20, 3, func() {
		// Warm up so that the measured runs hit the steady state: the first
		// span of a P installs its chunk (the amortised slow path).
		for range 10 {
			_, s := Begin(ctx, "warm")
			s.End()
		}
		if n := testing.AllocsPerRun(1000, func() {
			c, s := Begin(ctx, "x", Int("batch", 32))
			_, s2 := Begin(c, "child", String("layer", "fc1"), Float64("lr", 0.1), Bool("ok", true))
			BeginLeaf(c, "leaf", Int("batch", 32)).End()
			BeginLeaf(c, "leaf2", String("layer", "fc1"), Float64("lr", 0.1)).End()
			s2.End()
			s.End()
		}); n != 0 {
			t.Fatalf("tracing on: %v allocs per span, want 0", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			Instant(ctx, "i", Int("k", 1))
			Counter{Name: "loss"}.Set(0.5)
		}); n != 0 {
			t.Fatalf("instant+counter: %v allocs, want 0", n)
		}
	})
}

func TestNestingThroughContext(t *testing.T) {
	s := record(t, 1000, 2, func() {
		ctx := context.Background()
		ctx, root := Begin(ctx, "root", Int("batch", 32))
		cctx, cancel := context.WithCancel(ctx) // a wrapper between parent and child
		_, child := Begin(cctx, "child")
		Instant(cctx, "mark", String("why", "test"))
		child.End()
		cancel()
		root.End()
		_, other := Begin(context.Background(), "other-root")
		other.End()
	})
	m := byName(s)
	root, child, other, mark := m["root"], m["child"], m["other-root"], m["mark"]
	if root == nil || child == nil || other == nil || mark == nil {
		t.Fatalf("missing records: %v", m)
	}
	if root.Parent() != 0 || child.Parent() != root.ID() || mark.Parent() != root.ID() && mark.Parent() != child.ID() {
		t.Fatalf("parents: root %d, child %d (root id %d), mark %d", root.Parent(), child.Parent(), root.ID(), mark.Parent())
	}
	if child.Lane() != root.Lane() || other.Lane() == root.Lane() {
		t.Fatalf("lanes: root %d child %d other %d", root.Lane(), child.Lane(), other.Lane())
	}
	if a := s.Args(root); len(a) != 1 || a[0].Key != "batch" || a[0].Int() != 32 {
		t.Fatalf("root args %+v", a)
	}
	if e, fin := s.EndOf(child); !fin || e < child.Start() || root.End() < e {
		t.Fatalf("child end %d finished %v, root end %d", e, fin, root.End())
	}
}

// BeginInt records exactly what Begin with one Int64 argument records:
// name, argument, level, parent and lane; and nothing when the host
// tracer's level is below critical or tracing is off.
func TestBeginIntMatchesBegin(t *testing.T) {
	s := record(t, 1000, 3, func() {
		ctx, root := BeginInt(context.Background(), "root", "batch", -7)
		_, a := Begin(ctx, "a", Int64("n", 1<<40))
		_, b := BeginInt(ctx, "b", "n", 1<<40)
		b.End()
		a.End()
		root.End()
		var none context.Context // a nil context is taken as Background
		_, c := BeginInt(none, "nil-ctx", "k", 0)
		c.End()
	})
	m := byName(s)
	root, a, b, c := m["root"], m["a"], m["b"], m["nil-ctx"]
	if root == nil || a == nil || b == nil || c == nil {
		t.Fatalf("missing records: %v", m)
	}
	if args := s.Args(root); len(args) != 1 || args[0].Key != "batch" || args[0].Kind != event.ArgInt || args[0].Int() != -7 {
		t.Fatalf("root args %+v", args)
	}
	aa, ba := s.Args(a), s.Args(b)
	if len(aa) != 1 || len(ba) != 1 || aa[0] != ba[0] || ba[0].Int() != 1<<40 {
		t.Fatalf("Begin args %+v, BeginInt args %+v", aa, ba)
	}
	if a.Kind() != b.Kind() || a.Level() != b.Level() || (a.IsStep() != b.IsStep() || a.OnTrack() != b.OnTrack()) || a.Parent() != root.ID() || b.Parent() != root.ID() || a.Lane() != b.Lane() {
		t.Fatalf("Begin kind %v level %d flags %s parent %d lane %d; BeginInt kind %v level %d flags %s parent %d lane %d (root id %d)", a.Kind(), a.Level(), fmt.Sprint("step=", a.IsStep(), " on_track=", a.OnTrack()), a.Parent(), a.Lane(), b.Kind(), b.Level(), fmt.Sprint("step=", b.IsStep(), " on_track=", b.OnTrack()), b.Parent(), b.Lane(), root.ID())
	}
	if e, fin := s.EndOf(b); !fin || e < b.Start() {
		t.Fatalf("b end %d finished %v", e, fin)
	}
	if c.Parent() != 0 || c.Lane() == root.Lane() {
		t.Fatalf("nil-ctx span: parent %d lane %d (root lane %d)", c.Parent(), c.Lane(), root.Lane())
	}
	// Host tracer below critical: nothing.
	if s := record(t, 1000, 0, func() {
		_, sp := BeginInt(context.Background(), "x", "k", 1)
		if sp.Recording() {
			t.Error("BeginInt recorded with the host tracer off")
		}
		sp.End()
	}); len(s.Events) != 0 {
		t.Fatalf("host tracer off: %d events", len(s.Events))
	}
	// Tracing off: the context comes back as given.
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, 1)
	if c, sp := BeginInt(ctx, "x", "k", 1); c != ctx || sp.Recording() {
		t.Fatal("BeginInt with tracing off changed the context or recorded")
	}
}

// A leaf span records what Begin records in the same context (kind,
// level, parent, lane, arguments of every kind, its end), takes no
// context slot, and behaves like Begin's span when ended twice, in a
// flight recorder, with the host tracer off and with tracing off.
func TestBeginLeafMatchesBegin(t *testing.T) {
	args := []Arg{Int("n", -3), String("layer", "fc1"), Float64("lr", 0.5), Bool("ok", true)}
	for _, ring := range []bool{false, true} {
		var b *recorder.Buffer
		if ring {
			b = recorder.NewRing(1<<16, 3, 0)
		} else {
			b = recorder.NewBuffer(1000, 3)
		}
		if !recorder.Activate(b) {
			t.Fatal("another buffer is active")
		}
		start := recorder.ReadClocks()
		ctx, root := Begin(context.Background(), "root")
		for _, as := range [][]Arg{nil, args[:1], args[1:2], args} {
			_, sp := Begin(ctx, "begin", as...)
			lf := BeginLeaf(ctx, "leaf", as...)
			if !lf.Recording() {
				t.Fatal("BeginLeaf did not record")
			}
			lf.End()
			end := lf.rec.End()
			lf.End()
			if lf.rec.End() != end {
				t.Error("a leaf's second End moved its end")
			}
			sp.End()
		}
		var none context.Context // a nil context is taken as Background
		BeginLeaf(none, "nil-ctx").End()
		open := BeginLeaf(ctx, "open")
		root.End()
		recorder.Deactivate(b)
		s := b.Snapshot(event.Meta{Start: start, Stop: recorder.ReadClocks()})
		open.End() // after the snapshot: changes nothing it holds

		var begins, leaves []*event.Record
		var rootRec, nilRec, openRec *event.Record
		for _, r := range s.Events {
			switch s.Name(r) {
			case "begin":
				begins = append(begins, r)
			case "leaf":
				leaves = append(leaves, r)
			case "root":
				rootRec = r
			case "nil-ctx":
				nilRec = r
			case "open":
				openRec = r
			}
		}
		if len(begins) != 4 || len(leaves) != 4 || rootRec == nil || nilRec == nil || openRec == nil {
			t.Fatalf("ring %v: %d begins, %d leaves, root %v, nil-ctx %v, open %v", ring, len(begins), len(leaves), rootRec, nilRec, openRec)
		}
		for i, l := range leaves {
			g := begins[i]
			if l.Kind() != g.Kind() || l.Level() != g.Level() || (l.IsStep() != g.IsStep() || l.OnTrack() != g.OnTrack()) || l.Parent() != rootRec.ID() || l.Lane() != g.Lane() {
				t.Errorf("ring %v, leaf %d: kind %v level %d flags %s parent %d lane %d; Begin's: kind %v level %d flags %s parent %d lane %d",
					ring, i, l.Kind(), l.Level(), fmt.Sprint("step=", l.IsStep(), " on_track=", l.OnTrack()), l.Parent(), l.Lane(), g.Kind(), g.Level(), fmt.Sprint("step=", g.IsStep(), " on_track=", g.OnTrack()), g.Parent(), g.Lane())
			}
			la, ga := s.Args(l), s.Args(g)
			if len(la) != len(ga) {
				t.Fatalf("ring %v, leaf %d: args %+v, Begin's %+v", ring, i, la, ga)
			}
			for j := range la {
				if la[j] != ga[j] {
					t.Errorf("ring %v, leaf %d arg %d: %+v, Begin's %+v", ring, i, j, la[j], ga[j])
				}
			}
			if e, fin := s.EndOf(l); !fin || e < l.Start() {
				t.Errorf("ring %v, leaf %d: end %d finished %v (start %d)", ring, i, e, fin, l.Start())
			}
		}
		if nilRec.Parent() != 0 || nilRec.Lane() == rootRec.Lane() {
			t.Errorf("ring %v: nil-ctx leaf parent %d lane %d (root lane %d)", ring, nilRec.Parent(), nilRec.Lane(), rootRec.Lane())
		}
		if _, fin := s.EndOf(openRec); fin {
			t.Errorf("ring %v: a leaf ended after the snapshot shows as finished", ring)
		}
	}
	// Host tracer below critical, and tracing off: nothing.
	if s := record(t, 1000, 0, func() {
		if sp := BeginLeaf(context.Background(), "x", Int("k", 1)); sp.Recording() {
			t.Error("BeginLeaf recorded with the host tracer off")
		}
	}); len(s.Events) != 0 {
		t.Fatalf("host tracer off: %d events", len(s.Events))
	}
	if sp := BeginLeaf(context.Background(), "x"); sp.Recording() {
		t.Fatal("BeginLeaf recorded with tracing off")
	}
}

func TestSpanContextDelegates(t *testing.T) {
	record(t, 100, 2, func() {
		type key struct{}
		base, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Hour)
		defer cancel()
		ctx, s := Begin(base, "x")
		defer s.End()
		if ctx.Value(key{}) != "v" {
			t.Error("Value not delegated")
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Deadline not delegated")
		}
		cancel()
		<-ctx.Done()
		if ctx.Err() == nil {
			t.Error("Err not delegated")
		}
	})
}

func TestManyArgsUseContinuationRecords(t *testing.T) {
	s := record(t, 100, 2, func() {
		_, sp := Begin(context.Background(), "many",
			Int("a", 1), Uint64("b", 2), Float64("c", 3.5), Bool("d", true), String("e", "five"), Duration("f", 6*time.Millisecond), Int64("g", -7))
		sp.End()
	})
	if len(s.Events) != 1 {
		t.Fatalf("%d events, want 1 (continuations are not events)", len(s.Events))
	}
	args := s.Args(s.Events[0])
	want := []any{int64(1), uint64(2), 3.5, true, "five", 6 * time.Millisecond, int64(-7)}
	if len(args) != len(want) {
		t.Fatalf("got %d args, want %d", len(args), len(want))
	}
	for i, a := range args {
		if a.Value() != want[i] {
			t.Errorf("arg %d (%s) = %v, want %v", i, a.Key, a.Value(), want[i])
		}
	}
}

func TestLevels(t *testing.T) {
	s := record(t, 100, 1, func() {
		ctx := context.Background()
		_, a := Begin(ctx, "critical")
		a.End()
		_, b := BeginLevel(ctx, LevelInfo, "info")
		b.End()
		_, c := BeginLevel(ctx, LevelVerbose, "verbose")
		c.End()
	})
	m := byName(s)
	if m["critical"] == nil || m["info"] != nil || m["verbose"] != nil {
		t.Fatalf("level 1 kept %v", m)
	}
	s = record(t, 100, 0, func() {
		_, a := Begin(context.Background(), "critical")
		a.End()
	})
	if len(s.Events) != 0 {
		t.Fatalf("level 0 kept %d events", len(s.Events))
	}
}

func TestStepAndRun(t *testing.T) {
	s := record(t, 100, 2, func() {
		ctx, st := Step(context.Background(), "train", 7)
		Run(ctx, "forward", func(ctx context.Context) {
			Counter{Name: "loss", Unit: ""}.Set(0.25)
		}, Int("layer", 1))
		st.End()
	})
	m := byName(s)
	if st := m["train"]; st == nil || !st.IsStep() || st.StepNum() != 7 {
		t.Fatalf("step record %+v", st)
	}
	if f := m["forward"]; f == nil || f.Parent() != m["train"].ID() {
		t.Fatalf("forward record %+v", f)
	}
	if c := m["loss"]; c == nil || c.Kind() != event.KindCounter || s.Args(c)[0].Float() != 0.25 {
		t.Fatalf("counter %+v", c)
	}
}

func TestRunEndsSpanOnPanic(t *testing.T) {
	s := record(t, 100, 2, func() {
		defer func() { recover() }()
		Run(context.Background(), "boom", func(ctx context.Context) { panic("user bug") })
	})
	r := byName(s)["boom"]
	if r == nil || !r.Ended() {
		t.Fatalf("span not ended by panic: %+v", r)
	}
}

func TestEndTwiceKeepsFirst(t *testing.T) {
	s := record(t, 100, 2, func() {
		_, sp := Begin(context.Background(), "x")
		sp.End()
		first := sp.rec.End()
		time.Sleep(time.Millisecond)
		sp.End()
		if sp.rec.End() != first {
			t.Error("second End moved the end")
		}
	})
	if len(s.Events) != 1 {
		t.Fatal(len(s.Events))
	}
}

func TestParentFromOldSessionIgnored(t *testing.T) {
	var old context.Context
	record(t, 100, 2, func() {
		var sp Span
		old, sp = Begin(context.Background(), "old")
		sp.End()
	})
	s := record(t, 100, 2, func() {
		_, sp := Begin(old, "new")
		sp.End()
	})
	if r := byName(s)["new"]; r == nil || r.Parent() != 0 {
		t.Fatalf("span parented to a previous session: %+v", r)
	}
}

func TestBoundedAtMostN(t *testing.T) {
	const n = 1000
	for _, workers := range []int{1, 8} {
		s := record(t, n, 2, func() {
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 10*n/workers; i++ {
						_, sp := Begin(context.Background(), "s")
						sp.End()
					}
				}()
			}
			wg.Wait()
		})
		// Every span is kept or counted, never more than n kept. A P's
		// chunk is its own, so room a goroutine left behind on a P it moved
		// away from can go unused near the bound (the recorder's
		// TestReserveExactBudgetAcrossGoroutines bounds it: at most half).
		if kept := len(s.Events); kept > n || kept < n/2 || int64(kept)+s.Meta.Dropped() != 10*n {
			t.Errorf("%d workers: kept %d dropped %d, want at most %d (at least %d) and the rest dropped", workers, kept, s.Meta.Dropped(), n, n/2)
		}
		seen := map[uint64]bool{}
		for _, r := range s.Events {
			if seen[r.ID()] || r.ID() == 0 {
				t.Fatalf("duplicate or zero id %d", r.ID())
			}
			seen[r.ID()] = true
		}
	}
}

func TestFlowIDsUnique(t *testing.T) {
	a, b := NewFlowID(), NewFlowID()
	if a == 0 || a == b {
		t.Fatal(a, b)
	}
}

// A session with the host tracer off (level 0) records no host
// annotations at all: spans, instants and counters alike.
func TestHostTracerOffRecordsNothing(t *testing.T) {
	s := record(t, 100, 0, func() {
		ctx, sp := Begin(context.Background(), "span")
		Instant(ctx, "instant")
		Counter{Name: "loss"}.Set(0.5)
		sp.End()
	})
	for _, r := range s.Events {
		t.Errorf("recorded %s %q with the host tracer off", r.Kind(), s.Name(r))
	}
}
