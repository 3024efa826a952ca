package perfetto

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
	pf "github.com/devprof/devprof/internal/pftest"
)

// The traces of this file hold the rest of trace_processor's import rules
// (counter track names, timestamp overflow, flow chains, slices on counter
// tracks), encoded with pftest from the proto's field numbers; the
// expected rows are written from the rules, whose trace_processor source
// the comments name. Each trace is also in FuzzRead's corpus
// (testdata/fuzz/FuzzRead/rules2-*), which TestDecodeStreamsAsReadTraceReads
// reads too; TestRules2Corpus keeps those files equal to the traces.

var updateRules2 = flag.Bool("update-rules2", false, "rewrite the rules2-* files of FuzzRead's corpus")

// counterDesc is a CounterDescriptor (TrackDescriptor.counter, 8):
// type 1, unit 3 and unit_name 6 when not zero.
func counterDesc(typ, unit uint64, unitName string) pf.Field {
	var fs []pf.Field
	if typ != 0 {
		fs = append(fs, pf.Varint(1, typ))
	}
	if unit != 0 {
		fs = append(fs, pf.Varint(3, unit))
	}
	if unitName != "" {
		fs = append(fs, pf.String(6, unitName))
	}
	return pf.Msg(8, fs...)
}

// counterNamesTrace has counter tracks of every naming case under a
// thread, and a value on each.
func counterNamesTrace() []byte {
	const threadTime, instCount = 1, 2 // CounterDescriptor.BuiltinCounterType
	const unitBytes = 3                // CounterDescriptor.Unit (UNIT_SIZE_BYTES)
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(2, 1, "", pf.Thread(10, 11, "main")),
		pf.Track(20, 2, "", counterDesc(threadTime, unitBytes, "MHz")), // the type names it and gives its unit
		pf.Track(21, 2, "", counterDesc(instCount, 0, "")),
		pf.Track(22, 2, "cpu", counterDesc(threadTime, 0, "")), // a name wins over the type's
		pf.Track(23, 2, "", counterDesc(0, unitBytes, "MiB")),  // no type, no name: none; the unit enum wins over unit_name
		pf.Track(24, 2, "", counterDesc(0, 0, "W")),            // unit_name when the enum says nothing
		pf.Track(25, 2, "", counterDesc(0, 7, "")))             // an enum value past the known ones: no unit
	for i, uuid := range []uint64{20, 21, 22, 23, 24, 25} {
		// The event's name never names a counter track.
		at(t, uint64(100+i), pf.Event(pf.CounterType, uuid, "event-name", pf.CounterValue(int64(i+1))))
	}
	return t.Bytes()
}

// TestReadCounterTrackNames: trace_processor's track_event_tokenizer.cc
// (TokenizeTrackDescriptorPacket) names a counter track with no name
// after its builtin type, "thread_time" (COUNTER_THREAD_TIME_NS) or
// "thread_instruction_count" (COUNTER_THREAD_INSTRUCTION_COUNT), and
// leaves one of no type unnamed; a counter track is interned with its
// descriptor's name only (track_event_tracker.cc: DynamicName of the
// reservation's name, never the event's). The unit is the builtin type's
// (ns, count), else the unit enum's, else unit_name.
func TestReadCounterTrackNames(t *testing.T) {
	tr := mustRead(t, counterNamesTrace())
	type nu struct{ name, unit string }
	got := map[uint64]nu{}
	for _, k := range tr.Tracks {
		if k.Kind == TrackCounter {
			got[k.UUID] = nu{k.Name, k.Unit}
		}
	}
	want := map[uint64]nu{
		20: {"thread_time", "ns"}, 21: {"thread_instruction_count", "count"}, 22: {"cpu", "ns"},
		23: {"", "bytes"}, 24: {"", "W"}, 25: {"", ""},
	}
	if !maps.Equal(got, want) {
		t.Errorf("counter tracks (name, unit) %v, want %v", got, want)
	}
	if len(tr.Counters) != 6 || len(tr.Drops) != 0 {
		t.Errorf("%d counter samples, drops %+v; want 6 and none", len(tr.Counters), tr.Drops)
	}
	// The model's series carry the same names and units, on the thread.
	s := tr.Snapshot()
	series := map[string]string{}
	for _, r := range s.Events {
		if r.Kind() == event.KindCounter {
			series[s.Name(r)] = s.Args(r)[0].Key
		}
	}
	for _, name := range []string{"thread_time", "thread_instruction_count", "cpu"} {
		if _, ok := series[name]; !ok {
			t.Errorf("no counter series %q in the model (%v)", name, series)
		}
	}
	if series["thread_time"] != "ns" || series["thread_instruction_count"] != "count" {
		t.Errorf("series units %v", series)
	}
}

// slicesOnCounterTrace puts a slice, an instant inside it and an END on a
// counter track between two of its values.
func slicesOnCounterTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(30, 0, "gauge", pf.Counter(0, false)))
	at(t, 100, pf.Event(pf.CounterType, 30, "", pf.CounterValue(5)))
	at(t, 110, pf.Event(pf.Begin, 30, "work"))
	at(t, 120, pf.Event(pf.Instant, 30, "mark"))
	at(t, 150, pf.Event(pf.End, 30, ""))
	at(t, 200, pf.Event(pf.CounterType, 30, "", pf.CounterValue(7)))
	return t.Bytes()
}

// TestReadSlicesOnCounterTrack: trace_processor does not drop a
// BEGIN, END or INSTANT on a counter track: InternDescriptorTrackBegin,
// ...End and ...Instant (track_event_tracker.h) return the one track a
// counter uuid interns, so the slice tracker opens and closes slices on
// the counter track itself, beside its values.
func TestReadSlicesOnCounterTrack(t *testing.T) {
	tr := mustRead(t, slicesOnCounterTrace())
	if len(tr.Slices) != 1 || tr.Slices[0].Track != 30 || tr.Slices[0].Name != "work" || tr.Slices[0].Start != 110 || tr.Slices[0].Dur != 40 {
		t.Errorf("slices %+v, want work@30 [110, 150)", tr.Slices)
	}
	if len(tr.Instants) != 1 || tr.Instants[0].Track != 30 || tr.Instants[0].TS != 120 {
		t.Errorf("instants %+v, want mark@30 at 120", tr.Instants)
	}
	var vals []float64
	for _, c := range tr.Counters {
		vals = append(vals, c.Value)
	}
	if !slices.Equal(vals, []float64{5, 7}) {
		t.Errorf("counter values %v, want [5 7]", vals)
	}
	checkDrops(t, tr, map[string]int64{})
	// In the model the slice is a span and the instant is inside it.
	s := tr.Snapshot()
	var span *event.Record
	for _, r := range s.Events {
		if r.Kind() == event.KindSpan && s.Name(r) == "work" {
			span = r
		}
	}
	if span == nil {
		t.Fatal("no span work in the model")
	}
	for _, r := range s.Events {
		if r.Kind() == event.KindInstant && s.Name(r) == "mark" && s.Lookup(r.Parent()) != span {
			t.Errorf("instant mark not inside work")
		}
	}
}

// overflowTrace has timestamps whose arithmetic overflows: legacy
// timestamp_delta_us and timestamp_absolute_us, an incremental
// sequence-scoped clock, and a clock's unit_multiplier_ns; each is
// followed by good events whose place depends on the clock state the bad
// one left.
func overflowTrace() []byte {
	const maxUS = math.MaxInt64 / 1000 // the largest µs value whose ns fit
	delta := func(us int64) pf.Field { return pf.Int(1, us) }
	abs := func(us int64) pf.Field { return pf.Int(16, us) }
	ev := func(name string, more ...pf.Field) pf.Field { return pf.Event(pf.Instant, 1, name, more...) }
	t := &pf.Trace{}
	// BOOTTIME (the trace clock) reads MONOTONIC + 500.
	t.Packet(pf.ClockSnapshot(pf.Clock{ID: clockBoottime, TS: 1000}, pf.Clock{ID: clockMonotonic, TS: 500}))
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "t"), pf.Msg(44, pf.Int(1, 10), pf.Int(2, 11), pf.Int(6, 10)))
	t.Packet(pf.Seq(1), ev("a", delta(2)))                    // 10+2 µs: 12000 ns monotonic, 12500 trace
	t.Packet(pf.Seq(1), ev("delta-overflow", delta(maxUS+1))) // ×1000 overflows: the running time saturates, the event is dropped
	t.Packet(pf.Seq(1), ev("back", delta(-maxUS)))            // from the saturated time: MaxInt64 - maxUS·1000
	t.Packet(pf.Seq(1), ev("abs-overflow", abs(maxUS+1)))     // dropped
	t.Packet(pf.Seq(1), ev("abs-negative", abs(-1)))          // dropped
	t.Packet(pf.TS(3000), pf.Seq(1), ev("abs-zero", abs(0)))  // no absolute time: the packet's, 3000
	// Sequence 2: clock 64 counts deltas from 1000 (BOOTTIME 5000);
	// clock 65 counts µs, 5 of them at BOOTTIME 5000.
	t.Packet(pf.Seq(2), pf.Cleared(), pf.ClockSnapshot(pf.Clock{ID: clockBoottime, TS: 5000},
		pf.Clock{ID: 64, TS: 1000, Incremental: true}, pf.Clock{ID: 65, TS: 5, Mult: 1000}))
	inc := func(raw int64, name string) {
		t.Packet(pf.TS(uint64(raw)), pf.ClockID(64), pf.Seq(2), pf.Event(pf.Instant, 1, name))
	}
	inc(10, "i1")                      // 1010: 5010
	inc(math.MaxInt64, "inc-overflow") // the sum wraps: dropped, the clock keeps the wrapped sum
	inc(-math.MaxInt64+20, "i3")       // wraps back: 1030, 5030
	inc(5, "i4")                       // 1035, 5035
	// ×1000 overflows, and wraps to 384 ns: dropped, not placed there.
	t.Packet(pf.TS(math.MaxUint64/1000+1), pf.ClockID(65), pf.Seq(2), pf.Event(pf.Instant, 1, "mult-overflow"))
	t.Packet(pf.TS(8), pf.ClockID(65), pf.Seq(2), pf.Event(pf.Instant, 1, "m2")) // 8000 ns: 8000
	return t.Bytes()
}

// TestReadTimestampOverflow: trace_processor's arithmetic leaves a clock
// state behind an overflow, and the next good event lands where that
// state puts it. Legacy times (track_event_tokenizer.cc,
// TrackEventSequenceState::IncrementAndGetTrackEventTimeNs) multiply and
// add with saturation: the running time sticks at the bound and later
// deltas move it from there; an absolute time of 0 is no time (the
// packet's timestamp is used). An incremental clock
// (clock_synchronizer.h, ClockDomain::ToNs) sums in int64 arithmetic,
// which wraps, and a unit multiplier's product likewise. The event whose
// own time overflowed has no true time: it alone is dropped
// (track_event_invalid_timestamp), as is a negative one.
func TestReadTimestampOverflow(t *testing.T) {
	const maxUS = math.MaxInt64 / 1000
	tr := mustRead(t, overflowTrace())
	got := map[string]int64{}
	for _, in := range tr.Instants {
		got[in.Name] = in.TS
	}
	want := map[string]int64{
		"a": 12500, "back": math.MaxInt64 - maxUS*1000 + 500, "abs-zero": 3000,
		"i1": 5010, "i3": 5030, "i4": 5035, "m2": 8000,
	}
	if !maps.Equal(got, want) {
		t.Errorf("instants %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{"track_event_invalid_timestamp": 5})
	// Reading it again costs only those: the model has the rest.
	if d := tr.Snapshot().Meta.Dropped(); d != 5 {
		t.Errorf("snapshot dropped %d, want 5", d)
	}
}

// legacyBeforeSnapshotTrace has legacy µs times before any clock snapshot
// and after one.
func legacyBeforeSnapshotTrace() []byte {
	delta := func(us int64) pf.Field { return pf.Int(1, us) }
	abs := func(us int64) pf.Field { return pf.Int(16, us) }
	ev := func(name string, ts pf.Field) pf.Field { return pf.Event(pf.Instant, 1, name, ts) }
	return (&pf.Trace{}).
		Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "t"), pf.Msg(44, pf.Int(1, 10), pf.Int(2, 11), pf.Int(6, 10))).
		Packet(pf.Seq(1), ev("a", delta(2))). // 12000 ns monotonic, kept as is: nothing converts it yet
		Packet(pf.Seq(1), ev("b", abs(20))).  // 20000, likewise
		Packet(pf.ClockSnapshot(pf.Clock{ID: clockBoottime, TS: 1000}, pf.Clock{ID: clockMonotonic, TS: 500})).
		Packet(pf.Seq(1), ev("c", delta(1))). // 13000 monotonic: 13500 on the trace clock
		Bytes()
}

// TestReadLegacyTimeBeforeSnapshot: trace_processor converts a legacy
// time (track_event_tokenizer.cc: ToTraceTime of CLOCK_MONOTONIC) when it
// tokenizes it, by the snapshots seen so far, and keeps the time as it is
// when none converts it; a later snapshot does not move it.
func TestReadLegacyTimeBeforeSnapshot(t *testing.T) {
	tr := mustRead(t, legacyBeforeSnapshotTrace())
	got := map[string]int64{}
	for _, in := range tr.Instants {
		got[in.Name] = in.TS
	}
	if want := map[string]int64{"a": 12000, "b": 20000, "c": 13500}; !maps.Equal(got, want) {
		t.Errorf("instants %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{})
}

// extraCountersTrace has events carrying extra counter values, good and
// faulty.
func extraCountersTrace() []byte {
	extra := func(uuids []uint64, vals ...int64) []pf.Field {
		var fs []pf.Field
		for _, u := range uuids {
			fs = append(fs, pf.Varint(31, u)) // extra_counter_track_uuids
		}
		for _, v := range vals {
			fs = append(fs, pf.Int(12, v)) // extra_counter_values
		}
		return fs
	}
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Msg(59, pf.Msg(11, pf.Varint(31, 40))), // TracePacketDefaults: extra counters on 40
		pf.Track(1, 0, "t"), pf.Track(40, 0, "c40", pf.Counter(0, false)), pf.Track(41, 0, "inc", pf.Counter(10, true)))
	at(t, 100, pf.Event(pf.Instant, 1, "ok", append(extra(nil, 5), pf.Varint(45, 41), pf.Double(46, 2))...)) // 40 = 5; 41 = 2×10
	at(t, 110, pf.Event(pf.Instant, 1, "invalid", extra([]uint64{41, 1}, 1, 3)...))                          // 1 is no counter: dropped, after 41's sum moved
	at(t, 120, pf.Event(pf.Instant, 1, "next", extra([]uint64{41}, 1)...))                                   // 41 = 20 + 10 + 10
	at(t, 130, pf.Event(pf.Instant, 1, "nine", extra([]uint64{40, 40, 40, 40, 40, 40, 40, 40, 40}, 1, 1, 1, 1, 1, 1, 1, 1, 1)...))
	t.Packet(pf.Seq(2), pf.Cleared())
	t.Packet(pf.TS(140), pf.Seq(2), pf.Event(pf.Instant, 1, "no-uuids", extra(nil, 1)...)) // no defaults on sequence 2
	return t.Bytes()
}

// TestReadExtraCounters: trace_processor's tokenizer checks an event's
// extra counter values before the event goes on
// (track_event_tokenizer.cc, AddExtraCounterValues) and drops the whole
// event, slice or instant included, for values with no track uuids
// (track_event_extra_counter_missing_track_uuids), more values than
// uuids (..._track_uuid_mismatch), more than kMaxNumExtraCounters (8)
// values (..._exceeds_max) or a uuid that is no counter track
// (track_event_extra_counter_invalid_track). Each value is converted as
// it is checked (ConvertToAbsoluteCounterValue: scaled by
// unit_multiplier, then summed on an is_incremental track), so a sum
// moved by an event dropped later stays moved.
func TestReadExtraCounters(t *testing.T) {
	tr := mustRead(t, extraCountersTrace())
	var inst []string
	for _, in := range tr.Instants {
		inst = append(inst, in.Name)
	}
	if want := []string{"ok", "next"}; !slices.Equal(inst, want) {
		t.Errorf("instants %v, want %v", inst, want)
	}
	var got []string
	for _, c := range tr.Counters {
		got = append(got, fmt.Sprintf("%d@%d=%g", c.Track, c.TS, c.Value))
	}
	if want := []string{"40@100=5", "41@100=20", "41@120=40"}; !slices.Equal(got, want) {
		t.Errorf("counter samples %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{"track_event_extra_counter_invalid_track": 1, "track_event_extra_counter_exceeds_max": 1,
		"track_event_extra_counter_missing_track_uuids": 1})
}

// counterEventsTrace has TYPE_COUNTER events that trace_processor's
// checks take in order.
func counterEventsTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "t"), pf.Track(40, 0, "c40", pf.Counter(0, false)), pf.Track(41, 0, "inc", pf.Counter(0, true)))
	at(t, 100, pf.Event(pf.CounterType, 0, ""))                                                       // no track uuid (nor a default): missing_track_uuid
	at(t, 110, pf.Event(pf.CounterType, 99, ""))                                                      // no value, on no counter track: missing_value first
	at(t, 120, pf.Event(pf.CounterType, 1, "", pf.CounterValue(7), pf.Varint(31, 41), pf.Int(12, 5))) // not a counter track: dropped before its extra value moves 41's sum
	at(t, 130, pf.Event(pf.CounterType, 40, "", pf.CounterValue(3), pf.Legacy(pf.Phase('B'))))        // a counter whatever its phase
	at(t, 140, pf.Event(pf.Instant, 1, "x", pf.Varint(31, 41), pf.Int(12, 2)))                        // 41's sum: 2
	return t.Bytes()
}

// TestReadCounterEvents: trace_processor checks a TYPE_COUNTER event
// (track_event_tokenizer.cc) for a track uuid
// (track_event_counter_missing_track_uuid), then a value
// (..._missing_value), then a counter track (..._invalid_track_uuid),
// before its extra counter values, and its parser takes a counter before
// any legacy phase.
func TestReadCounterEvents(t *testing.T) {
	tr := mustRead(t, counterEventsTrace())
	var got []string
	for _, c := range tr.Counters {
		got = append(got, fmt.Sprintf("%d@%d=%g", c.Track, c.TS, c.Value))
	}
	if want := []string{"40@130=3", "41@140=2"}; !slices.Equal(got, want) {
		t.Errorf("counter samples %v, want %v", got, want)
	}
	if len(tr.Slices) != 0 {
		t.Errorf("slices %+v, want none", tr.Slices)
	}
	checkDrops(t, tr, map[string]int64{"track_event_counter_missing_track_uuid": 1, "track_event_counter_missing_value": 1,
		"track_event_counter_invalid_track_uuid": 1})
}

// flowChainsTrace has slices A..F on a thread and instant G, linked by
// flows of both versions.
func flowChainsTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(2, 1, "", pf.Thread(10, 11, "main")))
	slice := func(name string, from uint64, f ...pf.Field) {
		at(t, from, pf.Event(pf.Begin, 2, name, f...))
		at(t, from+100, pf.Event(pf.End, 2, ""))
	}
	slice("A", 100, pf.FlowID(5))                                     // v2 flow 5 starts
	slice("B", 300)                                                   //
	slice("C", 500, pf.FlowID(5))                                     // a middle slice: flow 5 steps through it
	slice("D", 700, pf.FlowID(6))                                     // flow 6 starts
	slice("E", 900, pf.TerminatingFlowID(5), pf.TerminatingFlowID(6)) // both end
	slice("F", 1100, pf.FlowID(6))                                    // 6 again after it ended: a new flow, with no other end
	at(t, 1300, pf.Event(pf.Instant, 2, "G", pf.FlowID(77)))          // a flow with one end
	v1 := func(ts uint64, ph byte, more ...pf.Field) {
		at(t, ts, pf.Event(pf.Unspecified, 2, "v1", pf.Category("c"), pf.Legacy(append([]pf.Field{pf.Phase(ph), pf.UnscopedID(9)}, more...)...)))
	}
	v1(150, 's')                       // flow v1 9 begins in A
	v1(350, 't')                       // steps in B
	v1(550, 'f', pf.BindToEnclosing()) // ends in C
	return t.Bytes()
}

// TestReadFlowChains: trace_processor links flows slice to slice
// (track_event_event_importer.h, MaybeParseTrackEventFlows, and
// flow_tracker.cc): a flow id a slice names begins a flow when none with
// that id is going, else steps it (the slice is the next link and the
// flow goes on from it); a terminating id ends the flow going and frees
// its id, so a later use begins a new flow. Flow v1 events
// (ParseFlowEventV1) begin (s), step (t) and end (f) a flow the same way
// through the slices they bind to. In a Perfetto input devprof did not
// write, a flow left with one end is dropped from the model and counted,
// as the Chrome reader does.
func TestReadFlowChains(t *testing.T) {
	tr := mustRead(t, flowChainsTrace())
	if got, want := flowsBetween(tr), []string{"[A B C]", "[A C E]", "[D E]", "[F]", "[G]"}; !slices.Equal(got, want) {
		t.Errorf("flows %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{})
	s := tr.Snapshot()
	ends := map[uint64][]string{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				ends[a.Num] = append(ends[a.Num], s.Name(r))
			}
		}
	}
	var chains []string
	for _, names := range ends {
		slices.Sort(names)
		chains = append(chains, fmt.Sprint(names))
	}
	slices.Sort(chains)
	if want := []string{"[A B C]", "[A C E]", "[D E]"}; !slices.Equal(chains, want) {
		t.Errorf("model flows %v, want %v (the one-ended ones dropped)", chains, want)
	}
	var warned bool
	for _, w := range s.Meta.Warnings {
		warned = warned || w.Code == "flow_one_ended" && strings.Contains(w.Text, "dropped 2 flows")
	}
	if !warned || s.Meta.Dropped() != 2 {
		t.Errorf("dropped %d, warnings %+v; want the 2 one-ended flows counted", s.Meta.Dropped(), s.Meta.Warnings)
	}
}

// programTwinTrace is a Perfetto file as devprof wrote one of a model
// with a process that shares the program's pid (100) before it wrote them
// as one: that process moved to pid 101, labelled with its pid, with a
// thread and a slice; the program has a thread of its own.
func programTwinTrace() []byte {
	proc := func(pid int64, name string, labels ...string) pf.Field {
		fs := []pf.Field{pf.Int(1, pid), pf.String(6, name)}
		for _, l := range labels {
			fs = append(fs, pf.String(8, l)) // ProcessDescriptor.process_labels
		}
		return pf.Msg(3, fs...)
	}
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Track(1, 0, "", proc(100, "trainer", "devprof host=h")),
		pf.Track(2, 0, "", proc(101, "python3", "CPU", ProcessLabelPID+"100")),
		pf.Track(3, 1, "", pf.Thread(100, 102, "lane")),
		pf.Track(4, 2, "", pf.Thread(101, 7, "MainThread")))
	at(t, 100, pf.Event(pf.Begin, 3, "train"))
	at(t, 200, pf.Event(pf.End, 3, ""))
	at(t, 120, pf.Event(pf.Begin, 4, "forward"))
	at(t, 180, pf.Event(pf.End, 4, ""))
	return t.Bytes()
}

// processPIDs counts a trace's process tracks by pid.
func processPIDs(tr *Trace) map[int64]int {
	n := map[int64]int{}
	for _, k := range tr.Tracks {
		if k.Kind == TrackProcess {
			n[k.PID]++
		}
	}
	return n
}

// TestConvertShowsOneProcessPerPID: a model process whose pid is the
// program's own (Kineto's busiest process, read from Chrome JSON, or a
// Perfetto file devprof wrote of one) is the same source process: written
// again it is the program's one process track, not a second process (a
// pid is one process in trace_processor: a second track with it is taken
// for pid reuse), and read back the model holds it, its thread and its
// slice as before. Perfetto -> model -> Perfetto -> model.
func TestConvertShowsOneProcessPerPID(t *testing.T) {
	src := mustRead(t, programTwinTrace())
	s1 := src.Snapshot()
	if s1.Meta.PID != 100 || len(s1.Processes) != 1 || s1.Processes[0].PID != 100 || s1.Processes[0].Name != "python3" {
		t.Fatalf("read: program pid %d, processes %+v; want pid 100 and python3 with pid 100", s1.Meta.PID, s1.Processes)
	}
	var buf bytes.Buffer
	if err := Write(&buf, s1, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	written := mustRead(t, buf.Bytes())
	for pid, n := range processPIDs(written) {
		if n != 1 {
			t.Errorf("written: pid %d has %d process tracks, want 1", pid, n)
		}
	}
	if n := len(processPIDs(written)); n != 1 {
		t.Errorf("written: %d processes (%v), want 1", n, processPIDs(written))
	}
	s2 := written.Snapshot()
	p1, t1, sp1, f1 := eventtest.ProcessFacts(s1, true)
	p2, t2, sp2, f2 := eventtest.ProcessFacts(s2, true)
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"processes", p2, p1}, {"threads", t2, t1}, {"spans", sp2, sp1}, {"flows", f2, f1}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s read back:\n got %q\nwant %q", c.what, c.got, c.want)
		}
	}
	// Written once more, it is the same file's processes.
	var again bytes.Buffer
	if err := Write(&again, s2, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := processPIDs(mustRead(t, again.Bytes())); !maps.Equal(got, processPIDs(written)) {
		t.Errorf("written again: processes %v, want %v", got, processPIDs(written))
	}

	// The real Kineto trace: python3 (620) is the program and a process.
	f, err := os.Open("../../testdata/real-gpu/kineto-h100-libwork.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kin, err := chrome.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := Write(&buf, kin, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	kw := mustRead(t, buf.Bytes())
	for pid, n := range processPIDs(kw) {
		if n != 1 {
			t.Errorf("Kineto written: pid %d has %d process tracks, want 1", pid, n)
		}
	}
	// No process moved off the program's pid: python3 is shown once.
	for _, k := range kw.Tracks {
		if k.Kind == TrackProcess && slices.Contains(k.Labels, ProcessLabelPID+strconv.Itoa(kin.Meta.PID)) {
			t.Errorf("Kineto written: process %d %q is the program's pid %d again", k.PID, k.Name, kin.Meta.PID)
		}
	}
}

// rules2Traces are the traces of this file, by the name of their corpus
// file.
func rules2Traces() map[string][]byte {
	return map[string][]byte{
		"counter-names":      counterNamesTrace(),
		"slices-on-counter":  slicesOnCounterTrace(),
		"timestamp-overflow": overflowTrace(),
		"flow-chains":        flowChainsTrace(),
		"program-twin":       programTwinTrace(),
		"legacy-no-snapshot": legacyBeforeSnapshotTrace(),
		"extra-counters":     extraCountersTrace(),
		"counter-events":     counterEventsTrace(),
	}
}

// TestRules2Corpus keeps the rules2-* files of FuzzRead's corpus equal to
// the traces of this file (go test -run TestRules2Corpus -update-rules2
// writes them), so that the fuzz target and the streaming test read them.
func TestRules2Corpus(t *testing.T) {
	for name, data := range rules2Traces() {
		path := filepath.Join("testdata", "fuzz", "FuzzRead", "rules2-"+name)
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if *updateRules2 {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s is not the trace %s (%v): run go test -run TestRules2Corpus -update-rules2", path, name, err)
		}
	}
}

// TestRules2TracesConvert: each trace of this file converts (Snapshot,
// Write) to a trace the Perfetto checker passes (scripts/test), and
// reading that back keeps its slices and counter samples, and the model's
// instants.
func TestRules2TracesConvert(t *testing.T) {
	for name, data := range rules2Traces() {
		t.Run(name, func(t *testing.T) {
			tr := mustRead(t, data)
			s := tr.Snapshot()
			var buf bytes.Buffer
			if err := Write(&buf, s, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), name+".pftrace")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			conformance.Export(t, "rules2-"+name, path, s)
			back := mustRead(t, buf.Bytes())
			if len(back.Slices) != len(tr.Slices) || len(back.Counters) != len(tr.Counters) {
				t.Errorf("written back: %d slices, %d counters; want %d, %d", len(back.Slices), len(back.Counters), len(tr.Slices), len(tr.Counters))
			}
			instants := func(s *event.Snapshot) []string {
				var out []string
				for _, r := range s.Events {
					if r.Kind() == event.KindInstant {
						out = append(out, fmt.Sprintf("%s@%d", s.Name(r), r.Start()))
					}
				}
				slices.Sort(out)
				return out
			}
			if got, want := instants(back.Snapshot()), instants(s); !slices.Equal(got, want) {
				t.Errorf("written back: instants %v, want %v", got, want)
			}
		})
	}
}
