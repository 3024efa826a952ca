package perfetto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/devprof/devprof/internal/conformance"
	pf "github.com/devprof/devprof/internal/pftest"
)

// Tracks of pf.ForeignForms.
const (
	ffProc    = pf.ForeignProc
	ffThread  = pf.ForeignThread
	ffQueue   = pf.ForeignQueue
	ffUnnamed = pf.ForeignUnnamed
	ffCPU     = pf.ForeignCPU
	ffMem     = pf.ForeignMem
)

func foreignForms() []byte { return pf.ForeignForms() }

func TestReadForeignForms(t *testing.T) {
	tr := mustRead(t, foreignForms())
	uuidOf := func(name string) uint64 {
		for _, k := range tr.Tracks {
			if k.Name == name {
				return k.UUID
			}
		}
		t.Fatalf("no track %q in %+v", name, tr.Tracks)
		return 0
	}
	async, global := uuidOf("req"), uuidOf("gx")
	if p := trackOf(t, tr, async); p.ParentUUID != ffProc || p.PID != 10 {
		t.Errorf("local-id async track %+v: want it under process 10", p)
	}
	if g := trackOf(t, tr, global); g.ParentUUID != 0 || async == global {
		t.Errorf("global-id async track %+v", g)
	}
	if n := trackOf(t, tr, ffUnnamed).Name; n != "first-name" {
		t.Errorf("unnamed track named %q, want its first event's name", n)
	}
	type sl struct {
		track       uint64
		name        string
		start, dur  int64
		depth       int
		flows, term []uint64
	}
	want := []sl{
		{ffThread, "outer", 1000, 8000, 0, nil, nil},
		{ffThread, "work", 2000, 2000, 1, []uint64{7}, nil},
		{ffThread, "inner", 2000, 1000, 2, nil, nil},
		{ffProc, "p-slice", 3000, 500, 0, nil, nil},
		{ffQueue, "q", 3000, 200, 0, []uint64{7}, nil},
		{ffUnnamed, "first-name", 4000, 100, 0, []uint64{9}, nil},
		{async, "req", 5000, 2000, 0, nil, nil},
		{global, "gx", 5000, 3000, 0, nil, nil},
	}
	var got []sl
	for _, s := range tr.Slices {
		got = append(got, sl{s.Track, s.Name, s.Start, s.Dur, s.Depth, s.FlowIDs, s.TerminatingFlowIDs})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slices\n got %+v\nwant %+v", got, want)
	}
	type in struct {
		track uint64
		name  string
		ts    int64
		flows []uint64
	}
	wantIn := []in{
		{ffThread, "mark-t", 2500, nil},
		{uuidOf("Global legacy instants"), "mark-g", 2600, nil},
		{ffProc, "mark-p", 2700, nil},
		{ffQueue, "qi", 4200, []uint64{9}},
		{ffQueue, "old-a", 4300, []uint64{11}},
		{ffUnnamed, "old-b", 4400, []uint64{11}},
		{ffQueue, "lone", 4500, []uint64{13}},
		{async, "step", 6000, nil},
		{ffThread, "no-direction", 9600, nil},
	}
	var gotIn []in
	for _, i := range tr.Instants {
		gotIn = append(gotIn, in{i.Track, i.Name, i.TS, i.FlowIDs})
	}
	if !reflect.DeepEqual(gotIn, wantIn) {
		t.Errorf("instants\n got %+v\nwant %+v", gotIn, wantIn)
	}
	wantC := []CounterSample{{ffCPU, 1000, 5}, {ffMem, 1000, 3 * 1024}, {ffCPU, 2000, 2.5}, {ffMem, 2000, 7 * 1024}}
	if !reflect.DeepEqual(tr.Counters, wantC) {
		t.Errorf("counters\n got %+v\nwant %+v", tr.Counters, wantC)
	}
	if c, m := trackOf(t, tr, ffCPU), trackOf(t, tr, ffMem); c.PID != 10 || c.TID != 11 || m.PID != 10 || m.TID != 0 {
		t.Errorf("counter tracks %+v, %+v: want them under their thread and process", c, m)
	}
	stats := map[string]int64{}
	for _, d := range tr.Drops {
		stats[d.Stat] = d.Events
	}
	wantStats := map[string]int64{"legacy_event_phase_unsupported": 1, "flow_without_direction": 1, "track_event_invalid_timestamp": 1}
	if !reflect.DeepEqual(stats, wantStats) {
		t.Errorf("drops %+v, want %v", tr.Drops, wantStats)
	}

	// The model: every slice a span of its own track, the flows with two
	// ends (7, 9, 11) kept and the one with one end (13) dropped and
	// counted with the reader's drops.
	s := tr.Snapshot()
	if got := s.Meta.Dropped(); got != 4 {
		t.Errorf("snapshot drops %+v, want 4 (3 events and a one-ended flow)", s.Meta.Drops)
	}
	// The converted output passes the Perfetto checker.
	var buf bytes.Buffer
	if err := Write(&buf, s, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "foreign.pftrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "foreign-forms", path, s)
	back := mustRead(t, buf.Bytes())
	if len(back.Slices) != len(tr.Slices) || len(back.Counters) != len(tr.Counters) {
		t.Errorf("written back: %d slices, %d counters; want %d, %d", len(back.Slices), len(back.Counters), len(tr.Slices), len(tr.Counters))
	}
}

// TestReadTrackRenamed: a descriptor re-sent with another name for the
// same uuid keeps the first name on a track that merges with its
// siblings by name (the default), and gives the last one on a track that
// merges with none (SIBLING_MERGE_BEHAVIOR_NONE, field 15 = 2), as
// trace_processor names them; an unnamed track takes a later
// description's name before its first event's.
func TestReadTrackRenamed(t *testing.T) {
	none := pf.Varint(15, 2)
	tr := mustRead(t, (&pf.Trace{}).
		Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "first"), pf.Track(2, 0, "first", none), pf.Track(3, 0, "")).
		Packet(pf.TS(10), pf.Seq(1), pf.Event(pf.Instant, 3, "event-name")).
		Packet(pf.Seq(1), pf.Track(1, 0, "second"), pf.Track(2, 0, "second", none), pf.Track(3, 0, "described")).
		Packet(pf.Seq(1), pf.Track(1, 0, ""), pf.Track(2, 0, "", none)).
		Bytes())
	for uuid, want := range map[uint64]string{1: "first", 2: "second", 3: "described"} {
		if got := trackOf(t, tr, uuid).Name; got != want {
			t.Errorf("track %d named %q, want %q", uuid, got, want)
		}
	}
}

// legacyTimestampsTrace stamps instants with legacy timestamps; see
// TestReadLegacyTimestamps.
func legacyTimestampsTrace() []byte {
	delta := func(us int64) pf.Field { return pf.Int(1, us) }
	abs := func(us int64) pf.Field { return pf.Int(16, us) }
	ev := func(name string, ts pf.Field) pf.Field { return pf.Event(pf.Instant, 1, name, ts) }
	return (&pf.Trace{}).
		Packet(pf.ClockSnapshot(pf.Clock{ID: clockBoottime, TS: 1000}, pf.Clock{ID: clockMonotonic, TS: 500})).
		Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "t"), pf.Msg(44, pf.Int(1, 10), pf.Int(2, 11), pf.Int(6, 10))).
		Packet(pf.Seq(1), ev("a", delta(2))). // 10+2 µs → 12000 ns monotonic
		Packet(pf.Seq(1), ev("b", delta(3))). // 15000
		Packet(pf.Seq(1), ev("c", abs(20))).  // 20000, the running time stays 15000
		Packet(pf.Seq(1), ev("d", delta(1))). // 16000
		Packet(pf.Seq(2), pf.Cleared()).
		Packet(pf.Seq(2), ev("no-baseline", delta(1))).
		Bytes()
}

// TestReadLegacyTimestamps: TrackEvent.timestamp_delta_us adds to the
// running time a legacy ThreadDescriptor (TracePacket.thread_descriptor,
// 44) starts with reference_timestamp_us (6); timestamp_absolute_us is a
// one-off that does not move it; both are µs on CLOCK_MONOTONIC,
// converted to the trace clock (BOOTTIME) by the snapshot. A delta on a
// sequence without a baseline is dropped and counted.
func TestReadLegacyTimestamps(t *testing.T) {
	tr := mustRead(t, legacyTimestampsTrace())
	var got []string
	for _, in := range tr.Instants {
		got = append(got, fmt.Sprintf("%s@%d", in.Name, in.TS))
	}
	want := []string{"a@12500", "b@15500", "d@16500", "c@20500"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instants %v, want %v", got, want)
	}
	if len(tr.Drops) != 1 || tr.Drops[0].Stat != "track_event_skipped_timestamp_delta_without_valid_state" || tr.Drops[0].Events != 1 {
		t.Errorf("drops %+v", tr.Drops)
	}
}
