package perfetto

import (
	"errors"
	"fmt"
	"math"
)

// This file holds the reader's state, packet by packet: sequences, their interned data and defaults, packets and compressed batches.

type reader struct {
	t      *Trace
	seqs   map[uint32]*seqState
	tracks map[uint64]*trackInfo
	clocks *clockState

	events   []pendingEvent
	counters []pendingCounter

	pkt, off   int               // top-level packet being read, for errors found at the end
	inner      int               // compressed packet being read within packet pkt (0: none), for drops
	innerOff   int               // its offset in the decompressed bytes
	synthetic  map[string]uint64 // tracks the reader made, by key
	v1         []v1Flow          // the flow v1 events (pendingEvent.v1)
	pkts       [2]packet         // the packet being applied, and one inside its compressed_packets
	te         trackEvent        // the TrackEvent of the packet being applied
	lastSeq    *seqState         // fastPacket's last sequence, and its id
	lastSeqID  uint32
	fastHook   func()         // for tests: called for each packet fastPacket applies
	argBlocks  blocks[Arg]    // pending events' arguments are carved out of these
	flowBlocks blocks[uint64] // and their flow ids out of these
	// sliceTrack's last track, and its uuid.
	lastSliced     *trackInfo
	lastSlicedUUID uint64
	droppedDesc    map[uint64]bool // uuids whose only descriptors were dropped (invalid)
	wallSet        bool            // WallStart was taken from a snapshot
	nameBudget     int             // bytes left for flattened annotation names
	inflater       inflater        // for compressed_packets
	src            *packetSource   // the file being read
	// afterPacket, when set, runs after each top-level packet: the
	// streaming decoder's chance to pass on what is final.
	afterPacket func() error
	queued      int // events queued so far: the next one's place in file order
	// descChanged, when set, is told of each track a descriptor adds
	// (added) or changes; an error it returns ends the read.
	descChanged func(uuid uint64, added bool) error
}

// blocks holds the storage of pending events' arguments or flow ids,
// handed out a block at a time so that an event does not allocate. The
// buffered reader keeps every block; the streaming decoder, once every
// queued event has gone out, takes them all back (reuse) and fills them
// again, so that reading makes no garbage of them.
type blocks[T any] struct {
	cur  []T   // the block being filled
	made [][]T // the blocks made, in the order they are filled
	next int   // made[next] is the next to fill
}

// blockLen is how many items a block holds.
const blockLen = 1024

// room returns the block being filled, with room for n more items: the
// caller appends them and hands it back to keep.
func (b *blocks[T]) room(n int) []T {
	if cap(b.cur)-len(b.cur) >= n {
		return b.cur
	}
	if b.next == len(b.made) {
		b.made = append(b.made, nil)
	}
	if cap(b.made[b.next]) < n {
		b.made[b.next] = make([]T, 0, max(blockLen, n))
	}
	b.cur = b.made[b.next][:0]
	b.next++
	return b.cur
}

// keep takes back the block room returned, with items appended from
// start (it may have been outgrown: the larger copy is filled from then
// on), and returns those items, nil if none, capped so that appending
// to them copies.
func (b *blocks[T]) keep(block []T, start int) []T {
	b.cur = block
	if len(block) == start {
		return nil
	}
	return block[start:len(block):len(block)]
}

// reuse takes every block back: nothing may use what was carved out of
// them any more.
func (b *blocks[T]) reuse() {
	b.cur, b.next = nil, 0
}

// seqState is the incremental state of one packet sequence.
type seqState struct {
	valid bool
	gen   *generation
}

// generation is what SEQ_INCREMENTAL_STATE_CLEARED resets.
type generation struct {
	names, argNames, strs, cats map[uint64]string
	// nameCache holds names looked up lately (fastPacket), by iid modulo
	// its length; interned data that defines a name clears it.
	nameCache [64]struct {
		iid  uint64
		name string
	}
	// argNameCache and strCache do the same for debug annotations' names
	// and interned string values, the latter boxed: an argument's value
	// is an any, and boxing a string allocates.
	argNameCache [64]struct {
		iid  uint64
		name string
	}
	strCache [64]struct {
		iid uint64
		v   any
	}

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
		var f field
		var size int
		if body, ok := shortPacket(data[off:]); ok {
			f, size = field{num: fTracePacket, wt: wireBytes, b: body}, 2+len(body)
		} else {
			var err error
			if f, size, err = readField(data[off:]); err != nil {
				return r.wrap(nested, n+1, off, err)
			}
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

// shortPacket returns the body of the TracePacket field at the start of
// b when its tag and its length are a byte each, as nearly every packet's
// are: packets reads those without readField's call, which on a trace
// of small packets took a tenth of Decode's time. False for any other
// field, and for one that b does not hold whole.
func shortPacket(b []byte) ([]byte, bool) {
	if len(b) >= 2 && b[0] == fTracePacket<<3|wireBytes && b[1] < 0x80 && 2+int(b[1]) <= len(b) {
		return b[2 : 2+int(b[1])], true
	}
	return nil, false
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
			switch f.num {
			case idEventNames:
				clear(g.nameCache[:])
			case idDebugAnnotNames:
				clear(g.argNameCache[:])
			case idDebugAnnotStrs:
				clear(g.strCache[:])
			}
		}
		return nil
	})
}
