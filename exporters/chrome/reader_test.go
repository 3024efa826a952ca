package chrome

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// Tests that record go through the process-wide active buffer
// (a recorder is active while one runs), so none of them may call t.Parallel.

// record records events for a test; see eventtest.Record.
func record(t testing.TB, maxEvents int64, fn func(ctx context.Context)) *event.Snapshot {
	t.Helper()
	return eventtest.Record(t, maxEvents, fn)
}

func encode(t testing.TB, s *event.Snapshot) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func mustRead(t testing.TB, data []byte) *event.Snapshot {
	t.Helper()
	s, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := checkSnapshot(s); err != nil {
		t.Fatalf("inconsistent snapshot: %v", err)
	}
	return s
}

// checkSnapshot checks the invariants Read promises.
func checkSnapshot(s *event.Snapshot) error {
	stop := s.Meta.Stop.Mono
	if s.Meta.Start.Mono != 0 || stop < 0 {
		return fmt.Errorf("session %d..%d", s.Meta.Start.Mono, stop)
	}
	for _, tk := range s.Tracks {
		if tk.Kind != event.TrackHostThread && tk.Kind != event.TrackProcess || tk.Process < 0 || tk.Process > len(s.Processes) {
			return fmt.Errorf("track %+v", tk)
		}
	}
	onTrack := func(r *event.Record) error {
		if !r.OnTrack() {
			return nil
		}
		if r.Lane() == 0 || int(r.Lane()) > len(s.Tracks) {
			return fmt.Errorf("%s %q on track %d of %d", r.Kind(), s.Name(r), r.Lane(), len(s.Tracks))
		}
		return nil
	}
	for _, r := range s.Events {
		if r.Start() < 0 || r.Start() > stop {
			return fmt.Errorf("%s %q at %d, session 0..%d", r.Kind(), s.Name(r), r.Start(), stop)
		}
		args := s.Args(r)
		if len(args) != int(r.NArgs()) || len(args) > 255 {
			return fmt.Errorf("%q has %d args (NArgs %d)", s.Name(r), len(args), r.NArgs())
		}
		for _, a := range args {
			if a.Kind < event.ArgInt || a.Kind > event.ArgFlow {
				return fmt.Errorf("%q: arg %q of kind %d", s.Name(r), a.Key, a.Kind)
			}
		}
		switch r.Kind() {
		case event.KindSpan, event.KindInstant:
			if err := onTrack(r); err != nil {
				return err
			}
			end, fin := s.EndOf(r)
			if end < r.Start() || end > max(stop, 1) {
				return fmt.Errorf("%q ends at %d (start %d, stop %d)", s.Name(r), end, r.Start(), stop)
			}
			if !fin && r.Kind() != event.KindSpan {
				return fmt.Errorf("unfinished %s", r.Kind())
			}
			if r.Parent() == 0 {
				continue
			}
			p := s.Lookup(r.Parent())
			if p == nil || p.Kind() != event.KindSpan {
				return fmt.Errorf("%q: parent %d is not a span", s.Name(r), r.Parent())
			}
			pend, _ := s.EndOf(p)
			if p.Start() > r.Start() || pend < end && !(r.Kind() == event.KindInstant && end == 1) {
				return fmt.Errorf("%q %d..%d outside its parent %q %d..%d", s.Name(r), r.Start(), end, s.Name(p), p.Start(), pend)
			}
			if r.Kind() == event.KindSpan && p.Lane() != r.Lane() {
				return fmt.Errorf("%q on track %d, its parent %q on %d", s.Name(r), r.Lane(), s.Name(p), p.Lane())
			}
		case event.KindCounter:
			if r.NArgs() != 1 || s.Args(r)[0].Kind != event.ArgFloat {
				return fmt.Errorf("counter %q args %+v", s.Name(r), args)
			}
		default:
			return fmt.Errorf("record of kind %s", r.Kind())
		}
	}
	return nil
}

// dump describes a snapshot in a canonical text form: records are sorted,
// not listed in buffer order, and parents are named.
func dump(s *event.Snapshot) string {
	var b strings.Builder
	m := &s.Meta
	fmt.Fprintf(&b, "meta host=%q pid=%d program=%q dropped=%d max=%d wall=%d stop=%d\n",
		m.Host, m.PID, m.Program, m.Dropped(), m.MaxEvents, m.Start.Wall, m.Stop.Mono)
	for i, tk := range s.Tracks {
		if tk.Kind == event.TrackProcess {
			fmt.Fprintf(&b, "track %d process %d\n", i+1, tk.Process)
			continue
		}
		fmt.Fprintf(&b, "track %d %q tid=%d\n", i+1, tk.Name, tk.ID)
	}
	where := func(r *event.Record) string {
		if r.OnTrack() {
			return "T" + strconv.Itoa(int(r.Lane()))
		}
		return "proc"
	}
	var lines []string
	for _, r := range s.Events {
		var l string
		switch r.Kind() {
		case event.KindSpan:
			end, fin := s.EndOf(r)
			l = fmt.Sprintf("span %s %q %d..%d", where(r), s.Name(r), r.Start(), end)
			if !fin {
				l += " unfinished"
			}
			if r.IsStep() {
				l += fmt.Sprintf(" step=%d", r.StepNum())
			}
		case event.KindInstant:
			l = fmt.Sprintf("instant %s %q %d", where(r), s.Name(r), r.Start())
		case event.KindCounter:
			l = fmt.Sprintf("counter %q unit=%q %d = %v", s.Name(r), s.Args(r)[0].Key, r.Start(), s.Args(r)[0].Float())
			if r.OnTrack() {
				l += " on " + where(r)
			}
			lines = append(lines, l)
			continue
		}
		if p := s.Lookup(r.Parent()); p != nil {
			l += fmt.Sprintf(" parent=%q@%d", s.Name(p), p.Start())
		}
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				l += fmt.Sprintf(" flow=%d", a.Num)
				continue
			}
			if a.Kind == event.ArgString {
				l += fmt.Sprintf(" %s=str:%q", a.Key, a.Str)
				continue
			}
			l += fmt.Sprintf(" %s=%s:%v", a.Key, argKind(a.Kind), a.Value())
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(&b, "warn %s\n", w.Text)
	}
	return b.String()
}

func argKind(k event.ArgKind) string {
	return [...]string{"?", "int", "uint", "float", "bool", "str", "dur", "flow"}[k]
}

// wantArg is what the writer and the reader make of an argument.
func wantArg(a event.Arg) event.Arg {
	switch a.Kind {
	case event.ArgUint:
		if a.Num <= math.MaxInt64 {
			a.Kind = event.ArgInt
		}
	case event.ArgFloat:
		if f := a.Float(); f == math.Trunc(f) && math.Abs(f) < 1e21 {
			// Written without a fraction ("2"), so read as an integer.
			return event.Arg{Key: a.Key, Kind: event.ArgInt, Num: uint64(int64(f))}
		}
	case event.ArgDuration:
		return event.Arg{Key: a.Key, Kind: event.ArgString, Str: a.Duration().String()}
	}
	return a
}

func byName(t *testing.T, s *event.Snapshot, kind event.Kind) map[string]*event.Record {
	t.Helper()
	m := map[string]*event.Record{}
	for _, r := range s.Events {
		if r.Kind() == kind {
			if m[s.Name(r)] != nil {
				t.Fatalf("two %ss named %q", kind, s.Name(r))
			}
			m[s.Name(r)] = r
		}
	}
	return m
}

func near(a, b int64) bool { return a-b <= 1 && b-a <= 1 }

// devprofSession records a session that uses every kind of annotation.
func devprofSession(t testing.TB) *event.Snapshot {
	return record(t, 1<<12, func(ctx context.Context) {
		sctx, step := annotate.Step(ctx, "train", 7, annotate.Int("batch", 8))
		pctx, parent := annotate.Begin(sctx, "parent",
			annotate.String("s", "v\"q"), annotate.Float64("f", 1.5), annotate.Float64("whole", 2),
			annotate.Bool("b", true), annotate.Duration("d", 1500*time.Microsecond),
			annotate.Uint64("u", 7), annotate.Uint64("big", math.MaxUint64), annotate.Int("neg", -3),
			annotate.Float64("nan", math.NaN()), annotate.Flow(9))
		cctx, child := annotate.Begin(pctx, "child")
		annotate.Instant(cctx, "mark", annotate.String("why", "test"))
		time.Sleep(50 * time.Microsecond)
		child.End()
		annotate.Counter{Name: "loss"}.Set(0.25)
		annotate.Counter{Name: "mem", Unit: "bytes"}.Set(64)
		annotate.Counter{Name: "inf"}.Set(math.Inf(1))
		parent.End()
		annotate.Instant(ctx, "loose", annotate.Int("n", 1))
		step.End()
		_, sibling := annotate.Begin(ctx, "other-root")
		sibling.End()
		_, open := annotate.Begin(ctx, "never-ended")
		_ = open
		time.Sleep(20 * time.Microsecond)
	})
}

func TestRoundTripDevprof(t *testing.T) {
	s := devprofSession(t)
	data := encode(t, s)
	got := mustRead(t, data)
	rel := func(s *event.Snapshot, t int64) int64 { return t - s.Meta.Start.Mono }

	if g, w := got.Meta, s.Meta; g.Host != w.Host || g.PID != w.PID || g.Program != w.Program || g.Dropped() != 0 || g.Start.Wall != w.Start.Wall {
		t.Errorf("meta %+v, want host/pid/program/wall of %+v", g, w)
	}
	if e, _ := s.EndOf(byName(t, s, event.KindSpan)["never-ended"]); !near(got.Meta.Stop.Mono, rel(s, e)) {
		t.Errorf("stop %d, want %d", got.Meta.Stop.Mono, rel(s, e))
	}
	if len(got.Meta.Warnings) != 0 {
		t.Errorf("warnings %q", got.Meta.Warnings)
	}

	// Spans: times, args, parents, steps, the unfinished flag.
	want, have := byName(t, s, event.KindSpan), byName(t, got, event.KindSpan)
	if len(want) != 5 || len(have) != len(want) {
		t.Fatalf("%d spans read, %d written", len(have), len(want))
	}
	for name, w := range want {
		g := have[name]
		if g == nil {
			t.Errorf("span %q missing", name)
			continue
		}
		wend, wfin := s.EndOf(w)
		gend, gfin := got.EndOf(g)
		if !near(rel(s, w.Start()), rel(got, g.Start())) || !near(rel(s, wend), rel(got, gend)) || wfin != gfin {
			t.Errorf("%q: %d..%d (finished %v), want %d..%d (%v)", name, rel(got, g.Start()), rel(got, gend), gfin, rel(s, w.Start()), rel(s, wend), wfin)
		}
		if w.IsStep() != g.IsStep() || w.StepNum() != g.StepNum() {
			t.Errorf("%q: step %s/%d, want %s/%d", name, fmt.Sprint("step=", g.IsStep(), " on_track=", g.OnTrack()), g.StepNum(), fmt.Sprint("step=", w.IsStep(), " on_track=", w.OnTrack()), w.StepNum())
		}
		wp, gp := s.Lookup(w.Parent()), got.Lookup(g.Parent())
		if (wp == nil) != (gp == nil) || wp != nil && s.Name(wp) != got.Name(gp) {
			t.Errorf("%q: parent %v, want %v", name, gp, wp)
		}
		checkArgs(t, name, s.Args(w), got.Args(g))
	}
	if a := got.Args(have["parent"]); len(a) != 10 || a[3].Kind != event.ArgBool || a[4].Str != "1.5ms" || a[6].Kind != event.ArgUint {
		t.Errorf("parent args %+v", a)
	}

	// Instants, with the span they were recorded in.
	want, have = byName(t, s, event.KindInstant), byName(t, got, event.KindInstant)
	if len(have) != 2 {
		t.Fatalf("instants %v", have)
	}
	for name, w := range want {
		g := have[name]
		if g == nil || !near(rel(s, w.Start()), rel(got, g.Start())) {
			t.Errorf("instant %q: %v, want at %d", name, g, rel(s, w.Start()))
			continue
		}
		wp, gp := s.Lookup(w.Parent()), got.Lookup(g.Parent())
		if (wp == nil) != (gp == nil) || wp != nil && s.Name(wp) != got.Name(gp) {
			t.Errorf("instant %q: parent %v, want %v", name, gp, wp)
		}
		if g.OnTrack() != (wp != nil) {
			t.Errorf("instant %q: on track %v, want %v", name, g.OnTrack(), wp != nil)
		}
		checkArgs(t, name, s.Args(w), got.Args(g))
	}

	// Counters with their units.
	want, have = byName(t, s, event.KindCounter), byName(t, got, event.KindCounter)
	if len(have) != 3 {
		t.Fatalf("counters %v", have)
	}
	for name, w := range want {
		g := have[name]
		if g == nil || !near(rel(s, w.Start()), rel(got, g.Start())) || got.Args(g)[0].Key != s.Args(w)[0].Key || got.Args(g)[0].Float() != s.Args(w)[0].Float() {
			t.Errorf("counter %q: %+v, want %+v", name, g, w)
		}
	}

	// Threads are the rows devprof wrote, with their names.
	var rows []string
	for _, r := range s.Layout().Rows {
		rows = append(rows, r.Name)
	}
	var tracks []string
	for i, tk := range got.Tracks {
		tracks = append(tracks, tk.Name)
		if tk.ID != int64(i+1) || tk.Kind != event.TrackHostThread {
			t.Errorf("track %d: %+v", i+1, tk)
		}
	}
	if !slices.Equal(rows, tracks) {
		t.Errorf("tracks %q, want the rows %q", tracks, rows)
	}

	// Writing what was read and reading it again changes nothing.
	again := mustRead(t, encode(t, got))
	if d1, d2 := dump(got), dump(again); d1 != d2 {
		t.Errorf("second round trip differs:\n%s\nvs\n%s", d1, d2)
	}
}

func checkArgs(t *testing.T, name string, written, read []event.Arg) {
	t.Helper()
	var want []event.Arg
	flows := 0
	for _, a := range written {
		if a.Kind == event.ArgFlow {
			flows++
			continue
		}
		want = append(want, wantArg(a))
	}
	// Flows come back as flow args (renumbered by the reader), after the
	// others: JSON binds them outside "args".
	var readFlows int
	var plain []event.Arg
	for _, a := range read {
		if a.Kind == event.ArgFlow {
			readFlows++
			continue
		}
		plain = append(plain, a)
	}
	if readFlows != flows {
		t.Errorf("%q: %d flows read, %d written", name, readFlows, flows)
	}
	read = plain
	if len(want) != len(read) {
		t.Errorf("%q: args %+v, want %+v", name, read, want)
		return
	}
	for i, w := range want {
		g := read[i]
		same := g.Key == w.Key && g.Kind == w.Kind && g.Str == w.Str && (g.Num == w.Num || w.Kind == event.ArgFloat && math.IsNaN(w.Float()) && math.IsNaN(g.Float()))
		if w.Kind == event.ArgFloat && math.IsNaN(w.Float()) { // written as the string "NaN"
			same = g.Key == w.Key && g.Kind == event.ArgString && g.Str == "NaN"
		}
		if !same {
			t.Errorf("%q: arg %d = %+v, want %+v", name, i, g, w)
		}
	}
}

func TestRoundTripDropped(t *testing.T) {
	s := record(t, 8, func(ctx context.Context) {
		for i := range 20 {
			_, sp := annotate.Begin(ctx, "s"+strconv.Itoa(i))
			sp.End()
		}
	})
	if s.Meta.Dropped() == 0 {
		t.Fatal("nothing dropped")
	}
	got := mustRead(t, encode(t, s))
	if !slices.Equal(got.Meta.Drops, s.Meta.Drops) || got.Meta.MaxEvents != 8 {
		t.Errorf("drops %v max %d, want %v and 8", got.Meta.Drops, got.Meta.MaxEvents, s.Meta.Drops)
	}
	for _, r := range got.Events {
		if r.Kind() != event.KindSpan {
			t.Errorf("%s %q read back", r.Kind(), s.Name(r))
		}
	}
	if n := len(got.Events); n != 8 {
		t.Errorf("%d spans, want 8", n)
	}
	// The marker comes back when the snapshot is written again.
	if again := mustRead(t, encode(t, got)); !slices.Equal(again.Meta.Drops, s.Meta.Drops) || again.Meta.MaxEvents != 8 {
		t.Errorf("second round: drops %v max %d", again.Meta.Drops, again.Meta.MaxEvents)
	}
}

// readCases are hand-written files and the dump of what Read makes of
// them.
var readCases = []struct {
	name, in, want string
}{{
	name: "array",
	in: `[{"ph":"X","name":"a","pid":1,"tid":2,"ts":10,"dur":5},
	      {"ph":"X","name":"b","pid":1,"tid":2,"ts":11,"dur":2,"cat":"c"}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=5000
track 1 "tid 2" tid=2
span T1 "a" 0..5000
span T1 "b" 1000..3000 parent="a"@0
`,
}, {
	name: "object with trailing {}",
	in: `{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[
	  {"ph":"M","name":"process_name","pid":701,"args":{"name":"/host:CPU"}},
	  {"ph":"M","name":"thread_name","pid":701,"tid":3,"args":{"name":"worker"}},
	  {"ph":"M","name":"thread_sort_index","pid":701,"tid":3,"args":{"sort_index":3}},
	  {"ph":"X","name":"op","pid":701,"tid":3,"ts":100.5,"dur":0.25,"args":{"long_name":"x"}},
	  {}],"otherData":{"version":"1"}}`,
	want: `meta host="" pid=701 program="/host:CPU" dropped=0 max=0 wall=0 stop=250
track 1 "worker" tid=3
span T1 "op" 0..250 long_name=str:"x"
`,
}, {
	name: "B/E nesting, unmatched E, unclosed B",
	in: `[{"ph":"B","name":"outer","pid":1,"tid":1,"ts":0,"args":{"a":1}},
	  {"ph":"B","name":"inner","pid":1,"tid":1,"ts":1},
	  {"ph":"E","pid":1,"tid":1,"ts":2,"args":{"result":"ok"}},
	  {"ph":"E","pid":1,"tid":1,"ts":3},
	  {"ph":"E","pid":1,"tid":1,"ts":4},
	  {"ph":"B","name":"open","pid":1,"tid":1,"ts":5},
	  {"ph":"i","name":"last","pid":1,"tid":1,"ts":9,"s":"t"}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=9000
track 1 "tid 1" tid=1
instant T1 "last" 9000 parent="open"@5000
span T1 "inner" 1000..2000 parent="outer"@0 result=str:"ok"
span T1 "open" 5000..9000 unfinished
span T1 "outer" 0..3000 a=int:1
warn chrome: ignored 1 end events (E or e) with no open slice
`,
}, {
	name: "events out of order",
	in: `[{"ph":"E","pid":1,"tid":1,"ts":3},
	  {"ph":"X","name":"x","pid":1,"tid":1,"ts":1.5,"dur":1},
	  {"ph":"B","name":"b","pid":1,"tid":1,"ts":1}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=2000
track 1 "tid 1" tid=1
span T1 "b" 0..2000
span T1 "x" 500..1500 parent="b"@0
`,
}, {
	name: "string pid and tid",
	in: `[{"ph":"M","name":"thread_name","pid":"renderer","tid":"main","args":{"name":"CrRendererMain"}},
	  {"ph":"X","name":"a","pid":"renderer","tid":"main","ts":1,"dur":1},
	  {"ph":"X","name":"b","pid":"renderer","tid":"io","ts":1,"dur":1},
	  {"ph":"X","name":"c","pid":"7","tid":"8","ts":1,"dur":1}]`,
	want: `meta host="" pid=9 program="renderer" dropped=0 max=0 wall=0 stop=1000
track 1 "CrRendererMain" tid=10
track 2 "io" tid=11
track 3 "tid 8" tid=8
span T1 "a" 0..1000
span T2 "b" 0..1000
span T3 "c" 0..1000
`,
}, {
	name: "same tid in two processes",
	in: `[{"ph":"M","name":"process_name","pid":1,"args":{"name":"one"}},
	  {"ph":"M","name":"process_name","pid":2,"args":{"name":"two"}},
	  {"ph":"X","name":"a","pid":1,"tid":5,"ts":0,"dur":10},
	  {"ph":"X","name":"b","pid":2,"tid":5,"ts":1,"dur":1},
	  {"ph":"X","name":"c","pid":2,"tid":5,"ts":3,"dur":1}]`,
	want: `meta host="" pid=2 program="two" dropped=0 max=0 wall=0 stop=10000
track 1 "tid 5" tid=5
track 2 "tid 5" tid=5
span T1 "a" 0..10000
span T2 "b" 1000..2000
span T2 "c" 3000..4000
`,
}, {
	name: "overlapping spans",
	in: `[{"ph":"X","name":"outer","pid":1,"tid":1,"ts":0,"dur":100},
	  {"ph":"X","name":"left","pid":1,"tid":1,"ts":10,"dur":40},
	  {"ph":"X","name":"right","pid":1,"tid":1,"ts":20,"dur":40},
	  {"ph":"X","name":"in-right","pid":1,"tid":1,"ts":55,"dur":1},
	  {"ph":"X","name":"past-outer","pid":1,"tid":1,"ts":90,"dur":20},
	  {"ph":"X","name":"same","pid":1,"tid":1,"ts":0,"dur":100}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=110000
track 1 "tid 1" tid=1
span T1 "in-right" 55000..56000 parent="right"@20000
span T1 "left" 10000..50000 parent="same"@0
span T1 "outer" 0..100000
span T1 "past-outer" 90000..110000
span T1 "right" 20000..60000 parent="same"@0
span T1 "same" 0..100000 parent="outer"@0
`,
}, {
	name: "counters",
	in: `[{"ph":"C","name":"mem","pid":1,"ts":0,"args":{"heap":10,"stack":2.5}},
	  {"ph":"C","name":"ctr","pid":1,"ts":1,"args":{"value":3}},
	  {"ph":"C","name":"q","pid":1,"ts":2,"args":{"bytes":5,"note":"x"}},
	  {"ph":"C","name":"q","pid":1,"ts":3,"id":7,"args":{"bytes":6}},
	  {"ph":"C","name":"odd","pid":1,"ts":4,"args":{"v":"NaN"}},
	  {"ph":"C","name":"empty","pid":1,"ts":5,"args":{}}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=5000
track 1 process 1
counter "ctr" unit="" 1000 = 3 on T1
counter "mem heap" unit="" 0 = 10 on T1
counter "mem stack" unit="" 0 = 2.5 on T1
counter "odd" unit="v" 4000 = NaN on T1
counter "q id: 7" unit="bytes" 3000 = 6 on T1
counter "q" unit="bytes" 2000 = 5 on T1
warn chrome: skipped 1 counter events without numeric values
`,
}, {
	name: "counters of two processes",
	in: `[{"ph":"C","name":"mem","pid":1,"ts":0,"args":{"value":1}},
	  {"ph":"C","name":"mem","pid":2,"ts":0,"args":{"value":2}}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=0
track 1 process 1
track 2 process 2
counter "mem" unit="" 0 = 1 on T1
counter "mem" unit="" 0 = 2 on T2
`,
}, {
	name: "async",
	in: `[{"ph":"b","cat":"net","name":"fetch","id":"0x1","pid":1,"tid":1,"ts":0},
	  {"ph":"b","cat":"net","name":"fetch","id":"0x2","pid":1,"tid":2,"ts":1},
	  {"ph":"n","cat":"net","name":"fetch","id":"0x1","pid":1,"tid":1,"ts":2,"args":{"step":"dns"}},
	  {"ph":"b","cat":"net","name":"fetch","id":"0x1","pid":1,"tid":1,"ts":3},
	  {"ph":"e","cat":"net","name":"fetch","id":"0x1","pid":1,"tid":3,"ts":4},
	  {"ph":"e","cat":"net","name":"fetch","id":"0x1","pid":1,"tid":3,"ts":6,"args":{"status":200}},
	  {"ph":"e","cat":"net","name":"fetch","id":"0x2","pid":1,"tid":1,"ts":5},
	  {"ph":"b","cat":"gc","name":"sweep","id2":{"local":"0x1"},"pid":1,"ts":2},
	  {"ph":"e","cat":"gc","id2":{"local":"0x1"},"pid":1,"ts":3}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=6000
track 1 "fetch" tid=0
track 2 "fetch" tid=0
track 3 "sweep" tid=0
instant T1 "fetch" 2000 parent="fetch"@0 step=str:"dns"
span T1 "fetch" 0..6000 status=int:200
span T1 "fetch" 3000..4000 parent="fetch"@0
span T2 "fetch" 1000..5000
span T3 "sweep" 2000..3000
`,
}, {
	name: "flows",
	in: `[{"ph":"X","name":"send","pid":1,"tid":1,"ts":0,"dur":10},
	  {"ph":"X","name":"inner","pid":1,"tid":1,"ts":2,"dur":2},
	  {"ph":"s","name":"msg","cat":"ipc","id":5,"pid":1,"tid":1,"ts":3},
	  {"ph":"X","name":"recv","pid":1,"tid":2,"ts":20,"dur":10},
	  {"ph":"t","name":"msg","cat":"ipc","id":5,"pid":1,"tid":2,"ts":21},
	  {"ph":"f","name":"msg","cat":"ipc","id":5,"pid":1,"tid":3,"ts":35},
	  {"ph":"X","name":"done","pid":1,"tid":3,"ts":40,"dur":1},
	  {"ph":"f","name":"msg","cat":"ipc","id":6,"pid":1,"tid":3,"ts":40.5,"bp":"e"},
	  {"ph":"s","name":"msg","cat":"ipc","id":6,"pid":1,"tid":4,"ts":1},
	  {"ph":"X","name":"v2-out","pid":1,"tid":5,"ts":50,"dur":1,"bind_id":"0xa","flow_out":true},
	  {"ph":"B","name":"v2-in","pid":1,"tid":6,"ts":52,"bind_id":"0xa","flow_in":true},
	  {"ph":"E","pid":1,"tid":6,"ts":53}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=1 max=0 wall=0 stop=53000
track 1 "tid 1" tid=1
track 2 "tid 2" tid=2
track 3 "tid 3" tid=3
track 4 "tid 5" tid=5
track 5 "tid 6" tid=6
span T1 "inner" 2000..4000 parent="send"@0 flow=2
span T1 "send" 0..10000
span T2 "recv" 20000..30000 flow=2
span T3 "done" 40000..41000 flow=2
span T4 "v2-out" 50000..51000 flow=3
span T5 "v2-in" 52000..53000 flow=3
warn chrome: 1 flow events had no slice to bind to
warn chrome: dropped 1 flows with fewer than two ends bound to slices (of 3 in the file)
`,
}, {
	name: "flow ids reused",
	in: `[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},
	  {"ph":"s","name":"m","id":1,"pid":1,"tid":1,"ts":0.5},
	  {"ph":"f","name":"m","id":1,"pid":1,"tid":2,"ts":1,"bp":"e"},
	  {"ph":"X","name":"b","pid":1,"tid":2,"ts":1,"dur":1},
	  {"ph":"f","name":"m","id":1,"pid":1,"tid":2,"ts":1.5},
	  {"ph":"X","name":"c","pid":1,"tid":2,"ts":3,"dur":1},
	  {"ph":"s","name":"m","id":1,"pid":1,"tid":1,"ts":5},
	  {"ph":"X","name":"d","pid":1,"tid":1,"ts":5,"dur":1},
	  {"ph":"s","name":"m","id":1,"pid":1,"tid":1,"ts":7},
	  {"ph":"X","name":"e","pid":1,"tid":1,"ts":7,"dur":1},
	  {"ph":"f","name":"m","id":1,"pid":1,"tid":2,"ts":8},
	  {"ph":"X","name":"f","pid":1,"tid":2,"ts":9,"dur":1},
	  {"ph":"X","name":"g","pid":1,"tid":3,"ts":20,"dur":1,"bind_id":7,"flow_out":true},
	  {"ph":"X","name":"h","pid":1,"tid":3,"ts":22,"dur":1,"bind_id":7,"flow_in":true,"flow_out":true},
	  {"ph":"X","name":"i","pid":1,"tid":3,"ts":24,"dur":1,"bind_id":7,"flow_in":true},
	  {"ph":"X","name":"j","pid":1,"tid":3,"ts":26,"dur":1,"bind_id":7,"flow_in":true},
	  {"ph":"X","name":"k","pid":1,"tid":3,"ts":28,"dur":1,"bind_id":7,"flow_out":true},
	  {"ph":"X","name":"l","pid":1,"tid":3,"ts":30,"dur":1,"bind_id":7,"flow_out":true},
	  {"ph":"X","name":"m","pid":1,"tid":3,"ts":32,"dur":1,"bind_id":7,"flow_in":true}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=4 max=0 wall=0 stop=33000
track 1 "tid 1" tid=1
track 2 "tid 2" tid=2
track 3 "tid 3" tid=3
span T1 "a" 0..1000 flow=1
span T1 "d" 5000..6000
span T1 "e" 7000..8000 flow=4
span T2 "b" 1000..2000 flow=1
span T2 "c" 3000..4000
span T2 "f" 9000..10000 flow=4
span T3 "g" 20000..21000 flow=5
span T3 "h" 22000..23000 flow=5
span T3 "i" 24000..25000 flow=5
span T3 "j" 26000..27000
span T3 "k" 28000..29000
span T3 "l" 30000..31000 flow=8
span T3 "m" 32000..33000 flow=8
warn chrome: dropped 4 flows with fewer than two ends bound to slices (of 8 in the file)
`,
}, {
	name: "instants and scopes",
	in: `[{"ph":"X","name":"span","pid":1,"tid":1,"ts":0,"dur":10},
	  {"ph":"i","name":"thread","pid":1,"tid":1,"ts":5},
	  {"ph":"I","name":"old","pid":1,"tid":1,"ts":10},
	  {"ph":"i","name":"global","s":"g","ts":6},
	  {"ph":"R","name":"mark","pid":1,"tid":1,"ts":11,"s":"p"},
	  {"ph":"i","name":"alone","pid":1,"tid":9,"ts":7}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=11000
track 1 "tid 1" tid=1
track 2 "tid 9" tid=9
track 3 process 2
track 4 process 1
instant T1 "old" 10000 parent="span"@0
instant T1 "thread" 5000 parent="span"@0
instant T2 "alone" 7000
instant T3 "global" 6000
instant T4 "mark" 11000
span T1 "span" 0..10000
`,
}, {
	name: "fractional and string times",
	in: `[{"ph":"X","name":"a","pid":1,"tid":1,"ts":"1000.0004","dur":" 2.5 "},
	  {"ph":"X","name":"b","pid":1,"tid":1,"ts":1000.0015,"dur":1e-3},
	  {"ph":"X","name":"c","pid":1,"tid":1,"ts":1.0000255e3,"dur":0.0004999},
	  {"ph":"X","name":"d","pid":1,"tid":1,"ts":"1000.001","dur":null}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=2500
track 1 "tid 1" tid=1
span T1 "a" 0..2500
span T1 "b" 2..3 parent="a"@0
span T1 "c" 26..26 parent="a"@0
span T1 "d" 1..1 parent="a"@0
`,
}, {
	name: "args",
	in: `[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1,"args":{
	  "i":-12,"u":18446744073709551615,"huge":1e400,"f":0.5,"e":1E2,"t":true,"n":null,
	  "o":{"k": [1, 2]},"s":"\u00e9\n","step_num":"12","unfinished":true}}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=1000
track 1 "tid 1" tid=1
span T1 "a" 0..1000 unfinished step=12 i=int:-12 u=uint:18446744073709551615 huge=float:+Inf f=float:0.5 e=float:100 t=bool:true n=str:"null" o=str:"{\"k\":[1,2]}" s=str:"é\n"
`,
}, {
	name: "devprof markers",
	in: `{"traceEvents":[
	  {"ph":"M","name":"process_name","pid":42,"tid":0,"args":{"name":"prog"}},
	  {"ph":"X","pid":42,"tid":1,"ts":5,"dur":1,"name":"train","args":{"step_num":3}},
	  {"ph":"i","s":"p","pid":42,"ts":10,"name":"devprof: 5 events dropped (buffer full at max_events=100)","args":{"dropped_events":5}}],
	  "otherData":{"host":"h1","dropped_events":5,"start_unix_ns":1700000000000000000}}`,
	want: `meta host="h1" pid=42 program="prog" dropped=5 max=100 wall=1700000000000000000 stop=10000
track 1 "tid 1" tid=1
span T1 "train" 5000..6000 step=3
`,
}, {
	name: "missing closing bracket",
	in:   `[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},` + "\n",
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=1000
track 1 "tid 1" tid=1
span T1 "a" 0..1000
warn chrome: the event array has no closing bracket (the trace may have been cut short)
`,
}, {
	name: "unsupported phases",
	in: `[{"ph":"P","name":"sample","pid":1,"tid":1,"ts":0},
	  {"ph":"O","name":"snap","pid":1,"ts":1,"id":1},{"ph":"O","name":"snap","pid":1,"ts":2,"id":1},
	  {"ph":"X","name":"no-ts","pid":1,"tid":1},
	  {"ph":"XX","ts":1},
	  {"name":"no phase"}]`,
	want: `meta host="" pid=1 program="pid 1" dropped=0 max=0 wall=0 stop=0
warn chrome: skipped 5 events with unsupported phases: "(none)" ×1, "O" ×2, "P" ×1, "XX" ×1
warn chrome: skipped 1 events without a timestamp
`,
}, {
	name: "empty",
	in:   "\ufeff [ ] ",
	want: `meta host="" pid=0 program="" dropped=0 max=0 wall=0 stop=0
`,
}}

func TestReadCases(t *testing.T) {
	for _, c := range readCases {
		t.Run(c.name, func(t *testing.T) {
			s := mustRead(t, []byte(c.in))
			if got := dump(s); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if got := dump(mustRead(t, gz([]byte(c.in)))); got != c.want {
				t.Errorf("gzip: got\n%s", got)
			}
			// Every exporter's input: the snapshot lays out and writes.
			s.Layout()
			mustRead(t, encode(t, s))
		})
	}
}

func TestReadFile(t *testing.T) {
	s := devprofSession(t)
	path := filepath.Join(t.TempDir(), "host.trace.json.gz")
	if err := os.WriteFile(path, encode(t, s), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d1, d2 := dump(got), dump(mustRead(t, encode(t, s))); d1 != d2 {
		t.Errorf("ReadFile and Read differ:\n%s\n%s", d1, d2)
	}
	if _, err := ReadFile(path + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("[1]"), 0o644)
	if _, err := ReadFile(bad); err == nil || err.Error() != bad+": chrome: event is 1, want an object at byte offset 1" {
		t.Errorf("bad file: %v", err)
	}
}

func truncatedGzip(t testing.TB) []byte {
	z := encode(t, devprofSession(t))
	return z[:len(z)-10]
}

var errorCases = []struct{ in, want string }{
	{"", "chrome: empty input"},
	{" \n\t", "chrome: empty input"},
	{"x", "chrome: invalid character 'x' looking for beginning of value at byte offset 1"},
	{"  nul", "chrome: unexpected end of JSON input at byte offset 5"},
	{"  nulx", "chrome: invalid character 'x' in literal null (expecting 'l') at byte offset 6"},
	{`{"x":1 "traceEvents":[]}`, "chrome: invalid character '\"' after object key:value pair at byte offset 8"},
	{`{"x" 1}`, "chrome: invalid character '1' after object key at byte offset 6"},
	{`{x}`, "chrome: invalid character 'x' looking for beginning of object key string at byte offset 2"},
	{`"trace"`, "chrome: top-level value is a string, want an array of events or an object with traceEvents at byte offset 0"},
	{` 12`, "chrome: top-level value is a number, want an array of events or an object with traceEvents at byte offset 1"},
	{`{}`, `chrome: the top-level object has no "traceEvents"`},
	{`{"traceEvents" : {}}`, "chrome: traceEvents is an object, want an array at byte offset 17"},
	{`{"traceEvents":"x"}`, "chrome: traceEvents is a string, want an array at byte offset 15"},
	{`{"traceEvents":[],}`, "chrome: invalid character '}' looking for beginning of object key string at byte offset 19"},
	{`{"traceEvents":[] "x":1}`, "chrome: invalid character '\"' after object key:value pair at byte offset 19"},
	{`{"traceEvents":[{"ph":"X"}`, "chrome: unexpected end of JSON input at byte offset 26"},
	{`{"traceEvents":[{"ph":"X"}]`, "chrome: unexpected end of JSON input at byte offset 27"},
	{`[{"ph":"X","ts":1`, "chrome: unexpected end of JSON input at byte offset 17"},
	{`[{"ph":"X"} {"ph":"X"}]`, "chrome: invalid character '{' after array element at byte offset 13"},
	{`[{"ph":"X"}}`, "chrome: invalid character '}' after array element at byte offset 12"},
	{`[{"ph":"X"},]`, "chrome: invalid character ']' looking for beginning of value at byte offset 13"},
	{`[{"ph":"X",}]`, "chrome: invalid character '}' looking for beginning of object key string at byte offset 12"},
	{`[{"ph":"X"}, {"ph":"X" "ts":1}]`, "chrome: invalid character '\"' after object key:value pair at byte offset 24"},
	{"[{\"ph\":\"X\"}, {\"ph\":\"\x01\"}]", "chrome: invalid character '\\x01' in string literal at byte offset 21"},
	{`[{"ph":"X"}] x`, "chrome: invalid character 'x' after top-level value at byte offset 14"},
	{`{} x`, "chrome: invalid character 'x' after top-level value at byte offset 4"},
	{`[{"ph":"X"}] []`, "chrome: invalid character '[' after top-level value at byte offset 14"},
	{`{"traceEvents":[]}}`, "chrome: invalid character '}' after top-level value at byte offset 19"},
	{`[1]`, "chrome: event is 1, want an object at byte offset 1"},
	{`[{"ph":"X"}, null]`, "chrome: event is null, want an object at byte offset 13"},
	{`[{"ph":"X","ts":"abc"}]`, `chrome: "ts" is "abc", want a number of microseconds at byte offset 16`},
	{`[{"ph":"X","ts":true}]`, `chrome: "ts" is true, want a number of microseconds at byte offset 16`},
	{`[{"ph":"X","ts":1,"dur":[1]}]`, `chrome: "dur" is [1], want a number of microseconds at byte offset 24`},
	{`[{"ph":"X","ts":1e300}]`, `chrome: "ts" 1e300 is out of range at byte offset 16`},
	{`[{"ph":"X","ts":"-9999999999999999"}]`, `chrome: "ts" "-9999999999999999" is out of range at byte offset 16`},
	{`[{"ph":1}]`, `chrome: "ph" is 1, want a string at byte offset 7`},
	{`[{"ph":"X","name":{"a":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}}]`, `chrome: "name" is {"a":"bbbbbbbbbbbbbbbbbbbbbbbbbb..., want a string at byte offset 18`},
	{`[{"ph":"X","pid":[]}]`, `chrome: "pid" is [], want a number or a string at byte offset 17`},
	{`[{"ph":"X","tid":false}]`, `chrome: "tid" is false, want a number or a string at byte offset 17`},
	{`[{"ph":"X","args":[1]}]`, `chrome: "args" is [1], want an object at byte offset 18`},
	{`[{"ph":"s","flow_in":1}]`, `chrome: "flow_in" is 1, want a boolean at byte offset 21`},
	{"\x1f\x8b", "chrome: gzip header: unexpected EOF"},
	{strings.Repeat("[", 20000), "chrome: invalid character '[' exceeded max depth at byte offset 10002"},
	{`[{"ph":"X","name":"` + strings.Repeat("[", 20000) + `"}]`, ""}, // fine: inside a string
}

func TestReadErrors(t *testing.T) {
	for _, c := range errorCases {
		s, err := Read(strings.NewReader(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("%.40q: %v", c.in, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || s != nil {
			t.Errorf("%.40q:\n got %v\nwant %s", c.in, err, c.want)
		}
	}
	// Offsets count the decompressed bytes.
	_, err := Read(bytes.NewReader(gz([]byte(`[{"ph":"X","ts":"abc"}]`))))
	if err == nil || err.Error() != `chrome: "ts" is "abc", want a number of microseconds at byte offset 16` {
		t.Errorf("gzip: %v", err)
	}
	z := truncatedGzip(t)
	_, err = Read(bytes.NewReader(z))
	if err == nil || !strings.HasPrefix(err.Error(), "chrome: gzip: unexpected EOF at byte offset ") || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated gzip: %v", err)
	}
	z = encode(t, devprofSession(t))
	z[len(z)-6] ^= 0xff // the CRC
	if _, err = Read(bytes.NewReader(z)); !errors.Is(err, gzip.ErrChecksum) {
		t.Errorf("bad checksum: %v", err)
	}
}

// TestSyntaxOffsets checks that syntax errors are located where
// json.Unmarshal of the whole file locates them, although Read streams.
func TestSyntaxOffsets(t *testing.T) {
	valid := `{"traceEvents":[{"ph":"X","name":"a\"b","ts":1,"dur":2,"args":{"k":[1,{"x":null}]}},` + "\n" +
		`  {"ph":"i","ts":3,"s":"g"}, {}],"otherData":{"host":"h"},"metadata":[true,false,null]}`
	n := 0
	for i := 0; i < len(valid); i++ {
		for _, c := range []byte{'x', '}', ']', ',', ':', '"', '\\', '1', ' ', 0} {
			in := []byte(valid)
			in[i] = c
			var v any
			var se *json.SyntaxError
			if err := json.Unmarshal(in, &v); !errors.As(err, &se) {
				continue // still valid, or only truncated
			}
			n++
			_, err := Read(bytes.NewReader(in))
			want := fmt.Sprintf("chrome: %s at byte offset %d", se.Error(), se.Offset)
			// Read may stop earlier, at a value of the wrong type.
			if err == nil || err.Error() != want && !strings.Contains(err.Error(), ", want ") {
				t.Errorf("%q:\n got %v\nwant %s", in, err, want)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d malformed variants", n)
	}
}

// bigTrace returns a file of n spans on 4 threads, in the object form.
func bigTrace(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"traceEvents":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"ph":"X","cat":"op","name":"span %d","pid":1,"tid":%d,"ts":%d.%03d,"dur":%d,"args":{"i":%d,"s":"v\"%d"}}`,
			i%100, i%4, i/2, i%1000, 1+i%3, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestSyntaxOffsetsLarge checks offsets past the decoder's first buffers,
// plain and gzip.
func TestSyntaxOffsetsLarge(t *testing.T) {
	valid := bigTrace(5000)
	mustRead(t, valid)
	for _, at := range []int{len(valid) / 3, len(valid) / 2, len(valid) - 40} {
		in := bytes.Clone(valid)
		at += bytes.Index(in[at:], []byte(`"ph"`)) - 1
		in[at] = '#'
		var v any
		var se *json.SyntaxError
		if err := json.Unmarshal(in, &v); !errors.As(err, &se) {
			t.Fatalf("at %d: %v", at, err)
		}
		want := fmt.Sprintf("chrome: %s at byte offset %d", se.Error(), se.Offset)
		for _, data := range [][]byte{in, gz(in)} {
			if _, err := Read(bytes.NewReader(data)); err == nil || err.Error() != want {
				t.Errorf("at %d:\n got %v\nwant %s", at, err, want)
			}
		}
		in = valid[:at]
		want = fmt.Sprintf("chrome: unexpected end of JSON input at byte offset %d", at)
		if _, err := Read(bytes.NewReader(in)); err == nil || err.Error() != want {
			t.Errorf("cut at %d:\n got %v\nwant %s", at, err, want)
		}
	}
}

func TestMicros(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"1", 1000, true}, {"1.5", 1500, true},
		{"0.0005", 1, true}, {"0.0004999", 0, true}, {"-0.0005", -1, true},
		{"1234567.8915", 1234567892, true}, {"-1234567.8915", -1234567892, true}, {"1234567.89149", 1234567891, true}, {"1.5e3", 1500000, true}, {"15E-4", 2, true},
		{"+2", 2000, true}, {"007", 7000, true}, {".5", 500, true}, {"5.", 5000, true},
		{"4611686018427387.904", 1 << 62, true}, {"4611686018427387.905", 0, false},
		{"1e16", 0, false}, {"1e-400", 0, true}, {"1e999999999999999999999", 0, false},
		{"0.000000000000000000000000000001e30", 1000, true},
		{"1759000000000000.0001", 1759000000000000000, true},
		{"10000000000000000000000", 0, false},
	} {
		if !isNumber([]byte(c.in)) {
			t.Errorf("isNumber(%q) = false", c.in)
			continue
		}
		got, ok := micros([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("micros(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, s := range []string{"", "-", ".", "e5", "1e", "1e+", "1.2.3", "0x10", "1 2", "NaN", "Inf"} {
		if isNumber([]byte(s)) {
			t.Errorf("isNumber(%q) = true", s)
		}
	}
}

func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`[{"ph":"X","ts":0,"dur":1,"name":"` + strings.Repeat("n", 3*maxName) + `","args":{`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString(`}}`)
	for range maxOpen + 10 {
		b.WriteString(`,{"ph":"B","name":"deep","ts":1}`)
	}
	for range maxOpen + 12 {
		b.WriteString(`,{"ph":"E","ts":2}`)
	}
	b.WriteString(`]`)
	s := mustRead(t, []byte(b.String()))
	var deep int
	for _, r := range s.Events {
		switch s.Name(r) {
		case "deep":
			deep++
		default:
			if len(s.Name(r)) != maxName || r.NArgs() != 255 {
				t.Errorf("name of %d bytes, %d args", len(s.Name(r)), r.NArgs())
			}
		}
	}
	if deep != maxOpen {
		t.Errorf("%d nested spans kept, want %d", deep, maxOpen)
	}
	want := []event.Warning{
		{Source: "chrome", Code: "unmatched_end", Text: "chrome: ignored 2 end events (E or e) with no open slice"},
		{Source: "chrome", Code: "too_deep", Text: fmt.Sprintf("chrome: ignored 10 slices nested more than %d deep", maxOpen)},
		{Source: "chrome", Code: "args_lost", Text: "chrome: dropped 45 arguments beyond 255 on one event"},
	}
	if !slices.Equal(s.Meta.Warnings, want) {
		t.Errorf("warnings %q, want %q", s.Meta.Warnings, want)
	}
}

// fuzzSeeds returns devprof's own output, the hand-written cases and the
// error cases.
func fuzzSeeds(t testing.TB) [][]byte {
	z := encode(t, devprofSession(t))
	seeds := [][]byte{z, gunzip(t, z)}
	for _, c := range readCases {
		seeds = append(seeds, []byte(c.in))
	}
	for _, c := range errorCases {
		if len(c.in) < 1000 {
			seeds = append(seeds, []byte(c.in))
		}
	}
	return seeds
}

// FuzzRead's committed corpus (testdata/fuzz/FuzzRead) holds single events
// and cuts of the real H100 traces; the whole files are added from
// ../../testdata.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, path := range []string{realKineto, realJAX} {
		z, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(z)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Read(bytes.NewReader(data))
		if err != nil {
			if s != nil {
				t.Fatal("a snapshot and an error")
			}
			if !strings.HasPrefix(err.Error(), "chrome: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if err := checkSnapshot(s); err != nil {
			t.Fatal(err)
		}
		d := dump(s)
		if again, err := Read(bytes.NewReader(data)); err != nil || dump(again) != d {
			t.Fatalf("second read differs (err %v)", err)
		}
		if len(data) < 1<<16 && !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			if z, err := Read(bytes.NewReader(gz(data))); err != nil || dump(z) != d {
				t.Fatalf("gzipped read differs (err %v)", err)
			}
		}
		// Whatever was read can be written and read again.
		var out bytes.Buffer
		if err := Write(&out, s); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&out)
		if err != nil {
			t.Fatalf("reading what was written: %v", err)
		}
		if err := checkSnapshot(back); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMetaRoundTrip: warnings, notes and per-source drops written to a
// Chrome JSON file read back as the same structure.
func TestMetaRoundTrip(t *testing.T) {
	s := eventtest.MetaSnapshot()
	got := mustRead(t, encode(t, s))
	eventtest.CheckMeta(t, "chrome", got, s)
	if got.Meta.MaxEvents != s.Meta.MaxEvents {
		t.Errorf("max_events %d, want %d", got.Meta.MaxEvents, s.Meta.MaxEvents)
	}
}
