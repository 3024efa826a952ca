// Package pftest encodes small Perfetto traces for tests, field by field
// from the field numbers of Perfetto's published trace proto
// (protos/perfetto/trace/...), with protowire: a generator for the forms
// other writers than devprof emit (legacy events, both flow forms, tracks
// re-described, counters under threads and processes), so that readers can
// be held to trace_processor's import rules without copying bytes from
// anywhere.
package pftest

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field appends one encoded field to a message.
type Field func(b []byte) []byte

// Varint is a varint field (int64 values as two's complement, as
// protobuf's int64; not zigzag).
func Varint(num protowire.Number, v uint64) Field {
	return func(b []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, v)
	}
}

// Int is a varint field holding a signed value.
func Int(num protowire.Number, v int64) Field { return Varint(num, uint64(v)) }

// Fixed64 is a fixed64 field.
func Fixed64(num protowire.Number, v uint64) Field {
	return func(b []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, v)
	}
}

// Double is a double field.
func Double(num protowire.Number, v float64) Field { return Fixed64(num, math.Float64bits(v)) }

// String is a string (or bytes) field.
func String(num protowire.Number, s string) Field {
	return func(b []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, s)
	}
}

// Msg is a nested message field made of fields.
func Msg(num protowire.Number, fields ...Field) Field {
	return func(b []byte) []byte {
		var m []byte
		for _, f := range fields {
			m = f(m)
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, m)
	}
}

// Trace is a trace being built, packet by packet.
type Trace struct{ b []byte }

// Packet appends a TracePacket (Trace.packet, field 1) made of fields.
func (t *Trace) Packet(fields ...Field) *Trace {
	t.b = Msg(1, fields...)(t.b)
	return t
}

// Bytes returns the encoded trace.
func (t *Trace) Bytes() []byte { return t.b }

// TracePacket fields.

// TS is TracePacket.timestamp (8).
func TS(ts uint64) Field { return Varint(8, ts) }

// ClockID is TracePacket.timestamp_clock_id (58).
func ClockID(id uint64) Field { return Varint(58, id) }

// Seq is TracePacket.trusted_packet_sequence_id (10).
func Seq(id uint64) Field { return Varint(10, id) }

// Cleared is sequence_flags (13) SEQ_INCREMENTAL_STATE_CLEARED (1).
func Cleared() Field { return Varint(13, 1) }

// Clock is one ClockSnapshot.Clock: clock_id 1, timestamp 2,
// is_incremental 3, unit_multiplier_ns 4 (written when not 0).
type Clock struct {
	ID, TS, Mult uint64
	Incremental  bool
}

// ClockSnapshot is TracePacket.clock_snapshot (6) with clocks (1).
func ClockSnapshot(clocks ...Clock) Field {
	var fs []Field
	for _, c := range clocks {
		cf := []Field{Varint(1, c.ID), Varint(2, c.TS)}
		if c.Incremental {
			cf = append(cf, Varint(3, 1))
		}
		if c.Mult != 0 {
			cf = append(cf, Varint(4, c.Mult))
		}
		fs = append(fs, Msg(1, cf...))
	}
	return Msg(6, fs...)
}

// Interned is TracePacket.interned_data (12); entries are made with
// EventName, EventCategory.
func Interned(entries ...Field) Field { return Msg(12, entries...) }

// EventName is an InternedData.event_names (2) entry {iid 1, name 2}.
func EventName(iid uint64, name string) Field { return Msg(2, Varint(1, iid), String(2, name)) }

// EventCategory is an InternedData.event_categories (1) entry.
func EventCategory(iid uint64, name string) Field { return Msg(1, Varint(1, iid), String(2, name)) }

// TrackDescriptor fields (TracePacket.track_descriptor, 60).

// Track is a TrackDescriptor: uuid 1, parent_uuid 5 (when not 0), name 2
// (when not ""), and more (Process, Thread, Counter).
func Track(uuid, parent uint64, name string, more ...Field) Field {
	fs := []Field{Varint(1, uuid)}
	if parent != 0 {
		fs = append(fs, Varint(5, parent))
	}
	if name != "" {
		fs = append(fs, String(2, name))
	}
	return Msg(60, append(fs, more...)...)
}

// Process is TrackDescriptor.process (3): ProcessDescriptor {pid 1,
// process_name 6}.
func Process(pid int64, name string) Field { return Msg(3, Int(1, pid), String(6, name)) }

// Thread is TrackDescriptor.thread (4): ThreadDescriptor {pid 1, tid 2,
// thread_name 5}.
func Thread(pid, tid int64, name string) Field {
	return Msg(4, Int(1, pid), Int(2, tid), String(5, name))
}

// Counter is TrackDescriptor.counter (8): CounterDescriptor
// {unit_multiplier 4 when not 0, is_incremental 5}.
func Counter(mult int64, incremental bool) Field {
	var fs []Field
	if mult != 0 {
		fs = append(fs, Int(4, mult))
	}
	if incremental {
		fs = append(fs, Varint(5, 1))
	}
	return Msg(8, fs...)
}

// TrackEvent fields (TracePacket.track_event, 11).

// TrackEvent types (TrackEvent.type, 9).
const (
	Unspecified = 0
	Begin       = 1
	End         = 2
	Instant     = 3
	CounterType = 4
)

// Event is a TrackEvent: type 9 (when not Unspecified), track_uuid 11
// (when not 0), name 23 (when not ""), and more.
func Event(typ, track uint64, name string, more ...Field) Field {
	var fs []Field
	if typ != Unspecified {
		fs = append(fs, Varint(9, typ))
	}
	if track != 0 {
		fs = append(fs, Varint(11, track))
	}
	if name != "" {
		fs = append(fs, String(23, name))
	}
	return Msg(11, append(fs, more...)...)
}

// Category is TrackEvent.categories (22).
func Category(c string) Field { return String(22, c) }

// CounterValue is TrackEvent.counter_value (30).
func CounterValue(v int64) Field { return Int(30, v) }

// DoubleCounterValue is TrackEvent.double_counter_value (44).
func DoubleCounterValue(v float64) Field { return Double(44, v) }

// FlowID is one TrackEvent.flow_ids (47, fixed64).
func FlowID(id uint64) Field { return Fixed64(47, id) }

// TerminatingFlowID is one TrackEvent.terminating_flow_ids (48, fixed64).
func TerminatingFlowID(id uint64) Field { return Fixed64(48, id) }

// FlowIDOld is one deprecated TrackEvent.flow_ids_old (36, varint).
func FlowIDOld(id uint64) Field { return Varint(36, id) }

// TerminatingFlowIDOld is one deprecated
// TrackEvent.terminating_flow_ids_old (42, varint).
func TerminatingFlowIDOld(id uint64) Field { return Varint(42, id) }

// Legacy is TrackEvent.legacy_event (6) made of LegacyEvent fields.
func Legacy(fields ...Field) Field { return Msg(6, fields...) }

// LegacyEvent fields.

// Phase is LegacyEvent.phase (2), a Chrome JSON phase character.
func Phase(ph byte) Field { return Varint(2, uint64(ph)) }

// DurationUS is LegacyEvent.duration_us (3).
func DurationUS(us int64) Field { return Int(3, us) }

// UnscopedID is LegacyEvent.unscoped_id (6).
func UnscopedID(id uint64) Field { return Varint(6, id) }

// LocalID is LegacyEvent.local_id (10).
func LocalID(id uint64) Field { return Varint(10, id) }

// GlobalID is LegacyEvent.global_id (11).
func GlobalID(id uint64) Field { return Varint(11, id) }

// IDScope is LegacyEvent.id_scope (7).
func IDScope(s string) Field { return String(7, s) }

// BindID is LegacyEvent.bind_id (8).
func BindID(id uint64) Field { return Varint(8, id) }

// LegacyEvent.FlowDirection values.
const (
	FlowIn    = 1
	FlowOut   = 2
	FlowInOut = 3
)

// FlowDirection is LegacyEvent.flow_direction (13).
func FlowDirection(d uint64) Field { return Varint(13, d) }

// LegacyEvent.InstantEventScope values.
const (
	ScopeGlobal  = 1
	ScopeProcess = 2
	ScopeThread  = 3
)

// InstantScope is LegacyEvent.instant_event_scope (14).
func InstantScope(s uint64) Field { return Varint(14, s) }

// BindToEnclosing is LegacyEvent.bind_to_enclosing (12) set: a flow v1
// end (phase f) binds to the slice open on its track, not the next one.
func BindToEnclosing() Field { return Varint(12, 1) }

// PidOverride is LegacyEvent.pid_override (18).
func PidOverride(pid int64) Field { return Int(18, pid) }

// TidOverride is LegacyEvent.tid_override (19).
func TidOverride(tid int64) Field { return Int(19, tid) }

// Annotation is a TrackEvent.debug_annotations (4) entry with a string
// value: DebugAnnotation {name 10, string_value 6}.
func Annotation(name, value string) Field { return Msg(4, String(10, name), String(6, value)) }

// LegacyThread is the deprecated TracePacket.thread_descriptor (44): a
// ThreadDescriptor {pid 1, tid 2} that gives the events of its sequence
// that name no track their thread.
func LegacyThread(pid, tid int64) Field { return Msg(44, Int(1, pid), Int(2, tid)) }

// ProcessNoPID is TrackDescriptor.process (3) without a pid: a
// ProcessDescriptor {process_name 6} alone.
func ProcessNoPID(name string) Field { return Msg(3, String(6, name)) }

// ThreadNoTID is TrackDescriptor.thread (4) without a tid: a
// ThreadDescriptor {pid 1, thread_name 5}.
func ThreadNoTID(pid int64, name string) Field { return Msg(4, Int(1, pid), String(5, name)) }
