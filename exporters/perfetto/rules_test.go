package perfetto

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	pf "github.com/devprof/devprof/internal/pftest"
)

// The traces of this file each hold one group of trace_processor's
// import rules, encoded with pftest from the proto's field numbers; the
// expected slices, flows and drops are written from the rules (the
// comments say which), not from what the reader gives.

// at appends a packet of sequence 1 at ts.
func at(t *pf.Trace, ts uint64, f ...pf.Field) {
	t.Packet(append([]pf.Field{pf.TS(ts), pf.Seq(1)}, f...)...)
}

func legacy(track uint64, name string, f ...pf.Field) pf.Field {
	return pf.Event(pf.Unspecified, track, name, pf.Legacy(f...))
}

// dropStats returns the reader's drops by stat.
func dropStats(tr *Trace) map[string]int64 {
	m := map[string]int64{}
	for _, d := range tr.Drops {
		m[d.Stat] = d.Events
	}
	return m
}

// sliceNames lists the slices as "name@track".
func sliceNames(tr *Trace) []string {
	var out []string
	for _, s := range tr.Slices {
		out = append(out, fmt.Sprintf("%s@%d", s.Name, s.Track))
	}
	return out
}

func checkDrops(t *testing.T, tr *Trace, want map[string]int64) {
	t.Helper()
	if got := dropStats(tr); !maps.Equal(got, want) {
		t.Errorf("drops %v, want %v (%+v)", got, want, tr.Drops)
	}
}

// legacyScopeTrace has legacy events on a process track (1, pid 10), a
// custom track under it (3), a thread track (2, pid 10 tid 11) and a
// custom track under the thread (4).
func legacyScopeTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Track(1, 0, "", pf.Process(10, "app")),
		pf.Track(2, 1, "", pf.Thread(10, 11, "main")),
		pf.Track(3, 1, "queue"),
		pf.Track(4, 2, "sub"))
	at(t, 100, legacy(1, "b-on-process", pf.Phase('B')))                  // dropped: B needs a thread
	at(t, 110, legacy(3, "x-on-custom", pf.Phase('X'), pf.DurationUS(1))) // dropped: X needs a thread
	at(t, 120, legacy(1, "i-thread-scope", pf.Phase('I')))                // dropped: a thread-scoped instant needs a thread
	at(t, 130, legacy(1, "i-global", pf.Phase('i'), pf.InstantScope(pf.ScopeGlobal)))
	at(t, 140, legacy(3, "i-process", pf.Phase('I'), pf.InstantScope(pf.ScopeProcess)))
	// On sequence 1, whose descriptors include a thread's, an event naming
	// no track is that thread's; on sequence 2, which has none, it is on
	// no process: a process-scoped instant there is dropped.
	at(t, 150, legacy(0, "i-process-thread", pf.Phase('I'), pf.InstantScope(pf.ScopeProcess)))
	t.Packet(pf.Seq(2), pf.Cleared())
	t.Packet(pf.TS(160), pf.Seq(2), legacy(0, "i-process-nowhere", pf.Phase('I'), pf.InstantScope(pf.ScopeProcess)))
	at(t, 200, legacy(2, "b-on-thread", pf.Phase('B')))
	at(t, 210, legacy(4, "x-under-thread", pf.Phase('X'), pf.DurationUS(1)))
	at(t, 2000, legacy(2, "", pf.Phase('E')))
	return t.Bytes()
}

// TestReadLegacyNeedsThread: legacy slices (B, E, X) and thread-scoped
// instants go on a thread (its track or one under it); on any other
// track trace_processor drops them (track_event_parser_errors), as it
// drops a process-scoped instant with no process. Global and
// process-scoped instants need no thread. A thread's TrackDescriptor
// also makes it its sequence's thread, for events that name no track.
func TestReadLegacyNeedsThread(t *testing.T) {
	tr := mustRead(t, legacyScopeTrace())
	if got, want := sliceNames(tr), []string{"b-on-thread@2", "x-under-thread@4"}; !slices.Equal(got, want) {
		t.Errorf("slices %v, want %v", got, want)
	}
	var inst []string
	for _, in := range tr.Instants {
		inst = append(inst, in.Name)
	}
	if want := []string{"i-global", "i-process", "i-process-thread"}; !slices.Equal(inst, want) {
		t.Errorf("instants %v, want %v", inst, want)
	}
	checkDrops(t, tr, map[string]int64{"track_event_parser_errors": 4})
	if d := tr.Snapshot().Meta.Dropped(); d != 4 {
		t.Errorf("snapshot dropped %d, want 4", d)
	}
}

// legacyThreadTrace gives sequence 1 a legacy ThreadDescriptor (pid 20,
// tid 21) and sequence 2 one with pid 0.
func legacyThreadTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.LegacyThread(20, 21), pf.Track(5, 0, "custom"))
	at(t, 100, pf.Event(pf.Begin, 0, "typed"))                                                         // no track_uuid: the thread
	at(t, 300, pf.Event(pf.End, 0, ""))                                                                //
	at(t, 150, legacy(0, "legacy-x", pf.Phase('X'), pf.DurationUS(0)))                                 // the thread, nested in "typed"
	at(t, 160, pf.Event(pf.Instant, 5, "on-custom"))                                                   // its own track
	at(t, 170, pf.Event(pf.Instant, 0, "explicit-zero", pf.Varint(11, 0)))                             // track_uuid 0 given to a typed event: the default track
	at(t, 180, pf.Event(pf.CounterType, 0, "", pf.CounterValue(1)))                                    // a counter needs a track uuid: dropped
	at(t, 190, pf.Event(pf.Unspecified, 0, "zero-legacy", pf.Varint(11, 0), pf.Legacy(pf.Phase('I')))) // 0 given to a legacy phase: the thread
	t.Packet(pf.Seq(2), pf.Cleared(), pf.LegacyThread(0, 5))
	t.Packet(pf.TS(400), pf.Seq(2), pf.Event(pf.Instant, 0, "swapper")) // pid 0 is the swapper's: dropped
	t.Packet(pf.Seq(3), pf.LegacyThread(30, 31))                        // incremental state not valid yet: ignored
	return t.Bytes()
}

// TestReadLegacyThreadDescriptor: an event that names no track (or names
// track 0 with a legacy phase) is on the thread of its sequence's legacy
// ThreadDescriptor; a typed event naming track 0 stays on the default
// track; pid or tid 0 (the swapper's) drops the event; a descriptor
// while the sequence's state is invalid is ignored and counted.
func TestReadLegacyThreadDescriptor(t *testing.T) {
	tr := mustRead(t, legacyThreadTrace())
	var thread *Track
	for i := range tr.Tracks {
		if tr.Tracks[i].Kind == TrackThread {
			thread = &tr.Tracks[i]
		}
	}
	if thread == nil || thread.PID != 20 || thread.TID != 21 {
		t.Fatalf("thread track %+v, want pid 20 tid 21 (tracks %+v)", thread, tr.Tracks)
	}
	procs := 0
	for _, k := range tr.Tracks {
		if k.Kind == TrackProcess && k.PID == 20 {
			procs++
		}
	}
	if procs != 1 {
		t.Errorf("%d process tracks of pid 20, want 1", procs)
	}
	want := []string{fmt.Sprintf("typed@%d", thread.UUID), fmt.Sprintf("legacy-x@%d", thread.UUID)}
	if got := sliceNames(tr); !slices.Equal(got, want) {
		t.Errorf("slices %v, want %v", got, want)
	}
	if tr.Slices[1].Depth != 1 {
		t.Errorf("legacy-x at depth %d, want 1 (inside typed)", tr.Slices[1].Depth)
	}
	got := map[string]uint64{}
	for _, in := range tr.Instants {
		got[in.Name] = in.Track
	}
	if w := map[string]uint64{"on-custom": 5, "explicit-zero": 0, "zero-legacy": thread.UUID}; !maps.Equal(got, w) {
		t.Errorf("instants on tracks %v, want %v", got, w)
	}
	checkDrops(t, tr, map[string]int64{"track_event_counter_missing_track_uuid": 1, "track_event_parser_errors": 1,
		"thread_descriptor_skipped_incremental_state_invalid": 1})
	s := tr.Snapshot()
	if s.Meta.PID != 20 {
		t.Errorf("program pid %d, want 20 (the descriptor's process)", s.Meta.PID)
	}
}

// overrideTrace has legacy events with pid_override and tid_override, on
// a sequence with a thread (pid 20, tid 21) and on one without.
func overrideTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.LegacyThread(20, 21))
	at(t, 100, legacy(0, "pid-override", pf.Phase('I'), pf.PidOverride(40)))
	at(t, 110, legacy(0, "tid-override", pf.Phase('X'), pf.DurationUS(1), pf.TidOverride(25)))
	t.Packet(pf.Seq(2), pf.Cleared())
	t.Packet(pf.TS(120), pf.Seq(2), legacy(0, "pid-override-2", pf.Phase('I'), pf.PidOverride(50)))
	t.Packet(pf.TS(130), pf.Seq(2), legacy(0, "tid-override-alone", pf.Phase('I'), pf.TidOverride(7))) // no thread to take the pid from: dropped
	return t.Bytes()
}

// TestReadLegacyOverrides: a legacy event's pid_override puts it on a
// thread of that process (trace_processor's synthetic tid, -1), with or
// without a sequence thread; its tid_override on that thread of the
// sequence thread's process, and only when the sequence has a thread.
func TestReadLegacyOverrides(t *testing.T) {
	tr := mustRead(t, overrideTrace())
	where := map[string][2]int64{}
	for _, in := range tr.Instants {
		k := trackOf(t, tr, in.Track)
		where[in.Name] = [2]int64{k.PID, k.TID}
	}
	for _, s := range tr.Slices {
		k := trackOf(t, tr, s.Track)
		where[s.Name] = [2]int64{k.PID, k.TID}
	}
	want := map[string][2]int64{"pid-override": {40, -1}, "tid-override": {20, 25}, "pid-override-2": {50, -1}}
	if !maps.Equal(where, want) {
		t.Errorf("events on (pid, tid) %v, want %v", where, want)
	}
	checkDrops(t, tr, map[string]int64{"track_event_parser_errors": 1})
}

// flowV1Trace has slices A [100, 200), B [300, 400), C [500, 600) on a
// thread and flow v1 events (phases s, t, f) between them.
func flowV1Trace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(2, 1, "", pf.Thread(10, 11, "main")))
	slice := func(name string, from, to uint64) {
		at(t, from, pf.Event(pf.Begin, 2, name))
		at(t, to, pf.Event(pf.End, 2, ""))
	}
	slice("A", 100, 200)
	slice("B", 300, 400)
	slice("C", 500, 600)
	flow := func(ts uint64, ph byte, id uint64, more ...pf.Field) {
		at(t, ts, pf.Event(pf.Unspecified, 2, "f", pf.Category("cat"), pf.Legacy(append([]pf.Field{pf.Phase(ph), pf.UnscopedID(id)}, more...)...)))
	}
	flow(150, 's', 1)                                                                     // flow 1 starts at A
	flow(350, 'f', 1, pf.BindToEnclosing())                                               // and ends at B, the slice it is in
	flow(160, 's', 2)                                                                     // flow 2 starts at A
	flow(450, 'f', 2)                                                                     // and ends at the next slice to begin: C
	flow(550, 's', 1)                                                                     // flow 1 again: a v1 end does not close it (flow_duplicate_id)
	flow(170, 't', 3)                                                                     // a step of no flow (flow_step_without_start)
	flow(250, 's', 4)                                                                     // no slice open (flow_no_enclosing_slice)
	at(t, 180, pf.Event(pf.Unspecified, 2, "f", pf.Legacy(pf.Phase('s'), pf.LocalID(5)))) // no unscoped_id (flow_invalid_id)
	flow(650, 'f', 6)                                                                     // no slice begins after it
	flow(560, 's', 10)                                                                    // flow 10 starts at C
	flow(610, 'f', 10)                                                                    // and ends at the next slice: an instant
	at(t, 620, pf.Event(pf.Instant, 2, "I"))
	return t.Bytes()
}

// flowsBetween returns the slice names each flow id links, in time order.
func flowsBetween(tr *Trace) []string {
	ids := map[uint64][]string{}
	for _, s := range tr.Slices {
		for _, f := range slices.Concat(s.FlowIDs, s.TerminatingFlowIDs) {
			ids[f] = append(ids[f], s.Name)
		}
	}
	for _, in := range tr.Instants {
		for _, f := range in.FlowIDs {
			ids[f] = append(ids[f], in.Name)
		}
	}
	var out []string
	for _, names := range ids {
		out = append(out, fmt.Sprint(names))
	}
	slices.Sort(out)
	return out
}

// TestReadFlowV1: flow v1 events bind to slices of their track as
// trace_processor binds them: s and t to the slice open there, f with
// bind_to_enclosing to the slice open there and without it to the next
// slice that begins there (an instant is a slice too); a flow is keyed by
// (id, category, name) and a v1 end does not close it.
func TestReadFlowV1(t *testing.T) {
	tr := mustRead(t, flowV1Trace())
	if got, want := flowsBetween(tr), []string{"[A B]", "[A C]", "[C I]"}; !slices.Equal(got, want) {
		t.Errorf("flows %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{"flow_duplicate_id": 1, "flow_step_without_start": 1, "flow_no_enclosing_slice": 1,
		"flow_invalid_id": 1, "flow_v1_end_without_next_slice": 1})
}

// flowReuseTrace uses flow ids again after their flows ended, and binds
// legacy bind_ids in each direction.
func flowReuseTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(2, 1, "", pf.Thread(10, 11, "main")))
	inst := func(ts uint64, name string, f ...pf.Field) { at(t, ts, pf.Event(pf.Instant, 2, name, f...)) }
	bind := func(ts uint64, name string, id, dir uint64) {
		at(t, ts, pf.Event(pf.Begin, 2, name, pf.Legacy(pf.BindID(id), pf.FlowDirection(dir))))
		at(t, ts+10, pf.Event(pf.End, 2, ""))
	}
	inst(100, "A", pf.FlowID(7))
	inst(200, "B", pf.TerminatingFlowID(7)) // ends flow 7
	inst(300, "C", pf.FlowID(7))            // a new flow with id 7
	inst(400, "D", pf.TerminatingFlowID(7))
	inst(450, "E", pf.TerminatingFlowID(9)) // ends no flow: ignored, and not counted (as trace_processor)
	bind(500, "F", 11, pf.FlowOut)
	bind(600, "G", 11, pf.FlowIn) // ends flow 11 without closing it
	bind(700, "H", 11, pf.FlowIn)
	bind(800, "I", 12, pf.FlowInOut) // a step of no flow (flow_step_without_start)
	bind(900, "J", 13, pf.FlowIn)    // an end of no flow (flow_end_without_start)
	return t.Bytes()
}

// TestReadFlowIDReuse: a flow id used again after terminating_flow_ids
// ended its flow starts a new flow (trace_processor closes the first),
// which the reader gives an id of its own; a legacy bind_id starts (out),
// continues (inout) or ends without closing (in) a flow in the same id
// space.
func TestReadFlowIDReuse(t *testing.T) {
	tr := mustRead(t, flowReuseTrace())
	if got, want := flowsBetween(tr), []string{"[A B]", "[C D]", "[F G H]"}; !slices.Equal(got, want) {
		t.Errorf("flows %v, want %v", got, want)
	}
	checkDrops(t, tr, map[string]int64{"flow_end_without_start": 1, "flow_step_without_start": 1})
	// The model keeps the two flows with id 7 apart.
	s := tr.Snapshot()
	ends := map[uint64]int{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				ends[a.Num]++
			}
		}
	}
	if want := map[int]int{2: 2, 3: 1}; !maps.Equal(countValues(ends), want) {
		t.Errorf("flows by their number of ends %v, want two with 2 and one with 3", countValues(ends))
	}
}

func countValues(m map[uint64]int) map[int]int {
	out := map[int]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}

// metadataTrace names a thread and a process with metadata events (phase
// M), and tries them where trace_processor refuses them.
func metadataTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "", pf.Process(10, "app")), pf.Track(2, 1, "", pf.Thread(10, 11, "t0")),
		pf.Track(3, 0, "global"))
	meta := func(ts, track uint64, name string, f ...pf.Field) {
		at(t, ts, pf.Event(pf.Unspecified, track, name, append([]pf.Field{pf.Legacy(pf.Phase('M'))}, f...)...))
	}
	meta(100, 2, "thread_name", pf.Annotation("name", "renamed"))
	meta(110, 2, "process_name", pf.Annotation("name", "app2"))         // a thread's process
	meta(120, 1, "thread_name", pf.Annotation("name", "x"))             // not a thread: dropped
	meta(130, 3, "process_name", pf.Annotation("name", "y"))            // no process: dropped
	meta(140, 2, "thread_name")                                         // no annotation: dropped
	meta(150, 2, "thread_sort_index", pf.Annotation("sort_index", "1")) // raw in trace_processor: dropped here
	at(t, 200, pf.Event(pf.Instant, 2, "work"))
	t.Packet(pf.Seq(2), pf.Cleared(), pf.LegacyThread(30, 31))
	t.Packet(pf.TS(300), pf.Seq(2), pf.Event(pf.Unspecified, 0, "process_name", pf.Legacy(pf.Phase('M')), pf.Annotation("name", "legacy proc")))
	t.Packet(pf.TS(310), pf.Seq(2), pf.Event(pf.Instant, 0, "there"))
	return t.Bytes()
}

// TestReadLegacyMetadata: thread_name and process_name metadata events
// name their thread and process from their first debug annotation, as
// trace_processor does; without a thread (or process), or without an
// annotation, they are dropped, and other metadata (which
// trace_processor keeps only as raw events) is dropped and counted.
func TestReadLegacyMetadata(t *testing.T) {
	tr := mustRead(t, metadataTrace())
	if n := trackOf(t, tr, 2).Name; n != "renamed" {
		t.Errorf("thread named %q, want renamed", n)
	}
	if n := trackOf(t, tr, 1).Name; n != "app2" {
		t.Errorf("process named %q, want app2", n)
	}
	found := false
	for _, k := range tr.Tracks {
		found = found || k.Kind == TrackProcess && k.PID == 30 && k.Name == "legacy proc"
	}
	if !found {
		t.Errorf("no process 30 named \"legacy proc\" in %+v", tr.Tracks)
	}
	checkDrops(t, tr, map[string]int64{"track_event_parser_errors": 3, "legacy_event_phase_unsupported": 1})
	s := tr.Snapshot()
	if s.Meta.Program != "app2" {
		t.Errorf("program %q, want app2", s.Meta.Program)
	}
}

// descriptorTrace has invalid descriptors with events on them: a process
// without a pid, a thread without a tid, tracks whose parents loop, a
// track whose parent nothing describes, a counter under the loop.
func descriptorTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Track(1, 0, "", pf.ProcessNoPID("nameless")),
		pf.Track(2, 0, "", pf.ThreadNoTID(10, "half")),
		pf.Track(3, 4, "loop-a"), pf.Track(4, 3, "loop-b"),
		pf.Track(5, 99, "orphan"),
		pf.Track(6, 0, "fine"),
		pf.Track(7, 3, "ctr", pf.Counter(0, false)))
	for i, track := range []uint64{1, 2, 3, 5, 6} {
		at(t, uint64(100+10*i), pf.Event(pf.Instant, track, fmt.Sprint("on-", track)))
	}
	at(t, 200, pf.Event(pf.CounterType, 7, "", pf.CounterValue(3)))
	return t.Bytes()
}

// TestReadDescriptorValidation: descriptors trace_processor refuses are
// dropped and counted under its stats, and the events on them with them;
// the rest of the trace loads.
func TestReadDescriptorValidation(t *testing.T) {
	tr := mustRead(t, descriptorTrace())
	var inst []string
	for _, in := range tr.Instants {
		inst = append(inst, in.Name)
	}
	if want := []string{"on-6"}; !slices.Equal(inst, want) {
		t.Errorf("instants %v, want %v", inst, want)
	}
	if len(tr.Counters) != 0 {
		t.Errorf("counters %+v, want none (their track's parents loop)", tr.Counters)
	}
	checkDrops(t, tr, map[string]int64{
		"track_descriptor_process_missing_pid":    1,
		"track_descriptor_thread_missing_pid_tid": 1,
		"track_event_parser_errors":               2, // the events on those two
		"track_event_track_hierarchy_loop":        2, // the instant on 3, the counter on 7
		"track_hierarchy_missing_uuid":            1,
	})
	if d := tr.Snapshot().Meta.Dropped(); d != 7 {
		t.Errorf("snapshot dropped %d, want 7", d)
	}
}

// processesTrace has a program of pid 0 and a later process, which has a
// slice and an instant on its own process track.
func processesTrace() []byte {
	t := &pf.Trace{}
	t.Packet(pf.Seq(1), pf.Cleared(),
		pf.Track(1, 0, "", pf.Process(0, "prog")), pf.Track(2, 1, "", pf.Thread(0, 1, "main")),
		pf.Track(3, 0, "", pf.Process(5, "svc")))
	at(t, 100, pf.Event(pf.Begin, 2, "prog-work"))
	at(t, 200, pf.Event(pf.End, 2, ""))
	at(t, 120, pf.Event(pf.Begin, 3, "svc-work"))
	at(t, 180, pf.Event(pf.End, 3, ""))
	at(t, 150, pf.Event(pf.Instant, 3, "svc-mark"))
	at(t, 190, pf.Event(pf.Instant, 1, "prog-mark"))
	return t.Bytes()
}

// TestReadProcessesKeepTheirEvents: the first process that is not a GPU
// is the program even with pid 0 (a later process does not replace it),
// and a slice or instant on another process's track stays in that
// process.
func TestReadProcessesKeepTheirEvents(t *testing.T) {
	s := mustRead(t, processesTrace()).Snapshot()
	if s.Meta.PID != 0 || s.Meta.Program != "prog" {
		t.Errorf("program %q pid %d, want prog 0", s.Meta.Program, s.Meta.PID)
	}
	if len(s.Processes) != 1 || s.Processes[0].PID != 5 || s.Processes[0].Name != "svc" {
		t.Fatalf("processes %+v, want svc (5)", s.Processes)
	}
	where := map[string]string{}
	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindSpan:
			tk, _ := s.TrackOf(r)
			where[s.Name(r)] = s.ProcessOf(tk).Name
		case event.KindInstant:
			proc, _, _ := s.Owner(r)
			where[s.Name(r)] = "program"
			if proc > 0 {
				where[s.Name(r)] = s.Processes[proc-1].Name
			}
			if p := s.Lookup(r.Parent()); p != nil {
				where[s.Name(r)] += " in " + s.Name(p)
			}
		}
	}
	want := map[string]string{"prog-work": "prog", "svc-work": "svc", "svc-mark": "svc in svc-work", "prog-mark": "program"}
	if !reflect.DeepEqual(where, want) {
		t.Errorf("events in processes %v, want %v", where, want)
	}
}

// ruleTraces are the traces of this file, for the fuzz corpus and the
// checker.
func ruleTraces() map[string][]byte {
	return map[string][]byte{
		"legacy-scope":     legacyScopeTrace(),
		"legacy-thread":    legacyThreadTrace(),
		"legacy-overrides": overrideTrace(),
		"flow-v1":          flowV1Trace(),
		"flow-reuse":       flowReuseTrace(),
		"legacy-metadata":  metadataTrace(),
		"descriptors":      descriptorTrace(),
		"processes-events": processesTrace(),
	}
}

// TestRuleTracesConvert: each rule trace converts (Snapshot, Write) to a
// trace the Perfetto checker passes with zero violations (scripts/test),
// and reading that back keeps its slices, instants, counters and flows.
func TestRuleTracesConvert(t *testing.T) {
	for name, data := range ruleTraces() {
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
			conformance.Export(t, "rules-"+name, path, s)
			back := mustRead(t, buf.Bytes())
			if len(back.Slices) != len(tr.Slices) || len(back.Counters) != len(tr.Counters) {
				t.Errorf("written back: %d slices, %d counters; want %d, %d", len(back.Slices), len(back.Counters), len(tr.Slices), len(tr.Counters))
			}
			if g, w := flowsBetween(back), flowsBetween(tr); len(g) != len(w) {
				t.Errorf("written back: flows %v, want %v", g, w)
			}
		})
	}
}
