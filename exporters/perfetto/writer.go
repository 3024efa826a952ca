// Package perfetto writes and reads Perfetto traces (protobuf TrackEvent).
// It is an exporter in devprof's flow: Write reads a stopped session's
// event snapshot (package event) and streams it, packet by packet, to
// an io.Writer, never holding the trace as message objects. Read decodes a
// Perfetto file back into slices, instants and counters for the devprof CLI
// (summary, convert).
//
// The output follows trace_processor's import rules (reference/perfetto.md
// §0–2): every packet carries a non-zero sequence id; each sequence's first
// packet clears incremental state; names, argument names and string values
// are interned per sequence before use; all track descriptors precede the
// events; a clock snapshot pairs BOOTTIME and MONOTONIC with REALTIME so the
// UI can show wall time; flows are fixed64; repeated fields are unpacked.
// A trace larger than one batch of packets (256 KiB) is written in
// batches, each deflated (zlib) into one packet's compressed_packets,
// which trace_processor inflates in place; a smaller one is written bare
// (WriteOptions.Uncompressed writes every trace bare).
//
// Layout: the program is one process; each row of the host layout (lanes of
// spans, see event.Layout) is a thread of it with a sequence of its own;
// counters are process counter tracks with units. A span that could not sit
// under its parent (it overlapped a sibling or outlived its parent) starts
// its own stack on another row and is linked to its parent by a flow.
// Each device is a process of its own, with its streams as threads and its
// counters; a memory tracker's allocations and frees are a thread of their
// device's process beside counter tracks of its memory over time (see
// memory.go). The snapshot's other processes (event.Process: traces other
// tools wrote) are processes too, with their pids, names and labels, and
// their host threads under them with their tids; sort indices become
// sibling_order_rank under explicit process and thread ordering.
package perfetto

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zlib"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/intern"
	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/internal/protoenc"
)

// Field numbers from perfetto/protos (trace_packet.proto, track_event/*.proto,
// interned_data.proto, clock_snapshot.proto).
// Wire types, as the reader also uses them.
const (
	wireVarint = protoenc.WireVarint
	wireI64    = protoenc.WireI64
	wireBytes  = protoenc.WireBytes
	wireI32    = 5
)

const (
	fTracePacket = 1

	pktClockSnapshot   = 6
	pktCompressed      = 50
	pktTimestamp       = 8
	pktSeqID           = 10
	pktTrackEvent      = 11
	pktInternedData    = 12
	pktSequenceFlags   = 13
	pktDefaults        = 59
	pktTimestampClock  = 58
	pktTrackDescriptor = 60

	seqIncrementalStateCleared = 1
	seqNeedsIncrementalState   = 2

	defTrackEventDefaults = 11
	defTimestampClockID   = 58
	tedTrackUUID          = 11

	csClocks     = 1
	clkID        = 1
	clkTimestamp = 2
	clkIncrement = 3

	// rowClock is the sequence-scoped incremental clock of row sequences:
	// each packet's timestamp is the delta from the previous one.
	rowClock = 64

	clockRealtime  = 1
	clockMonotonic = 3
	clockBoottime  = 6

	tdUUID        = 1
	tdName        = 2
	tdProcess     = 3
	tdThread      = 4
	tdParentUUID  = 5
	tdCounter     = 8
	tdDescription = 14
	// Ordering of processes and threads (reference/perfetto.md §1.5, §2.9):
	// sibling_order_rank on each process or thread track, honoured when the
	// uuid 0 descriptor sets process_ordering / thread_ordering EXPLICIT.
	tdSiblingOrderRank = 12
	tdProcessOrdering  = 19
	tdThreadOrdering   = 20
	orderingExplicit   = 1

	pdPid          = 1
	pdProcessName  = 6
	pdProcessLabel = 8

	thPid  = 1
	thTid  = 2
	thName = 5

	cdUnit          = 3
	cdUnitName      = 6
	cdYAxisShareKey = 7

	teDebugAnnotations   = 4
	teType               = 9
	teNameIID            = 10
	teTrackUUID          = 11
	teCounterValue       = 30
	teDoubleCounterValue = 44
	teFlowIDs            = 47
	teTerminatingFlowIDs = 48

	typeSliceBegin = 1
	typeSliceEnd   = 2
	typeInstant    = 3
	typeCounter    = 4

	daNameIID        = 1
	daBoolValue      = 2
	daUintValue      = 3
	daIntValue       = 4
	daDoubleValue    = 5
	daStringValue    = 6
	daStringValueIID = 17

	idEventNames      = 2
	idDebugAnnotNames = 3
	idDebugAnnotStrs  = 29
	internIID         = 1
	internName        = 2 // EventName.name, DebugAnnotationName.name, InternedString.str

	unitTimeNS    = 1
	unitCount     = 2
	unitSizeBytes = 3
)

// ParentFlowBit marks the flow ids devprof uses to link a displaced child
// span to its parent; user flow ids (annotate.NewFlowID) never set it.
const ParentFlowBit = 1 << 63

// WriteOptions adjust Write.
type WriteOptions struct {
	// Gzip compresses the whole file; the Perfetto UI and trace_processor
	// read gzip transparently. The packets inside are then written bare:
	// deflating them twice would cost time and save nothing.
	Gzip bool
	// Uncompressed writes every packet bare, for tools that read Perfetto's
	// protobuf but do not inflate TracePacket.compressed_packets. By
	// default a trace whose packets fill more than one batch of 256 KiB
	// is written in batches, each deflated into one packet's
	// compressed_packets: a trace of spans is several times to tens of
	// times smaller, and trace_processor (so the UI) has read that form
	// since Perfetto's service started writing it. A smaller trace is
	// written bare: deflating it would save a few kilobytes, and bare it
	// stays readable by any protobuf tool.
	Uncompressed bool
}

// Write encodes s as a Perfetto trace to w.
func Write(w io.Writer, s *event.Snapshot, opts WriteOptions) error {
	var zw *gzip.Writer
	if opts.Gzip {
		zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
		w = zw
	}
	tw := &writer{w: w, s: s, m: &s.Meta, compress: !opts.Gzip && !opts.Uncompressed}
	tw.write()
	tw.emit()
	if tw.deflate != nil {
		if err := tw.deflate.close(); tw.err == nil {
			tw.err = err
		}
	}
	if zw != nil {
		if err := zw.Close(); tw.err == nil {
			tw.err = err
		}
	}
	return tw.err
}

// deflaters holds zlib writers between Writes: each holds about a
// megabyte of compressor state, which a trace of a few events should not
// have to allocate again.
var deflaters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return zw
}}

type writer struct {
	w   io.Writer
	s   *event.Snapshot
	m   *event.Meta
	err error

	pkt    protoenc.Enc // the current packet, encoded at the end of out
	pktPos int          // its start, for pkt.End
	intern protoenc.Enc // interned entries of the current packet
	out    []byte       // framed packets not yet handed to w

	// compress says to deflate the batches if there are more than one;
	// deflate, started at the first full batch, compresses each batch of
	// out into one packet's compressed_packets and writes it.
	compress bool
	deflate  *deflater

	nextUUID uint64
	seq      *sequence
	nextSeq  uint32
	argBuf   []event.Arg // reused by slice: one record's arguments at a time
	refBuf   []event.ArgRef

	// names, argNames and strs remember each snapshot string id's iid in
	// the current sequence's tables (entries of older sequences read as
	// misses): a repeated name or key is an index, not a hash lookup.
	names, argNames, strs iidMemo
	fastSlices            int // events sliceFast wrote (tests)

	// What write's steps share: the trace's start on the BOOTTIME clock,
	// and the uuids and pids of the tracks the descriptors declared.
	start      int64
	procUUID   uint64
	deviceUUID map[int]uint64 // device -> its process track; -1: the program's
	devicePID  map[int]int64
	// procPID and procUUIDs are the pid and process track of each of the
	// snapshot's other processes (event.Process, index Track.Process-1);
	// usedPID holds every pid taken, so devices get pids of their own.
	procPID   []int64
	procUUIDs []uint64
	usedPID   map[int64]bool
	// twin is the index in Processes of the process that has the
	// program's own pid (Kineto's, read from Chrome JSON, where the
	// program is its busiest process), -1 for none: one source process,
	// written as the program's one process track (see TwinThreadDescription).
	twin        int
	rowUUID     []uint64          // thread track of each layout row
	threadUUID  map[uint32]uint64 // thread track of each model track with rows (its first row's)
	counterUUID map[counterKey]uint64

	// memory holds the memory timelines of the TrackMemory tracks, and
	// memUUID the counter tracks of each: its bytes in use, then its
	// series.
	memory  []event.MemoryTimeline
	memUUID [][]uint64
}

// counterKey is one counter track: a series of its parent track (a
// device's process, the program's or another process, a thread).
type counterKey struct {
	parent     uint64
	name, unit string
}

// sequence is the per-sequence interning state.
type sequence struct {
	id          uint32
	started     bool
	incremental bool  // timestamps are deltas on rowClock
	last        int64 // the rowClock value after the previous packet
	names       intern.Table
	argNames    intern.Table
	strs        intern.Table
}

func (w *writer) newSequence() *sequence {
	w.nextSeq++
	return &sequence{
		id: w.nextSeq,
	}
}

func (w *writer) uuid() uint64 {
	w.nextUUID++
	return w.nextUUID
}

// startPacket begins a packet on the current sequence. The packet is
// encoded in place at the end of out, its length back-patched by
// finishPacket (one byte reserved: nearly every packet is shorter than
// 128 bytes; a longer one is moved once).
func (w *writer) startPacket(ts int64, hasTS bool) {
	w.pkt.B = w.out
	w.pktPos = w.pkt.Begin(fTracePacket)
	w.intern.Reset()
	switch {
	case !hasTS:
	case w.seq.incremental && ts >= w.seq.last:
		w.pkt.Uint(pktTimestamp, uint64(ts-w.seq.last))
		w.seq.last = ts
	case w.seq.incremental: // never happens for rows walked in order; stay correct anyway
		w.pkt.Uint(pktTimestamp, uint64(ts))
		w.pkt.Uint(pktTimestampClock, clockBoottime)
	default:
		w.pkt.Uint(pktTimestamp, uint64(ts))
	}
	w.pkt.Uint(pktSeqID, uint64(w.seq.id))
	// Only the first packet of a sequence carries flags: it clears the
	// state, which then stays valid (the file loses nothing), so marking
	// every later packet SEQ_NEEDS_INCREMENTAL_STATE would cost two bytes
	// an event and change nothing.
	if !w.seq.started {
		w.seq.started = true
		w.pkt.Uint(pktSequenceFlags, seqIncrementalStateCleared)
	}
}

// finishPacket appends pending interned data and frames the packet.
func (w *writer) finishPacket() {
	if len(w.intern.B) > 0 {
		w.pkt.Tag(pktInternedData, wireBytes)
		w.pkt.Varint(uint64(len(w.intern.B)))
		w.pkt.B = append(w.pkt.B, w.intern.B...)
	}
	w.pkt.End(w.pktPos)
	w.out = w.pkt.B
	if len(w.out) >= outBatch {
		w.flush()
	}
}

// sliceEnd writes a slice's END: only its type and time, on the
// sequence's default track. On a row's sequence (after its first packet,
// time not going back) its bytes are known but for the delta and the
// sequence id, and are appended without the general encoder's calls: ends
// are half the events.
func (w *writer) sliceEnd(ts int64) {
	s := w.seq
	if !s.started || !s.incremental || ts < s.last || s.id >= 0x80 {
		w.startPacket(ts, true)
		p := w.pkt.Begin(pktTrackEvent)
		w.pkt.Uint(teType, typeSliceEnd)
		w.pkt.End(p)
		w.finishPacket()
		return
	}
	d := uint64(ts - s.last)
	s.last = ts
	// timestamp (1 + delta), sequence id (2), track_event {type} (4): at
	// most 18 bytes, so one length byte.
	n := 1 + protoenc.VarintLen(d) + 2 + 4
	b := append(w.out, fTracePacket<<3|wireBytes, byte(n), pktTimestamp<<3|wireVarint)
	b = protoenc.AppendVarint(b, d)
	w.out = append(b, pktSeqID<<3|wireVarint, byte(s.id), pktTrackEvent<<3|wireBytes, 2, teType<<3|wireVarint, typeSliceEnd)
	if len(w.out) >= outBatch {
		w.flush()
	}
}

// outBatch is how many bytes of framed packets the writer collects before
// writing them: one Write per packet would cost more than encoding it.
const outBatch = 256 << 10

// flush writes out, a full batch with more packets to come: the trace is
// more than one batch, so from here on it is deflated if it is to be.
func (w *writer) flush() {
	if w.compress && w.deflate == nil && w.err == nil {
		w.deflate = startDeflater(w.w)
	}
	w.emit()
}

// emit writes the collected packets to w, bare, or hands them to the
// deflater and takes back an empty buffer to fill next.
func (w *writer) emit() {
	switch {
	case w.err != nil || len(w.out) == 0:
	case w.deflate == nil:
		_, w.err = w.w.Write(w.out)
	default:
		w.out, w.err = w.deflate.put(w.out)
		return
	}
	w.out = w.out[:0]
}

// deflater compresses batches of framed packets on a goroutine of its
// own while the writer encodes the next batch, so that on a machine with
// two cores deflating costs little time beside encoding. Two buffers
// take turns: the writer fills one while the other is deflated.
type deflater struct {
	zw   *zlib.Writer
	zout appendWriter
	dst  io.Writer
	full chan []byte   // batches to deflate and write, in order
	free chan returned // batches done, emptied, with the first error so far
	done chan struct{}
	err  error // the first error; the deflater's goroutine owns it until done
}

type returned struct {
	buf []byte
	err error
}

func startDeflater(dst io.Writer) *deflater {
	d := &deflater{zw: deflaters.Get().(*zlib.Writer), dst: dst,
		full: make(chan []byte), free: make(chan returned, 1), done: make(chan struct{})}
	d.free <- returned{} // the second buffer, still to be allocated
	go d.run()
	return d
}

func (d *deflater) run() {
	defer close(d.done)
	for b := range d.full {
		if d.err == nil {
			d.err = d.write(b)
		}
		d.free <- returned{b[:0], d.err}
	}
}

// put hands a batch to the deflater and returns an empty buffer, and the
// first error of the batches written so far.
func (d *deflater) put(b []byte) ([]byte, error) {
	d.full <- b
	r := <-d.free
	return r.buf, r.err
}

// close waits for the last batch and returns the first error.
func (d *deflater) close() error {
	close(d.full)
	<-d.done
	d.zw.Reset(nil) // the pool must not keep this trace's output alive
	deflaters.Put(d.zw)
	return d.err
}

// compressedHead is room for the head of a compressed packet: the
// packet's tag and length (1 + up to 5 bytes), compressed_packets' tag (2)
// and length (up to 5).
const compressedHead = 1 + 5 + 2 + 5

// write deflates a batch of framed packets (zlib, as Perfetto's service
// writes it and trace_processor inflates it, in place, into the packets
// it held) and writes it as one TracePacket holding only
// compressed_packets. The compressed bytes are written after room for the
// head, which is then filled in right before them, so the packet goes to
// dst in one Write without moving the bytes.
func (d *deflater) write(batch []byte) error {
	d.zout.b = append(d.zout.b[:0], make([]byte, compressedHead)...)
	d.zw.Reset(&d.zout)
	if _, err := d.zw.Write(batch); err != nil {
		return err
	}
	if err := d.zw.Close(); err != nil {
		return err
	}
	z := uint64(len(d.zout.b) - compressedHead)
	var head [compressedHead]byte
	h := append(head[:0], fTracePacket<<3|wireBytes)
	h = protoenc.AppendVarint(h, uint64(protoenc.VarintLen(pktCompressed<<3|wireBytes)+protoenc.VarintLen(z))+z)
	h = protoenc.AppendVarint(h, pktCompressed<<3|wireBytes)
	h = protoenc.AppendVarint(h, z)
	start := compressedHead - len(h)
	copy(d.zout.b[start:], h)
	_, err := d.dst.Write(d.zout.b[start:])
	return err
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// iid returns the interned id of s in table, adding an entry to the
// current packet's interned data when s is new on the sequence.
func (w *writer) iid(table *intern.Table, field int, s string) uint64 {
	id, added := table.ID(s)
	if added {
		p := w.intern.Begin(field)
		w.intern.Uint(internIID, uint64(id))
		w.intern.String(internName, s)
		w.intern.End(p)
	}
	return uint64(id)
}

// iidMemo maps a snapshot's string ids to their iids in one of the
// current sequence's tables.
type iidMemo []struct{ seq, iid uint32 }

// peek returns the iid the current sequence seq gave the snapshot string
// id, if it gave it one.
func (m iidMemo) peek(id, seq uint32) (uint64, bool) {
	if int(id) < len(m) && m[id].seq == seq {
		return uint64(m[id].iid), true
	}
	return 0, false
}

// memoIID is iid for the snapshot string with the given id.
func (w *writer) memoIID(m *iidMemo, table *intern.Table, field int, id uint32) uint64 {
	if iid, ok := m.peek(id, w.seq.id); ok {
		return iid
	}
	if int(id) >= len(*m) && int(id) < w.s.NumStrings() {
		grown := make(iidMemo, w.s.NumStrings())
		copy(grown, *m)
		*m = grown
	}
	iid := w.iid(table, field, w.s.String(id))
	if int(id) < len(*m) && iid <= math.MaxUint32 {
		(*m)[id].seq, (*m)[id].iid = w.seq.id, uint32(iid)
	}
	return iid
}

func (w *writer) boot(t int64) int64 { return w.m.BootNanos(t) }

func (w *writer) write() {
	l := w.s.CompactLayout()
	w.memory = w.s.MemoryTimelines(MemoryTopTags)
	w.start = w.boot(w.m.Start.Mono)
	// Sequence 1: clock snapshot, every track descriptor, then
	// process-level events (loose instants, warnings, drops, counters).
	meta := w.newSequence()
	w.seq = meta
	w.clockSnapshot()
	w.ordering(l)
	w.programProcess()
	w.otherProcesses()
	tid := w.deviceProcesses(l)
	w.rowThreads(l, tid)
	w.counterTracks(l)
	w.memoryCounterTracks()
	w.rows(l)
	w.seq = meta
	w.processEvents(l)
}

// clockSnapshot anchors the trace's clocks at its start.
func (w *writer) clockSnapshot() {
	m := w.m
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktClockSnapshot)
	for _, c := range [][2]uint64{{clockBoottime, uint64(w.start)}, {clockMonotonic, uint64(m.Start.Mono)}, {clockRealtime, uint64(m.Start.Wall)}} {
		q := w.pkt.Begin(csClocks)
		w.pkt.Uint(clkID, c[0])
		w.pkt.Uint(clkTimestamp, c[1])
		w.pkt.End(q)
	}
	w.pkt.End(p)
	w.finishPacket()
}

// programProcess declares the program's process track.
func (w *writer) programProcess() {
	m := w.m
	w.procUUID = w.uuid()
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktTrackDescriptor)
	w.pkt.Uint(tdUUID, w.procUUID)
	q := w.pkt.Begin(tdProcess)
	w.pkt.Int(pdPid, int64(m.PID))
	if m.Program == "" {
		// A process track must have a name; the label says it had none.
		w.pkt.String(pdProcessName, fmt.Sprintf("Process %d", m.PID))
		w.pkt.String(pdProcessLabel, ProcessLabelUnnamed)
	} else {
		w.pkt.String(pdProcessName, m.Program)
	}
	w.pkt.String(pdProcessLabel, fmt.Sprintf("devprof host=%s", m.Host))
	if d := m.Dropped(); d > 0 {
		w.pkt.String(pdProcessLabel, fmt.Sprintf("devprof dropped_events=%d", d))
	}
	w.twin = slices.IndexFunc(w.s.Processes, func(p event.Process) bool { return p.PID == int64(m.PID) })
	if w.twin >= 0 {
		p := w.s.Processes[w.twin]
		w.pkt.String(pdProcessLabel, ProcessLabelTwinName+p.Name)
		for _, l := range p.Labels {
			w.pkt.String(pdProcessLabel, ProcessLabelTwinLabel+l)
		}
		if p.IsLabel {
			w.pkt.String(pdProcessLabel, ProcessLabelTwinStringPID+p.Label)
		}
		if p.Sorted {
			w.pkt.String(pdProcessLabel, ProcessLabelTwinSort+strconv.FormatInt(p.SortIndex, 10))
		}
	}
	w.pkt.End(q)
	w.pkt.String(tdDescription, fmt.Sprintf("Recorded by devprof on %s: %d events kept, %d dropped (max %d).", m.Host, len(w.s.Events), m.Dropped(), m.MaxEvents))
	w.pkt.End(p)
	w.finishPacket()
}

// Process labels devprof adds to a process of event.Snapshot.Processes so
// that Read gives it back as it was: the pid as its source wrote it when
// that was a string (Kineto's "Spans"), the model's pid when the file's
// had to differ (it collided with another or did not fit Perfetto's
// int32), and the mark of a process that had no name (the file names it
// after its pid, as a process track must have a name).
const (
	ProcessLabelStringPID = "devprof pid_label="
	ProcessLabelPID       = "devprof pid="
	ProcessLabelUnnamed   = "devprof unnamed"
)

// Labels of the program's process track for a process of
// event.Snapshot.Processes whose pid is the program's own (a Chrome JSON
// trace read by devprof makes its busiest process the program and keeps
// it among its processes too). A pid is one process in Perfetto, so the
// two are written as one track; these labels keep what the model held
// apart (its name, labels, string pid and sort index), and its threads'
// descriptions say they are its (TwinThreadDescription), so that Read
// gives the model back as it was.
const (
	ProcessLabelTwinName      = "devprof process name="
	ProcessLabelTwinLabel     = "devprof process label="
	ProcessLabelTwinStringPID = "devprof process pid_label="
	ProcessLabelTwinSort      = "devprof process sort="
)

// TwinThreadDescription is the description of a thread track of the
// process that shares the program's pid (see ProcessLabelTwinName), which
// the program's own threads do not carry.
const TwinThreadDescription = "devprof thread of the process that shares the program's pid"

// ordering declares the default track (uuid 0) with explicit process and
// thread ordering when any process or host thread has a sort index, so
// that the UI orders them by sibling_order_rank; without sort indices it
// writes nothing and the UI keeps its own order.
func (w *writer) ordering(l *event.Layout) {
	procs, threads := false, false
	for _, p := range w.s.Processes {
		procs = procs || p.Sorted
	}
	for i := range l.Rows {
		if t, ok := w.s.Track(&l.Rows[i]); ok && t.Kind == event.TrackHostThread && t.Sorted {
			threads = true
		}
	}
	if !procs && !threads {
		return
	}
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktTrackDescriptor)
	w.pkt.Uint(tdUUID, 0)
	if procs {
		w.pkt.Uint(tdProcessOrdering, orderingExplicit)
	}
	if threads {
		w.pkt.Uint(tdThreadOrdering, orderingExplicit)
	}
	w.pkt.End(p)
	w.finishPacket()
}

// rank returns a sort index as a sibling_order_rank (an int32).
func rank(i int64) int64 { return min(max(i, math.MinInt32), math.MaxInt32) }

// otherProcesses declares a process track for each of the snapshot's
// other processes (event.Process), under its own pid where that pid is
// free and fits, else under a fresh one (labelled with the model's pid).
func (w *writer) otherProcesses() {
	w.usedPID = map[int64]bool{int64(w.m.PID): true}
	n := len(w.s.Processes)
	w.procPID = make([]int64, n)
	w.procUUIDs = make([]uint64, n)
	fits := func(pid int64) bool { return pid >= 0 && pid <= math.MaxInt32 }
	// Processes keep their pids first come, first served; the rest take
	// fresh pids past every pid wanted.
	fresh := int64(w.m.PID)
	for _, p := range w.s.Processes {
		if fits(p.PID) {
			fresh = max(fresh, p.PID)
		}
	}
	for i, p := range w.s.Processes {
		if i == w.twin {
			w.procPID[i] = p.PID
		} else if fits(p.PID) && !w.usedPID[p.PID] {
			w.procPID[i] = p.PID
		} else {
			fresh++
			w.procPID[i] = fresh
		}
		w.usedPID[w.procPID[i]] = true
	}
	for i, p := range w.s.Processes {
		if i == w.twin { // the program's track is its track
			w.procUUIDs[i] = w.procUUID
			continue
		}
		w.procUUIDs[i] = w.uuid()
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("Process %d", p.PID)
			if p.IsLabel && p.Label != "" {
				name = p.Label
			}
		}
		w.startPacket(w.start, true)
		q := w.pkt.Begin(pktTrackDescriptor)
		w.pkt.Uint(tdUUID, w.procUUIDs[i])
		d := w.pkt.Begin(tdProcess)
		w.pkt.Int(pdPid, w.procPID[i])
		w.pkt.String(pdProcessName, name)
		for _, lb := range p.Labels {
			w.pkt.String(pdProcessLabel, lb)
		}
		if p.IsLabel {
			w.pkt.String(pdProcessLabel, ProcessLabelStringPID+p.Label)
		}
		if w.procPID[i] != p.PID {
			w.pkt.String(pdProcessLabel, ProcessLabelPID+strconv.FormatInt(p.PID, 10))
		}
		if p.Name == "" {
			w.pkt.String(pdProcessLabel, ProcessLabelUnnamed)
		}
		w.pkt.End(d)
		if p.Sorted {
			w.pkt.Int(tdSiblingOrderRank, rank(p.SortIndex))
		}
		w.pkt.End(q)
		w.finishPacket()
	}
}

// deviceProcesses declares one process per device: its streams are its
// threads and its counters its counter tracks; everything else (lanes,
// threads read from files) belongs to the program. It returns the last
// pid taken.
func (w *writer) deviceProcesses(l *event.Layout) (lastPID int64) {
	w.devicePID = map[int]int64{}
	w.deviceUUID = map[int]uint64{-1: w.procUUID}
	nextPID := int64(w.m.PID)
	next := func() int64 {
		nextPID++
		for w.usedPID[nextPID] {
			nextPID++
		}
		w.usedPID[nextPID] = true
		return nextPID
	}
	for _, dev := range l.Devices {
		w.deviceProcess(dev, next())
	}
	// A device whose memory is tracked is a process too, with or without
	// other activity; host memory (-1) is the program's.
	for _, tl := range w.memory {
		if _, ok := w.deviceUUID[tl.Device]; !ok && tl.Device >= 0 {
			w.deviceProcess(event.Track{Kind: event.TrackDevice, Device: tl.Device}, next())
		}
	}
	return nextPID
}

// deviceProcess declares the process of a device.
func (w *writer) deviceProcess(dev event.Track, pid int64) {
	d := dev.Device
	w.devicePID[d] = pid
	w.deviceUUID[d] = w.uuid()
	label := fmt.Sprintf("GPU %d", d)
	if dev.DeviceName != "" {
		label += " (" + dev.DeviceName + ")"
	}
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktTrackDescriptor)
	w.pkt.Uint(tdUUID, w.deviceUUID[d])
	q := w.pkt.Begin(tdProcess)
	w.pkt.Int(pdPid, pid)
	w.pkt.String(pdProcessName, label)
	// The device's identity as process labels, which the UI lists and
	// Read gives back (DeviceLabelIndex, DeviceLabelVendor, DeviceLabelUUID).
	w.pkt.String(pdProcessLabel, DeviceLabelIndex+strconv.Itoa(d))
	if dev.Vendor != "" {
		w.pkt.String(pdProcessLabel, DeviceLabelVendor+dev.Vendor)
	}
	if dev.UUID != "" {
		w.pkt.String(pdProcessLabel, DeviceLabelUUID+dev.UUID)
	}
	if dev.PCIBusID != "" {
		w.pkt.String(pdProcessLabel, DeviceLabelPCI+dev.PCIBusID)
	}
	if dev.Caps != (event.DeviceCaps{}) {
		w.pkt.String(pdProcessLabel, DeviceLabelCaps+FormatCaps(dev.Caps))
	}
	w.pkt.End(q)
	w.pkt.End(p)
	w.finishPacket()
}

// rowThreads declares a thread track per layout row; thread ids start
// past every pid, so no thread is taken for a process's main thread. A
// host thread of another process (Track.Process) is a thread of that
// process, under its own tid where the file can keep it (its first row,
// a positive tid not taken in that process) and with its sort index as
// its rank.
func (w *writer) rowThreads(l *event.Layout, tid int64) {
	w.rowUUID = make([]uint64, len(l.Rows))
	w.threadUUID = map[uint32]uint64{}
	type threadKey struct{ pid, tid int64 }
	used := map[threadKey]bool{}
	// The tids other processes' threads keep, first come, first served.
	own := make([]int64, len(l.Rows))
	maxTID := tid
	for i := range l.Rows {
		if t, ok := w.s.Track(&l.Rows[i]); ok && t.Kind == event.TrackHostThread && t.Process > 0 && t.Process <= len(w.procPID) {
			k := threadKey{w.procPID[t.Process-1], t.ID}
			if l.Rows[i].Sub == 0 && t.ID > 0 && !used[k] {
				used[k], own[i] = true, t.ID
				maxTID = max(maxTID, t.ID)
			}
		}
	}
	// Spare tids start past the program's row tids too.
	spare := max(maxTID, tid+int64(len(l.Rows)+len(w.usedPID)))
	for i := range l.Rows {
		row := &l.Rows[i]
		pid := int64(w.m.PID)
		memory, twin := false, false
		var ranked *event.Track
		tid++
		// The program's rows take no tid a thread of the process that
		// shares its pid keeps.
		for w.usedPID[tid] || used[threadKey{pid, tid}] {
			tid++
		}
		thread := tid
		if t, ok := w.s.Track(row); ok {
			switch t.Kind {
			case event.TrackDeviceStream:
				pid = w.devicePID[t.Device]
			case event.TrackMemory:
				memory = true
				if p, ok := w.devicePID[t.Device]; ok {
					pid = p
				}
			case event.TrackHostThread:
				if t.Sorted {
					ranked = &t
				}
				if t.Process > 0 && t.Process <= len(w.procPID) {
					pid, twin = w.procPID[t.Process-1], t.Process-1 == w.twin
					if thread = own[i]; thread == 0 {
						// A tid past every tid kept and every pid.
						spare++
						for w.usedPID[spare] {
							spare++
						}
						thread = spare
					}
				}
			}
		}
		w.rowUUID[i] = w.uuid()
		if row.Track != 0 && row.Sub == 0 {
			w.threadUUID[row.Track] = w.rowUUID[i]
		}
		w.startPacket(w.start, true)
		p := w.pkt.Begin(pktTrackDescriptor)
		w.pkt.Uint(tdUUID, w.rowUUID[i])
		q := w.pkt.Begin(tdThread)
		w.pkt.Int(thPid, pid)
		w.pkt.Int(thTid, thread)
		w.pkt.String(thName, row.Name)
		w.pkt.End(q)
		switch {
		case memory:
			w.pkt.String(tdDescription, MemoryEventsDescription)
		case twin:
			w.pkt.String(tdDescription, TwinThreadDescription)
		}
		if ranked != nil {
			w.pkt.Int(tdSiblingOrderRank, rank(ranked.SortIndex))
		}
		w.pkt.End(p)
		w.finishPacket()
	}
}

// counterOf returns the counter track a sample of device belongs to; for
// the host's (-1), the track of its owner: its thread, its process, else
// the program's.
func (w *writer) counterOf(device int, r *event.Record) counterKey {
	unit, _ := w.s.Counter(r)
	parent := w.deviceUUID[device]
	if device < 0 {
		parent = w.ownerUUID(r)
	}
	return counterKey{parent, w.s.Name(r), unit}
}

// ownerUUID returns the track a host counter sample or a loose instant
// belongs under (Snapshot.Owner): its thread's, its process's, else the
// program's process track.
func (w *writer) ownerUUID(r *event.Record) uint64 {
	proc, thread, ok := w.s.Owner(r)
	if !ok {
		return w.procUUID
	}
	if u, ok := w.threadUUID[thread]; ok && thread != 0 {
		return u
	}
	if proc > 0 && proc <= len(w.procUUIDs) {
		return w.procUUIDs[proc-1]
	}
	return w.procUUID
}

// unnamedCounter names the counter track of a series that has no name.
const unnamedCounter = "counter"

// counterTracks declares one counter track per device, name and unit,
// under the host's or the device's process.
func (w *writer) counterTracks(l *event.Layout) {
	w.counterUUID = map[counterKey]uint64{}
	for _, r := range l.Counters {
		w.counterTrack(w.counterOf(-1, r))
	}
	for _, dev := range l.Devices {
		for _, r := range l.DeviceCounters[dev.Device] {
			w.counterTrack(w.counterOf(dev.Device, r))
		}
	}
}

func (w *writer) counterTrack(k counterKey) {
	if _, ok := w.counterUUID[k]; ok {
		return
	}
	u := w.uuid()
	w.counterUUID[k] = u
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktTrackDescriptor)
	w.pkt.Uint(tdUUID, u)
	w.pkt.Uint(tdParentUUID, k.parent)
	name := k.name
	if name == "" {
		// A series the file it was read from left unnamed (trace_processor
		// names such a track nothing): a track the UI can show needs a
		// name, the one the reader gives a counter of no described track.
		name = unnamedCounter
	}
	w.pkt.String(tdName, name)
	q := w.pkt.Begin(tdCounter)
	if unit := builtinUnit(k.unit); unit != 0 {
		w.pkt.Uint(cdUnit, unit)
	}
	if k.unit != "" {
		w.pkt.String(cdUnitName, k.unit)
	}
	w.pkt.End(q)
	w.pkt.End(p)
	w.finishPacket()
}

// rows writes each layout row as a sequence of its own.
func (w *writer) rows(l *event.Layout) {
	// Displaced children are linked from their parent's begin.
	childLinks := map[uint64][]uint64{}
	for i := range l.Rows {
		row := &l.Rows[i]
		for k := range row.Len() {
			if sp := row.Span(k); sp.Displaced {
				childLinks[sp.Parent()] = append(childLinks[sp.Parent()], ParentFlowBit|sp.ID())
			}
		}
	}
	for i := range l.Rows {
		w.rowSequence(w.rowUUID[i])
		if t, ok := w.s.Track(&l.Rows[i]); ok && t.Kind == event.TrackMemory {
			w.memoryRow(&l.Rows[i])
			continue
		}
		l.Rows[i].Walk(func(typ event.RowEventType, sp *event.Placed, inst *event.Record) {
			switch typ {
			case event.RowBegin:
				w.slice(typeSliceBegin, sp.Start(), 0, sp.Record, sp.Finished, childLinks[sp.ID()], sp.Displaced)
			case event.RowEnd:
				w.sliceEnd(w.boot(sp.End))
			case event.RowInstant:
				w.slice(typeInstant, inst.Start(), 0, inst, true, nil, false)
			}
		})
	}
}

// rowSequence starts a row's sequence, whose packets default to the row's
// track and carry timestamps as deltas on an incremental clock that a
// snapshot in the first packet anchors to BOOTTIME: a begin or end then
// costs a byte or two of time instead of nine.
func (w *writer) rowSequence(track uint64) {
	w.seq = w.newSequence()
	w.startPacket(w.start, true)
	w.pkt.Uint(pktTimestampClock, clockBoottime)
	p := w.pkt.Begin(pktDefaults)
	w.pkt.Uint(defTimestampClockID, rowClock)
	q := w.pkt.Begin(defTrackEventDefaults)
	w.pkt.Uint(tedTrackUUID, track)
	w.pkt.End(q)
	w.pkt.End(p)
	p = w.pkt.Begin(pktClockSnapshot)
	q = w.pkt.Begin(csClocks)
	w.pkt.Uint(clkID, clockBoottime)
	w.pkt.Uint(clkTimestamp, uint64(w.start))
	w.pkt.End(q)
	q = w.pkt.Begin(csClocks)
	w.pkt.Uint(clkID, rowClock)
	w.pkt.Uint(clkTimestamp, uint64(w.start))
	w.pkt.Bool(clkIncrement, true)
	w.pkt.End(q)
	w.pkt.End(p)
	w.finishPacket()
	w.seq.incremental, w.seq.last = true, w.start
}

// processEvents writes the events of the first sequence: loose instants,
// warnings, notes and drops as instants on the process, then counter
// samples.
func (w *writer) processEvents(l *event.Layout) {
	m := w.m
	for _, r := range l.Loose {
		w.slice(typeInstant, r.Start(), w.ownerUUID(r), r, true, nil, false)
	}
	for _, mk := range metatext.Markers(m) {
		at := w.start
		if mk.AtStop {
			at = w.boot(m.Stop.Mono)
		}
		w.startPacket(at, true)
		p := w.pkt.Begin(pktTrackEvent)
		w.pkt.Uint(teType, typeInstant)
		w.pkt.Uint(teTrackUUID, w.procUUID)
		w.pkt.Uint(teNameIID, w.iid(&w.seq.names, idEventNames, mk.Name))
		for _, a := range mk.Args {
			w.arg(a)
		}
		w.pkt.End(p)
		w.finishPacket()
	}
	for _, r := range l.Counters {
		w.counterSample(-1, r)
	}
	for _, dev := range l.Devices {
		for _, r := range l.DeviceCounters[dev.Device] {
			w.counterSample(dev.Device, r)
		}
	}
	w.memorySamples()
}

func (w *writer) counterSample(device int, r *event.Record) {
	w.startPacket(w.boot(r.Start()), true)
	p := w.pkt.Begin(pktTrackEvent)
	w.pkt.Uint(teType, typeCounter)
	_, v := w.s.Counter(r)
	w.pkt.Uint(teTrackUUID, w.counterUUID[w.counterOf(device, r)])
	w.pkt.Double(teDoubleCounterValue, v)
	w.pkt.End(p)
	w.finishPacket()
}

// Process labels of a GPU process that carry the device's identity and
// capabilities (event.Track's Device, Vendor, UUID, PCIBusID and Caps,
// the last as FormatCaps writes it); the process name ("GPU 1 (NVIDIA
// H100 80GB HBM3)") is for people.
const (
	DeviceLabelIndex  = "devprof device="
	DeviceLabelVendor = "devprof vendor="
	DeviceLabelUUID   = "devprof uuid="
	DeviceLabelPCI    = "devprof pci="
	DeviceLabelCaps   = "devprof caps="
)

// FormatCaps writes a device's capabilities as the DeviceLabelCaps label
// holds them, words a person reads in the UI's process details:
// "sms=132 cc=9.0 clock_khz=1980000 memory_bytes=150109880320
// bandwidth_bytes_per_s=4814304000000". ParseCaps reads it back.
func FormatCaps(c event.DeviceCaps) string {
	return fmt.Sprintf("sms=%d cc=%d.%d clock_khz=%d memory_bytes=%d bandwidth_bytes_per_s=%d",
		c.Cores, c.ComputeCapMajor, c.ComputeCapMinor, c.ClockRateKHz, c.MemoryBytes, c.MemoryBandwidth)
}

// ParseCaps reads what FormatCaps wrote; words it does not know, or
// cannot read, are passed over (a later writer may add some).
func ParseCaps(s string) event.DeviceCaps {
	var c event.DeviceCaps
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "sms":
			c.Cores, _ = strconv.ParseInt(v, 10, 64)
		case "cc":
			maj, minor, _ := strings.Cut(v, ".")
			c.ComputeCapMajor, _ = strconv.ParseInt(maj, 10, 64)
			c.ComputeCapMinor, _ = strconv.ParseInt(minor, 10, 64)
		case "clock_khz":
			c.ClockRateKHz, _ = strconv.ParseInt(v, 10, 64)
		case "memory_bytes":
			c.MemoryBytes, _ = strconv.ParseUint(v, 10, 64)
		case "bandwidth_bytes_per_s":
			c.MemoryBandwidth, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return c
}

// Names of the instants that carry Meta.Warnings and Meta.Notes; the text
// is their "message" argument, the source and code their "source" and
// "code" arguments.
const (
	MessageWarning = metatext.WarningName
	MessageNote    = metatext.NoteName
)

// slice writes a BEGIN or INSTANT event for r. track 0 means the
// sequence's default track.
func (w *writer) slice(typ uint64, at int64, track uint64, r *event.Record, finished bool, links []uint64, displaced bool) {
	ts := w.boot(at)
	if track == 0 && finished && len(links) == 0 && !displaced && !noFastSlice && w.sliceFast(typ, ts, r) {
		return
	}
	w.startPacket(ts, true)
	p := w.pkt.Begin(pktTrackEvent)
	w.pkt.Uint(teType, typ)
	if track != 0 {
		w.pkt.Uint(teTrackUUID, track)
	}
	w.pkt.Uint(teNameIID, w.memoIID(&w.names, &w.seq.names, idEventNames, r.NameID()))
	var flows []uint64
	w.refBuf = w.s.AppendArgRefs(w.refBuf[:0], r)
	if w.keysUnique(w.refBuf) {
		for i := range w.refBuf {
			a := &w.refBuf[i]
			if a.Kind == event.ArgFlow {
				flows = append(flows, a.Num)
				continue
			}
			w.argRef(a)
		}
	} else {
		w.argBuf = w.s.AppendArgs(w.argBuf[:0], r)
		for _, a := range event.UniqueKeys(w.argBuf) {
			if a.Kind == event.ArgFlow {
				flows = append(flows, a.Num)
				continue
			}
			w.arg(a)
		}
	}
	if r.IsStep() {
		w.annotation("step_num", func() { w.pkt.Int(daIntValue, r.StepNum()) })
	}
	if !finished {
		w.annotation("unfinished", func() { w.pkt.Bool(daBoolValue, true) })
	}
	for _, f := range flows {
		w.pkt.Fixed64(teFlowIDs, f)
	}
	for _, f := range links {
		w.pkt.Fixed64(teFlowIDs, f)
	}
	if displaced {
		w.pkt.Fixed64(teTerminatingFlowIDs, ParentFlowBit|r.ID())
	}
	w.pkt.End(p)
	w.finishPacket()
}

// noFastSlice turns sliceFast off (tests compare the two paths' bytes).
var noFastSlice bool

// sliceFast writes what slice writes for the commonest event of a row's
// sequence: a finished BEGIN or INSTANT on the sequence's default track,
// with at most two arguments (numbers or strings, keys distinct) and no
// flow or step, whose name, keys and strings the sequence has interned
// already. Every length is then known before a byte is written: the
// packet is appended as key bytes and varints, with no back-patching and
// no encoder call a field (begins and instants are half the events). It
// reports false, having written nothing, for any other event.
func (w *writer) sliceFast(typ uint64, ts int64, r *event.Record) bool {
	s := w.seq
	if !s.started || !s.incremental || ts < s.last || s.id >= 0x80 || r.NArgs() > 2 || r.IsStep() {
		return false
	}
	name, ok := w.names.peek(r.NameID(), s.id)
	if !ok {
		return false
	}
	type fastArg struct {
		key, val uint64
		kind     event.ArgKind
		n        int // the annotation's length
	}
	var args [2]fastArg
	refs := w.s.AppendArgRefs(w.refBuf[:0], r)
	w.refBuf = refs
	if len(refs) == 2 && w.s.String(refs[0].Key) == w.s.String(refs[1].Key) {
		return false // UniqueKeys renames the second (keysUnique, for two)
	}
	te := 2 + 1 + protoenc.VarintLen(name) // type, name_iid
	for i := range refs {
		a, f := &refs[i], &args[i]
		if f.key, ok = w.argNames.peek(a.Key, s.id); !ok {
			return false
		}
		f.kind, f.val = a.Kind, a.Num
		f.n = 1 + protoenc.VarintLen(f.key)
		switch a.Kind {
		case event.ArgInt, event.ArgUint:
			f.n += 1 + protoenc.VarintLen(f.val)
		case event.ArgBool:
			f.val = min(f.val, 1)
			f.n += 2
		case event.ArgFloat:
			f.n += 1 + 8
		case event.ArgString:
			if f.val, ok = w.strs.peek(uint32(a.Num), s.id); !ok {
				return false
			}
			f.n += 2 + protoenc.VarintLen(f.val)
		default: // a duration (its string is made here), a flow, kind 0
			return false
		}
		te += 2 + f.n
	}
	// At most 2 + 11 + 2*25 bytes of track event and 1 + 10 + 2 + 2 more
	// of packet: both lengths are one byte.
	d := uint64(ts - s.last)
	b := append(w.out, fTracePacket<<3|wireBytes, byte(1+protoenc.VarintLen(d)+2+2+te), pktTimestamp<<3|wireVarint)
	b = protoenc.AppendVarint(b, d)
	b = append(b, pktSeqID<<3|wireVarint, byte(s.id), pktTrackEvent<<3|wireBytes, byte(te),
		teType<<3|wireVarint, byte(typ), teNameIID<<3|wireVarint)
	b = protoenc.AppendVarint(b, name)
	for i := range refs {
		f := &args[i]
		b = append(b, teDebugAnnotations<<3|wireBytes, byte(f.n), daNameIID<<3|wireVarint)
		b = protoenc.AppendVarint(b, f.key)
		switch f.kind {
		case event.ArgInt:
			b = protoenc.AppendVarint(append(b, daIntValue<<3|wireVarint), f.val)
		case event.ArgUint:
			b = protoenc.AppendVarint(append(b, daUintValue<<3|wireVarint), f.val)
		case event.ArgBool:
			b = append(b, daBoolValue<<3|wireVarint, byte(f.val))
		case event.ArgFloat:
			b = binary.LittleEndian.AppendUint64(append(b, daDoubleValue<<3|wireI64), f.val)
		case event.ArgString:
			b = protoenc.AppendVarint(protoenc.AppendVarint(b, daStringValueIID<<3|wireVarint), f.val)
		}
	}
	s.last = ts
	w.out = b
	w.fastSlices++
	if len(w.out) >= outBatch {
		w.flush()
	}
	return true
}

func (w *writer) annotation(name string, value func()) {
	p := w.pkt.Begin(teDebugAnnotations)
	w.pkt.Uint(daNameIID, w.iid(&w.seq.argNames, idDebugAnnotNames, name))
	value()
	w.pkt.End(p)
}

// keysUnique reports whether no two of refs (flows aside) have the same
// key: then UniqueKeys would rename none and argRef writes them as stored.
func (w *writer) keysUnique(refs []event.ArgRef) bool {
	for i := 1; i < len(refs); i++ {
		if refs[i].Kind == event.ArgFlow {
			continue
		}
		for j := range i {
			if refs[j].Kind != event.ArgFlow && w.s.String(refs[i].Key) == w.s.String(refs[j].Key) {
				return false
			}
		}
	}
	return true
}

// argRef is arg for an argument as the snapshot stores it: the key and a
// string value go through the iid memos by string id.
func (w *writer) argRef(a *event.ArgRef) {
	p := w.pkt.Begin(teDebugAnnotations)
	w.pkt.Uint(daNameIID, w.memoIID(&w.argNames, &w.seq.argNames, idDebugAnnotNames, a.Key))
	if a.Kind == event.ArgString {
		w.pkt.Uint(daStringValueIID, w.memoIID(&w.strs, &w.seq.strs, idDebugAnnotStrs, uint32(a.Num)))
	} else {
		w.value(a.Kind, a.Num)
	}
	w.pkt.End(p)
}

func (w *writer) arg(a event.Arg) {
	p := w.pkt.Begin(teDebugAnnotations)
	w.pkt.Uint(daNameIID, w.iid(&w.seq.argNames, idDebugAnnotNames, a.Key))
	if a.Kind == event.ArgString {
		w.pkt.Uint(daStringValueIID, w.iid(&w.seq.strs, idDebugAnnotStrs, a.Str))
	} else {
		w.value(a.Kind, a.Num)
	}
	w.pkt.End(p)
}

// value writes the value of a debug annotation whose value is not a
// string (a duration becomes one: Perfetto has no duration value).
func (w *writer) value(k event.ArgKind, num uint64) {
	switch k {
	case event.ArgInt:
		w.pkt.Int(daIntValue, int64(num))
	case event.ArgUint:
		w.pkt.Uint(daUintValue, num)
	case event.ArgFloat:
		w.pkt.Double(daDoubleValue, math.Float64frombits(num))
	case event.ArgBool:
		w.pkt.Bool(daBoolValue, num != 0)
	case event.ArgDuration:
		w.pkt.Uint(daStringValueIID, w.iid(&w.seq.strs, idDebugAnnotStrs, event.Arg{Num: num}.Duration().String()))
	}
}

func builtinUnit(u string) uint64 {
	switch u {
	case "ns":
		return unitTimeNS
	case "count":
		return unitCount
	case "bytes", "B":
		return unitSizeBytes
	}
	return 0
}
