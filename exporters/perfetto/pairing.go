package perfetto

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// This file holds the end of a buffered read: times settled, slices paired per track, flows linked, everything sorted as trace_processor sorts it.

func (r *reader) finish() error {
	r.resolveTimes()
	r.linkFlows()
	bs := r.pairSlices()
	parentFlows(bs)
	r.orderSlices(bs)
	r.orderInstantsAndCounters()
	r.nameTracks()
	r.inheritIDs()
	return nil
}

// trackIdx returns the index in Trace.Tracks of a track events used.
func (r *reader) trackIdx(uuid uint64) int { return r.tracks[uuid].idx }

// resolveTimes converts every pending timestamp to the trace clock, now
// that all clock snapshots are known, and drops (and counts) the events
// whose time cannot be converted or is negative, and ENDs on tracks
// nothing else uses.
func (r *reader) resolveTimes() {
	invalid := map[uint64]trackCheck{}
	evs := r.events[:0]
	for _, e := range r.events {
		if r.settle(&e.at, e.pkt, e.off) {
			continue
		}
		ti := r.tracks[e.track]
		if ti == nil { // only an END can name a track nothing else uses
			r.dropAt("track_event_end_on_unknown_track", pktWhere(e.pkt, e.off), fmt.Errorf("slice end on unknown track %d", e.track))
			continue
		}
		if stat, err := r.invalidTrack(e.track, invalid); err != nil {
			r.dropAt(stat, pktWhere(e.pkt, e.off), err)
			continue
		}
		e.tidx = ti.idx
		evs = append(evs, e)
	}
	r.events = evs
	cs := r.counters[:0]
	for _, c := range r.counters {
		if r.settle(&c.at, c.pkt, c.off) {
			continue
		}
		if stat, err := r.invalidTrack(c.track, invalid); err != nil {
			r.dropAt(stat, pktWhere(c.pkt, c.off), err)
			continue
		}
		cs = append(cs, c)
	}
	r.counters = cs
}

// settle converts a deferred timestamp, and reports (after counting it)
// whether its event is to be dropped.
func (r *reader) settle(at *timestamp, pkt, off int) bool {
	if err := r.clocks.finish(at); err != nil {
		stat := "clock_sync_failure_no_path"
		if d, ok := errors.AsType[*dropError](err); ok {
			stat = d.stat
		}
		r.dropAt(stat, pktWhere(pkt, off), err)
		return true
	}
	if at.ts < 0 {
		r.dropAt("track_event_invalid_timestamp", pktWhere(pkt, off), fmt.Errorf("negative trace time %d", at.ts))
		return true
	}
	return false
}

func pktWhere(pkt, off int) string { return fmt.Sprintf("packet %d (offset %d)", pkt, off) }

// building is a slice being paired, in the order its BEGIN came.
type building struct {
	s          Slice
	track      int
	order      int
	beginFlows int // FlowIDs[:beginFlows] came with the BEGIN
	beginTerms int
	complete   bool // a legacy X event, which an END does not close
}

// pairSlices sorts the events per track in (timestamp, file order), as
// trace_processor does, and pairs BEGIN and END on a stack per track.
// Instants go straight to the trace.
func (r *reader) pairSlices() []building {
	evs := r.events
	slices.SortFunc(evs, func(a, b pendingEvent) int {
		return cmp.Or(cmp.Compare(a.tidx, b.tidx), cmp.Compare(a.at.ts, b.at.ts), cmp.Compare(a.order, b.order))
	})
	begins, instants := 0, 0
	for i := range evs {
		switch evs[i].kind {
		case evBegin:
			begins++
		case evInst:
			instants++
		}
	}
	bs := make([]building, 0, begins)
	r.t.Instants = slices.Grow(r.t.Instants, instants)
	var stack []int
	var bound []v1Binding // flow v1 events with the slice each binds to
	var next []int        // flow v1 ends waiting for the next slice on the track (indices into evs)
	unbound := func() {
		for _, j := range next {
			r.dropAt("flow_v1_end_without_next_slice", pktWhere(evs[j].pkt, evs[j].off), errors.New("a flow v1 end (f) with no slice beginning after it on its track"))
		}
		next = next[:0]
	}
	cur := -1
	for i := range evs {
		e := &evs[i]
		if ti := e.tidx; ti != cur {
			unbound()
			cur, stack = ti, stack[:0]
		}
		// Complete events that ended by now leave the stack, as
		// trace_processor's slice tracker pops them.
		for n := len(stack); n > 0 && bs[stack[n-1]].complete && bs[stack[n-1]].s.Start+bs[stack[n-1]].s.Dur <= e.at.ts; n-- {
			stack = stack[:n-1]
		}
		switch e.kind {
		case evBegin:
			s := Slice{Track: e.track, Name: e.name, Start: e.at.ts, Dur: -1, Parent: -1,
				Args: e.args, FlowIDs: e.flows, TerminatingFlowIDs: e.terms}
			if e.complete {
				s.Dur = e.dur
			}
			if n := len(stack); n > 0 {
				s.Parent = stack[n-1]
				s.Depth = bs[s.Parent].s.Depth + 1
			}
			stack = append(stack, len(bs))
			bs = append(bs, building{s: s, track: cur, order: e.order, beginFlows: len(e.flows), beginTerms: len(e.terms), complete: e.complete})
			for _, j := range next {
				bound = append(bound, v1Binding{flow: evs[j].v1 - 1, slice: len(bs) - 1, instant: -1, ts: evs[j].at.ts, order: evs[j].order, pkt: evs[j].pkt, off: evs[j].off})
			}
			next = next[:0]
		case evFlowV1:
			f := &r.v1[e.v1-1]
			if f.phase == 'f' && !f.enclosing {
				next = append(next, i)
				continue
			}
			// The slice open on the track: the topmost that has not ended.
			k := len(stack) - 1
			for k >= 0 && bs[stack[k]].complete && bs[stack[k]].s.Start+bs[stack[k]].s.Dur <= e.at.ts {
				k--
			}
			if k < 0 {
				r.dropAt("flow_no_enclosing_slice", pktWhere(e.pkt, e.off), fmt.Errorf("a flow v1 event (%q) with no slice open on its track", rune(f.phase)))
				continue
			}
			bound = append(bound, v1Binding{flow: e.v1 - 1, slice: stack[k], instant: -1, ts: e.at.ts, order: e.order, pkt: e.pkt, off: e.off})
		case evEnd:
			stack = closeSlice(bs, stack, e)
		case evInst:
			flows := append(e.flows, e.terms...)
			if len(flows) == 0 {
				flows = nil
			}
			r.t.Instants = append(r.t.Instants, Instant{Track: e.track, Name: e.name, TS: e.at.ts, Args: e.args, FlowIDs: flows})
			// An instant is a slice too: flow v1 ends waiting for the
			// next slice on the track bind to it.
			for _, j := range next {
				bound = append(bound, v1Binding{flow: evs[j].v1 - 1, slice: -1, instant: len(r.t.Instants) - 1, ts: evs[j].at.ts, order: evs[j].order, pkt: evs[j].pkt, off: evs[j].off})
			}
			next = next[:0]
		}
	}
	unbound()
	r.bindFlowsV1(bs, bound)
	return bs
}

// closeSlice applies an END to the open slices of its track (stack, indices
// into bs) and returns what stays open. An END closes the topmost open
// slice, or with a name the topmost one of that name among the
// maxEndSearch topmost; with nothing to close it is ignored (the slice
// began before the trace).
func closeSlice(bs []building, stack []int, e *pendingEvent) []int {
	k := len(stack) - 1
	for k >= 0 && bs[stack[k]].complete { // an END never closes a complete event
		k--
	}
	if e.hasName {
		for lim := max(len(stack)-maxEndSearch, 0); k >= lim && (bs[stack[k]].complete || bs[stack[k]].s.Name != e.name); k-- {
		}
		if k < len(stack)-maxEndSearch {
			k = -1
		}
	}
	if k < 0 {
		return stack
	}
	s := &bs[stack[k]].s
	s.Dur = e.at.ts - s.Start
	s.Args = append(s.Args, e.args...)
	s.FlowIDs = append(s.FlowIDs, e.flows...)
	s.TerminatingFlowIDs = append(s.TerminatingFlowIDs, e.terms...)
	return slices.Delete(stack, k, k+1)
}

// parentFlows applies devprof's parent flows: a slice that starts its own
// stack and terminates a flow X with ParentFlowBit has as parent the slice
// whose BEGIN carries X.
func parentFlows(bs []building) {
	byFlow := map[uint64]int{}
	for i := range bs {
		for _, id := range bs[i].s.FlowIDs[:bs[i].beginFlows] {
			if id&ParentFlowBit != 0 {
				if _, dup := byFlow[id]; !dup {
					byFlow[id] = i
				}
			}
		}
	}
	for i := range bs {
		if bs[i].s.Parent >= 0 {
			continue
		}
		for _, id := range bs[i].s.TerminatingFlowIDs[:bs[i].beginTerms] {
			if p, ok := byFlow[id]; ok && id&ParentFlowBit != 0 && p != i {
				bs[i].s.Parent = p
				break
			}
		}
	}
}

// orderSlices stores the paired slices in the trace in (start, track,
// depth, file order), renumbering their parents.
func (r *reader) orderSlices(bs []building) {
	perm := make([]int, len(bs))
	for i := range perm {
		perm[i] = i
	}
	slices.SortFunc(perm, func(a, b int) int {
		x, y := &bs[a], &bs[b]
		return cmp.Or(cmp.Compare(x.s.Start, y.s.Start), cmp.Compare(x.track, y.track), cmp.Compare(x.s.Depth, y.s.Depth), cmp.Compare(x.order, y.order))
	})
	at := make([]int, len(bs))
	for n, o := range perm {
		at[o] = n
	}
	if len(bs) > 0 {
		r.t.Slices = make([]Slice, len(bs))
	}
	for n, o := range perm {
		s := bs[o].s
		if s.Parent >= 0 {
			s.Parent = at[s.Parent]
			if s.Parent >= n { // only a parent flow can point forward: ignore it
				s.Parent = -1
			}
		}
		r.t.Slices[n] = s
	}
}

// orderInstantsAndCounters sorts instants and counter samples by time,
// then track (then file order), and stores the samples in the trace.
func (r *reader) orderInstantsAndCounters() {
	slices.SortStableFunc(r.t.Instants, func(a, b Instant) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(r.trackIdx(a.Track), r.trackIdx(b.Track)))
	})
	slices.SortFunc(r.counters, func(a, b pendingCounter) int {
		return cmp.Or(cmp.Compare(a.at.ts, b.at.ts), cmp.Compare(r.trackIdx(a.track), r.trackIdx(b.track)), cmp.Compare(a.order, b.order))
	})
	if len(r.counters) > 0 {
		r.t.Counters = make([]CounterSample, len(r.counters))
		for i, c := range r.counters {
			r.t.Counters[i] = CounterSample{Track: c.track, TS: c.at.ts, Value: c.value}
		}
	}
}

// nameTracks names unnamed plain tracks after their first event.
func (r *reader) nameTracks() {
	for i := range r.t.Slices {
		if tr := &r.t.Tracks[r.trackIdx(r.t.Slices[i].Track)]; tr.Name == "" && tr.Kind == TrackPlain {
			tr.Name = r.t.Slices[i].Name
		}
	}
	for i := range r.t.Instants {
		if tr := &r.t.Tracks[r.trackIdx(r.t.Instants[i].Track)]; tr.Name == "" && tr.Kind == TrackPlain {
			tr.Name = r.t.Instants[i].Name
		}
	}
}

// inheritIDs gives tracks under a process or thread track its pid (and
// tid), walking up at most maxTrackAncestors parents.
func (r *reader) inheritIDs() {
	for i := range r.t.Tracks {
		r.inheritID(i)
	}
}

// inheritID gives track i, if it is under a process or thread track, its
// pid (and tid).
func (r *reader) inheritID(i int) {
	tr := &r.t.Tracks[i]
	if tr.PID != 0 || tr.TID != 0 || tr.Kind == TrackProcess || tr.Kind == TrackThread {
		return
	}
	p := tr.ParentUUID
	for range maxTrackAncestors {
		ti := r.tracks[p]
		if p == 0 || ti == nil {
			break
		}
		if a := r.t.Tracks[ti.idx]; a.Kind == TrackProcess || a.Kind == TrackThread {
			tr.PID = a.PID
			if a.Kind == TrackThread {
				tr.TID = a.TID
			}
			break
		}
		p = r.t.Tracks[ti.idx].ParentUUID
	}
}
