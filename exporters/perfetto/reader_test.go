package perfetto

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
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

func encode(t testing.TB, s *event.Snapshot, gz bool) []byte {
	t.Helper()
	return encodeWith(t, s, WriteOptions{Gzip: gz})
}

func encodeWith(t testing.TB, s *event.Snapshot, opts WriteOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, s, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mustRead(t testing.TB, data []byte) *Trace {
	t.Helper()
	tr, err := ReadTrace(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := checkTrace(tr); err != nil {
		t.Fatalf("inconsistent trace: %v", err)
	}
	return tr
}

// wantArgs is what the writer makes of a record's arguments.
func wantArgs(s *event.Snapshot, r *event.Record) []Arg {
	var out []Arg
	for _, a := range s.Args(r) {
		var v any
		switch a.Kind {
		case event.ArgInt:
			v = a.Int()
		case event.ArgUint:
			v = a.Num
		case event.ArgFloat:
			v = a.Float()
		case event.ArgBool:
			v = a.Bool()
		case event.ArgString:
			v = a.Str
		case event.ArgDuration:
			v = a.Duration().String()
		default:
			continue
		}
		out = append(out, Arg{a.Key, v})
	}
	if r.IsStep() {
		out = append(out, Arg{"step_num", r.StepNum()})
	}
	if _, fin := s.EndOf(r); !fin && r.Kind() == event.KindSpan {
		out = append(out, Arg{"unfinished", true})
	}
	return out
}

func sliceNamed(t testing.TB, tr *Trace, name string) (int, *Slice) {
	t.Helper()
	at := -1
	for i := range tr.Slices {
		if tr.Slices[i].Name == name {
			if at >= 0 {
				t.Fatalf("two slices named %q", name)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no slice named %q in %+v", name, tr.Slices)
	}
	return at, &tr.Slices[at]
}

func trackOf(t testing.TB, tr *Trace, uuid uint64) *Track {
	t.Helper()
	for i := range tr.Tracks {
		if tr.Tracks[i].UUID == uuid {
			return &tr.Tracks[i]
		}
	}
	t.Fatalf("no track %d", uuid)
	return nil
}

// checkSpans asserts that every span record of s came back as a slice with
// its name, times, arguments and parent.
func checkSpans(t *testing.T, s *event.Snapshot, tr *Trace) {
	t.Helper()
	spans := 0
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan {
			continue
		}
		spans++
		i, sl := sliceNamed(t, tr, s.Name(r))
		end, _ := s.EndOf(r)
		start := s.Meta.BootNanos(r.Start())
		if sl.Start != start || sl.Dur != s.Meta.BootNanos(end)-start {
			t.Errorf("%s: start %d dur %d, want %d %d", s.Name(r), sl.Start, sl.Dur, start, s.Meta.BootNanos(end)-start)
		}
		if want := wantArgs(s, r); !reflect.DeepEqual(sl.Args, want) {
			t.Errorf("%s: args %#v, want %#v", s.Name(r), sl.Args, want)
		}
		if p := s.Lookup(r.Parent()); p == nil {
			if sl.Parent != -1 {
				t.Errorf("%s: parent %d, want none", s.Name(r), sl.Parent)
			}
		} else if sl.Parent < 0 || tr.Slices[sl.Parent].Name != s.Name(p) {
			t.Errorf("%s: parent %d, want %s", s.Name(r), sl.Parent, s.Name(p))
		}
		if k := trackOf(t, tr, sl.Track).Kind; k != TrackThread {
			t.Errorf("%s on a %s track", s.Name(r), k)
		}
		_ = i
	}
	if spans != len(tr.Slices) {
		t.Errorf("%d slices, want %d", len(tr.Slices), spans)
	}
}

func TestReadDevprofTrace(t *testing.T) {
	var flow uint64
	s := record(t, 1<<16, func(ctx context.Context) {
		sctx, step := annotate.Step(ctx, "train", 7, annotate.Int("batch", 32))
		fctx, fw := annotate.Begin(sctx, "forward",
			annotate.Int("i", -5), annotate.Uint64("u", 1<<63+5), annotate.Float64("f", 0.25),
			annotate.Bool("b", true), annotate.String("s", "fc1"), annotate.Duration("d", 1500*time.Microsecond))
		_, mm := annotate.Begin(fctx, "matmul", annotate.Bool("b", false))
		mm.End()
		annotate.Instant(fctx, "checkpoint", annotate.String("why", "test"), annotate.Float64("x", math.Inf(1)))
		fw.End()
		flow = annotate.NewFlowID()
		_, send := annotate.Begin(sctx, "send", annotate.Flow(flow))
		send.End()
		_, recv := annotate.Begin(sctx, "recv", annotate.Flow(flow), annotate.String("empty", ""))
		recv.End()
		annotate.Counter{Name: "loss"}.Set(0.5)
		annotate.Counter{Name: "mem", Unit: "bytes"}.Set(1024)
		annotate.Counter{Name: "loss"}.Set(-0.25)
		annotate.Instant(ctx, "loose", annotate.Int64("k", math.MinInt64))
		step.End()
		annotate.Begin(ctx, "never-ended")
	})
	tr := mustRead(t, encode(t, s, false))
	checkSpans(t, s, tr)
	m := &s.Meta

	if tr.WallStart != m.Start.Wall || tr.WallStartTS != m.Start.Boot {
		t.Errorf("wall start %d at %d, want %d at %d", tr.WallStart, tr.WallStartTS, m.Start.Wall, m.Start.Boot)
	}
	if tr.Packets < len(s.Events) {
		t.Errorf("%d packets for %d events", tr.Packets, len(s.Events))
	}
	proc := tr.Tracks[0]
	if proc.Kind != TrackProcess || proc.Name != m.Program || proc.PID != int64(m.PID) {
		t.Errorf("process track %+v", proc)
	}
	for _, tk := range tr.Tracks[1:] {
		if tk.Kind == TrackThread && (tk.PID != int64(m.PID) || tk.TID == 0 || !strings.Contains(tk.Name, "(lane ")) {
			t.Errorf("thread track %+v", tk)
		}
	}

	// Nesting.
	_, train := sliceNamed(t, tr, "train")
	fi, fw := sliceNamed(t, tr, "forward")
	_, mm := sliceNamed(t, tr, "matmul")
	if train.Depth != 0 || fw.Depth != 1 || mm.Depth != 2 || mm.Parent != fi || fw.Track != train.Track || mm.Track != train.Track {
		t.Errorf("nesting: train %+v forward %+v matmul %+v", train, fw, mm)
	}
	_, send := sliceNamed(t, tr, "send")
	_, recv := sliceNamed(t, tr, "recv")
	if !reflect.DeepEqual(send.FlowIDs, []uint64{flow}) || !reflect.DeepEqual(recv.FlowIDs, []uint64{flow}) {
		t.Errorf("flows: send %v recv %v, want [%d]", send.FlowIDs, recv.FlowIDs, flow)
	}
	_, open := sliceNamed(t, tr, "never-ended")
	if open.Dur < 0 || open.Start+open.Dur != m.BootNanos(m.Stop.Mono) {
		t.Errorf("unfinished span ends at %d, want the stop time %d", open.Start+open.Dur, m.BootNanos(m.Stop.Mono))
	}

	// Instants: one on forward's row, one loose on the process.
	var byName = map[string]Instant{}
	for _, in := range tr.Instants {
		byName[in.Name] = in
	}
	for _, r := range s.Events {
		if r.Kind() != event.KindInstant {
			continue
		}
		in, ok := byName[s.Name(r)]
		if !ok {
			t.Errorf("instant %s missing", s.Name(r))
			continue
		}
		if in.TS != m.BootNanos(r.Start()) || !reflect.DeepEqual(in.Args, wantArgs(s, r)) {
			t.Errorf("instant %+v, want ts %d args %#v", in, m.BootNanos(r.Start()), wantArgs(s, r))
		}
	}
	if byName["checkpoint"].Track != fw.Track || byName["loose"].Track != proc.UUID || len(tr.Instants) != 2 {
		t.Errorf("instants on the wrong tracks: %+v", tr.Instants)
	}

	// Counters.
	var got []string
	for _, c := range tr.Counters {
		tk := trackOf(t, tr, c.Track)
		got = append(got, fmt.Sprintf("%s[%s]=%g@%d", tk.Name, tk.Unit, c.Value, c.TS))
		if tk.Kind != TrackCounter || tk.ParentUUID != proc.UUID || tk.PID != proc.PID {
			t.Errorf("counter track %+v", tk)
		}
	}
	var want []string
	for _, r := range s.Events {
		if r.Kind() == event.KindCounter {
			want = append(want, fmt.Sprintf("%s[%s]=%g@%d", s.Name(r), s.Args(r)[0].Key, s.Args(r)[0].Float(), m.BootNanos(r.Start())))
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counters\n got %q\nwant %q", got, want)
	}
}

// A parent whose two children overlap (begun from two goroutines) and a
// child that outlives its parent: the writer displaces the second child and
// the late one onto rows of their own and links them with parent flows.
func TestReadDisplacedChildren(t *testing.T) {
	s := record(t, 1<<16, func(ctx context.Context) {
		pctx, parent := annotate.Begin(ctx, "parent")
		aBegun, bBegun, aEnded := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, a := annotate.Begin(pctx, "child-a")
			close(aBegun)
			<-bBegun
			a.End()
			close(aEnded)
		}()
		go func() {
			defer wg.Done()
			<-aBegun
			bctx, b := annotate.Begin(pctx, "child-b", annotate.Int("worker", 2))
			_, g := annotate.Begin(bctx, "grandchild")
			g.End()
			close(bBegun)
			<-aEnded
			b.End()
		}()
		wg.Wait()
		_, late := annotate.Begin(pctx, "late")
		parent.End()
		time.Sleep(time.Microsecond)
		late.End()
	})
	tr := mustRead(t, encode(t, s, false))
	checkSpans(t, s, tr)

	pi, parent := sliceNamed(t, tr, "parent")
	_, a := sliceNamed(t, tr, "child-a")
	bi, b := sliceNamed(t, tr, "child-b")
	_, g := sliceNamed(t, tr, "grandchild")
	_, late := sliceNamed(t, tr, "late")
	if a.Track != parent.Track || a.Depth != 1 || a.Parent != pi {
		t.Errorf("child-a should nest under parent: %+v", a)
	}
	for _, c := range []*Slice{b, late} {
		if c.Track == parent.Track || c.Depth != 0 || c.Parent != pi {
			t.Errorf("%s should be displaced with parent %d: %+v", c.Name, pi, c)
		}
		if len(c.TerminatingFlowIDs) != 1 || c.TerminatingFlowIDs[0]&ParentFlowBit == 0 || !contains(parent.FlowIDs, c.TerminatingFlowIDs[0]) {
			t.Errorf("%s: terminating flows %x, parent flows %x", c.Name, c.TerminatingFlowIDs, parent.FlowIDs)
		}
	}
	if g.Track != b.Track || g.Depth != 1 || g.Parent != bi {
		t.Errorf("grandchild should nest under child-b: %+v", g)
	}
	if late.Start+late.Dur <= parent.Start+parent.Dur {
		t.Errorf("late should outlive its parent: %+v %+v", late, parent)
	}
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestReadGzipAndFile(t *testing.T) {
	s := record(t, 1<<16, func(ctx context.Context) {
		c, sp := annotate.Begin(ctx, "a", annotate.String("k", "v"))
		annotate.Instant(c, "i")
		sp.End()
		annotate.Counter{Name: "c", Unit: "%"}.Set(3)
	})
	plain := mustRead(t, encode(t, s, false))
	gz := encode(t, s, true)
	if gz[0] != 0x1f || gz[1] != 0x8b {
		t.Fatal("Write(Gzip) did not write gzip")
	}
	if got := mustRead(t, gz); !reflect.DeepEqual(got, plain) {
		t.Errorf("gzip read differs:\n%+v\n%+v", got, plain)
	}
	if len(plain.Slices) != 1 || len(plain.Instants) != 1 || len(plain.Counters) != 1 || trackOf(t, plain, plain.Counters[0].Track).Unit != "%" {
		t.Errorf("unexpected trace %+v", plain)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "x.pftrace.gz")
	if err := os.WriteFile(path, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTraceFile(path); err != nil || !reflect.DeepEqual(got, plain) {
		t.Errorf("ReadFile: %v", err)
	}
	bad := filepath.Join(dir, "bad.pftrace.gz")
	os.WriteFile(bad, gz[:len(gz)/2], 0o644)
	if _, err := ReadTraceFile(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": perfetto: reading gzip: ") {
		t.Errorf("ReadFile of a cut gzip file: %v", err)
	}
	if _, err := ReadTraceFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestReadDroppedMarker(t *testing.T) {
	s := record(t, 4, func(ctx context.Context) {
		for range 10 {
			_, sp := annotate.Begin(ctx, "x")
			sp.End()
		}
	})
	if s.Meta.Dropped() == 0 {
		t.Fatal("nothing dropped")
	}
	tr := mustRead(t, encode(t, s, false))
	if len(tr.Instants) != 1 {
		t.Fatalf("instants %+v", tr.Instants)
	}
	in := tr.Instants[0]
	want := []Arg{{"dropped_events", s.Meta.Dropped()}, {"max_events", int64(4)}, {"dropped_events.recorder", s.Meta.Dropped()}}
	if !strings.HasPrefix(in.Name, "devprof: ") || in.TS != s.Meta.BootNanos(s.Meta.Stop.Mono) || !reflect.DeepEqual(in.Args, want) || in.Track != tr.Tracks[0].UUID {
		t.Errorf("drop marker %+v", in)
	}
}

// ---------------------------------------------------------------------------
// Hand-built traces.

// pb is a minimal protobuf encoder for hand-built traces, apart from the
// writer's so that these tests hold the reader to the wire format itself.
type pb struct{ b []byte }

func (e *pb) tag(field, wt int)        { e.b = binary.AppendUvarint(e.b, uint64(field)<<3|uint64(wt)) }
func (e *pb) uint(field int, v uint64) { e.tag(field, wireVarint); e.b = binary.AppendUvarint(e.b, v) }
func (e *pb) int(field int, v int64)   { e.uint(field, uint64(v)) } // not zigzag
func (e *pb) fixed64(field int, v uint64) {
	e.tag(field, wireI64)
	e.b = binary.LittleEndian.AppendUint64(e.b, v)
}
func (e *pb) double(field int, v float64) { e.fixed64(field, math.Float64bits(v)) }
func (e *pb) string(field int, v string) {
	e.tag(field, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *pb) bool(field int, v bool) {
	if v {
		e.uint(field, 1)
	} else {
		e.uint(field, 0)
	}
}

// msg writes a nested message whose fields fn writes to e.
func msg(e *pb, field int, fn func()) {
	outer := e.b
	e.b = nil
	fn()
	inner := e.b
	e.b = outer
	e.string(field, string(inner))
}

// tb builds a trace packet by packet.
type tb struct{ b []byte }

func (t *tb) packet(fn func(e *pb)) *tb {
	var e pb
	fn(&e)
	t.b = append(t.b, fTracePacket<<3|wireBytes)
	t.b = binary.AppendUvarint(t.b, uint64(len(e.b)))
	t.b = append(t.b, e.b...)
	return t
}

func seq(e *pb, id uint32, flags uint64) {
	e.uint(pktSeqID, uint64(id))
	if flags != 0 {
		e.uint(pktSequenceFlags, flags)
	}
}

type entry struct {
	table int
	iid   uint64
	s     string
}

func interned(e *pb, entries ...entry) {
	msg(e, pktInternedData, func() {
		for _, x := range entries {
			msg(e, x.table, func() {
				e.uint(internIID, x.iid)
				e.string(internName, x.s)
			})
		}
	})
}

type clk struct {
	id, ts, mult uint64
	incremental  bool
}

func snapshot(e *pb, clocks ...clk) {
	msg(e, pktClockSnapshot, func() {
		for _, c := range clocks {
			msg(e, csClocks, func() {
				e.uint(clkID, c.id)
				e.uint(clkTimestamp, c.ts)
				if c.incremental {
					e.bool(rClkIncremental, true)
				}
				if c.mult != 0 {
					e.uint(rClkUnitMult, c.mult)
				}
			})
		}
	})
}

func plainTrack(e *pb, uuid uint64, name string) {
	msg(e, pktTrackDescriptor, func() {
		e.uint(tdUUID, uuid)
		if name != "" {
			e.string(tdName, name)
		}
	})
}

func counterTrack(e *pb, uuid uint64, name string) {
	msg(e, pktTrackDescriptor, func() {
		e.uint(tdUUID, uuid)
		e.string(tdName, name)
		msg(e, tdCounter, func() {})
	})
}

// ev writes a track event with a name (string) on track (0: none given).
func ev(e *pb, typ uint64, track uint64, name string, more ...func()) {
	msg(e, pktTrackEvent, func() {
		e.uint(teType, typ)
		if track != 0 {
			e.uint(teTrackUUID, track)
		}
		if name != "" {
			e.string(rTeName, name)
		}
		for _, f := range more {
			f()
		}
	})
}

// simple is a one-sequence trace: a cleared first packet, then fn's packets
// on sequence 1, with track 1 described as a plain track.
func simple(fn func(t *tb)) []byte {
	t := &tb{}
	t.packet(func(e *pb) { seq(e, 1, seqIncrementalStateCleared); plainTrack(e, 1, "t") })
	fn(t)
	return t.b
}

// incrementalClockTrace uses sequence-scoped incremental clocks (64) on two
// sequences, one in ns and one in µs.
func incrementalClockTrace() []byte {
	b := &tb{}
	// Sequence 1: clock 64 is incremental, in ns, and the default.
	b.packet(func(e *pb) {
		seq(e, 1, seqIncrementalStateCleared)
		msg(e, pktDefaults, func() {
			e.uint(rDefClockID, 64)
			msg(e, defTrackEventDefaults, func() { e.uint(tedTrackUUID, 10) })
		})
		interned(e, entry{idEventNames, 1, "a"}, entry{idEventNames, 2, "b"})
	})
	b.packet(func(e *pb) {
		seq(e, 1, seqNeedsIncrementalState)
		snapshot(e, clk{id: clockBoottime, ts: 1_000_000}, clk{id: 64, ts: 500, incremental: true})
	})
	b.packet(func(e *pb) { e.uint(pktTimestamp, 7); seq(e, 1, 0); plainTrack(e, 10, "row") }) // 507, not an event
	ts := func(d uint64) func(e *pb) {
		return func(e *pb) { e.uint(pktTimestamp, d); seq(e, 1, seqNeedsIncrementalState) }
	}
	event := func(d, typ, iid uint64) {
		b.packet(func(e *pb) {
			ts(d)(e)
			msg(e, pktTrackEvent, func() {
				e.uint(teType, typ)
				if iid != 0 {
					e.uint(teNameIID, iid)
				}
			})
		})
	}
	event(5, typeSliceBegin, 1) // 512
	event(3, typeSliceBegin, 2) // 515
	event(10, typeSliceEnd, 0)  // 525
	event(2, typeSliceEnd, 0)   // 527
	b.packet(func(e *pb) {      // an absolute time on BOOTTIME leaves clock 64 alone
		e.uint(pktTimestamp, 1_000_100)
		e.uint(rPktClockID, clockBoottime)
		seq(e, 1, seqNeedsIncrementalState)
		ev(e, typeInstant, 0, "abs")
	})
	b.packet(func(e *pb) { ts(20)(e); ev(e, typeInstant, 0, "rel") }) // 547

	// Sequence 2 has its own clock 64, in µs.
	b.packet(func(e *pb) {
		seq(e, 2, seqIncrementalStateCleared)
		msg(e, pktDefaults, func() { e.uint(rDefClockID, 64) })
		snapshot(e, clk{id: clockBoottime, ts: 2_000_000}, clk{id: 64, ts: 0, mult: 1000, incremental: true})
	})
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 3)
		seq(e, 2, seqNeedsIncrementalState)
		ev(e, typeInstant, 10, "us")
	})

	return b.b
}

func TestReadIncrementalClock(t *testing.T) {
	tr := mustRead(t, incrementalClockTrace())
	want := []Slice{
		{Track: 10, Name: "a", Start: 1_000_012, Dur: 15, Parent: -1},
		{Track: 10, Name: "b", Start: 1_000_015, Dur: 10, Depth: 1, Parent: 0},
	}
	if !reflect.DeepEqual(tr.Slices, want) {
		t.Errorf("slices\n got %+v\nwant %+v", tr.Slices, want)
	}
	wantI := []Instant{{Track: 10, Name: "rel", TS: 1_000_047}, {Track: 10, Name: "abs", TS: 1_000_100}, {Track: 10, Name: "us", TS: 2_003_000}}
	if !reflect.DeepEqual(tr.Instants, wantI) {
		t.Errorf("instants\n got %+v\nwant %+v", tr.Instants, wantI)
	}
	if tr.Packets != 11 || tr.WallStart != 0 {
		t.Errorf("packets %d wall %d", tr.Packets, tr.WallStart)
	}
}

const wall = 1_700_000_000_000_000_000

// clockConversionTrace stamps instants on MONOTONIC, REALTIME, BOOTTIME and a
// global custom clock.
func clockConversionTrace() []byte {
	b := &tb{}
	at := func(clock, ts uint64, name string) {
		b.packet(func(e *pb) {
			e.uint(pktTimestamp, ts)
			e.uint(rPktClockID, clock)
			seq(e, 1, 0)
			ev(e, typeInstant, 1, name)
		})
	}
	b.packet(func(e *pb) { seq(e, 1, seqIncrementalStateCleared); plainTrack(e, 1, "t") })
	at(clockMonotonic, 100, "deferred") // before any snapshot: converted at the end, by the first
	b.packet(func(e *pb) {
		seq(e, 1, 0)
		snapshot(e, clk{id: clockBoottime, ts: 10_000}, clk{id: clockMonotonic, ts: 4_000}, clk{id: clockRealtime, ts: wall})
	})
	at(clockMonotonic, 4_500, "mono")
	at(clockRealtime, wall+700, "real")
	// A suspend: BOOTTIME ran 4 µs ahead of MONOTONIC since.
	b.packet(func(e *pb) {
		seq(e, 1, 0)
		snapshot(e, clk{id: clockBoottime, ts: 50_000}, clk{id: clockMonotonic, ts: 40_000})
	})
	at(clockMonotonic, 45_000, "mono-after")
	at(clockMonotonic, 5_000, "mono-before") // still converted by the first snapshot
	// Clock 200 (global) only meets MONOTONIC: two hops.
	b.packet(func(e *pb) { seq(e, 1, 0); snapshot(e, clk{id: clockMonotonic, ts: 41_000}, clk{id: 200, ts: 7}) })
	at(200, 8, "custom")
	at(clockBoottime, 60_000, "boot")
	b.packet(func(e *pb) { e.uint(pktTimestamp, 70_000); seq(e, 1, 0); ev(e, typeInstant, 1, "default") })

	return b.b
}

func TestReadClockConversion(t *testing.T) {
	tr := mustRead(t, clockConversionTrace())
	got := map[string]int64{}
	for _, in := range tr.Instants {
		got[in.Name] = in.TS
	}
	want := map[string]int64{
		"deferred": 6_100, "mono": 10_500, "real": 10_700, "mono-after": 55_000, "mono-before": 11_000,
		"custom": 51_001, "boot": 60_000, "default": 70_000,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("timestamps\n got %v\nwant %v", got, want)
	}
	if tr.WallStart != wall || tr.WallStartTS != 10_000 {
		t.Errorf("wall start %d at %d", tr.WallStart, tr.WallStartTS)
	}
	if tr.Instants[0].Name != "deferred" || tr.Instants[len(tr.Instants)-1].Name != "default" {
		t.Errorf("instants not sorted by time: %+v", tr.Instants)
	}
}

// Slices on one track pair as a stack after sorting by (ts, file order),
// whatever the order in the file; an END at t closes before a BEGIN at t
// when it comes first in the file; a slice never closed keeps Dur -1.
func TestReadStackSemantics(t *testing.T) {
	data := simple(func(b *tb) {
		at := func(ts uint64, seqID uint32, typ uint64, name string, more ...func(e *pb)) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, ts)
				seq(e, seqID, 0)
				ev(e, typ, 1, name, func() {
					for _, f := range more {
						f(e)
					}
				})
			})
		}
		b.packet(func(e *pb) { seq(e, 2, seqIncrementalStateCleared) })
		at(30, 2, typeSliceEnd, "") // closes "inner" (file order does not matter)
		at(10, 1, typeSliceBegin, "outer", func(e *pb) {
			msg(e, teDebugAnnotations, func() { e.string(rDaName, "k"); e.int(daIntValue, 1) })
		})
		at(20, 1, typeSliceBegin, "inner")
		at(5, 1, typeSliceEnd, "") // nothing open: ignored
		at(40, 1, typeSliceEnd, "", func(e *pb) {
			msg(e, teDebugAnnotations, func() { e.string(rDaName, "end"); e.bool(daBoolValue, true) })
			e.fixed64(teFlowIDs, 9)
		})
		at(40, 1, typeSliceBegin, "next")
		at(50, 1, typeSliceBegin, "a")
		at(60, 1, typeSliceBegin, "b")
		at(70, 1, typeSliceEnd, "a") // a named END closes "a" and leaves "b" open
		at(80, 1, typeSliceBegin, "c")
	})
	tr := mustRead(t, data)
	want := []Slice{
		{Track: 1, Name: "outer", Start: 10, Dur: 30, Parent: -1, Args: []Arg{{"k", int64(1)}, {"end", true}}, FlowIDs: []uint64{9}},
		{Track: 1, Name: "inner", Start: 20, Dur: 10, Depth: 1, Parent: 0},
		{Track: 1, Name: "next", Start: 40, Dur: -1, Parent: -1},
		{Track: 1, Name: "a", Start: 50, Dur: 20, Depth: 1, Parent: 2},
		{Track: 1, Name: "b", Start: 60, Dur: -1, Depth: 2, Parent: 3},
		{Track: 1, Name: "c", Start: 80, Dur: -1, Depth: 3, Parent: 4},
	}
	if !reflect.DeepEqual(tr.Slices, want) {
		t.Errorf("slices\n got %+v\nwant %+v", tr.Slices, want)
	}
}

// foreignTrace is in the style of the Perfetto SDK and other writers:
// interned categories and annotation strings, nested annotations, descriptor
// names, extra and incremental counters, varint flow ids, compressed packets,
// unknown fields, data loss; and things the reader skips.
func foreignTrace() []byte {
	b := &tb{}
	b.packet(func(e *pb) { // unknown fields only
		e.uint(1000, 1)
		e.string(36, "0123456789abcdef")
	})
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 100)
		seq(e, 5, seqIncrementalStateCleared|seqNeedsIncrementalState)
		interned(e,
			entry{rIdEventCategories, 1, "cat"}, entry{idEventNames, 1, "Load"},
			entry{idDebugAnnotNames, 1, "url"}, entry{idDebugAnnotStrs, 1, "http://x"})
		msg(e, pktTrackDescriptor, func() {
			e.uint(tdUUID, 70)
			msg(e, tdProcess, func() { e.int(pdPid, 7); e.string(pdProcessName, "browser"); e.string(2, "cmdline") })
		})
	})
	desc := func(fn func(e *pb)) {
		b.packet(func(e *pb) {
			e.uint(pktTimestamp, 100)
			seq(e, 5, seqNeedsIncrementalState)
			msg(e, pktTrackDescriptor, func() { fn(e) })
		})
	}
	desc(func(e *pb) {
		e.uint(tdUUID, 71)
		e.string(tdName, "ignored")
		msg(e, tdThread, func() { e.int(thPid, 7); e.int(thTid, 9); e.string(thName, "main") })
	})
	desc(func(e *pb) { // thread time: builtin unit, under the thread
		e.uint(tdUUID, 72)
		e.uint(tdParentUUID, 71)
		e.string(rTdStaticName, "thread_time")
		msg(e, tdCounter, func() { e.uint(rCdType, rCounterThreadTimeNS) })
	})
	desc(func(e *pb) { // KiB, sent as increments
		e.uint(tdUUID, 73)
		e.uint(tdParentUUID, 70)
		e.string(tdName, "heap")
		msg(e, tdCounter, func() { e.uint(cdUnit, unitSizeBytes); e.int(rCdUnitMult, 1024); e.bool(rCdIncrement, true) })
	})
	desc(func(e *pb) {
		e.uint(tdUUID, 71)
		msg(e, tdThread, func() { e.int(thPid, 7); e.int(thTid, 9); e.string(thName, "renamed") })
	})

	evp := func(ts uint64, fn func(e *pb)) {
		b.packet(func(e *pb) {
			e.uint(pktTimestamp, ts)
			seq(e, 5, seqNeedsIncrementalState)
			msg(e, pktTrackEvent, func() { fn(e) })
		})
	}
	evp(200, func(e *pb) {
		e.uint(teType, typeSliceBegin)
		e.uint(teTrackUUID, 71)
		e.uint(rTeCategoryIIDs, 1)
		e.uint(teNameIID, 1)
		msg(e, teDebugAnnotations, func() { e.uint(daNameIID, 1); e.uint(daStringValueIID, 1) })
		msg(e, teDebugAnnotations, func() { e.string(rDaName, "ptr"); e.uint(rDaPointerValue, 0xdead) })
		msg(e, teDebugAnnotations, func() {
			e.string(rDaName, "dict")
			msg(e, rDaDictEntries, func() { e.string(rDaName, "a"); e.int(daIntValue, -1) })
			msg(e, rDaDictEntries, func() {
				e.string(rDaName, "b")
				msg(e, rDaDictEntries, func() { e.string(rDaName, "c"); e.bool(daBoolValue, true) })
			})
		})
		msg(e, teDebugAnnotations, func() {
			e.string(rDaName, "arr")
			msg(e, rDaArrayValues, func() { e.uint(daUintValue, 1) })
			msg(e, rDaArrayValues, func() { e.string(daStringValue, "two") })
			msg(e, rDaArrayValues, func() { msg(e, rDaDictEntries, func() { e.string(rDaName, "x"); e.double(daDoubleValue, 1.5) }) })
		})
		msg(e, teDebugAnnotations, func() { e.string(rDaName, "json"); e.string(rDaLegacyJSON, `{"a":1}`) })
		msg(e, teDebugAnnotations, func() { e.string(rDaName, "proto"); e.string(16, "pkg.Msg"); e.string(14, "\x08\x01") }) // skipped
		e.string(33, "source location")
		e.uint(rTeExtraCounters, 72)
		e.uint(rTeExtraCounterVals, 5000)
	})
	evp(250, func(e *pb) { // a legacy event (TYPE_UNSPECIFIED): skipped
		e.uint(teTrackUUID, 71)
		e.string(rTeName, "legacy")
	})
	evp(300, func(e *pb) {
		e.uint(teType, typeSliceEnd)
		e.uint(teTrackUUID, 71)
		e.uint(rTeCategoryIIDs, 1)
		e.uint(rTeExtraCounters, 72)
		e.uint(rTeExtraCounterVals, 9000)
	})
	for i, v := range []int64{1, 2, -1} {
		evp(uint64(400+i), func(e *pb) { e.uint(teType, typeCounter); e.uint(teTrackUUID, 73); e.int(teCounterValue, v) })
	}
	evp(500, func(e *pb) { // varint flow ids on an undescribed track
		e.uint(teType, typeInstant)
		e.uint(teTrackUUID, 99)
		e.string(rTeName, "flow")
		e.uint(rTeFlowIDsOld, 3)
		e.uint(rTeTermFlowIDsOld, 4)
	})
	b.packet(func(e *pb) { e.uint(pktTimestamp, 600); ev(e, typeInstant, 71, "no sequence: dropped") })

	// Data loss on sequence 5: packets that need incremental state are
	// skipped until the next clear, even with iids no table defines.
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 700)
		seq(e, 5, seqNeedsIncrementalState)
		e.uint(rPktPreviousDropped, 1)
		msg(e, pktTrackEvent, func() { e.uint(teType, typeInstant); e.uint(teTrackUUID, 71); e.uint(teNameIID, 42) })
	})
	evp(710, func(e *pb) { e.uint(teType, typeInstant); e.uint(teTrackUUID, 71); e.uint(teNameIID, 43) })

	// A compressed batch that clears the sequence again.
	inner := &tb{}
	inner.packet(func(e *pb) {
		e.uint(pktTimestamp, 800)
		seq(e, 5, seqIncrementalStateCleared|seqNeedsIncrementalState)
		interned(e, entry{idEventNames, 1, "after loss"})
		msg(e, pktTrackEvent, func() { e.uint(teType, typeInstant); e.uint(teTrackUUID, 71); e.uint(teNameIID, 1) })
	})
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(inner.b)
	zw.Close()
	b.packet(func(e *pb) { seq(e, 5, 0); e.string(rPktCompressed, z.String()) })

	return b.b
}

func TestReadForeignTrace(t *testing.T) {
	tr := mustRead(t, foreignTrace())
	wantTracks := []Track{
		{UUID: 70, Name: "browser", Kind: TrackProcess, PID: 7},
		{UUID: 71, Name: "main", Kind: TrackThread, PID: 7, TID: 9},
		{UUID: 72, ParentUUID: 71, Name: "thread_time", Kind: TrackCounter, PID: 7, TID: 9, Unit: "ns"},
		{UUID: 73, ParentUUID: 70, Name: "heap", Kind: TrackCounter, PID: 7, Unit: "bytes"},
		{UUID: 99, Name: "flow", Kind: TrackPlain},
	}
	if !reflect.DeepEqual(tr.Tracks, wantTracks) {
		t.Errorf("tracks\n got %+v\nwant %+v", tr.Tracks, wantTracks)
	}
	wantSlices := []Slice{{Track: 71, Name: "Load", Start: 200, Dur: 100, Parent: -1, Args: []Arg{
		{"url", "http://x"}, {"ptr", uint64(0xdead)}, {"dict.a", int64(-1)}, {"dict.b.c", true},
		{"arr[0]", uint64(1)}, {"arr[1]", "two"}, {"arr[2].x", 1.5}, {"json", `{"a":1}`},
	}}}
	if !reflect.DeepEqual(tr.Slices, wantSlices) {
		t.Errorf("slices\n got %+v\nwant %+v", tr.Slices, wantSlices)
	}
	// Flow 3 starts at "flow"; its terminating id 4 ends no flow going,
	// which trace_processor ignores (counted as flow_end_without_start).
	wantI := []Instant{{Track: 99, Name: "flow", TS: 500, FlowIDs: []uint64{3}}, {Track: 71, Name: "after loss", TS: 800}}
	if !reflect.DeepEqual(tr.Instants, wantI) {
		t.Errorf("instants\n got %+v\nwant %+v", tr.Instants, wantI)
	}
	wantC := []CounterSample{{72, 200, 5000}, {72, 300, 9000}, {73, 400, 1024}, {73, 401, 3072}, {73, 402, 2048}}
	if !reflect.DeepEqual(tr.Counters, wantC) {
		t.Errorf("counters\n got %+v\nwant %+v", tr.Counters, wantC)
	}
	if tr.Packets != 18 { // the compressed one and the one inside it count
		t.Errorf("%d packets, want 18", tr.Packets)
	}
}

// Sequence defaults (track and extra counter uuids), packed repeated fields
// and a primary_trace_clock other than BOOTTIME.
func TestReadDefaultsPackedAndPrimaryClock(t *testing.T) {
	packedVarints := func(vs ...uint64) string {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return string(b)
	}
	packedFixed := func(vs ...uint64) string {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return string(b)
	}
	b := &tb{}
	b.packet(func(e *pb) {
		seq(e, 1, seqIncrementalStateCleared)
		msg(e, pktDefaults, func() {
			msg(e, defTrackEventDefaults, func() {
				e.uint(tedTrackUUID, 1)
				e.string(rTedExtraCounters, packedVarints(8, 9))
			})
		})
		plainTrack(e, 1, "")
	})
	b.packet(func(e *pb) { counterTrack(e, 8, "a") })
	b.packet(func(e *pb) { counterTrack(e, 9, "b") })
	b.packet(func(e *pb) {
		seq(e, 1, 0)
		var tmp pb
		snapshot(&tmp, clk{id: clockBoottime, ts: 1000}, clk{id: clockMonotonic, ts: 500}, clk{id: clockRealtime, ts: 7777})
		msg(e, pktClockSnapshot, func() {
			e.uint(rCsPrimaryClock, clockMonotonic)
			e.b = append(e.b, tmp.b[2:]...) // the clocks, without snapshot's own tag and length
		})
	})
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 600) // no clock: already trace (MONOTONIC) time
		seq(e, 1, seqNeedsIncrementalState)
		ev(e, typeSliceBegin, 0, "x", func() { e.string(rTeExtraCounterVals, packedVarints(5, 6)) })
	})
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 1150)
		e.uint(rPktClockID, clockBoottime)
		seq(e, 1, seqNeedsIncrementalState)
		ev(e, typeInstant, 1, "i", func() {
			e.uint(rTeExtraDblCounters, 9)
			e.string(rTeExtraDblVals, packedFixed(math.Float64bits(2.5)))
		})
	})
	b.packet(func(e *pb) {
		e.uint(pktTimestamp, 1200)
		e.uint(rPktClockID, clockBoottime)
		seq(e, 1, seqNeedsIncrementalState)
		ev(e, typeSliceEnd, 0, "", func() { e.string(teFlowIDs, packedFixed(1, 2)) })
	})
	tr := mustRead(t, b.b)
	if want := []Slice{{Track: 1, Name: "x", Start: 600, Dur: 100, Parent: -1, FlowIDs: []uint64{1, 2}}}; !reflect.DeepEqual(tr.Slices, want) {
		t.Errorf("slices %+v", tr.Slices)
	}
	if want := []Instant{{Track: 1, Name: "i", TS: 650}}; !reflect.DeepEqual(tr.Instants, want) {
		t.Errorf("instants %+v", tr.Instants)
	}
	if want := []CounterSample{{8, 600, 5}, {9, 600, 6}, {9, 650, 2.5}}; !reflect.DeepEqual(tr.Counters, want) {
		t.Errorf("counters %+v", tr.Counters)
	}
	if tr.Tracks[0].Name != "x" || tr.WallStart != 7777 || tr.WallStartTS != 500 {
		t.Errorf("unnamed track %+v, wall %d at %d", tr.Tracks[0], tr.WallStart, tr.WallStartTS)
	}
}

var errForm = regexp.MustCompile(`^perfetto: packet \d+ \(offset \d+\): `)

func TestReadErrors(t *testing.T) {
	s := record(t, 1<<10, func(ctx context.Context) {
		c, sp := annotate.Begin(ctx, "a", annotate.String("k", "v"))
		annotate.Instant(c, "i")
		sp.End()
	})
	real := encode(t, s, false)
	twoPackets := (&tb{}).packet(func(e *pb) { seq(e, 1, seqIncrementalStateCleared) }).b // 6 bytes

	tests := []struct {
		name string
		data []byte
		want string // the whole message, or a part of it when not starting with "perfetto:"
	}{
		{"truncated", real[:len(real)-3], "protobuf: field 1 at byte 0: length"},
		{"truncated tag", append(bytes.Clone(twoPackets), 0x0a), "perfetto: packet 2 (offset 6): protobuf: field 1 at byte 0: length: varint truncated"},
		{"huge length", append(bytes.Clone(twoPackets), 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f), "perfetto: packet 2 (offset 6): protobuf: field 1 at byte 0: length 4294967295 overruns the 0 bytes left"},
		{"long varint", []byte{0x0a, 0x0b, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "perfetto: packet 1 (offset 0): protobuf: field 8 at byte 0: varint overflows 64 bits"},
		{"group", []byte{0x0a, 0x02, 0x0b, 0x0c}, "perfetto: packet 1 (offset 0): field 1 has unsupported wire type 3"},
		{"field zero", []byte{0x02, 0x00}, "perfetto: packet 1 (offset 0): protobuf: at byte 0: invalid field number 0"},
		{"json", []byte(` {"traceEvents": []}`), "perfetto: this is a JSON trace, not a Perfetto protobuf trace"},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}, "perfetto: zstd-compressed traces are not supported (decompress the file first)"},
		{"bad gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3}, "perfetto: reading gzip: "},
		{"sequence clock in an unsequenced snapshot", simple(func(b *tb) {
			b.packet(func(e *pb) { snapshot(e, clk{id: 6, ts: 1}, clk{id: 70, ts: 1}) })
		}), "clock_snapshot: sequence-scoped clock 70 in a snapshot without trusted_packet_sequence_id"},
		{"too many clocks", simple(func(b *tb) {
			b.packet(func(e *pb) {
				var cs []clk
				for i := range 65 {
					cs = append(cs, clk{id: uint64(128 + i)})
				}
				snapshot(e, cs...)
			})
		}), "clock_snapshot: more than 64 clocks"},
		{"corrupt compressed packets", simple(func(b *tb) {
			b.packet(func(e *pb) { seq(e, 1, 0); e.string(rPktCompressed, "\x78\x9cgarbage") })
		}), "perfetto: packet 2 (offset 14): compressed_packets: "},
		{"error inside compressed packets", simple(func(b *tb) {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			zw.Write([]byte{0x0a, 0x00, 0x0a, 0x05})
			zw.Close()
			b.packet(func(e *pb) { seq(e, 1, 0); e.string(rPktCompressed, z.String()) })
		}), "perfetto: packet 2 (offset 14): compressed packet 2 (offset 2): protobuf: field 1 at byte 0: length 5 overruns the 0 bytes left"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadTrace(bytes.NewReader(tc.data))
			if err == nil {
				t.Fatalf("no error; read %+v", tr)
			}
			msg := err.Error()
			if strings.HasPrefix(tc.want, "perfetto:") {
				if !strings.HasPrefix(msg, tc.want) {
					t.Fatalf("error %q\n       want %q", msg, tc.want)
				}
			} else if !strings.Contains(msg, tc.want) || !errForm.MatchString(msg) {
				t.Fatalf("error %q\n  want one with %q", msg, tc.want)
			}
		})
	}
}

// Events the reader cannot place are dropped and counted, as
// trace_processor counts them in its stats; an instant after them on the
// same sequence still loads.
func TestReadDrops(t *testing.T) {
	tests := []struct {
		name  string
		data  []byte
		stat  string
		first string // a part of Drop.First
	}{
		{"end on unknown track", simple(func(b *tb) {
			b.packet(func(e *pb) { e.uint(pktTimestamp, 1); seq(e, 1, 0); ev(e, typeSliceEnd, 5, "") })
		}), "track_event_end_on_unknown_track", "packet 2 (offset 14): slice end on unknown track 5"},
		{"undefined name iid", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				msg(e, pktTrackEvent, func() { e.uint(teType, typeSliceBegin); e.uint(teTrackUUID, 1); e.uint(teNameIID, 3) })
			})
		}), "interned_data_tokenizer_errors", "packet 2 (offset 14): track_event: event name iid 3 is not defined on this sequence"},
		{"undefined annotation name", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() { msg(e, teDebugAnnotations, func() { e.uint(daNameIID, 2); e.int(daIntValue, 1) }) })
			})
		}), "interned_data_tokenizer_errors", "track_event: debug annotation: name iid 2 is not defined on this sequence"},
		{"undefined string value", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() { msg(e, teDebugAnnotations, func() { e.string(rDaName, "k"); e.uint(daStringValueIID, 2) }) })
			})
		}), "interned_data_tokenizer_errors", "string value iid 2 is not defined"},
		{"undefined category", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() { e.uint(rTeCategoryIIDs, 4) })
			})
		}), "interned_data_tokenizer_errors", "category iid 4 is not defined"},
		{"counter on a plain track", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeCounter, 1, "", func() { e.int(teCounterValue, 1) })
			})
		}), "track_event_counter_invalid_track_uuid", "packet 2 (offset 14): track_event: counter value on plain track 1, which is not a counter track"},
		{"counter on an undescribed track", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeCounter, 8, "", func() { e.int(teCounterValue, 1) })
			})
		}), "track_event_counter_invalid_track_uuid", "counter value on track 8, which no earlier descriptor describes"},
		{"counter described too late", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeCounter, 8, "", func() { e.int(teCounterValue, 1) })
			})
			b.packet(func(e *pb) { counterTrack(e, 8, "c") })
		}), "track_event_counter_invalid_track_uuid", "counter value on track 8, which no earlier descriptor describes"},
		{"counter without value", simple(func(b *tb) {
			b.packet(func(e *pb) { counterTrack(e, 8, "c") })
			b.packet(func(e *pb) { e.uint(pktTimestamp, 1); seq(e, 1, 0); ev(e, typeCounter, 8, "") })
		}), "track_event_counter_missing_value", "counter event on track 8 without a value"},
		{"extra counter mismatch", simple(func(b *tb) {
			b.packet(func(e *pb) { counterTrack(e, 8, "c") })
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() { e.uint(rTeExtraCounters, 8); e.uint(rTeExtraCounterVals, 1); e.uint(rTeExtraCounterVals, 2) })
			})
		}), "track_event_extra_counter_track_uuid_mismatch", "2 extra counter values but 1 counter track uuids"},
		{"no timestamp", simple(func(b *tb) {
			b.packet(func(e *pb) { seq(e, 1, 0); ev(e, typeInstant, 1, "x") })
		}), "track_event_missing_timestamp", "packet 2 (offset 14): track event without a timestamp"},
		{"negative time", simple(func(b *tb) {
			b.packet(func(e *pb) { e.uint(pktTimestamp, 1<<63); seq(e, 1, 0); ev(e, typeInstant, 1, "x") })
		}), "track_event_invalid_timestamp", "packet 2 (offset 14): negative trace time -9223372036854775808"},
		{"incremental clock before its snapshot", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				e.uint(rPktClockID, 64)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x")
			})
		}), "clock_sync_failure_unknown_source_clock", "timestamp on clock 64 of sequence 1, which no clock snapshot of the sequence defines yet"},
		{"sequence clock without sequence", simple(func(b *tb) {
			b.packet(func(e *pb) { e.uint(pktTimestamp, 1); e.uint(rPktClockID, 64); plainTrack(e, 3, "") })
		}), "clock_sync_failure_unknown_source_clock", "timestamp on sequence-scoped clock 64 but no trusted_packet_sequence_id"},
		{"unconvertible clock", simple(func(b *tb) {
			b.packet(func(e *pb) { seq(e, 1, 0); snapshot(e, clk{id: clockMonotonic, ts: 1}, clk{id: clockRealtime, ts: 1}) })
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				e.uint(rPktClockID, clockMonotonic)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x")
			})
		}), "clock_sync_failure_no_path", "no clock snapshot path converts clock 3 to the trace clock 6"},
		{"clock going backwards", simple(func(b *tb) {
			b.packet(func(e *pb) {
				seq(e, 1, 0)
				snapshot(e, clk{id: clockBoottime, ts: 100}, clk{id: clockRealtime, ts: 1000})
			})
			b.packet(func(e *pb) {
				seq(e, 1, 0)
				snapshot(e, clk{id: clockBoottime, ts: 200}, clk{id: clockRealtime, ts: 500})
			})
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 600)
				e.uint(rPktClockID, clockRealtime)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x")
			})
		}), "clock_sync_failure_no_path", "no clock snapshot path converts clock 1 to the trace clock 6"},
		{"undefined clock", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				e.uint(rPktClockID, 300)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x")
			})
		}), "clock_sync_failure_unknown_source_clock", "timestamp on clock 300, which no clock snapshot defines"},
		{"needs state without sequence", simple(func(b *tb) {
			b.packet(func(e *pb) { e.uint(pktSequenceFlags, seqNeedsIncrementalState) })
		}), "packet_needs_incremental_state_missing_sequence_id", "packet needs incremental state but has no trusted_packet_sequence_id"},
		{"descriptor without uuid", simple(func(b *tb) {
			b.packet(func(e *pb) { msg(e, pktTrackDescriptor, func() { e.string(tdName, "x") }) })
		}), "track_descriptor_missing_uuid", "track_descriptor: descriptor without a uuid"},
		{"deep annotation", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() {
					var nest func(n int)
					nest = func(n int) {
						if n > 0 {
							msg(e, rDaDictEntries, func() { e.string(rDaName, "d"); nest(n - 1) })
						}
					}
					msg(e, teDebugAnnotations, func() { nest(70) })
				})
			})
		}), "track_event_parser_errors", "debug annotation: nested more than 64 deep"},
		{"annotation name bomb", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() {
					msg(e, teDebugAnnotations, func() {
						e.string(rDaName, strings.Repeat("n", 1<<16))
						for range 1 << 12 {
							msg(e, rDaArrayValues, func() { e.bool(daBoolValue, true) })
						}
					})
				})
			})
		}), "track_event_parser_errors", "debug annotation: flattened names of nested annotations take more memory than the file warrants"},
		{"bad packed flows", simple(func(b *tb) {
			b.packet(func(e *pb) {
				e.uint(pktTimestamp, 1)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "x", func() { e.string(teFlowIDs, "1234567") })
			})
		}), "track_event_parser_errors", "field 47: protobuf: at byte 0: packed fixed64 of 7 bytes, not a multiple of 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := append(bytes.Clone(tc.data), (&tb{}).packet(func(e *pb) {
				e.uint(pktTimestamp, 9)
				seq(e, 1, 0)
				ev(e, typeInstant, 1, "still here")
			}).b...)
			tr := mustRead(t, data)
			if len(tr.Drops) != 1 || tr.Drops[0].Stat != tc.stat || tr.Drops[0].Events != 1 || !strings.Contains(tr.Drops[0].First, tc.first) {
				t.Fatalf("drops %+v\n want one %s with %q", tr.Drops, tc.stat, tc.first)
			}
			if !strings.HasPrefix(tr.Drops[0].First, "packet ") {
				t.Errorf("first %q does not say where", tr.Drops[0].First)
			}
			if n := len(tr.Instants); n == 0 || tr.Instants[n-1].Name != "still here" {
				t.Errorf("the next event was lost: %+v", tr.Instants)
			}
			if tr.Dropped() != 1 {
				t.Errorf("Dropped() = %d", tr.Dropped())
			}
			s := tr.Snapshot()
			if got := s.Meta.Dropped(); got != 1 || s.Meta.Drops[0].Source != DropsReader {
				t.Errorf("snapshot drops %+v", s.Meta.Drops)
			}
			if len(s.Meta.Warnings) != 1 || !strings.Contains(s.Meta.Warnings[0].Text, tc.stat) || s.Meta.Warnings[0].Code != tc.stat {
				t.Errorf("snapshot warnings %+v", s.Meta.Warnings)
			}
		})
	}
}

// The error names the packet and offset of a real trace's last packet
// (packets written bare, so that the last is one of the file's).
func TestReadErrorLocatesPacket(t *testing.T) {
	s := record(t, 1<<10, func(ctx context.Context) {
		_, sp := annotate.Begin(ctx, "a")
		sp.End()
	})
	data := encodeWith(t, s, WriteOptions{Uncompressed: true})
	tr := mustRead(t, data)
	// Find where the last packet starts.
	off, last := 0, 0
	for off < len(data) {
		f, n, err := readField(data[off:])
		if err != nil || f.num != 1 {
			t.Fatal(err)
		}
		last = off
		off += n
	}
	_, err := ReadTrace(bytes.NewReader(data[:len(data)-1]))
	want := fmt.Sprintf("perfetto: packet %d (offset %d): protobuf: field 1 at byte 0: length ", tr.Packets, last)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q...", err, want)
	}
	// Cut at a packet boundary, the trace is just shorter.
	if tr2 := mustRead(t, data[:last]); tr2.Packets != tr.Packets-1 {
		t.Errorf("%d packets", tr2.Packets)
	}
}

func TestReadEmpty(t *testing.T) {
	tr := mustRead(t, nil)
	if !reflect.DeepEqual(tr, &Trace{}) {
		t.Errorf("%+v", tr)
	}
	var gz bytes.Buffer
	gzip.NewWriter(&gz).Close()
	if tr := mustRead(t, gz.Bytes()); tr.Packets != 0 {
		t.Errorf("%+v", tr)
	}
}
