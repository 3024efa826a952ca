package perfetto

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// This file holds track events: their fields, names, arguments, counter values and the queue they wait in.

type trackEvent struct {
	typ             uint64
	track           uint64
	hasTrack        bool
	nameIID         uint64
	name            string
	hasName         bool
	cats            []uint64
	annotations     [][]byte
	value           float64
	hasValue        bool
	extra, extraDbl []uint64
	extraVals       []uint64
	extraDblVals    []uint64
	flows, terms    []uint64 // flow_ids, terminating_flow_ids (or the old forms')
	newFlows        []uint64 // the storage of flow_ids
	newTerms        []uint64 // and of terminating_flow_ids
	complete        bool     // a legacy X: a BEGIN with its duration
	dur             int64
	oldFlows        []uint64 // the deprecated varint forms, read when the
	oldTerms        []uint64 // fixed64 ones are absent (as trace_processor)
	bind            uint64   // a legacy bind_id, with its flow_direction
	bindDir         uint8
	catNames        []string // categories (strings)
	legacy          legacyEvent
	hasLegacy       bool
	// The legacy timestamps (µs on CLOCK_MONOTONIC): the last of the two
	// given wins.
	deltaUS, absUS   int64
	hasDelta, hasAbs bool
}

// legacyEvent is what one TrackEvent.LegacyEvent holds that the reader
// uses.
type legacyEvent struct {
	nameIID      uint64
	phase        int32
	hasPhase     bool
	durUS        int64
	id           uint64
	idKind       int // rLegacyUnscoped, rLegacyLocal, rLegacyGlobal; 0 none
	idScope      string
	bindID       uint64
	hasBind      bool
	flowDir      uint64
	instantScope uint64
	enclosing    bool // bind_to_enclosing
	pidOverride  int64
	tidOverride  int64
	hasPidO      bool
	hasTidO      bool
}

// field stores one LegacyEvent field.
func (l *legacyEvent) field(f field) error {
	switch f.key() {
	case key(rLeNameIID, wireVarint):
		l.nameIID = f.u
	case key(rLePhase, wireVarint):
		l.phase, l.hasPhase = int32(f.u), true
	case key(rLeDurationUS, wireVarint):
		l.durUS = f.int64()
	case key(rLeUnscopedID, wireVarint):
		l.id, l.idKind = f.u, rLegacyUnscoped
	case key(rLeLocalID, wireVarint):
		l.id, l.idKind = f.u, rLegacyLocal
	case key(rLeGlobalID, wireVarint):
		l.id, l.idKind = f.u, rLegacyGlobal
	case key(rLeIDScope, wireBytes):
		l.idScope = string(f.b)
	case key(rLeBindID, wireVarint):
		l.bindID, l.hasBind = f.u, true
	case key(rLeFlowDir, wireVarint):
		l.flowDir = f.u
	case key(rLeBindEncl, wireVarint):
		l.enclosing = f.u != 0
	case key(rLePidOverride, wireVarint):
		l.pidOverride, l.hasPidO = int64(int32(f.u)), true
	case key(rLeTidOverride, wireVarint):
		l.tidOverride, l.hasTidO = int64(uint32(f.u)), true
	case key(rLeInstantScope, wireVarint):
		l.instantScope = f.u
	}
	return nil
}

// decodeTrackEvent collects into e the fields of a TrackEvent the reader
// uses; the parts of a repeated singular message merge. Its lists only
// live while the event is applied (what a pending event keeps of them is
// copied, see sliceEvent): they keep their memory from one event to the
// next.
func decodeTrackEvent(parts [][]byte, e *trackEvent) error {
	*e = trackEvent{cats: e.cats[:0], annotations: e.annotations[:0], extra: e.extra[:0], extraDbl: e.extraDbl[:0],
		extraVals: e.extraVals[:0], extraDblVals: e.extraDblVals[:0], catNames: e.catNames[:0],
		newFlows: e.newFlows[:0], newTerms: e.newTerms[:0], oldFlows: e.oldFlows[:0], oldTerms: e.oldTerms[:0]}
	for _, b := range parts {
		for len(b) > 0 {
			f, n, err := readField(b)
			if err != nil {
				return err
			}
			if err := e.field(f); err != nil {
				return err
			}
			b = b[n:]
		}
	}
	e.flows, e.terms = e.newFlows, e.newTerms
	if len(e.flows) == 0 {
		e.flows = e.oldFlows
	}
	if len(e.terms) == 0 {
		e.terms = e.oldTerms
	}
	return nil
}

// field stores one TrackEvent field.
func (e *trackEvent) field(f field) error {
	var err error
	switch f.key() {
	case key(teType, wireVarint):
		e.typ = f.u
	case key(rTeTimestampDeltaUS, wireVarint):
		e.deltaUS, e.hasDelta, e.hasAbs = f.int64(), true, false
	case key(rTeTimestampAbsUS, wireVarint):
		e.absUS, e.hasAbs, e.hasDelta = f.int64(), true, false
	case key(teTrackUUID, wireVarint):
		e.track, e.hasTrack = f.u, true
	case key(teNameIID, wireVarint):
		e.nameIID, e.name, e.hasName = f.u, "", false
	case key(rTeName, wireBytes):
		e.nameIID, e.name, e.hasName = 0, string(f.b), true
	case key(rTeCategoryIIDs, wireVarint), key(rTeCategoryIIDs, wireBytes):
		e.cats, err = appendVarints(e.cats, &f)
	case key(teDebugAnnotations, wireBytes):
		e.annotations = append(e.annotations, f.b)
	case key(rTeCategories, wireBytes):
		e.catNames = append(e.catNames, string(f.b))
	case key(rTeLegacyEvent, wireBytes):
		e.hasLegacy = true
		return eachField(f.b, e.legacy.field)
	case key(teCounterValue, wireVarint):
		e.value, e.hasValue = float64(f.int64()), true
	case key(teDoubleCounterValue, wireI64):
		e.value, e.hasValue = f.float(), true
	default:
		return e.listField(f)
	}
	return err
}

// listField stores one of the TrackEvent's repeated id and value fields.
func (e *trackEvent) listField(f field) error {
	var err error
	switch f.key() {
	case key(rTeExtraCounters, wireVarint), key(rTeExtraCounters, wireBytes):
		e.extra, err = appendVarints(e.extra, &f)
	case key(rTeExtraCounterVals, wireVarint), key(rTeExtraCounterVals, wireBytes):
		e.extraVals, err = appendVarints(e.extraVals, &f)
	case key(rTeExtraDblCounters, wireVarint), key(rTeExtraDblCounters, wireBytes):
		e.extraDbl, err = appendVarints(e.extraDbl, &f)
	case key(rTeExtraDblVals, wireI64), key(rTeExtraDblVals, wireBytes):
		e.extraDblVals, err = appendFixed64s(e.extraDblVals, &f)
	case key(teFlowIDs, wireI64), key(teFlowIDs, wireBytes):
		e.newFlows, err = appendFixed64s(e.newFlows, &f)
	case key(teTerminatingFlowIDs, wireI64), key(teTerminatingFlowIDs, wireBytes):
		e.newTerms, err = appendFixed64s(e.newTerms, &f)
	case key(rTeFlowIDsOld, wireVarint), key(rTeFlowIDsOld, wireBytes):
		e.oldFlows, err = appendVarints(e.oldFlows, &f)
	case key(rTeTermFlowIDsOld, wireVarint), key(rTeTermFlowIDsOld, wireBytes):
		e.oldTerms, err = appendVarints(e.oldTerms, &f)
	}
	return err
}

// trackEvent applies the TrackEvent (in parts) of a packet at time at.
func (r *reader) trackEvent(g *generation, e *trackEvent, at timestamp) error {
	name, err := e.resolveName(g)
	if err != nil {
		return err
	}
	args, err := r.annotations(g, e.annotations)
	if err != nil {
		return err
	}
	track := e.track
	if !e.hasTrack && g.hasTrack {
		track = g.track
	}
	// An event on no track (none given, or 0 given to a legacy phase)
	// falls back to the thread of its sequence's ThreadDescriptor, or to
	// the process or thread a legacy pid_override or tid_override names,
	// as in trace_processor; a counter needs its counter track.
	onThread := false
	if track == 0 && e.typ != typeCounter {
		l := &e.legacy
		if (!e.hasTrack || e.typ == 0) && g.hasThread || l.hasPidO || l.hasTidO && g.hasThread {
			pid, tid := g.threadPID, g.threadTID
			if l.hasPidO {
				// A thread of its own in the process: trace_processor's
				// synthetic tid (pid << 32 | -1), which is -1.
				pid = l.pidOverride
				tid = pid<<32 | -1
			}
			if l.hasTidO {
				tid = l.tidOverride
				if g.threadTID&^0xffffffff != 0 { // the sequence's tid is synthetic
					tid = pid<<32 | tid
				}
			}
			if pid == 0 || tid == 0 {
				return dropf("track_event_parser_errors", "thread pid %d tid %d: pid/tid 0 is reserved for the swapper thread", pid, tid)
			}
			track, onThread = r.legacyThreadTrack(pid, tid), true
		}
	}
	onThread = onThread || r.threadScoped(track)
	// trace_processor's tokenizer checks a counter event's value, then the
	// extra counter values, converting each, before the event goes on: a
	// fault drops the whole event. A TYPE_COUNTER event is a counter
	// whatever legacy phase it has (its parser takes counters first).
	var value float64
	if e.typ == typeCounter {
		if value, err = r.counterEvent(g, e, track); err != nil {
			return err
		}
	}
	extras, err := r.extraValues(g, e)
	if err != nil {
		return err
	}
	if e.hasLegacy && e.typ != typeCounter {
		if err := e.legacyFlow(); err != nil {
			r.drop("flow_without_direction", err) // the event itself loads
		}
		if e.legacy.hasPhase {
			switch e.legacy.phase {
			case 's', 't', 'f':
				return r.flowV1(g, e, track, name, at)
			case 'M':
				return r.metadata(e, track, onThread, name, args)
			}
			if track, err = r.legacyPhase(g, e, track, onThread, name); err != nil {
				return err
			}
		}
	}
	switch e.typ {
	case typeSliceBegin, typeSliceEnd, typeInstant:
		if err := r.sliceEvent(e, track, name, args, at); err != nil {
			return err
		}
	case typeCounter:
		r.queueCounter(track, at, value)
	}
	// Extra counter values ride on any event type.
	for _, x := range extras {
		r.queueCounter(x.track, at, x.value)
	}
	return nil
}

// legacyFlow keeps a legacy bind_id with its flow_direction for the
// event's slice: trace_processor binds it, in the same id space as
// flow_ids, as a flow's start (out), a step (inout) or an end that does
// not close it (in); see linkFlows.
func (e *trackEvent) legacyFlow() error {
	l := &e.legacy
	if !l.hasBind {
		return nil
	}
	switch l.flowDir {
	case rFlowIn, rFlowOut, rFlowInOut:
		e.bind, e.bindDir = l.bindID, uint8(l.flowDir)
		return nil
	}
	return dropf("flow_without_direction", "legacy bind_id %d without a flow_direction", l.bindID)
}

// legacyPhase gives a legacy event (TYPE_UNSPECIFIED with a phase; the
// phase wins over a type, as in trace_processor) its type and returns its
// track: B, E and I/i/R (instants of thread scope) stay on the event's
// track; X is a slice of duration_us; a global or process-scoped instant
// goes on a track of the trace or of the event's process; async events
// (b/e/n, and the older S/F/T/p) go on a track per id, id scope and
// category (name for the older ones), process-scoped for a local_id.
func (r *reader) legacyPhase(g *generation, e *trackEvent, track uint64, onThread bool, name string) (uint64, error) {
	l := &e.legacy
	switch l.phase {
	case 'B', 'E', 'X', 'I', 'i':
		// trace_processor places these on a thread only: on any other
		// track (a process's, a custom one) they are dropped, unless an
		// instant is global or process-scoped.
		if !onThread && (l.phase == 'B' || l.phase == 'E' || l.phase == 'X' || l.instantScope != rScopeGlobal && l.instantScope != rScopeProcess) {
			return 0, dropf("track_event_parser_errors", "legacy phase %q on track %d, which is not a thread's", rune(l.phase), track)
		}
	}
	switch l.phase {
	case 'B':
		e.typ = typeSliceBegin
	case 'E':
		e.typ = typeSliceEnd
	case 'X':
		if l.durUS < 0 || l.durUS > math.MaxInt64/1000 {
			return 0, dropf("track_event_parser_errors", "complete event with duration_us %d", l.durUS)
		}
		e.typ, e.complete, e.dur = typeSliceBegin, true, l.durUS*1000
	case 'I', 'i', 'R':
		e.typ = typeInstant
		switch l.instantScope {
		case rScopeGlobal:
			return r.syntheticTrack("global instants", 0, "Global legacy instants"), nil
		case rScopeProcess:
			if !r.processScoped(track) {
				return 0, dropf("track_event_parser_errors", "process-scoped legacy instant on track %d, which belongs to no process", track)
			}
			pid, proc := r.processOfTrack(track)
			if proc != 0 {
				return proc, nil
			}
			return r.syntheticTrack("process instants/"+strconv.FormatInt(pid, 10), pid, "Process legacy instants"), nil
		}
	case 'b', 'e', 'n', 'S', 'F', 'T', 'p':
		if l.idKind == 0 {
			return 0, dropf("track_event_parser_errors", "async legacy event %q without an id", rune(l.phase))
		}
		switch l.phase {
		case 'b', 'S':
			e.typ = typeSliceBegin
		case 'e', 'F':
			e.typ = typeSliceEnd
		default:
			e.typ = typeInstant
		}
		scope := e.category(g)
		if l.phase == 'S' || l.phase == 'F' || l.phase == 'T' || l.phase == 'p' {
			scope = name
		}
		if l.idScope != "" {
			scope = e.category(g) + ":" + l.idScope
		}
		var pid int64
		proc := uint64(0)
		if l.idKind == rLegacyLocal {
			if !r.processScoped(track) {
				return 0, dropf("track_event_parser_errors", "async legacy event %q with a local_id on track %d, which belongs to no process", rune(l.phase), track)
			}
			pid, proc = r.processOfTrack(track)
		}
		key := fmt.Sprintf("async/%t/%d/%d/%s", l.idKind == rLegacyLocal, pid, l.id, scope)
		uuid := r.syntheticTrack(key, pid, name)
		if ti := r.tracks[uuid]; ti != nil && proc != 0 && r.t.Tracks[ti.idx].ParentUUID == 0 {
			r.t.Tracks[ti.idx].ParentUUID = proc
		}
		return uuid, nil
	default:
		return 0, dropf("legacy_event_phase_unsupported", "legacy event phase %q", rune(l.phase))
	}
	return track, nil
}

// category returns the event's categories, comma-separated.
func (e *trackEvent) category(g *generation) string {
	var cats []string
	for _, c := range e.cats {
		cats = append(cats, g.cats[c])
	}
	cats = append(cats, e.catNames...)
	return strings.Join(cats, ",")
}

// processOfTrack returns the pid of a track's process and the uuid of its
// process track (0 if no descriptor describes one).
func (r *reader) processOfTrack(uuid uint64) (int64, uint64) {
	ti := r.tracks[uuid]
	if ti == nil {
		return 0, 0
	}
	tr := &r.t.Tracks[ti.idx]
	pid := tr.PID
	if tr.Kind == TrackProcess {
		return pid, uuid
	}
	if tr.Kind != TrackThread && pid == 0 {
		pid = r.inheritedPID(tr)
	}
	for i := range r.t.Tracks {
		if p := &r.t.Tracks[i]; p.Kind == TrackProcess && p.PID == pid {
			return pid, p.UUID
		}
	}
	return pid, 0
}

// inheritedPID returns the pid of the nearest process or thread ancestor
// of a track (0 if none).
func (r *reader) inheritedPID(tr *Track) int64 {
	p := tr.ParentUUID
	for range maxTrackAncestors {
		ti := r.tracks[p]
		if p == 0 || ti == nil {
			break
		}
		if a := r.t.Tracks[ti.idx]; a.Kind == TrackProcess || a.Kind == TrackThread {
			return a.PID
		}
		p = r.t.Tracks[ti.idx].ParentUUID
	}
	return 0
}

// syntheticTrack returns the uuid of the track the reader makes for key
// (legacy async ids, scoped instants), adding it, named name, on first
// use. Its uuid is a hash of the key, moved on past any uuid the file
// uses.
func (r *reader) syntheticTrack(key string, pid int64, name string) uint64 {
	if u, ok := r.synthetic[key]; ok {
		return u
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	u := h.Sum64() | 1<<63
	for r.tracks[u] != nil {
		u++
	}
	if r.synthetic == nil {
		r.synthetic = map[string]uint64{}
	}
	r.synthetic[key] = u
	r.tracks[u] = &trackInfo{idx: len(r.t.Tracks), described: true, sliced: true}
	r.t.Tracks = append(r.t.Tracks, Track{UUID: u, Name: name, Kind: TrackPlain, PID: pid})
	return u
}

// resolveName returns the event's name, interned or inline, and checks
// its category iids.
func (e *trackEvent) resolveName(g *generation) (string, error) {
	name := e.name
	if e.nameIID == 0 && e.hasLegacy && e.legacy.nameIID != 0 {
		e.nameIID = e.legacy.nameIID
	}
	if e.nameIID != 0 {
		s, ok := g.names[e.nameIID]
		if !ok {
			return "", dropf("interned_data_tokenizer_errors", "event name iid %d is not defined on this sequence", e.nameIID)
		}
		name, e.hasName = s, true
	}
	for _, c := range e.cats {
		if _, ok := g.cats[c]; !ok {
			return "", dropf("interned_data_tokenizer_errors", "category iid %d is not defined on this sequence", c)
		}
	}
	return name, nil
}

// sliceEvent queues a BEGIN, END or INSTANT for pairing at the end.
func (r *reader) sliceEvent(e *trackEvent, track uint64, name string, args []Arg, at timestamp) error {
	if e.typ != typeSliceEnd {
		if _, err := r.sliceTrack(track, name); err != nil {
			return err
		}
	}
	flows, terms := r.keepFlows(e.flows, e.terms)
	r.events = append(r.events, pendingEvent{
		kind: uint8(e.typ), track: track, at: at, order: r.nextOrder(),
		name: name, hasName: e.hasName && name != "",
		args: args, flows: flows, terms: terms, bind: e.bind, bindDir: e.bindDir, complete: e.complete, dur: e.dur, pkt: r.pkt, off: r.off,
	})
	return nil
}

// annotations flattens an event's debug annotations into arguments,
// carved out of the reader's blocks of them, as fastPacket's are.
func (r *reader) annotations(g *generation, annots [][]byte) ([]Arg, error) {
	if len(annots) == 0 {
		return nil, nil
	}
	out := r.argBlocks.room(2 * len(annots))
	start := len(out)
	for _, a := range annots {
		var err error
		if out, err = annotation(g, a, "", 0, out, &r.nameBudget); err != nil {
			return nil, fmt.Errorf("debug annotation: %w", err)
		}
	}
	return r.argBlocks.keep(out, start), nil
}

// keepFlows copies an event's flow ids into the reader's blocks of them,
// for its pending event: the event's own lists are reused.
func (r *reader) keepFlows(flows, terms []uint64) ([]uint64, []uint64) {
	if len(flows)+len(terms) == 0 {
		return nil, nil
	}
	block := r.flowBlocks.room(len(flows) + len(terms))
	start := len(block)
	block = append(block, flows...)
	fl := r.flowBlocks.keep(block, start)
	return fl, r.flowBlocks.keep(append(block, terms...), start+len(flows))
}

// maxExtraCounters is how many extra counter values one event may carry,
// int and double ones together (trace_processor's kMaxNumExtraCounters).
const maxExtraCounters = 8

// extraCounter is one extra counter value of an event, converted.
type extraCounter struct {
	track uint64
	value float64
}

// extraValues checks and converts an event's extra counter values, int
// ones then double ones, as trace_processor's tokenizer does
// (AddExtraCounterValues) before the event goes on: values with no track
// uuids (neither the event's nor its sequence's defaults), more values
// than uuids (or a uuid 0), more than maxExtraCounters values, or a uuid
// that no earlier descriptor describes as a counter track drop the whole
// event. An is_incremental track's sum moves as each value is converted,
// as there, even when a later value drops the event.
func (r *reader) extraValues(g *generation, e *trackEvent) ([]extraCounter, error) {
	n := len(e.extraVals) + len(e.extraDblVals)
	if n == 0 {
		return nil, nil
	}
	out := make([]extraCounter, 0, min(n, maxExtraCounters))
	add := func(uuids, defaults []uint64, n int, value func(i int) float64) error {
		if n == 0 {
			return nil
		}
		if len(uuids) == 0 {
			uuids = defaults
		}
		if len(uuids) == 0 {
			return dropf("track_event_extra_counter_missing_track_uuids", "%d extra counter values but no counter track uuids", n)
		}
		for i := range n {
			if i >= len(uuids) || uuids[i] == 0 {
				return dropf("track_event_extra_counter_track_uuid_mismatch", "%d extra counter values but %d counter track uuids", n, len(uuids))
			}
			if len(out) == maxExtraCounters {
				return dropf("track_event_extra_counter_exceeds_max", "more than %d extra counter values", maxExtraCounters)
			}
			ti, err := r.counterTrack(uuids[i])
			if err != nil {
				return dropf("track_event_extra_counter_invalid_track", "extra counter value: %v", err)
			}
			out = append(out, extraCounter{uuids[i], r.counterValue(g, ti, uuids[i], value(i))})
		}
		return nil
	}
	if err := add(e.extra, g.extra, len(e.extraVals), func(i int) float64 { return float64(int64(e.extraVals[i])) }); err != nil {
		return nil, err
	}
	if err := add(e.extraDbl, g.extraDbl, len(e.extraDblVals), func(i int) float64 { return math.Float64frombits(e.extraDblVals[i]) }); err != nil {
		return nil, err
	}
	return out, nil
}

// counterEvent checks a TYPE_COUNTER event in trace_processor's order
// (track_event_tokenizer.cc): a track uuid (the event's or its
// sequence's default), a value, a counter track an earlier descriptor
// describes; and returns its value converted.
func (r *reader) counterEvent(g *generation, e *trackEvent, track uint64) (float64, error) {
	if !e.hasTrack && !g.hasTrack {
		return 0, dropf("track_event_counter_missing_track_uuid", "counter event without a track_uuid")
	}
	if !e.hasValue {
		return 0, dropf("track_event_counter_missing_value", "counter event on track %d without a value", track)
	}
	ti, err := r.counterTrack(track)
	if err != nil {
		return 0, err
	}
	return r.counterValue(g, ti, track, e.value), nil
}

// counterValue converts a counter value as trace_processor does
// (TrackEventTracker::ConvertToAbsoluteCounterValue): scaled by the
// track's unit_multiplier, then, on an is_incremental track, added to the
// sequence's sum of the track's scaled values.
func (r *reader) counterValue(g *generation, ti *trackInfo, track uint64, v float64) float64 {
	if ti.mult > 0 {
		v *= float64(ti.mult)
	}
	if ti.increment {
		if g.counterSums == nil {
			g.counterSums = map[uint64]float64{}
		}
		v += g.counterSums[track]
		g.counterSums[track] = v
	}
	return v
}

// queueCounter queues a converted counter value for the end of the file.
func (r *reader) queueCounter(track uint64, at timestamp, v float64) {
	r.counters = append(r.counters, pendingCounter{
		track: track, at: at, order: r.nextOrder(), value: v, pkt: r.pkt, off: r.off,
	})
}

// debugAnnotation is what one DebugAnnotation holds, its interned names
// and strings resolved.
type debugAnnotation struct {
	g        *generation
	value    any
	children []*field // dict entries and array values
	name     string
	hasName  bool
}

// field stores one DebugAnnotation field.
func (a *debugAnnotation) field(f field) error {
	switch f.key() {
	case key(daNameIID, wireVarint):
		s, ok := a.g.argNames[f.u]
		if !ok {
			return dropf("interned_data_tokenizer_errors", "name iid %d is not defined on this sequence", f.u)
		}
		a.name, a.hasName = s, true
	case key(rDaName, wireBytes):
		a.name, a.hasName = string(f.b), true
	case key(daBoolValue, wireVarint):
		a.value = f.u != 0
	case key(daUintValue, wireVarint), key(rDaPointerValue, wireVarint):
		a.value = f.u
	case key(daIntValue, wireVarint):
		a.value = f.int64()
	case key(daDoubleValue, wireI64):
		a.value = f.float()
	case key(daStringValue, wireBytes), key(rDaLegacyJSON, wireBytes):
		a.value = string(f.b)
	case key(daStringValueIID, wireVarint):
		v, ok := a.g.boxedStr(f.u)
		if !ok {
			return dropf("interned_data_tokenizer_errors", "string value iid %d is not defined on this sequence", f.u)
		}
		a.value = v
	case key(rDaDictEntries, wireBytes), key(rDaArrayValues, wireBytes):
		c := f // only this branch moves a field to the heap
		a.children = append(a.children, &c)
	}
	return nil
}

// annotation flattens one DebugAnnotation (and its dict entries and array
// values) into out. name is the enclosing annotation's full name ("" at the
// top level), with "[i]" appended for an array element: a named entry
// becomes name.entry, an unnamed array element is called name itself.
func annotation(g *generation, b []byte, name string, depth int, out []Arg, budget *int) ([]Arg, error) {
	if depth > maxAnnotationDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxAnnotationDepth)
	}
	a := debugAnnotation{g: g}
	if err := eachField(b, a.field); err != nil {
		return nil, err
	}
	if a.hasName {
		if name != "" {
			name += "." + a.name
		} else {
			name = a.name
		}
	}
	if depth > 0 {
		if *budget -= len(name); *budget < 0 {
			return nil, errors.New("flattened names of nested annotations take more memory than the file warrants")
		}
	}
	if a.value != nil {
		out = append(out, Arg{Name: name, Value: a.value})
	}
	elem := 0
	for _, c := range a.children {
		child := name
		if c.num == rDaArrayValues {
			child = name + "[" + strconv.Itoa(elem) + "]"
			elem++
		}
		// Array elements carry no name of their own; dict entries append
		// theirs to the prefix.
		var err error
		if out, err = annotation(g, c.b, child, depth+1, out, budget); err != nil {
			return nil, err
		}
	}
	return out, nil
}
