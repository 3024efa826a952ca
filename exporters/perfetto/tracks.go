package perfetto

// This file holds track descriptors and the tracks events use.

// descriptor is what one TrackDescriptor holds that the reader uses.
type descriptor struct {
	uuid                 uint64
	hasUUID              bool
	parent               uint64
	name                 string
	process, thread, ctr bool
	pid, tid             int64
	hasPID, hasTID       bool
	threadRefUS          int64 // the thread's reference_timestamp_us
	procName, threadName string
	labels               []string
	description          string
	unit, ctrType        uint64
	unitName             string
	mult                 int64
	incremental          bool
	rank                 int64
	ranked               bool
	mergeNone            bool // sibling_merge_behavior NONE
}

// field stores one TrackDescriptor field.
func (d *descriptor) field(f field) error {
	switch f.key() {
	case key(tdUUID, wireVarint):
		d.uuid, d.hasUUID = f.u, true
	case key(tdParentUUID, wireVarint):
		d.parent = f.u
	case key(tdName, wireBytes), key(rTdStaticName, wireBytes), key(rTdAtraceName, wireBytes):
		d.name = string(f.b)
	case key(tdDescription, wireBytes):
		d.description = string(f.b)
	case key(tdSiblingOrderRank, wireVarint):
		d.rank, d.ranked = int64(int32(f.u)), true
	case key(rTdMergeBehavior, wireVarint):
		d.mergeNone = f.u == rMergeNone
	case key(tdProcess, wireBytes):
		d.process = true
		return eachField(f.b, d.processField)
	case key(tdThread, wireBytes):
		d.thread = true
		return eachField(f.b, d.threadField)
	case key(tdCounter, wireBytes):
		d.ctr = true
		return eachField(f.b, d.counterField)
	}
	return nil
}

// processField stores one ProcessDescriptor field.
func (d *descriptor) processField(f field) error {
	switch f.key() {
	case key(pdPid, wireVarint):
		d.pid, d.hasPID = int64(int32(f.u)), true
	case key(pdProcessName, wireBytes):
		d.procName = string(f.b)
	case key(pdProcessLabel, wireBytes):
		d.labels = append(d.labels, string(f.b))
	}
	return nil
}

// threadField stores one ThreadDescriptor field.
func (d *descriptor) threadField(f field) error {
	switch f.key() {
	case key(thPid, wireVarint):
		d.pid, d.hasPID = int64(int32(f.u)), true
	case key(thTid, wireVarint):
		d.tid, d.hasTID = f.int64(), true
	case key(rLtdRefTimestampUS, wireVarint):
		d.threadRefUS = f.int64()
	case key(thName, wireBytes):
		d.threadName = string(f.b)
	}
	return nil
}

// counterField stores one CounterDescriptor field.
func (d *descriptor) counterField(f field) error {
	switch f.key() {
	case key(rCdType, wireVarint):
		d.ctrType = f.u
	case key(cdUnit, wireVarint):
		d.unit = f.u
	case key(cdUnitName, wireBytes):
		d.unitName = string(f.b)
	case key(rCdUnitMult, wireVarint):
		d.mult = f.int64()
	case key(rCdIncrement, wireVarint):
		d.incremental = f.u != 0
	}
	return nil
}

// track returns the Track the descriptor describes.
func (d *descriptor) track() Track {
	tr := Track{UUID: d.uuid, ParentUUID: d.parent, Name: d.name, PID: d.pid, TID: d.tid, Description: d.description, Rank: d.rank, Ranked: d.ranked}
	switch {
	case d.ctr:
		// trace_processor (track_event_tokenizer.cc) names a counter
		// that carries no name after its builtin type ("thread_time",
		// "thread_instruction_count"); one of no type keeps no name, as
		// a counter track never takes its events' names. Its unit is
		// the builtin type's, else the unit enum's, else unit_name.
		tr.Kind = TrackCounter
		if tr.Name == "" {
			tr.Name = builtinCounterName(d.ctrType)
		}
		tr.Unit = unitName(d.unit, d.ctrType)
		if tr.Unit == "" {
			tr.Unit = d.unitName
		}
	case d.thread:
		tr.Kind = TrackThread
		if d.threadName != "" {
			tr.Name = d.threadName
		}
	case d.process:
		tr.Kind = TrackProcess
		if d.procName != "" {
			tr.Name = d.procName
		}
		tr.Labels = d.labels
	default:
		tr.Kind = TrackPlain
	}
	return tr
}

// trackDescriptor applies one TrackDescriptor.
func (r *reader) trackDescriptor(b []byte, seq *seqState) error {
	var d descriptor
	if err := eachField(b, d.field); err != nil {
		return err
	}
	if !d.hasUUID {
		return dropf("track_descriptor_missing_uuid", "descriptor without a uuid")
	}
	// trace_processor drops a thread descriptor without pid and tid and
	// a process descriptor without pid; the events on such a track find
	// no track and are dropped too (dropEventsOn).
	if d.thread && (!d.hasPID || !d.hasTID) {
		r.dropped(d.uuid)
		return dropf("track_descriptor_thread_missing_pid_tid", "thread descriptor of track %d without pid and tid", d.uuid)
	}
	if d.process && !d.thread && !d.hasPID {
		r.dropped(d.uuid)
		return dropf("track_descriptor_process_missing_pid", "process descriptor of track %d without a pid", d.uuid)
	}
	tr := d.track()
	if d.thread && seq != nil && seq.valid {
		// A thread's descriptor is also its sequence's thread, as a
		// legacy ThreadDescriptor is (trace_processor's
		// TokenizeThreadDescriptor): the events of the sequence that name
		// no track are that thread's, and its timestamp deltas start from
		// its reference time.
		seq.gen.setThread(d.pid, d.tid, d.threadRefUS)
	}
	ti := r.tracks[d.uuid]
	switch {
	case ti == nil:
		r.tracks[d.uuid] = &trackInfo{idx: len(r.t.Tracks), described: true, mult: d.mult, increment: d.incremental, mergeNone: d.mergeNone}
		r.t.Tracks = append(r.t.Tracks, tr)
		return r.trackChanged(d.uuid, true)
	case ti.described:
		// A repeated description (SDKs re-emit them after each clear) may
		// name a track that had no name; on a track that merges with no
		// sibling (SIBLING_MERGE_BEHAVIOR_NONE) the last name given wins,
		// as in trace_processor. Anything else in it is ignored, as
		// trace_processor ignores conflicting re-descriptions.
		old := &r.t.Tracks[ti.idx]
		if old.Kind == tr.Kind && tr.Name != "" && (old.Name == "" || ti.mergeNone || d.mergeNone) && old.Name != tr.Name {
			old.Name = tr.Name
			return r.trackChanged(d.uuid, false)
		}
	default: // used by events before its description
		if tr.Kind == TrackCounter && ti.sliced {
			return dropf("track_descriptor_conflicting_reservation", "track %d is described as a counter track after slice events used it", d.uuid)
		}
		if tr.Name == "" {
			tr.Name = r.t.Tracks[ti.idx].Name
		}
		r.t.Tracks[ti.idx] = tr
		ti.described, ti.mult, ti.increment, ti.mergeNone = true, d.mult, d.incremental, d.mergeNone
		return r.trackChanged(d.uuid, false)
	}
	return nil
}

// nextOrder returns the file order of the next event queued.
func (r *reader) nextOrder() int {
	r.queued++
	return r.queued - 1
}

// trackChanged tells descChanged, if set, that a descriptor added or
// changed track uuid.
func (r *reader) trackChanged(uuid uint64, added bool) error {
	if r.descChanged == nil {
		return nil
	}
	return r.descChanged(uuid, added)
}

// unitName returns the name of a counter's builtin unit: its builtin
// type's (which wins over the unit field, as in trace_processor), else
// its unit's; "" for none.
func unitName(unit, ctrType uint64) string {
	switch ctrType {
	case rCounterThreadTimeNS:
		return "ns"
	case rCounterThreadInstCount:
		return "count"
	}
	switch unit {
	case unitTimeNS:
		return "ns"
	case unitCount:
		return "count"
	case unitSizeBytes:
		return "bytes"
	}
	return ""
}

// builtinCounterName is the name trace_processor gives an unnamed counter
// track of a builtin CounterDescriptor.type ("" for none).
func builtinCounterName(ctrType uint64) string {
	switch ctrType {
	case rCounterThreadTimeNS:
		return "thread_time"
	case rCounterThreadInstCount:
		return "thread_instruction_count"
	}
	return ""
}

// sliceTrack returns the track a slice event uses, adding an implicit track
// for a uuid no descriptor has described (trace_processor names it after
// the event). A counter track takes slice events too: trace_processor
// (track_event_tracker.h, InternDescriptorTrackBegin/End/Instant) interns
// a counter uuid's one track for them as for its values, so its slices
// and instants sit on the counter track itself.
func (r *reader) sliceTrack(uuid uint64, name string) (*trackInfo, error) {
	// A run of events is on one track: the last looked up first (entries
	// of r.tracks are never replaced).
	if ti := r.lastSliced; ti != nil && r.lastSlicedUUID == uuid {
		return ti, nil
	}
	ti := r.tracks[uuid]
	if ti == nil {
		ti = &trackInfo{idx: len(r.t.Tracks)}
		r.tracks[uuid] = ti
		r.t.Tracks = append(r.t.Tracks, Track{UUID: uuid, Name: name, Kind: TrackPlain})
	}
	ti.sliced = true
	r.lastSliced, r.lastSlicedUUID = ti, uuid
	return ti, nil
}

// counterTrack returns the counter track uuid, which a descriptor earlier in
// the file must have described (trace_processor drops the value otherwise).
func (r *reader) counterTrack(uuid uint64) (*trackInfo, error) {
	ti := r.tracks[uuid]
	if ti == nil || !ti.described {
		return nil, dropf("track_event_counter_invalid_track_uuid", "counter value on track %d, which no earlier descriptor describes", uuid)
	}
	if k := r.t.Tracks[ti.idx].Kind; k != TrackCounter {
		return nil, dropf("track_event_counter_invalid_track_uuid", "counter value on %s track %d, which is not a counter track", k, uuid)
	}
	return ti, nil
}
