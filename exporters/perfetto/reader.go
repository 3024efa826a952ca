package perfetto

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/internal/protoenc"
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
	head := ps.head
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return errors.New("perfetto: this is a JSON trace, not a Perfetto protobuf trace")
	}
	return err
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

// ---------------------------------------------------------------------------
// Wire format.

// The reader decodes each message it needs with a small function that
// walks its fields with eachField and switches on key(number, wire type);
// the bytes themselves are read by internal/protoenc's decoder, beside
// the encoder the writer uses and shared with the XSpace reader, which
// names the malformed field and where in its message it is.

// field is one decoded protobuf field. For wireBytes, b aliases the input.
type field struct {
	num int
	wt  int
	u   uint64 // varint, fixed64 or fixed32 value
	b   []byte
}

func key(num, wt int) uint64    { return protoenc.Key(num, wt) }
func (f *field) key() uint64    { return key(f.num, f.wt) }
func (f *field) int64() int64   { return int64(f.u) }
func (f *field) float() float64 { return math.Float64frombits(f.u) }

// readField decodes the field at the start of b and returns it with its
// size: protoenc's decoder (the XSpace reader's too), with lengths checked
// against the bytes left before anything is sliced. Groups, which no
// Perfetto message has, are an error here, as trace_processor's decoder
// has them.
func readField(b []byte) (field, int, error) {
	// The commonest field, decoded where the compiler inlines it.
	if f, n := protoenc.Fast(b); n > 0 {
		return field{num: int(f.Num), wt: int(f.Wire), u: f.Varint, b: f.Bytes}, n, nil
	}
	return readFieldSlow(b)
}

func readFieldSlow(b []byte) (field, int, error) {
	f, n, err := protoenc.Next(b)
	if err != nil {
		return field{}, 0, err
	}
	if f.Wire == protoenc.WireStartGroup {
		return field{}, 0, fmt.Errorf("field %d has unsupported wire type %d", f.Num, f.Wire)
	}
	return field{num: int(f.Num), wt: int(f.Wire), u: f.Varint, b: f.Bytes}, n, nil
}

// eachField calls fn for every field of the message b. fn takes the
// field by value: a pointer would move every field to the heap (most of
// the reader's allocations).
func eachField(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		f, n, err := readField(b)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// appendVarints appends a repeated varint field, accepting the packed form
// too.
func appendVarints(dst []uint64, f *field) ([]uint64, error) {
	if f.wt == wireVarint {
		return append(dst, f.u), nil
	}
	out, err := protoenc.PackedVarints(dst, f.b)
	if err != nil {
		return nil, fmt.Errorf("field %d: %w", f.num, err)
	}
	return out, nil
}

// appendFixed64s appends a repeated fixed64 field, accepting the packed form
// too.
func appendFixed64s(dst []uint64, f *field) ([]uint64, error) {
	if f.wt == wireI64 {
		return append(dst, f.u), nil
	}
	out, err := protoenc.PackedFixed64(dst, f.b)
	if err != nil {
		return nil, fmt.Errorf("field %d: %w", f.num, err)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Reader state.

type reader struct {
	t      *Trace
	seqs   map[uint32]*seqState
	tracks map[uint64]*trackInfo
	clocks *clockState

	events   []pendingEvent
	counters []pendingCounter

	pkt, off    int               // top-level packet being read, for errors found at the end
	inner       int               // compressed packet being read within packet pkt (0: none), for drops
	innerOff    int               // its offset in the decompressed bytes
	synthetic   map[string]uint64 // tracks the reader made, by key
	v1          []v1Flow          // the flow v1 events (pendingEvent.v1)
	pkts        [2]packet         // the packet being applied, and one inside its compressed_packets
	te          trackEvent        // the TrackEvent of the packet being applied
	fastTE      trackEvent        // fastPacket's
	lastSeq     *seqState         // fastPacket's last sequence, and its id
	lastSeqID   uint32
	fastHook    func()          // for tests: called for each packet fastPacket applies
	argBlock    []Arg           // fastPacket's arguments are carved out of it
	droppedDesc map[uint64]bool // uuids whose only descriptors were dropped (invalid)
	wallSet     bool            // WallStart was taken from a snapshot
	nameBudget  int             // bytes left for flattened annotation names
	inflater    inflater        // for compressed_packets
	src         *packetSource   // the file being read
	// afterPacket, when set, runs after each top-level packet: the
	// streaming decoder's chance to pass on what is final.
	afterPacket func() error
	queued      int // events queued so far: the next one's place in file order
	// descChanged, when set, is told of each track a descriptor adds
	// (added) or changes; an error it returns ends the read.
	descChanged func(uuid uint64, added bool) error
}

// seqState is the incremental state of one packet sequence.
type seqState struct {
	valid bool
	gen   *generation
}

// generation is what SEQ_INCREMENTAL_STATE_CLEARED resets.
type generation struct {
	names, argNames, strs, cats map[uint64]string

	clockID         uint32 // TracePacketDefaults.timestamp_clock_id (0 none)
	track           uint64 // TrackEventDefaults.track_uuid
	hasTrack        bool
	extra, extraDbl []uint64 // default extra counter track uuids

	counterSums map[uint64]float64 // is_incremental counter values

	// legacyNS is the running time (CLOCK_MONOTONIC ns) that legacy
	// timestamp_delta_us values add to, from a legacy ThreadDescriptor's
	// reference_timestamp_us; hasLegacy says one was given.
	legacyNS  int64
	hasLegacy bool

	// thread is the sequence's legacy ThreadDescriptor (pid, tid): the
	// thread of its events that name no track, as in trace_processor.
	threadPID, threadTID int64
	hasThread            bool
}

// setThread makes (pid, tid) the sequence's thread, and refUS (µs on
// CLOCK_MONOTONIC, 0 when the descriptor gives none) the time its legacy
// timestamp deltas add to, as trace_processor does for every
// ThreadDescriptor of a sequence.
func (g *generation) setThread(pid, tid, refUS int64) {
	g.threadPID, g.threadTID, g.hasThread = pid, tid, true
	g.legacyNS, g.hasLegacy = saturatingMul(refUS, 1000), true
}

// saturatingMul and saturatingAdd are trace_processor's arithmetic for
// legacy µs times (base::SaturatingMultiply, base::SaturatingAdd): a
// result out of range sticks at the nearest bound, and the running
// time it becomes is what later deltas add to.
func saturatingMul(a, b int64) int64 {
	if p, ok := mulOK(a, b); ok {
		return p
	}
	if (a < 0) != (b < 0) {
		return math.MinInt64
	}
	return math.MaxInt64
}

func saturatingAdd(a, b int64) int64 {
	if s, ok := addOK(a, b); ok {
		return s
	}
	if a < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// mulOK and addOK return a*b and a+b as int64 arithmetic wraps them, and
// whether that is the exact result.
func mulOK(a, b int64) (int64, bool) {
	p := a * b
	if a == 0 || b == 0 {
		return 0, true
	}
	return p, p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

func addOK(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

func newGeneration() *generation {
	return &generation{
		names:    map[uint64]string{},
		argNames: map[uint64]string{},
		strs:     map[uint64]string{},
		cats:     map[uint64]string{},
	}
}

type trackInfo struct {
	idx       int // into Trace.Tracks
	described bool
	sliced    bool  // slice events use it
	mult      int64 // counter unit_multiplier (0: none)
	increment bool  // counter is_incremental
	mergeNone bool  // described with SIBLING_MERGE_BEHAVIOR_NONE
}

const (
	evBegin = typeSliceBegin
	evEnd   = typeSliceEnd
	evInst  = typeInstant
)

// pendingEvent is a BEGIN, END or INSTANT waiting for the end of the file.
type pendingEvent struct {
	track    uint64
	at       timestamp
	order    int
	name     string
	args     []Arg
	flows    []uint64
	terms    []uint64
	dur      int64 // ns
	pkt, off int
	tidx     int    // index of track in Trace.Tracks, once times are resolved
	bind     uint64 // a legacy bind_id, when bindDir is not 0 (its flow_direction)
	v1       int    // for evFlowV1, the flow's index in reader.v1 plus one
	kind     uint8  // evBegin, evEnd, evInst, evFlowV1
	bindDir  uint8
	hasName  bool
	complete bool // a legacy X event: a BEGIN whose END is dur later
}

type pendingCounter struct {
	track    uint64
	at       timestamp
	order    int
	value    float64
	pkt, off int
}

// packets reads a sequence of TracePacket records (a Trace message).
func (r *reader) packets(data []byte, nested bool) error {
	n := 0
	for off := 0; off < len(data); {
		f, size, err := readField(data[off:])
		if err != nil {
			return r.wrap(nested, n+1, off, err)
		}
		if f.num == fTracePacket && f.wt == wireBytes {
			n++
			r.t.Packets++
			if !nested {
				r.pkt, r.off = n, off
			}
			r.inner, r.innerOff = 0, 0
			if nested {
				r.inner, r.innerOff = n, off
			}
			if err := r.applyPacket(f.b, nested); err != nil {
				if d, ok := errors.AsType[*dropError](err); ok {
					r.drop(d.stat, err)
				} else {
					return r.wrap(nested, n, off, err)
				}
			}
			if nested && r.afterPacket != nil {
				if err := r.afterPacket(); err != nil {
					return err
				}
			}
		}
		off += size
	}
	return nil
}

func (r *reader) wrap(nested bool, n, off int, err error) error {
	if nested {
		return fmt.Errorf("compressed packet %d (offset %d): %w", n, off, err)
	}
	return &readError{packet: n, offset: off, err: err}
}

// fastPackets turns fastPacket on; tests turn it off to hold it to the
// general path.
var fastPackets = true

// applyPacket applies one TracePacket: the commonest form by fastPacket,
// any other by packet.
func (r *reader) applyPacket(b []byte, nested bool) error {
	if fastPackets {
		if ok, err := r.fastPacket(b); ok {
			return err
		}
	}
	return r.packet(b, nested)
}

// packet is what one TracePacket holds that the reader uses.
type packet struct {
	ts       uint64
	hasTS    bool
	clockID  uint32
	hasClock bool
	seq      uint32
	flags    uint64
	cleared  bool
	dropped  bool

	interned, defaults, snapshots, events, descriptors, compressed [][]byte
	threadDescs                                                    [][]byte
}

// decodePacket collects the fields of one TracePacket the reader uses
// into p, whose lists it reuses (a packet's lists are needed only while
// it is applied).
func decodePacket(b []byte, p *packet) error {
	*p = packet{
		interned: p.interned[:0], defaults: p.defaults[:0], snapshots: p.snapshots[:0], events: p.events[:0],
		descriptors: p.descriptors[:0], compressed: p.compressed[:0], threadDescs: p.threadDescs[:0],
	}
	for len(b) > 0 {
		f, n, err := readField(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch f.key() {
		case key(pktTimestamp, wireVarint):
			p.ts, p.hasTS = f.u, true
		case key(rPktClockID, wireVarint):
			p.clockID, p.hasClock = uint32(f.u), true
		case key(pktSeqID, wireVarint):
			p.seq = uint32(f.u)
		case key(pktSequenceFlags, wireVarint):
			p.flags = f.u
		case key(rPktStateCleared, wireVarint):
			p.cleared = f.u != 0
		case key(rPktPreviousDropped, wireVarint):
			p.dropped = f.u != 0
		case key(pktInternedData, wireBytes):
			p.interned = append(p.interned, f.b)
		case key(pktDefaults, wireBytes):
			p.defaults = append(p.defaults, f.b)
		case key(pktClockSnapshot, wireBytes):
			p.snapshots = append(p.snapshots, f.b)
		case key(pktTrackEvent, wireBytes):
			p.events = append(p.events, f.b)
		case key(pktTrackDescriptor, wireBytes):
			p.descriptors = append(p.descriptors, f.b)
		case key(rPktCompressed, wireBytes):
			p.compressed = append(p.compressed, f.b)
		case key(rPktThreadDesc, wireBytes):
			p.threadDescs = append(p.threadDescs, f.b)
		}
	}
	return nil
}

// packet applies one TracePacket. The order follows trace_processor's
// ProtoTraceReader::ParsePacket.
func (r *reader) packet(b []byte, nested bool) error {
	p := &r.pkts[0]
	if nested {
		p = &r.pkts[1] // the packet holding it is still being applied
	}
	if err := decodePacket(b, p); err != nil {
		return err
	}
	seq, err := r.sequence(p)
	if err != nil {
		return err
	}
	if len(p.snapshots) > 0 {
		return r.clockSnapshots(p) // the rest of a snapshot packet is not read
	}
	if p.flags&seqNeedsIncrementalState != 0 {
		if p.seq == 0 {
			return dropf("packet_needs_incremental_state_missing_sequence_id", "packet needs incremental state but has no trusted_packet_sequence_id")
		}
		if !seq.valid {
			return nil // skipped, as trace_processor does after data loss
		}
	}
	if err := r.compressed(p, nested); err != nil {
		return err
	}
	at, tsErr := r.packetTime(p, seq)
	// A sequence-scoped clock on a packet without a sequence is an error
	// whatever the packet holds (with no sequence, the clock is the
	// packet's own).
	if tsErr != nil && p.seq == 0 && p.clockID >= rFirstSeqClock && p.clockID < rFirstGlobalClock {
		return asDrop("clock_sync_failure_unknown_source_clock", tsErr)
	}
	for _, d := range p.descriptors {
		if err := r.trackDescriptor(d, seq); err != nil {
			err = fmt.Errorf("track_descriptor: %w", err)
			d, ok := errors.AsType[*dropError](err)
			if !ok {
				return err
			}
			r.drop(d.stat, err) // the packet's event may still load
		}
	}
	if len(p.events) > 0 {
		if p.seq == 0 {
			return dropf("track_event_missing_sequence_id", "track event without a trusted_packet_sequence_id")
		}
		if err := r.legacyTime(p, seq, &at, &tsErr); err != nil {
			return err
		}
		if !p.hasTS {
			return dropf("track_event_missing_timestamp", "track event without a timestamp")
		}
		if tsErr != nil {
			return asDrop("clock_sync_failure_unknown_source_clock", tsErr)
		}
		if err := r.trackEvent(seq.gen, &r.te, at); err != nil {
			return asDrop("track_event_parser_errors", fmt.Errorf("track_event: %w", err))
		}
	}
	return nil
}

// legacyTime applies a TrackEvent's legacy timestamp: timestamp_delta_us
// adds to the sequence's running time, which a legacy ThreadDescriptor's
// reference_timestamp_us starts (without one the event is dropped, as
// trace_processor drops it); timestamp_absolute_us is a one-off. Both are
// µs on CLOCK_MONOTONIC and replace the packet's timestamp.
func (r *reader) legacyTime(p *packet, seq *seqState, at *timestamp, tsErr *error) error {
	e := &r.te
	if err := decodeTrackEvent(p.events, e); err != nil {
		return asDrop("track_event_parser_errors", fmt.Errorf("track_event: %w", err))
	}
	delta, abs, hasDelta, hasAbs := e.deltaUS, e.absUS, e.hasDelta, e.hasAbs
	var ns int64
	switch {
	case hasDelta:
		g := seq.gen
		if !g.hasLegacy {
			return dropf("track_event_skipped_timestamp_delta_without_valid_state", "timestamp_delta_us without a legacy thread_descriptor's reference_timestamp_us on the sequence")
		}
		// The running time moves as trace_processor moves it
		// (track_event_tokenizer.cc: a saturating product added with
		// saturation), even by a delta whose event is dropped, so that
		// the next event lands where it does there. An event whose time
		// saturated has no true time: it alone is dropped.
		d, okMul := mulOK(delta, 1000)
		sum, okAdd := addOK(g.legacyNS, d)
		g.legacyNS = saturatingAdd(g.legacyNS, saturatingMul(delta, 1000))
		if !okMul || !okAdd {
			return dropf("track_event_invalid_timestamp", "timestamp_delta_us %d overflows the running time", delta)
		}
		ns = sum
	case hasAbs && abs != 0:
		// An absolute time of 0 is no time: trace_processor falls back to
		// the packet's timestamp.
		p, ok := mulOK(abs, 1000)
		if !ok {
			return dropf("track_event_invalid_timestamp", "timestamp_absolute_us %d overflows", abs)
		}
		ns = p
	default:
		return nil
	}
	if ns < 0 {
		return dropf("track_event_invalid_timestamp", "negative legacy time %d ns", ns)
	}
	p.ts, p.hasTS = uint64(ns), true
	*at, *tsErr = r.clocks.resolve(p.ts, clockMonotonic, p.seq)
	if *tsErr == nil && !at.ok {
		// trace_processor converts a legacy time when it reads it, by
		// the snapshots read so far, and keeps it as it is when none
		// relates CLOCK_MONOTONIC to the trace clock (an old Chrome trace
		// has no snapshot at all): it is not held for later snapshots.
		*at = timestamp{ts: ns, ok: true}
	}
	return nil
}

// clockSnapshots applies the packet's clock snapshots.
func (r *reader) clockSnapshots(p *packet) error {
	for _, s := range p.snapshots {
		if err := r.clockSnapshot(s, p.seq); err != nil {
			return fmt.Errorf("clock_snapshot: %w", err)
		}
	}
	return nil
}

// sequence returns the incremental state of the packet's sequence (nil
// for none), after the packet's resets, defaults and interned data.
func (r *reader) sequence(p *packet) (*seqState, error) {
	if p.seq == 0 {
		if len(p.threadDescs) > 0 {
			r.drop("thread_descriptor_missing_sequence_id", errors.New("thread_descriptor without a trusted_packet_sequence_id"))
		}
		return nil, nil
	}
	seq := r.seqs[p.seq]
	if seq == nil {
		seq = &seqState{gen: newGeneration()}
		r.seqs[p.seq] = seq
	}
	if p.flags&seqIncrementalStateCleared != 0 || p.cleared {
		seq.valid = true
		seq.gen = newGeneration()
	} else if p.dropped {
		seq.valid = false
	}
	for _, d := range p.threadDescs {
		// trace_processor ignores a ThreadDescriptor while the sequence's
		// incremental state is invalid (its deltas would be wrong).
		if !seq.valid {
			r.drop("thread_descriptor_skipped_incremental_state_invalid", errors.New("thread_descriptor while the sequence's incremental state is invalid"))
			continue
		}
		var pid, tid, refUS int64
		err := eachField(d, func(f field) error {
			switch f.key() {
			case key(rLtdRefTimestampUS, wireVarint):
				refUS = f.int64()
			case key(rLtdPid, wireVarint):
				pid = int64(int32(f.u))
			case key(rLtdTid, wireVarint):
				tid = f.int64()
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("thread_descriptor: %w", err)
		}
		seq.gen.setThread(pid, tid, refUS)
	}
	for _, d := range p.defaults {
		if err := parseDefaults(seq.gen, d); err != nil {
			return nil, fmt.Errorf("trace_packet_defaults: %w", err)
		}
	}
	if seq.valid {
		for _, d := range p.interned {
			if err := parseInterned(seq.gen, d); err != nil {
				return nil, fmt.Errorf("interned_data: %w", err)
			}
		}
	}
	return seq, nil
}

// compressed reads the packets inside the packet's compressed_packets.
func (r *reader) compressed(p *packet, nested bool) error {
	for _, c := range p.compressed {
		if nested {
			return errors.New("compressed_packets inside compressed_packets")
		}
		data, err := r.inflater.inflate(c)
		if err != nil {
			return fmt.Errorf("compressed_packets: %w", err)
		}
		r.nameBudget += nameBudget(len(data))
		err = r.packets(data, true)
		r.inner, r.innerOff = 0, 0 // drops after these are the outer packet's
		if err != nil {
			return err
		}
	}
	return nil
}

// packetTime converts the packet's timestamp through its clock (or the
// sequence's default clock). The error matters only to packets whose
// content needs the time.
func (r *reader) packetTime(p *packet, seq *seqState) (timestamp, error) {
	if !p.hasTS {
		return timestamp{}, nil
	}
	clock := p.clockID
	if !p.hasClock && seq != nil {
		clock = seq.gen.clockID
	}
	return r.clocks.resolve(p.ts, clock, p.seq)
}

func parseDefaults(g *generation, b []byte) error {
	return eachField(b, func(f field) error {
		switch f.key() {
		case key(rDefClockID, wireVarint):
			g.clockID = uint32(f.u)
		case key(defTrackEventDefaults, wireBytes):
			return eachField(f.b, func(f field) error {
				var err error
				switch f.num {
				case tedTrackUUID:
					if f.wt == wireVarint {
						g.track, g.hasTrack = f.u, true
					}
				case rTedExtraCounters:
					if f.wt == wireVarint || f.wt == wireBytes {
						g.extra, err = appendVarints(g.extra, &f)
					}
				case rTedExtraDblCounters:
					if f.wt == wireVarint || f.wt == wireBytes {
						g.extraDbl, err = appendVarints(g.extraDbl, &f)
					}
				}
				return err
			})
		}
		return nil
	})
}

func parseInterned(g *generation, b []byte) error {
	return eachField(b, func(f field) error {
		if f.wt != wireBytes {
			return nil
		}
		var table map[uint64]string
		switch f.num {
		case rIdEventCategories:
			table = g.cats
		case idEventNames:
			table = g.names
		case idDebugAnnotNames:
			table = g.argNames
		case idDebugAnnotStrs:
			table = g.strs
		default:
			return nil
		}
		var iid uint64
		var name string
		err := eachField(f.b, func(e field) error {
			switch e.key() {
			case key(internIID, wireVarint):
				iid = e.u
			case key(internName, wireBytes):
				name = string(e.b)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if iid != 0 { // iid 0 means "not set"
			table[iid] = name
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// Tracks.

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
	ti := r.tracks[uuid]
	if ti == nil {
		ti = &trackInfo{idx: len(r.t.Tracks)}
		r.tracks[uuid] = ti
		r.t.Tracks = append(r.t.Tracks, Track{UUID: uuid, Name: name, Kind: TrackPlain})
	}
	ti.sliced = true
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

// ---------------------------------------------------------------------------
// Track events.

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
	flows, terms    []uint64 // flow_ids, terminating_flow_ids
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
// uses; the parts of a repeated singular message merge. The lists that
// only live while the event is applied keep their memory from one event
// to the next; flows, which pending events keep, are made anew.
func decodeTrackEvent(parts [][]byte, e *trackEvent) error {
	*e = trackEvent{cats: e.cats[:0], annotations: e.annotations[:0], extra: e.extra[:0], extraDbl: e.extraDbl[:0],
		extraVals: e.extraVals[:0], extraDblVals: e.extraDblVals[:0], catNames: e.catNames[:0]}
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
		e.flows, err = appendFixed64s(e.flows, &f)
	case key(teTerminatingFlowIDs, wireI64), key(teTerminatingFlowIDs, wireBytes):
		e.terms, err = appendFixed64s(e.terms, &f)
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
	var args []Arg
	for _, a := range e.annotations {
		if args, err = annotation(g, a, "", 0, args, &r.nameBudget); err != nil {
			return fmt.Errorf("debug annotation: %w", err)
		}
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
	// trace_processor drops the whole event when it has more extra counter
	// values than tracks.
	if err := extraMismatch(len(e.extra), len(g.extra), len(e.extraVals)); err != nil {
		return err
	}
	if err := extraMismatch(len(e.extraDbl), len(g.extraDbl), len(e.extraDblVals)); err != nil {
		return err
	}
	if e.hasLegacy {
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
		ti, err := r.counterTrack(track)
		if err != nil {
			return err
		}
		if !e.hasValue {
			return dropf("track_event_counter_missing_value", "counter event on track %d without a value", track)
		}
		r.addCounter(g, ti, track, at, e.value)
	}

	// Extra counter values ride on any event type.
	if err := r.extraCounters(g, e.extra, g.extra, len(e.extraVals), at, func(i int) float64 { return float64(int64(e.extraVals[i])) }); err != nil {
		return err
	}
	return r.extraCounters(g, e.extraDbl, g.extraDbl, len(e.extraDblVals), at, func(i int) float64 { return math.Float64frombits(e.extraDblVals[i]) })
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
	r.events = append(r.events, pendingEvent{
		kind: uint8(e.typ), track: track, at: at, order: r.nextOrder(),
		name: name, hasName: e.hasName && name != "",
		args: args, flows: e.flows, terms: e.terms, bind: e.bind, bindDir: e.bindDir, complete: e.complete, dur: e.dur, pkt: r.pkt, off: r.off,
	})
	return nil
}

// extraMismatch returns the drop of an event with n extra counter values
// but fewer track uuids (its own, else the sequence's defaults).
func extraMismatch(uuids, defaults, n int) error {
	if uuids == 0 {
		uuids = defaults
	}
	if n > uuids {
		return dropf("track_event_extra_counter_track_uuid_mismatch", "%d extra counter values but %d counter track uuids", n, uuids)
	}
	return nil
}

// extraCounters adds n extra counter values (value(i)) to the tracks
// uuids, or to the sequence's defaults when the event names none.
func (r *reader) extraCounters(g *generation, uuids, defaults []uint64, n int, at timestamp, value func(i int) float64) error {
	if n == 0 {
		return nil
	}
	if len(uuids) == 0 {
		uuids = defaults
	}
	if n > len(uuids) {
		return dropf("track_event_extra_counter_track_uuid_mismatch", "%d extra counter values but %d counter track uuids", n, len(uuids))
	}
	for i := range n {
		ti, err := r.counterTrack(uuids[i])
		if err != nil {
			return err
		}
		r.addCounter(g, ti, uuids[i], at, value(i))
	}
	return nil
}

func (r *reader) addCounter(g *generation, ti *trackInfo, track uint64, at timestamp, v float64) {
	if ti.increment {
		if g.counterSums == nil {
			g.counterSums = map[uint64]float64{}
		}
		v += g.counterSums[track]
		g.counterSums[track] = v
	}
	if ti.mult > 0 {
		v *= float64(ti.mult)
	}
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
		s, ok := a.g.strs[f.u]
		if !ok {
			return dropf("interned_data_tokenizer_errors", "string value iid %d is not defined on this sequence", f.u)
		}
		a.value = s
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

// ---------------------------------------------------------------------------
// Clocks.

// clockKey identifies a clock domain: builtin and global clocks by id,
// sequence-scoped clocks (64..127) by sequence and id.
type clockKey uint64

func makeClockKey(id, seq uint32) clockKey {
	if id >= rFirstSeqClock && id < rFirstGlobalClock {
		return clockKey(uint64(seq)<<32 | uint64(id))
	}
	return clockKey(id)
}

func (k clockKey) String() string {
	if k>>32 != 0 {
		return fmt.Sprintf("%d of sequence %d", uint32(k), k>>32)
	}
	return strconv.FormatUint(uint64(k), 10)
}

type clockDomain struct {
	mult        int64
	incremental bool
	last        int64 // latest absolute value of an incremental clock, ns, as trace_processor's int64 sum wraps it
	wraps       int   // how many times that sum wrapped (up +1, down -1): last is the true time only at 0

	readings  []clockReading // from snapshots, in file order
	monotonic bool           // readings never go backwards, so it can be a conversion source
}

type clockReading struct {
	snap int
	ns   int64
}

type clockState struct {
	trace     clockKey
	converted bool
	domains   map[clockKey]*clockDomain
	snapshots [][]clockPoint
	edges     map[[2]clockKey]*clockEdge
	next      map[clockKey]clockKey // routes to the trace clock, made at the end

	lastEdge         *clockEdge // the edge edge returned last, between these clocks
	lastFrom, lastTo clockKey
}

type clockPoint struct {
	clock clockKey
	ns    int64
}

func newClockState() *clockState {
	return &clockState{
		trace:   clockBoottime,
		domains: map[clockKey]*clockDomain{},
		edges:   map[[2]clockKey]*clockEdge{},
	}
}

// timestamp is a packet time: resolved to the trace clock when read, or,
// when no snapshot yet converts its clock, kept to be converted at the end
// (as trace_processor defers such packets to the end of the file).
type timestamp struct {
	ts       int64
	clock    clockKey
	ns       int64 // in the clock's domain (raw units when scaled is false)
	ok       bool
	unscaled bool
}

// rawClock is one ClockSnapshot.Clock as the file has it.
type rawClock struct {
	id          uint32
	ts          uint64
	mult        uint64
	incremental bool
}

// field stores one ClockSnapshot.Clock field.
func (k *rawClock) field(f field) error {
	switch f.key() {
	case key(clkID, wireVarint):
		k.id = uint32(f.u)
	case key(clkTimestamp, wireVarint):
		k.ts = f.u
	case key(rClkIncremental, wireVarint):
		k.incremental = f.u != 0
	case key(rClkUnitMult, wireVarint):
		k.mult = f.u
	}
	return nil
}

// decodeClockSnapshot returns a ClockSnapshot's clocks and primary clock.
func decodeClockSnapshot(b []byte) (clocks []rawClock, primary uint64, err error) {
	err = eachField(b, func(f field) error {
		switch f.key() {
		case key(rCsPrimaryClock, wireVarint):
			primary = f.u
		case key(csClocks, wireBytes):
			var k rawClock
			if err := eachField(f.b, k.field); err != nil {
				return err
			}
			if len(clocks) == maxSnapshotClocks {
				return fmt.Errorf("more than %d clocks", maxSnapshotClocks)
			}
			clocks = append(clocks, k)
		}
		return nil
	})
	return clocks, primary, err
}

// clockSnapshot applies a ClockSnapshot of the packet sequence seq.
func (r *reader) clockSnapshot(b []byte, seq uint32) error {
	c := r.clocks
	clocks, primary, err := decodeClockSnapshot(b)
	if err != nil {
		return err
	}
	snap := len(c.snapshots)
	var points []clockPoint
	for _, k := range clocks {
		if k.id == 0 {
			continue
		}
		if k.id >= rFirstSeqClock && k.id < rFirstGlobalClock && seq == 0 {
			return fmt.Errorf("sequence-scoped clock %d in a snapshot without trusted_packet_sequence_id", k.id)
		}
		ck := makeClockKey(k.id, seq)
		if slices.ContainsFunc(points, func(p clockPoint) bool { return p.clock == ck }) {
			continue
		}
		points = append(points, clockPoint{ck, c.read(ck, k, snap)})
	}
	c.snapshots = append(c.snapshots, points)
	if primary != 0 && !c.converted && primary < rFirstSeqClock {
		c.trace = clockKey(primary)
	}
	if !r.wallSet {
		r.wallAnchor(points)
	}
	return nil
}

// read records the reading k of clock ck in snapshot snap and returns it
// in ns.
func (c *clockState) read(ck clockKey, k rawClock, snap int) int64 {
	d := c.domains[ck]
	if d == nil {
		d = &clockDomain{monotonic: true}
		c.domains[ck] = d
	}
	d.mult = max(int64(k.mult), 1)
	d.incremental = k.incremental
	ns := int64(k.ts) * d.mult
	if d.incremental {
		d.last = ns
	}
	if n := len(d.readings); n > 0 && ns < d.readings[n-1].ns {
		d.monotonic = false
	}
	d.readings = append(d.readings, clockReading{snap: snap, ns: ns})
	return ns
}

// wallAnchor takes the trace's wall-clock start from the first snapshot
// that reads both a realtime clock and the trace clock.
func (r *reader) wallAnchor(points []clockPoint) {
	var wall, trace int64
	var hasWall, hasTrace bool
	for _, p := range points {
		switch {
		case p.clock == clockRealtime || (p.clock == rClockRealCoarse && !hasWall):
			wall, hasWall = p.ns, true
		}
		if p.clock == r.clocks.trace {
			trace, hasTrace = p.ns, true
		}
	}
	if hasWall && hasTrace {
		r.wallSet = true
		r.t.WallStart, r.t.WallStartTS = wall, trace
	}
}

// resolve interprets a packet timestamp on clock id (0: the trace clock) of
// sequence seq. A clock that shares a snapshot with the trace clock is
// converted now, by the snapshots read so far, as trace_processor does; any
// other waits for the end of the file (see finish).
func (c *clockState) resolve(raw uint64, id, seq uint32) (timestamp, error) {
	if id == 0 {
		return timestamp{ts: int64(raw), ok: true}, nil
	}
	if id >= rFirstSeqClock && id < rFirstGlobalClock && seq == 0 {
		return timestamp{}, dropf("clock_sync_failure_unknown_source_clock", "timestamp on sequence-scoped clock %d but no trusted_packet_sequence_id", id)
	}
	k := makeClockKey(id, seq)
	d := c.domains[k]
	if d == nil && k == c.trace {
		c.converted = true
		return timestamp{ts: int64(raw), ok: true}, nil
	}
	if d == nil {
		if k>>32 != 0 {
			return timestamp{}, dropf("clock_sync_failure_unknown_source_clock", "timestamp on clock %s, which no clock snapshot of the sequence defines yet", k)
		}
		return timestamp{clock: k, ns: int64(raw), unscaled: true}, nil
	}
	// trace_processor's ClockDomain::ToNs scales and sums in plain int64
	// arithmetic: an incremental clock's running time moves by a delta
	// whose product or sum overflowed too, as it wraps, so the next
	// event lands where it does there. The event whose time overflowed
	// has no true time and alone is dropped.
	ns, exact := mulOK(int64(raw), d.mult)
	if d.incremental {
		last, ok := addOK(d.last, ns)
		if !ok {
			if ns < 0 {
				d.wraps--
			} else {
				d.wraps++
			}
		}
		d.last, ns = last, last
		exact = exact && d.wraps == 0
	}
	if !exact {
		return timestamp{}, dropf("track_event_invalid_timestamp", "timestamp %d on clock %s overflows in ns", raw, k)
	}
	if k == c.trace {
		c.converted = true
		return timestamp{ts: ns, ok: true}, nil
	}
	if d.monotonic {
		if pairs := c.edge(k, c.trace); len(pairs) > 0 {
			c.converted = true
			ts, ok := hop(pairs, ns)
			if !ok {
				return timestamp{}, dropf("track_event_invalid_timestamp", "timestamp %d ns on clock %s overflows converted to the trace clock", ns, k)
			}
			return timestamp{ts: ts, ok: true}, nil
		}
	}
	return timestamp{clock: k, ns: ns}, nil
}

// hop converts ns by the pair whose source reading is the latest at or
// before ns, or by the earliest pair for a time before all of them, as
// trace_processor's ClockTracker does; false when the result overflows.
func hop(pairs []clockPair, ns int64) (int64, bool) {
	j, _ := slices.BinarySearchFunc(pairs, ns, func(p clockPair, ns int64) int {
		if p.src <= ns {
			return -1
		}
		return 1
	})
	p := pairs[max(j-1, 0)]
	if p.src == math.MinInt64 {
		return 0, false
	}
	shift, ok := addOK(p.dst, -p.src)
	if !ok {
		return 0, false
	}
	return addOK(ns, shift)
}

// finish converts a timestamp deferred to the end of the file along a
// shortest chain of at most maxClockHops clocks that share snapshots.
func (c *clockState) finish(t *timestamp) error {
	if t.ok {
		return nil
	}
	ns := t.ns
	if t.unscaled {
		d := c.domains[t.clock]
		if d == nil && t.clock == c.trace {
			t.ts, t.ok = ns, true
			return nil
		}
		if d == nil {
			return dropf("clock_sync_failure_unknown_source_clock", "timestamp on clock %s, which no clock snapshot defines", t.clock)
		}
		var ok bool
		if ns, ok = mulOK(ns, d.mult); !ok {
			return dropf("track_event_invalid_timestamp", "timestamp %d on clock %s overflows in ns", t.ns, t.clock)
		}
	}
	if c.next == nil {
		c.next = c.routes()
	}
	for k := t.clock; k != c.trace; {
		next, ok := c.next[k]
		if !ok {
			return dropf("clock_sync_failure_no_path", "no clock snapshot path converts clock %s to the trace clock %s", t.clock, c.trace)
		}
		if ns, ok = hop(c.edge(k, next), ns); !ok {
			return dropf("track_event_invalid_timestamp", "timestamp on clock %s overflows converted to the trace clock", t.clock)
		}
		k = next
	}
	t.ts, t.ok = ns, true
	return nil
}

// routes returns, for every clock within maxClockHops of the trace clock,
// the next clock on a shortest chain to it: a breadth-first search out from
// the trace clock over clocks that share snapshots, in which a clock that
// went backwards between snapshots is never the source of a hop.
func (c *clockState) routes() map[clockKey]clockKey {
	next := map[clockKey]clockKey{}
	seen := map[clockKey]bool{c.trace: true}
	level := []clockKey{c.trace}
	for depth := 0; depth < maxClockHops && len(level) > 0; depth++ {
		var below []clockKey
		for _, to := range level {
			d := c.domains[to]
			if d == nil {
				continue
			}
			for _, r := range d.readings {
				for _, p := range c.snapshots[r.snap] {
					if !seen[p.clock] && c.domains[p.clock].monotonic {
						seen[p.clock] = true
						next[p.clock] = to
						below = append(below, p.clock)
					}
				}
			}
		}
		level = below
	}
	return next
}

// edge returns the readings of the clocks from and to in the snapshots that
// hold both, sorted by the reading of from (a monotonic clock). The list is
// kept per pair and extended with the snapshots added since it was last
// used, so each snapshot is looked at once per pair.
func (c *clockState) edge(from, to clockKey) []clockPair {
	e := c.lastEdge // every event of a run converts the same clock
	if e == nil || c.lastFrom != from || c.lastTo != to {
		if e = c.edges[[2]clockKey{from, to}]; e == nil {
			e = &clockEdge{}
			c.edges[[2]clockKey{from, to}] = e
		}
		c.lastEdge, c.lastFrom, c.lastTo = e, from, to
	}
	rs := c.domains[from].readings
	for ; e.scanned < len(rs); e.scanned++ {
		if dst, ok := c.reading(rs[e.scanned].snap, to); ok {
			e.pairs = append(e.pairs, clockPair{rs[e.scanned].ns, dst})
		}
	}
	return e.pairs
}

type clockEdge struct {
	scanned int // readings of the source clock looked at
	pairs   []clockPair
}

type clockPair struct{ src, dst int64 }

func (c *clockState) reading(snap int, k clockKey) (int64, bool) {
	for _, p := range c.snapshots[snap] {
		if p.clock == k {
			return p.ns, true
		}
	}
	return 0, false
}

// ---------------------------------------------------------------------------
// End of file: pair slices and sort.

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
