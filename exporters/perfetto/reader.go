package perfetto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Field numbers the reader needs besides the writer's (see writer.go).
const (
	rPktClockID          = 58 // TracePacket.timestamp_clock_id
	rPktStateCleared     = 41 // TracePacket.incremental_state_cleared (deprecated)
	rPktPreviousDropped  = 42 // TracePacket.previous_packet_dropped
	rPktCompressed       = 50 // TracePacket.compressed_packets
	rPktThreadDesc       = 44 // TracePacket.thread_descriptor (legacy)
	rLtdRefTimestampUS   = 6  // ThreadDescriptor.reference_timestamp_us
	rTeTimestampDeltaUS  = 1  // TrackEvent.timestamp_delta_us (legacy)
	rTeTimestampAbsUS    = 16 // TrackEvent.timestamp_absolute_us (legacy)
	rDefClockID          = 58 // TracePacketDefaults.timestamp_clock_id
	rTedExtraCounters    = 31 // TrackEventDefaults.extra_counter_track_uuids
	rTedExtraDblCounters = 45 // TrackEventDefaults.extra_double_counter_track_uuids

	rCsPrimaryClock   = 2 // ClockSnapshot.primary_trace_clock
	rClkIncremental   = 3 // ClockSnapshot.Clock.is_incremental
	rClkUnitMult      = 4 // ClockSnapshot.Clock.unit_multiplier_ns
	rClockRealCoarse  = 2 // BUILTIN_CLOCK_REALTIME_COARSE
	rFirstSeqClock    = 64
	rFirstGlobalClock = 128

	rTdStaticName    = 10
	rTdMergeBehavior = 15 // TrackDescriptor.sibling_merge_behavior
	rMergeNone       = 2  // SIBLING_MERGE_BEHAVIOR_NONE
	rTdAtraceName    = 13
	rCdType          = 1
	rCdUnitMult      = 4
	rCdIncrement     = 5

	rTeCategoryIIDs     = 3
	rTeExtraCounterVals = 12
	rTeCategories       = 22
	rTeName             = 23
	rTeExtraCounters    = 31
	rTeFlowIDsOld       = 36
	rTeTermFlowIDsOld   = 42
	rTeExtraDblCounters = 45
	rTeExtraDblVals     = 46

	rDaPointerValue = 7
	rDaLegacyJSON   = 9
	rDaName         = 10
	rDaDictEntries  = 11
	rDaArrayValues  = 12

	rIdEventCategories = 1

	rTeLegacyEvent  = 6 // TrackEvent.legacy_event
	rLeNameIID      = 1 // LegacyEvent fields
	rLePhase        = 2
	rLeDurationUS   = 3
	rLeUnscopedID   = 6
	rLeIDScope      = 7
	rLeBindID       = 8
	rLeLocalID      = 10
	rLeGlobalID     = 11
	rLeBindEncl     = 12 // LegacyEvent.bind_to_enclosing
	rLePidOverride  = 18 // LegacyEvent.pid_override
	rLeTidOverride  = 19 // LegacyEvent.tid_override
	rLeFlowDir      = 13
	rLeInstantScope = 14
	rLtdPid         = 1 // ThreadDescriptor.pid (the legacy TracePacket.thread_descriptor)
	rLtdTid         = 2 // ThreadDescriptor.tid

	rFlowIn, rFlowOut, rFlowInOut                = 1, 2, 3 // LegacyEvent.FlowDirection
	rScopeGlobal, rScopeProcess                  = 1, 2    // LegacyEvent.InstantEventScope
	rLegacyUnscoped, rLegacyLocal, rLegacyGlobal = 1, 2, 3 // which id a legacy event has

	rCounterThreadTimeNS    = 1 // CounterDescriptor.BuiltinCounterType
	rCounterThreadInstCount = 2
)

// Limits that keep a hostile file from costing much more than its size.
const (
	maxAnnotationDepth = 64      // nesting of debug annotation dicts/arrays
	maxSnapshotClocks  = 64      // clocks in one ClockSnapshot
	maxInflated        = 1 << 28 // bytes one compressed_packets field may expand to
	maxTrackAncestors  = 100     // parent_uuid chain walked for pid/tid (as trace_processor)
	maxEndSearch       = 512     // open slices a named END searches (trace_processor's max depth)
	maxClockHops       = 4       // clock conversion chain (trace_processor's ClockPath::kMaxLen)
)

// nameBudget is how many bytes the flattened names of nested annotations
// ("a.b", "a[0]") may take for n bytes of input: far more than real traces
// need, little enough that short entries under a long name cannot turn a
// small file into gigabytes.
func nameBudget(n int) int { return 1<<20 + 64*n }

// Trace is a decoded Perfetto trace: what Read understood of it.
type Trace struct {
	// Tracks lists every track, in order of first description (tracks that
	// events use without a descriptor come in where first used).
	Tracks []Track
	// Slices are the slices (begin/end pairs), sorted by (Start, track
	// order, Depth).
	Slices []Slice
	// Instants are TYPE_INSTANT events, sorted by (TS, track order).
	Instants []Instant
	// Counters are counter samples (TYPE_COUNTER events and extra counter
	// values), sorted by (TS, track order).
	Counters []CounterSample
	// WallStart is the Unix time in ns (REALTIME, else REALTIME_COARSE) of
	// the first clock snapshot that pairs it with the trace clock, 0 if
	// none; WallStartTS is the trace-clock reading of that snapshot, so
	// that a trace time ts is Unix time WallStart + (ts - WallStartTS).
	WallStart, WallStartTS int64
	// Packets counts the TracePackets read, including those inside
	// compressed_packets.
	Packets int
	// Drops counts what the reader could not place and left out (an event
	// without a usable timestamp, a counter value on a track that is not a
	// counter track, an END on a track nothing describes, ...), one entry
	// per kind in order of first occurrence, as trace_processor counts its
	// stats: the rest of the trace loads.
	Drops []Drop
}

// Drop counts the events of one kind the reader dropped.
type Drop struct {
	// Stat names the kind, after the trace_processor stat that counts it
	// where there is one ("track_event_missing_timestamp",
	// "clock_sync_failure_no_path", ...).
	Stat string
	// Events is how many were dropped.
	Events int64
	// First says where the first one was and why: "packet N (offset O):
	// ...".
	First string
}

// Dropped returns the total of Drops.
func (t *Trace) Dropped() int64 {
	var n int64
	for _, d := range t.Drops {
		n += d.Events
	}
	return n
}

// TrackKind says what a Track stands for.
type TrackKind uint8

const (
	// TrackProcess is a process's track (TrackDescriptor.process).
	TrackProcess TrackKind = iota + 1
	// TrackThread is a thread's track (TrackDescriptor.thread).
	TrackThread
	// TrackCounter is a counter track (TrackDescriptor.counter).
	TrackCounter
	// TrackPlain is any other track, including one that events use without
	// a descriptor.
	TrackPlain
)

func (k TrackKind) String() string {
	switch k {
	case TrackProcess:
		return "process"
	case TrackThread:
		return "thread"
	case TrackCounter:
		return "counter"
	case TrackPlain:
		return "plain"
	}
	return "TrackKind(" + strconv.Itoa(int(k)) + ")"
}

// Track is one track of a trace.
type Track struct {
	UUID, ParentUUID uint64
	// Name is the thread_name or process_name for thread and process
	// tracks (else the descriptor's name); an unnamed plain track takes the
	// name of its first event, as in trace_processor. Of the names
	// descriptors re-sent for the same uuid give, the first wins, or the
	// last on a track described with SIBLING_MERGE_BEHAVIOR_NONE, also as
	// in trace_processor.
	Name string
	Kind TrackKind
	// PID and TID come from the descriptor, or for a track parented to a
	// process or thread track, from that ancestor.
	PID, TID int64
	// Unit is a counter track's unit: that of its builtin type ("ns" for
	// thread time, "count" for instructions), else of its unit ("ns",
	// "count", "bytes"), else its unit_name. An unnamed counter track of a
	// builtin type is named after it ("thread_time",
	// "thread_instruction_count"), as in trace_processor.
	Unit string
	// Labels are a process track's process_labels.
	Labels []string
	// Description is the descriptor's description: devprof marks the
	// tracks it writes for memory events with MemoryEventsDescription and
	// MemoryCounterDescription.
	Description string
	// Rank is the descriptor's sibling_order_rank, when Ranked: the order
	// of a process or thread among its siblings in the UI.
	Rank   int64
	Ranked bool
}

// Slice is a slice: a BEGIN paired with the END that closed it.
type Slice struct {
	Track uint64 // track uuid
	Name  string
	// Start and Dur are in ns on the trace clock (BOOTTIME unless a clock
	// snapshot chose another primary_trace_clock). Dur is -1 for a slice
	// that never ended.
	Start, Dur int64
	// Depth is the slice's depth on its track's stack (0 for a root).
	Depth int
	// Parent is the index in Trace.Slices of the enclosing slice on the same
	// track, else of the slice a devprof parent flow links it to (see
	// ParentFlowBit), else -1. It is always less than the slice's own index.
	Parent int
	// Args holds the debug annotations of the BEGIN and END events.
	Args []Arg
	// FlowIDs and TerminatingFlowIDs are the flow ids of the BEGIN and END
	// events, parent flows (ParentFlowBit) included.
	FlowIDs, TerminatingFlowIDs []uint64
}

// Instant is a TYPE_INSTANT event.
type Instant struct {
	Track   uint64
	Name    string
	TS      int64 // ns, trace clock
	Args    []Arg
	FlowIDs []uint64 // flow_ids and terminating_flow_ids
}

// CounterSample is one value of a counter track, after the track's
// unit_multiplier and is_incremental are applied.
type CounterSample struct {
	Track uint64
	TS    int64 // ns, trace clock
	Value float64
}

// Arg is a debug annotation. Nested dictionaries and arrays are flattened to
// names like "a.b" and "a[0]".
type Arg struct {
	Name string
	// Value is an int64, uint64 (uint and pointer values), float64, bool or
	// string (string and legacy JSON values).
	Value any
}

// ReadTraceFile reads the Perfetto trace at path; see ReadTrace.
func ReadTraceFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// ReadTrace decodes a Perfetto protobuf trace (optionally whole-file gzip,
// sniffed by the 1f 8b magic) into slices, instants and counters as
// trace_processor would import them: the format's own view, for tools
// and tests that check what a file says. Read and Decode give the event
// model instead.
//
// It reads the file as a stream of TracePackets and follows
// trace_processor's import rules: per-sequence interning and defaults that
// SEQ_INCREMENTAL_STATE_CLEARED resets; packets that need incremental state
// skipped while it is invalid; timestamps converted to the trace clock
// through clock snapshots (sequence-scoped and incremental clocks
// included); track events sorted by (timestamp, file order) per track
// before BEGIN/END are paired as a stack. Legacy events
// (TrackEvent.legacy_event) are placed by their phase as trace_processor
// places them (see legacyPhase), and flows read in both forms: flow_ids
// and terminating_flow_ids (the varint _old fields when those are absent)
// and a legacy bind_id with its flow_direction. What it does not model
// (typed Chrome fields, other data sources) is skipped.
//
// An event that cannot be placed (an iid that no interned data defines, an
// END on a track nothing describes, a counter value on a track that is not
// a counter track, a timestamp missing, negative, overflowing or that no
// clock snapshot converts) is dropped and counted in Trace.Drops, as trace_processor
// drops it and counts it in its stats; the rest of the trace loads. A
// malformed file (a packet that is not a well-formed protobuf message)
// gives an error "perfetto: packet N (offset O): ...", where N counts
// packets from 1 and O is the packet's byte offset in the (decompressed)
// file.
func ReadTrace(r io.Reader) (*Trace, error) {
	src, gz, closeFn, err := openStream(r)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	rd := newReader()
	if err := rd.stream(src, gz); err != nil {
		return nil, err
	}
	if err := rd.finish(); err != nil {
		return nil, err
	}
	return rd.t, nil
}

func newReader() *reader {
	return &reader{
		t:          &Trace{},
		seqs:       map[uint32]*seqState{},
		tracks:     map[uint64]*trackInfo{},
		clocks:     newClockState(),
		nameBudget: nameBudget(0),
	}
}

// stream reads the top-level packets of src. gz says src inflates a
// gzip file, for errors.
func (r *reader) stream(src io.Reader, gz bool) error {
	ps := newPacketSource(src)
	r.src = ps
	n := 0
	for {
		f, off, err := ps.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ps.readErr != nil && err == ps.readErr {
				if gz {
					return fmt.Errorf("perfetto: reading gzip: %w", err)
				}
				return fmt.Errorf("perfetto: %w", err)
			}
			return r.firstError(ps, r.wrap(false, n+1, int(off), err), n)
		}
		if f.num != fTracePacket || f.wt != wireBytes {
			continue
		}
		n++
		r.t.Packets++
		r.pkt, r.off = n, int(off)
		r.inner, r.innerOff = 0, 0
		r.nameBudget += 64 * len(f.b)
		if err := r.applyPacket(f.b, false); err != nil {
			if d, ok := errors.AsType[*dropError](err); ok {
				r.drop(d.stat, err)
			} else {
				return r.firstError(ps, r.wrap(false, n, int(off), err), n-1)
			}
		}
		if r.afterPacket != nil {
			if err := r.afterPacket(); err != nil {
				return err
			}
		}
	}
}

// firstError returns err, or, when no packet has been read yet and the
// file starts like JSON, an error that says it is JSON: a Perfetto trace
// may start with any byte after its first (0x0a, which is also a
// newline), so only content that fails to read as protobuf is taken for
// JSON.
func (r *reader) firstError(ps *packetSource, err error, read int) error {
	if read > 0 {
		return err
	}
	if looksLikeJSON(ps.head) {
		return errors.New("perfetto: this is a JSON trace, not a Perfetto protobuf trace")
	}
	return err
}

// looksLikeJSON reports whether a file's first bytes read as the start of
// JSON: an object or array after white space, and no control byte but
// white space (a Perfetto packet's length bytes, its field tags and
// varints are full of them).
func looksLikeJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return false
	}
	for _, c := range t {
		if c < 0x20 && c != '\t' && c != '\r' && c != '\n' || c == 0x7f {
			return false
		}
	}
	return true
}

// dropError is an error that costs only the event (or descriptor) it is
// about: the reader counts it under stat and goes on.
type dropError struct {
	stat string
	err  error
}

func (e *dropError) Error() string { return e.err.Error() }
func (e *dropError) Unwrap() error { return e.err }

// dropf returns a dropError counted under stat.
func dropf(stat, format string, args ...any) error {
	return &dropError{stat: stat, err: fmt.Errorf(format, args...)}
}

// asDrop returns err as a dropError under stat unless it already is one.
func asDrop(stat string, err error) error {
	if _, ok := errors.AsType[*dropError](err); ok {
		return err
	}
	return &dropError{stat: stat, err: err}
}

// drop counts one event dropped for err under stat, in the packet being
// read.
func (r *reader) drop(stat string, err error) {
	for i := range r.t.Drops {
		if r.t.Drops[i].Stat == stat {
			r.t.Drops[i].Events++
			return
		}
	}
	where := pktWhere(r.pkt, r.off)
	if r.inner != 0 {
		where += fmt.Sprintf(": compressed packet %d (offset %d)", r.inner, r.innerOff)
	}
	r.dropAt(stat, where, err)
}

// dropAt counts one event dropped for err under stat; where names its
// packet.
func (r *reader) dropAt(stat, where string, err error) {
	for i := range r.t.Drops {
		if r.t.Drops[i].Stat == stat {
			r.t.Drops[i].Events++
			return
		}
	}
	r.t.Drops = append(r.t.Drops, Drop{Stat: stat, Events: 1, First: where + ": " + err.Error()})
}

// readError locates an error in the file.
type readError struct {
	packet, offset int
	err            error
}

func (e *readError) Error() string {
	return fmt.Sprintf("perfetto: packet %d (offset %d): %v", e.packet, e.offset, e.err)
}

func (e *readError) Unwrap() error { return e.err }
