package perfetto

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// This file holds the import rules of trace_processor that the legacy
// forms need beyond placing an event on a track (reader.go): the thread
// of a sequence's legacy ThreadDescriptor, which events need a thread or
// a process, flow v1 events (phases s, t, f), metadata events (phase M),
// how flow ids chain (linkFlows) and which descriptors are invalid.

// evFlowV1 marks a pending flow v1 event (phase s, t or f): it is no
// slice, but binds a flow to one (see bindFlowsV1).
const evFlowV1 = 0x80

// v1Flow is what a flow v1 event says: its flow (the unscoped id, the
// category and the name, as trace_processor keys it), its phase, and for
// an end, whether it binds to the enclosing slice rather than the next
// one to begin on its track.
type v1Flow struct {
	key       string
	phase     byte
	enclosing bool
}

// v1Binding is a flow v1 event bound to the slice (or instant) it names,
// at its time.
type v1Binding struct {
	flow     int // index into reader.v1
	slice    int // the slice bound (an index into the slices being paired), or -1
	instant  int // else the instant bound (an index into Trace.Instants)
	ts       int64
	order    int
	pkt, off int
}

// legacyThreadTrack returns the track of thread tid of process pid, for
// events that fall back to a sequence's legacy ThreadDescriptor: the
// thread track a descriptor gave that thread, else a thread track the
// reader adds (with a process track for pid when none describes it).
func (r *reader) legacyThreadTrack(pid, tid int64) uint64 {
	key := "thread/" + strconv.FormatInt(pid, 10) + "/" + strconv.FormatInt(tid, 10)
	if u, ok := r.synthetic[key]; ok {
		return u
	}
	for i := range r.t.Tracks {
		if tr := &r.t.Tracks[i]; tr.Kind == TrackThread && tr.PID == pid && tr.TID == tid {
			if r.synthetic == nil {
				r.synthetic = map[string]uint64{}
			}
			r.synthetic[key] = tr.UUID
			return tr.UUID
		}
	}
	proc := r.processTrack(pid)
	u := r.syntheticTrack(key, pid, "")
	tr := &r.t.Tracks[r.tracks[u].idx]
	tr.Kind, tr.TID, tr.ParentUUID = TrackThread, tid, proc
	return u
}

// processTrack returns the process track of pid, adding an unnamed one
// when no descriptor describes that process.
func (r *reader) processTrack(pid int64) uint64 {
	for i := range r.t.Tracks {
		if tr := &r.t.Tracks[i]; tr.Kind == TrackProcess && tr.PID == pid {
			return tr.UUID
		}
	}
	u := r.syntheticTrack("process/"+strconv.FormatInt(pid, 10), pid, "")
	r.t.Tracks[r.tracks[u].idx].Kind = TrackProcess
	return u
}

// ancestorOf returns the nearest of a track and its ancestors that is of
// one of kinds, and false if none is (or the chain is broken or too
// long).
func (r *reader) ancestorOf(uuid uint64, kinds ...TrackKind) (*Track, bool) {
	for range maxTrackAncestors {
		ti := r.tracks[uuid]
		if ti == nil {
			return nil, false
		}
		tr := &r.t.Tracks[ti.idx]
		if slices.Contains(kinds, tr.Kind) {
			return tr, true
		}
		if tr.ParentUUID == 0 || tr.ParentUUID == uuid {
			return nil, false
		}
		uuid = tr.ParentUUID
	}
	return nil, false
}

// threadScoped reports whether a track is a thread's (the thread's own
// track or one under it): trace_processor's thread association, which
// legacy slices and thread instants need.
func (r *reader) threadScoped(uuid uint64) bool {
	_, ok := r.ancestorOf(uuid, TrackThread)
	return ok
}

// processScoped reports whether a track belongs to a process (the
// process's track, a thread's, or one under either).
func (r *reader) processScoped(uuid uint64) bool {
	_, ok := r.ancestorOf(uuid, TrackProcess, TrackThread)
	return ok
}

// flowV1 queues a flow v1 event (phase s, t or f), which trace_processor
// keys by its unscoped_id, category and name and binds to a slice of its
// track: s and t to the slice open there, f to the slice open there with
// bind_to_enclosing, else to the next slice that begins there.
func (r *reader) flowV1(g *generation, e *trackEvent, track uint64, name string, at timestamp) error {
	l := &e.legacy
	if l.idKind != rLegacyUnscoped {
		return dropf("flow_invalid_id", "flow event (phase %q) without an unscoped_id", rune(l.phase))
	}
	if r.tracks[track] == nil {
		return dropf("flow_no_enclosing_slice", "flow event (phase %q) on track %d, which nothing describes", rune(l.phase), track)
	}
	r.v1 = append(r.v1, v1Flow{
		key:   strconv.FormatUint(l.id, 10) + "\x00" + e.category(g) + "\x00" + name,
		phase: byte(l.phase), enclosing: l.enclosing,
	})
	r.events = append(r.events, pendingEvent{kind: evFlowV1, track: track, at: at, order: r.nextOrder(),
		v1: len(r.v1), pkt: r.pkt, off: r.off})
	return nil
}

// metadata applies a metadata event (phase M): thread_name names the
// event's thread and process_name its process, from the first debug
// annotation's string value, as in trace_processor. Other metadata
// trace_processor keeps in a raw table devprof has no place for: they
// are dropped and counted.
func (r *reader) metadata(e *trackEvent, track uint64, onThread bool, name string, args []Arg) error {
	if name == "" {
		return dropf("track_event_parser_errors", "metadata event without a name")
	}
	value := ""
	if len(args) > 0 {
		value, _ = args[0].Value.(string)
	}
	switch name {
	case "thread_name":
		if !onThread {
			return dropf("track_event_parser_errors", "thread_name metadata event on track %d, which is not a thread's", track)
		}
		if len(e.annotations) == 0 {
			return dropf("track_event_parser_errors", "thread_name metadata event without debug annotations")
		}
		if value != "" {
			th, _ := r.ancestorOf(track, TrackThread)
			th.Name = value
		}
		return nil
	case "process_name":
		if !r.processScoped(track) {
			return dropf("track_event_parser_errors", "process_name metadata event on track %d, which belongs to no process", track)
		}
		if len(e.annotations) == 0 {
			return dropf("track_event_parser_errors", "process_name metadata event without debug annotations")
		}
		if value != "" {
			owner, _ := r.ancestorOf(track, TrackProcess, TrackThread)
			proc := owner.UUID
			if owner.Kind == TrackThread {
				proc = r.processTrack(owner.PID)
			}
			r.t.Tracks[r.tracks[proc].idx].Name = value
		}
		return nil
	}
	if !onThread {
		return dropf("track_event_parser_errors", "metadata event %q on track %d, which is not a thread's", name, track)
	}
	return dropf("legacy_event_phase_unsupported", "metadata event %q (trace_processor keeps it only as a raw event)", name)
}

// linkFlows gives the flows of the slices and instants their ids as
// trace_processor links them, visiting the events in time order (file
// order among equal times): a flow id an event names (flow_ids, or a
// legacy bind_id out or inout) starts a flow when none with that id is
// going and continues it otherwise; a terminating id (terminating_flow_ids)
// ends the flow going, and one with no flow going is ignored (and not
// counted, as in trace_processor); a legacy bind_id in ends the flow
// going without closing it. An id used again after its flow ended starts
// a new flow, which gets an id of its own here, so that the two are not
// read as one. A bind_id's end or step with no flow going, and its start
// of a flow already going, are counted under trace_processor's stat
// names.
func (r *reader) linkFlows() {
	var idx []int
	used := map[uint64]bool{}
	for i := range r.events {
		e := &r.events[i]
		if len(e.flows) == 0 && len(e.terms) == 0 && e.bindDir == 0 {
			continue
		}
		idx = append(idx, i)
		for _, f := range e.flows {
			used[f] = true
		}
		for _, f := range e.terms {
			used[f] = true
		}
		if e.bindDir != 0 {
			used[e.bind] = true
		}
	}
	if len(idx) == 0 {
		return
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := &r.events[a], &r.events[b]
		return cmp.Or(cmp.Compare(x.at.ts, y.at.ts), cmp.Compare(x.order, y.order))
	})
	next := uint64(1)
	fresh := func() uint64 {
		for used[next] || next&ParentFlowBit != 0 {
			next++
		}
		used[next] = true
		return next
	}
	going := map[uint64]uint64{} // flow id in the file -> the id of its flow now going
	ended := map[uint64]bool{}   // ids whose flow ended: a new use is a new flow
	start := func(id uint64) uint64 {
		n := id
		if ended[id] {
			n = fresh()
		}
		going[id] = n
		return n
	}
	for _, i := range idx {
		e := &r.events[i]
		var flows, terms []uint64
		if e.bindDir != 0 {
			n, ok := going[e.bind]
			switch e.bindDir {
			case rFlowOut:
				if ok {
					r.dropAt("flow_duplicate_id", pktWhere(e.pkt, e.off), fmt.Errorf("legacy bind_id %d starts a flow already going", e.bind))
				} else {
					flows = append(flows, start(e.bind))
				}
			case rFlowInOut, rFlowIn:
				switch {
				case ok:
					flows = append(flows, n)
				case e.bindDir == rFlowInOut:
					r.dropAt("flow_step_without_start", pktWhere(e.pkt, e.off), fmt.Errorf("legacy bind_id %d steps a flow that did not start", e.bind))
				default:
					r.dropAt("flow_end_without_start", pktWhere(e.pkt, e.off), fmt.Errorf("legacy bind_id %d ends a flow that did not start", e.bind))
				}
			}
		}
		for _, id := range e.flows {
			if id&ParentFlowBit != 0 { // devprof's parent links are not flows
				flows = append(flows, id)
				continue
			}
			n, ok := going[id]
			if !ok {
				n = start(id)
			}
			flows = append(flows, n)
		}
		for _, id := range e.terms {
			if id&ParentFlowBit != 0 {
				terms = append(terms, id)
				continue
			}
			n, ok := going[id]
			if !ok {
				// trace_processor passes over a terminating id of no
				// flow going without a stat (MaybeParseTrackEventFlows):
				// it is not even an end.
				continue
			}
			delete(going, id)
			ended[id] = true
			terms = append(terms, n)
		}
		e.flows, e.terms = flows, terms
	}
}

// bindFlowsV1 gives each slice the flows that flow v1 events bound to it,
// in time order as trace_processor links them: s starts the flow of its
// key (a second s while it is going is a duplicate, ignored), t and f
// continue it (counted and ignored when it did not start). A v1 flow's
// end does not close it.
func (r *reader) bindFlowsV1(bs []building, bound []v1Binding) {
	slices.SortStableFunc(bound, func(a, b v1Binding) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.order, b.order)) })
	if len(bound) == 0 {
		return
	}
	used := map[uint64]bool{}
	for i := range bs {
		for _, f := range bs[i].s.FlowIDs {
			used[f] = true
		}
		for _, f := range bs[i].s.TerminatingFlowIDs {
			used[f] = true
		}
	}
	for i := range r.t.Instants {
		for _, f := range r.t.Instants[i].FlowIDs {
			used[f] = true
		}
	}
	next := uint64(1)
	ids := map[string]uint64{}
	for _, b := range bound {
		f := &r.v1[b.flow]
		id, going := ids[f.key]
		where := pktWhere(b.pkt, b.off)
		switch {
		case f.phase == 's' && going:
			r.dropAt("flow_duplicate_id", where, errors.New("a flow v1 start (s) of a flow already going"))
			continue
		case f.phase == 's':
			for used[next] || next&ParentFlowBit != 0 {
				next++
			}
			id = next
			used[id] = true
			ids[f.key] = id
		case !going && f.phase == 't':
			r.dropAt("flow_step_without_start", where, errors.New("a flow v1 step (t) of a flow that did not start"))
			continue
		case !going:
			r.dropAt("flow_end_without_start", where, errors.New("a flow v1 end (f) of a flow that did not start"))
			continue
		}
		var ids *[]uint64
		if b.slice >= 0 {
			ids = &bs[b.slice].s.FlowIDs
		} else {
			ids = &r.t.Instants[b.instant].FlowIDs
		}
		if !slices.Contains(*ids, id) {
			*ids = append(*ids, id)
		}
	}
}

// dropped notes that a descriptor of uuid was dropped as invalid: if no
// valid descriptor describes it, events on it find no track.
func (r *reader) dropped(uuid uint64) {
	if r.droppedDesc == nil {
		r.droppedDesc = map[uint64]bool{}
	}
	r.droppedDesc[uuid] = true
}

// trackCheck is the outcome of checking a track's hierarchy: the stat of
// its fault and the fault, or "" for a valid track.
type trackCheck struct {
	stat string
	err  error
}

// invalidTrack checks the track of an event (memoised in memo) as
// trace_processor does when it resolves it: a track whose descriptor was
// dropped, or whose parents loop, lead to a uuid no descriptor describes,
// or go deeper than maxTrackAncestors, is no track, and the events on it
// are dropped under the stat returned.
func (r *reader) invalidTrack(uuid uint64, memo map[uint64]trackCheck) (string, error) {
	if c, ok := memo[uuid]; ok {
		return c.stat, c.err
	}
	c := r.checkTrack(uuid)
	memo[uuid] = c
	return c.stat, c.err
}

func (r *reader) checkTrack(uuid uint64) trackCheck {
	if ti := r.tracks[uuid]; (ti == nil || !ti.described) && r.droppedDesc[uuid] {
		return trackCheck{"track_event_parser_errors", fmt.Errorf("event on track %d, whose descriptor was dropped", uuid)}
	}
	seen := make([]uint64, 0, 8)
	for u := uuid; len(seen) < maxTrackAncestors; {
		if u == 0 && len(seen) > 0 {
			return trackCheck{}
		}
		if slices.Contains(seen, u) {
			return trackCheck{"track_event_track_hierarchy_loop", fmt.Errorf("track %d: its parent_uuid chain loops at %d", uuid, u)}
		}
		ti := r.tracks[u]
		if len(seen) > 0 && (ti == nil || !ti.described) {
			return trackCheck{"track_hierarchy_missing_uuid", fmt.Errorf("track %d: ancestor %d is described by no descriptor", uuid, u)}
		}
		seen = append(seen, u)
		if ti == nil {
			return trackCheck{}
		}
		p := r.t.Tracks[ti.idx].ParentUUID
		if p == 0 {
			return trackCheck{}
		}
		u = p
	}
	return trackCheck{"track_event_track_hierarchy_too_deep", fmt.Errorf("track %d: more than %d ancestors", uuid, maxTrackAncestors)}
}
