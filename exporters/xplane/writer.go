package xplane

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/internal/intern"
	"github.com/devprof/devprof/internal/metatext"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/protoenc"
)

// Field numbers of xplane.proto (see xplanepb/xplane.proto).
const (
	spacePlanes    = 1
	spaceWarnings  = 3
	spaceHostnames = 4

	planeID            = 1
	planeName          = 2
	planeLines         = 3
	planeEventMetadata = 4
	planeStatMetadata  = 5
	planeStats         = 6

	lineID          = 1
	lineName        = 2
	lineTimestampNS = 3
	lineEvents      = 4
	lineDurationPS  = 9
	lineDisplayID   = 10

	eventMetadataID = 1
	eventOffsetPS   = 2
	eventDurationPS = 3
	eventStats      = 4

	statMetadataID = 1
	statDouble     = 2
	statUint64     = 3
	statInt64      = 4
	statStr        = 5
	statRef        = 7

	mdID   = 1
	mdName = 2

	mapKey   = 1
	mapValue = 2
)

// Plane and line names xprof recognises.
const (
	HostPlaneName    = "/host:CPU"
	TaskEnvPlaneName = "Task Environment"
	GPUPlanePrefix   = "/device:GPU:"
	CountersLineName = "_counters_"
	InstantsLineName = "Instants"
)

// Write encodes s as an XSpace to w.
func Write(w io.Writer, s *event.Snapshot) error {
	_, err := write(w, s)
	return err
}

// write is Write, returning the writer for tests to look into.
func write(w io.Writer, s *event.Snapshot) (*writer, error) {
	x := &writer{s: s, m: &s.Meta, correlated: map[uint64]bool{}, caps: map[int]event.DeviceCaps{}, memorySize: memorySizes(s)}
	for _, d := range s.CompactLayout().Devices {
		x.caps[d.Device] = d.Caps
	}
	// One pass over the records finds what the passes below need, so that a
	// trace without memory events or host flows (a session's spans) is not
	// swept again for them: its records fill more memory than any cache.
	var memory []*event.Record // memory events, for linkSteps
	hostFlows := false         // whether any record but device work has a flow
	for _, r := range s.Events {
		if x.isMemoryEvent(r) {
			memory = append(memory, r)
		}
		if r.NArgs() == 0 {
			continue
		}
		x.flowBuf = s.AppendFlows(x.flowBuf[:0], r)
		if len(x.flowBuf) == 0 {
			continue
		}
		// Only work on a device makes a host event a launch: a flow between
		// host events (two API calls) is not one.
		if r.Kind() != event.KindActivity || r.Lane() == 0 || int(r.Lane()) > len(s.Tracks) || s.Tracks[r.Lane()-1].Kind != event.TrackDeviceStream {
			hostFlows = true
			continue
		}
		for _, id := range x.flowBuf {
			x.correlated[id] = true
		}
	}
	x.linkSteps(memory)
	l := s.CompactLayout()
	if hostFlows {
		x.planHostFlows(l)
	}
	if len(s.Events) < streamMin {
		// About 22 bytes per event: reserve them so the space does not
		// regrow.
		space := &spaceBuf{Enc: protoenc.Enc{B: make([]byte, 0, 24*len(s.Events)+4096)}}
		x.space(space, l)
		_, err := space.WriteTo(w)
		return x, err
	}
	// A large space is encoded twice rather than held: once to learn the
	// lengths of its large messages, then again straight to w with each
	// length in front of its message. Twice the encoding time, but a
	// buffer of a few hundred KiB instead of the 22 bytes an event that
	// held it on top of the model (229 MiB for ten million).
	measure := &spaceBuf{measuring: true}
	x.space(measure, l)
	out := &spaceBuf{w: w, known: measure.holesByBegin()}
	x.space(out, l)
	return x, out.close()
}

// streamMin is the number of events from which Write streams the space
// (encoding it twice) instead of building it in memory; tests lower it.
var streamMin = 2 << 20

// space encodes the XSpace into space.
func (x *writer) space(space *spaceBuf, l *event.Layout) {
	x.hostPlane(space, l)
	x.processPlanes(space, l)
	x.devicePlanes(space, l)
	x.taskEnvPlane(space)
	// xprof shows XSpace warnings as they are: one line per source's
	// drops and per warning, whose bracketed prefix the reader parses.
	for _, d := range x.m.Drops {
		if d.Events > 0 {
			space.String(spaceWarnings, metatext.DropsLine(d, x.m.MaxEvents))
		}
	}
	for _, warn := range x.m.Warnings {
		space.String(spaceWarnings, metatext.WarningLine(warn))
	}
	space.String(spaceHostnames, x.m.Host)
}

type writer struct {
	s *event.Snapshot
	m *event.Meta
	// correlated holds flow ids that appear on device activity: on host
	// spans they become correlation_id stats (launch → kernel).
	correlated map[uint64]bool
	argBuf     []event.Arg // reused by args: one record's arguments at a time
	refBuf     []event.ArgRef
	fastEvents int      // events eventFast wrote (tests)
	flowBuf    []uint64 // reused: one record's flow ids at a time
	// caps holds each device's capabilities, for kernels' occupancy.
	caps map[int]event.DeviceCaps
	// memorySize holds each device's memory size, for the free bytes of
	// memory events; extraBuf is their scratch.
	memorySize map[int]uint64
	extraBuf   []event.Arg
	// memStep links memory events to the spans of their steps (record
	// IDs), and producers holds those spans (memory.go).
	memStep   map[uint64]uint64
	producers map[uint64]bool
	// hostFlow holds the "flow" stat of each end of a flow between host
	// events (flows.go).
	hostFlow map[flowEnd]uint64
}

// plane accumulates one XPlane's lines and interned metadata.
type plane struct {
	body      *spaceBuf // the space being written: the plane is open in it
	start     int       // Begin position of the plane in body
	events    intern.Table
	eventMD   protoenc.Enc
	stats     intern.Table
	statMD    protoenc.Enc
	lineStart int // Begin position of the open line in body

	// eventIDs and statIDs remember the metadata id of each snapshot
	// string id the plane has named an event or stat with (0: not yet),
	// so that a repeated name is an index instead of a hash lookup.
	eventIDs, statIDs []int64
}

// newPlane opens a plane in space. Lines and events are written straight
// into it; interned metadata is appended when the plane is finished.
func newPlane(space *spaceBuf, id int64, name string) *plane {
	p := &plane{body: space}
	p.start = space.Begin(spacePlanes)
	p.body.Int(planeID, id)
	p.body.String(planeName, name)
	return p
}

// eventID and statID intern names in the plane's metadata maps; a stat
// name table doubles as the string table of ref_value stats.
func (p *plane) eventID(name string) int64 {
	return addMetadata(&p.events, &p.eventMD, planeEventMetadata, name)
}

func (p *plane) statID(name string) int64 {
	return addMetadata(&p.stats, &p.statMD, planeStatMetadata, name)
}

// eventIDOf is eventID for the snapshot string with id sid.
func (p *plane) eventIDOf(s *event.Snapshot, sid uint32) int64 {
	return memoMetadata(&p.eventIDs, s, sid, p.eventID)
}

// statIDOf is statID for the snapshot string with id sid.
func (p *plane) statIDOf(s *event.Snapshot, sid uint32) int64 {
	return memoMetadata(&p.statIDs, s, sid, p.statID)
}

// memoMetadata returns the metadata id of s's string sid from memo, or
// from intern (which assigns ids in first-use order, so the output is
// the same with or without the memo) the first time.
func memoMetadata(memo *[]int64, s *event.Snapshot, sid uint32, intern func(string) int64) int64 {
	if int(sid) < len(*memo) {
		if id := (*memo)[sid]; id != 0 {
			return id
		}
	} else if int(sid) < s.NumStrings() {
		grown := make([]int64, s.NumStrings())
		copy(grown, *memo)
		*memo = grown
	}
	id := intern(s.String(sid))
	if int(sid) < len(*memo) {
		(*memo)[sid] = id
	}
	return id
}

// addMetadata returns name's id in table, appending a map entry {id,
// {id, name}} to md under field when the name is new (ids start at 1).
func addMetadata(table *intern.Table, md *protoenc.Enc, field int, name string) int64 {
	id, added := table.ID(name)
	if !added {
		return id
	}
	e := md.Begin(field)
	md.Int(mapKey, id)
	v := md.Begin(mapValue)
	md.Int(mdID, id)
	md.String(mdName, name)
	md.End(v)
	md.End(e)
	return id
}

// beginLine starts a line; events are added with event, then endLine.
func (p *plane) beginLine(id int64, name string, durationPS int64) {
	p.lineStart = p.body.Begin(planeLines)
	p.body.Int(lineID, id)
	p.body.Int(lineDisplayID, id)
	p.body.String(lineName, name)
	p.body.Int(lineTimestampNS, 0) // relative to the profile start
	if durationPS > 0 {
		p.body.Int(lineDurationPS, durationPS)
	}
}

// event adds an event to the open line. offsetNS is relative to the
// profile start.
//
// The event is encoded in place in the body, its length back-patched
// (protoenc.End): a typical event is under 128 bytes, so its one-byte
// length placeholder is all it takes, where building it in a scratch
// buffer first cost a copy of every event (the bytes are the same).
func (p *plane) event(name string, offsetNS, durNS int64, stats func(*plane)) {
	p.eventOf(p.eventID(name), offsetNS, durNS, stats)
}

// eventOf is event for the event metadata id.
func (p *plane) eventOf(id, offsetNS, durNS int64, stats func(*plane)) {
	q := p.body.Begin(lineEvents)
	// The three scalar fields appended as key bytes and varints: one-byte
	// keys, so no encoder call a field (an event is a few of them).
	b := append(p.body.B, eventMetadataID<<3|protoenc.WireVarint)
	b = protoenc.AppendVarint(b, uint64(id))
	b = append(b, eventOffsetPS<<3|protoenc.WireVarint)
	b = protoenc.AppendVarint(b, uint64(offsetNS*1000))
	if durNS > 0 {
		b = append(b, eventDurationPS<<3|protoenc.WireVarint)
		b = protoenc.AppendVarint(b, uint64(durNS*1000))
	}
	p.body.B = b
	if stats != nil {
		stats(p)
	}
	p.body.end(q)
}

func (p *plane) endLine() { p.body.end(p.lineStart) }

// stat appends an XStat named name to dst under field (an event's or the
// plane's stats); valueField is the oneof member that holds v.
func (p *plane) stat(dst *protoenc.Enc, field int, name string, valueField int, v uint64) {
	p.statOf(dst, field, p.statID(name), valueField, v)
}

// statOf is stat for the stat metadata id.
func (p *plane) statOf(dst *protoenc.Enc, field int, id int64, valueField int, v uint64) {
	if valueField != statDouble && field < 16 {
		// A varint stat's length is known before it is written (at most
		// 22 bytes): key and length bytes first, no back-patching, and
		// one-byte keys appended as bytes (most events' stats go here).
		n := 2 + protoenc.VarintLen(uint64(id)) + protoenc.VarintLen(v)
		b := append(dst.B, byte(field<<3|protoenc.WireBytes), byte(n), statMetadataID<<3|protoenc.WireVarint)
		b = protoenc.AppendVarint(b, uint64(id))
		b = append(b, byte(valueField<<3|protoenc.WireVarint))
		dst.B = protoenc.AppendVarint(b, v)
		return
	}
	q := dst.Begin(field)
	dst.Int(statMetadataID, id)
	if valueField == statDouble {
		dst.Fixed64(statDouble, v)
	} else {
		dst.Uint(valueField, v)
	}
	dst.End(q)
}

func (p *plane) statInt(name string, v int64) {
	p.stat(&p.body.Enc, eventStats, name, statInt64, uint64(v))
}

func (p *plane) statUint(name string, v uint64) { p.stat(&p.body.Enc, eventStats, name, statUint64, v) }

func (p *plane) statDouble(name string, v float64) {
	p.stat(&p.body.Enc, eventStats, name, statDouble, math.Float64bits(v))
}

// statString interns v as a stat metadata name and refers to it, as the
// TSL builder does for strings.
func (p *plane) statString(name, v string) {
	p.stat(&p.body.Enc, eventStats, name, statRef, uint64(p.statID(v)))
}

// planeStat* add plane-level stats (device capabilities, profile times).
func (p *plane) planeStatUint(name string, v uint64) {
	p.stat(&p.body.Enc, planeStats, name, statUint64, v)
}

func (p *plane) planeStatInt(name string, v int64) {
	p.stat(&p.body.Enc, planeStats, name, statInt64, uint64(v))
}

func (p *plane) planeStatString(name, v string) {
	p.stat(&p.body.Enc, planeStats, name, statRef, uint64(p.statID(v)))
}

// finish appends the plane's interned metadata and closes it.
func (p *plane) finish() {
	p.body.B = append(p.body.B, p.eventMD.B...)
	p.body.B = append(p.body.B, p.statMD.B...)
	p.body.end(p.start)
}

func (x *writer) rel(t int64) int64 { return t - x.m.Start.Mono }

// args writes a record's arguments as stats. A flow id becomes a uint64
// correlation_id on device events, and on host events whose id also
// appears on device activity (a launch and its kernel); a flow between
// host events becomes a "flow" stat (flows.go).
func (x *writer) args(p *plane, r *event.Record, finished, device bool) {
	if device {
		x.deviceArgs(p, r)
	} else {
		x.hostArgs(p, r)
	}
	if r.IsStep() {
		p.statInt("_r", 1)
		p.statInt("step_num", r.StepNum())
		if x.producers[r.ID()] {
			// The memory events of this step consume it (memory.go).
			p.statUint(statProducer, r.ID())
			p.statInt(statProducerType, contextGeneric)
		}
	}
	if !finished {
		p.statInt("unfinished", 1)
	}
}

// hostArgs writes a host event's arguments as stats: keys and string
// values go to stat ids by their snapshot string ids (plane.statIDOf),
// never resolved to strings, in the order (a string value before its key)
// that deviceArgs's statString interns them.
func (x *writer) hostArgs(p *plane, r *event.Record) {
	x.refBuf = x.s.AppendArgRefs(x.refBuf[:0], r)
	for i := range x.refBuf {
		a := &x.refBuf[i]
		switch a.Kind {
		case event.ArgInt, event.ArgBool:
			p.statOf(&p.body.Enc, eventStats, p.statIDOf(x.s, a.Key), statInt64, a.Num)
		case event.ArgUint:
			p.statOf(&p.body.Enc, eventStats, p.statIDOf(x.s, a.Key), statUint64, a.Num)
		case event.ArgFloat:
			p.statOf(&p.body.Enc, eventStats, p.statIDOf(x.s, a.Key), statDouble, a.Num)
		case event.ArgString:
			v := p.statIDOf(x.s, uint32(a.Num))
			p.statOf(&p.body.Enc, eventStats, p.statIDOf(x.s, a.Key), statRef, uint64(v))
		case event.ArgDuration:
			p.statString(x.s.String(a.Key), event.Arg{Num: a.Num}.Duration().String())
		case event.ArgFlow:
			if x.correlated[a.Num] {
				p.statUint("correlation_id", a.Num)
			} else if v, ok := x.hostFlow[flowEnd{r, a.Num}]; ok {
				p.statUint(StatFlow, v)
			}
		}
	}
}

// deviceArgs writes a device event's arguments as stats, and the details
// xprof reads from its activity.
func (x *writer) deviceArgs(p *plane, r *event.Record) {
	x.argBuf = x.s.AppendArgs(x.argBuf[:0], r)
	for i := range x.argBuf {
		a := &x.argBuf[i]
		switch a.Kind {
		case event.ArgInt:
			p.statInt(a.Key, int64(a.Num))
		case event.ArgUint:
			p.statUint(a.Key, a.Num)
		case event.ArgFloat:
			p.statDouble(a.Key, a.Float())
		case event.ArgBool:
			p.statInt(a.Key, int64(a.Num))
		case event.ArgString:
			key := a.Key
			if key == event.ArgAnnotation {
				key = "tf_op" // TensorFlow's name for the op device work belongs to
			}
			p.statString(key, a.Str)
		case event.ArgDuration:
			p.statString(a.Key, a.Duration().String())
		case event.ArgFlow:
			p.statUint("correlation_id", a.Num)
		}
	}
	if r.Kind() == event.KindActivity {
		x.deviceDetails(p, r)
	}
}

// deviceDetails adds the summary stats xprof's tools read from device
// activity, derived from the model's neutral arguments (in x.argBuf): a
// kernel's kernel_details (whose presence is what marks an event as a
// kernel to kernel_stats) and a copy's memcpy_details. Activity of unknown
// kind (read from a file) is recognised by its arguments; a file that had
// the stats already keeps its own.
func (x *writer) deviceDetails(p *plane, r *event.Record) {
	var grid, block, src, dst string
	var regs, static, dynamic, bytes int64
	dest := int64(-1)
	var haveGrid, haveCopy, have bool
	for _, a := range x.argBuf {
		switch a.Key {
		case "kernel_details", "memcpy_details":
			have = true
		case event.ArgGrid:
			grid, haveGrid = a.Str, true
		case event.ArgBlock:
			block = a.Str
		case event.ArgRegistersPerThread:
			regs = int64(a.Num)
		case event.ArgStaticSharedMemory:
			static = int64(a.Num)
		case event.ArgDynamicSharedMemory:
			dynamic = int64(a.Num)
		case event.ArgCopyKind:
			haveCopy = true
		case event.ArgBytes:
			bytes = int64(a.Num)
		case event.ArgSrcMemoryKind:
			src = a.Str
		case event.ArgDstMemoryKind:
			dst = a.Str
		case event.ArgDstDevice:
			dest = int64(a.Num)
		}
	}
	if have {
		return
	}
	kind := r.Activity()
	switch {
	case kind == event.ActivityKernel || kind == event.ActivityUnknown && haveGrid:
		details := fmt.Sprintf("regs:%d static_shared:%d dynamic_shared:%d grid:%s block:%s", regs, static, dynamic, grid, block)
		// kernel_stats shows the occupancy the profiler computed (TSL
		// does it from the CUDA driver's device properties); devprof
		// computes it from the device's compute capability.
		c := x.caps[x.s.Tracks[r.Lane()-1].Device]
		if occ, ok := theoreticalOccupancy(c.ComputeCapMajor, c.ComputeCapMinor, threads(block), regs, static+dynamic); ok {
			details += " occ_pct:" + strconv.FormatFloat(occ, 'g', 4, 64)
			p.statDouble("theoretical_occupancy_pct", occ)
		}
		p.statString("kernel_details", details)
	case kind == event.ActivityMemcpy || kind == event.ActivityUnknown && haveCopy:
		if dest < 0 { // a copy within its track's device
			dest = int64(x.s.Tracks[r.Lane()-1].Device)
		}
		p.statString("memcpy_details", fmt.Sprintf("kind_src:%s kind_dst:%s size:%d dest:%d", orUnknown(src), orUnknown(dst), bytes, dest))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func (x *writer) hostPlane(space *spaceBuf, l *event.Layout) {
	p := newPlane(space, 0, HostPlaneName)
	// The process, as TSL names it on its planes (process_id) and as
	// devprof's reader reads it back (process_name; TSL writes none).
	if x.m.PID > 0 {
		p.planeStatInt("process_id", int64(x.m.PID))
	}
	if x.m.Program != "" {
		p.planeStatString("process_name", x.m.Program)
	}
	total := x.rel(x.m.Stop.Mono) * 1000
	next := int64(1)
	for _, i := range x.hostRowOrder(l) {
		row := &l.Rows[i]
		if t, ok := x.s.Track(row); ok && (t.Kind == event.TrackDeviceStream || x.otherProcess(t)) {
			continue
		}
		p.beginLine(next, row.Name, total)
		next++
		x.events(p, row, false)
		p.endLine()
	}
	loose, counters := x.ownedBy(0, l)
	x.looseAndCounters(p, func() int64 { next++; return next - 1 }, loose, counters, total)
	p.finish()
}

// ownedBy returns the loose instants and host counter samples of one
// process (0: the program): each goes on its process's plane
// (Snapshot.Owner; a thread's samples on its process's counters line).
func (x *writer) ownedBy(proc int, l *event.Layout) (loose, counters []*event.Record) {
	of := func(r *event.Record) int {
		p, _, _ := x.s.Owner(r)
		if p < 0 || p > len(x.s.Processes) {
			return 0
		}
		return p
	}
	for _, r := range l.Loose {
		if of(r) == proc {
			loose = append(loose, r)
		}
	}
	for _, r := range l.Counters {
		if of(r) == proc {
			counters = append(counters, r)
		}
	}
	return loose, counters
}

// looseAndCounters writes a plane's Instants line and counters line,
// when it has such events, with line ids from id.
func (x *writer) looseAndCounters(p *plane, id func() int64, loose, counters []*event.Record, total int64) {
	if len(loose) > 0 {
		p.beginLine(id(), InstantsLineName, total)
		for _, r := range loose {
			p.event(x.s.Name(r), x.rel(r.Start()), 0, func(p *plane) { x.args(p, r, true, false) })
		}
		p.endLine()
	}
	if len(counters) > 0 {
		p.beginLine(id(), CountersLineName, total)
		x.counters(p, counters)
		p.endLine()
	}
}

// hostRowOrder returns the indexes of l's rows in the order of the host
// plane's lines, which xprof's trace viewer shows in line id order: the
// rows of tracks without a sort index as the layout has them (the
// program's lanes first), then those with one (Track.Sorted: the Go
// runtime's rows, a file's ranked threads) by it, so that ranked rows
// keep their rank here as they do in Perfetto.
func (x *writer) hostRowOrder(l *event.Layout) []int {
	order := make([]int, len(l.Rows))
	for i := range order {
		order[i] = i
	}
	rank := func(i int) (bool, int64) {
		if t, ok := x.s.Track(&l.Rows[i]); ok && t.Sorted {
			return true, t.SortIndex
		}
		return false, 0
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, ia := rank(a)
		sb, ib := rank(b)
		switch {
		case sa != sb:
			if sa {
				return 1
			}
			return -1
		case sa:
			return cmp.Compare(ia, ib)
		}
		return 0
	})
	return order
}

// ProcessPlanePrefix begins the name of the host plane of a process other
// than the recording program, "/host:CPU [<pid>]": the name JAX gives the
// planes of a subprocess, which xprof's trace viewer shows as a process
// of its own beside /host:CPU.
const ProcessPlanePrefix = HostPlaneName + " ["

// Plane stats of a process plane besides TSL's process_id, and devprof's
// process_name: the pid as its source wrote it when that was a string
// (event.Process.Label), the process's labels (a JSON array of strings)
// and its sort index.
const (
	StatPIDLabel      = "pid_label"
	StatProcessLabels = "process_labels"
	StatSortIndex     = "sort_index"
)

// otherProcess reports whether t is a host thread of one of the snapshot's
// other processes, which has a plane of its own.
func (x *writer) otherProcess(t event.Track) bool {
	return t.Kind == event.TrackHostThread && t.Process > 0 && t.Process <= len(x.s.Processes)
}

// processPlanes writes a "/host:CPU [<pid>]" plane for each of the
// snapshot's other processes that has host threads: the process's
// identity as plane stats, and a line per row of its threads, with the
// thread's id as the line id where it is free (line ids must be unique in
// a plane and stay out of xprof's derived range).
func (x *writer) processPlanes(space *spaceBuf, l *event.Layout) {
	rows := make([][]*event.Row, len(x.s.Processes))
	for i := range l.Rows {
		if t, ok := x.s.Track(&l.Rows[i]); ok && x.otherProcess(t) {
			rows[t.Process-1] = append(rows[t.Process-1], &l.Rows[i])
		}
	}
	total := x.rel(x.m.Stop.Mono) * 1000
	for i, proc := range x.s.Processes {
		loose, counters := x.ownedBy(i+1, l)
		if len(rows[i]) == 0 && len(loose) == 0 && len(counters) == 0 {
			continue
		}
		pid := strconv.FormatInt(proc.PID, 10)
		if proc.IsLabel {
			pid = proc.Label
		}
		p := newPlane(space, int64(i+1), ProcessPlanePrefix+pid+"]")
		p.planeStatInt("process_id", proc.PID)
		if proc.Name != "" {
			p.planeStatString("process_name", proc.Name)
		}
		if proc.IsLabel {
			p.planeStatString(StatPIDLabel, proc.Label)
		}
		if len(proc.Labels) > 0 {
			js, _ := json.Marshal(proc.Labels)
			p.planeStatString(StatProcessLabels, string(js))
		}
		if proc.Sorted {
			p.planeStatInt(StatSortIndex, proc.SortIndex)
		}
		used := map[int64]bool{}
		for _, row := range rows[i] {
			if t, _ := x.s.Track(row); row.Sub == 0 && t.ID > 0 && !isDerivedID(t.ID) {
				used[t.ID] = true
			}
		}
		next := int64(overflowLineIDs)
		taken := map[int64]bool{}
		for _, row := range rows[i] {
			t, _ := x.s.Track(row)
			id := t.ID
			if row.Sub != 0 || id <= 0 || isDerivedID(id) || taken[id] {
				for used[next] || taken[next] {
					next++
				}
				id = next
			}
			taken[id] = true
			p.beginLine(id, row.Name, total)
			x.events(p, row, false)
			p.endLine()
		}
		x.looseAndCounters(p, func() int64 {
			for used[next] || taken[next] {
				next++
			}
			taken[next] = true
			return next
		}, loose, counters, total)
		p.finish()
	}
}

// counters writes counter samples as the events of a _counters_ line,
// named "<series> (<unit>)", each with its value as the "value" stat.
func (x *writer) counters(p *plane, samples []*event.Record) {
	for _, r := range samples {
		name := x.s.Name(r)
		u, v := x.s.Counter(r)
		if u != "" {
			name += " (" + u + ")"
		}
		p.event(name, x.rel(r.Start()), 0, func(p *plane) { p.statDouble("value", v) })
	}
}

// events writes a row's spans and instants in the order xprof needs:
// by start, enclosing events first.
func (x *writer) events(p *plane, row *event.Row, device bool) {
	row.Walk(func(typ event.RowEventType, sp *event.Placed, inst *event.Record) {
		switch typ {
		case event.RowBegin:
			if !device && sp.End == sp.Start() && x.isMemoryEvent(sp.Record) {
				x.memoryEvent(p, sp.Record)
				return
			}
			if !device && sp.Finished && !noFastEvent && x.eventFast(p, sp) {
				p.body.spill() // the event was appended whole, never begun
				return
			}
			p.eventOf(p.eventIDOf(x.s, sp.Record.NameID()), x.rel(sp.Start()), sp.End-sp.Start(), func(p *plane) { x.args(p, sp.Record, sp.Finished, device) })
		case event.RowInstant:
			p.event(x.s.Name(inst), x.rel(inst.Start()), 0, func(p *plane) { x.args(p, inst, true, device) })
		}
	})
}

// noFastEvent turns eventFast off (tests compare the two paths' bytes).
var noFastEvent bool

// eventFast writes what events writes for the commonest host span: a
// finished one, not a step, with at most two number or string arguments.
// Its metadata ids are taken in the general path's order (the event's,
// then each argument's, a string value's before its key's), after which
// every length is known: the event is appended as key bytes and varints
// with its one-byte length, no back-patching and no encoder call a field.
// It reports false, having written and interned nothing, for any other
// span.
func (x *writer) eventFast(p *plane, sp *event.Placed) bool {
	r := sp.Record
	if r.NArgs() > 2 || r.IsStep() {
		return false
	}
	refs := x.s.AppendArgRefs(x.refBuf[:0], r)
	x.refBuf = refs
	for i := range refs {
		switch refs[i].Kind {
		case event.ArgInt, event.ArgBool, event.ArgUint, event.ArgFloat, event.ArgString:
		default: // a duration (its string is made here), a flow (paired first), kind 0
			return false
		}
	}
	type fastStat struct {
		id, v uint64
		tag   byte // the value's key byte
		n     int  // the stat's length
	}
	var stats [2]fastStat
	id := uint64(p.eventIDOf(x.s, r.NameID()))
	durNS := sp.End - sp.Start()
	off, dur := uint64(x.rel(sp.Start())*1000), uint64(durNS*1000)
	n := 1 + protoenc.VarintLen(id) + 1 + protoenc.VarintLen(off)
	if durNS > 0 {
		n += 1 + protoenc.VarintLen(dur)
	}
	for i := range refs {
		a, f := &refs[i], &stats[i]
		f.v = a.Num
		switch a.Kind {
		case event.ArgInt, event.ArgBool:
			f.tag = statInt64<<3 | protoenc.WireVarint
		case event.ArgUint:
			f.tag = statUint64<<3 | protoenc.WireVarint
		case event.ArgFloat:
			f.tag = statDouble<<3 | protoenc.WireI64
		case event.ArgString:
			f.tag = statRef<<3 | protoenc.WireVarint
			f.v = uint64(p.statIDOf(x.s, uint32(a.Num)))
		}
		f.id = uint64(p.statIDOf(x.s, a.Key))
		f.n = 1 + protoenc.VarintLen(f.id) + 1
		if a.Kind == event.ArgFloat {
			f.n += 8
		} else {
			f.n += protoenc.VarintLen(f.v)
		}
		n += 2 + f.n
	}
	// At most 33 bytes of event fields and 2 * 24 of stats: one length byte.
	b := append(p.body.B, lineEvents<<3|protoenc.WireBytes, byte(n), eventMetadataID<<3|protoenc.WireVarint)
	b = protoenc.AppendVarint(b, id)
	b = protoenc.AppendVarint(append(b, eventOffsetPS<<3|protoenc.WireVarint), off)
	if durNS > 0 {
		b = protoenc.AppendVarint(append(b, eventDurationPS<<3|protoenc.WireVarint), dur)
	}
	for i := range refs {
		f := &stats[i]
		b = append(b, eventStats<<3|protoenc.WireBytes, byte(f.n), statMetadataID<<3|protoenc.WireVarint)
		b = append(protoenc.AppendVarint(b, f.id), f.tag)
		if f.tag == statDouble<<3|protoenc.WireI64 {
			b = binary.LittleEndian.AppendUint64(b, f.v)
		} else {
			b = protoenc.AppendVarint(b, f.v)
		}
	}
	p.body.B = b
	x.fastEvents++
	return true
}

// overflowLineIDs numbers the extra lines of a stream whose activity
// overlapped: far from stream ids, below the derived-line range.
const overflowLineIDs = 0x7f000000

// devicePlanes writes one /device:GPU:<n> plane per device that has
// activity or counters: its identity and capabilities as plane stats, one
// line per stream track, and its counters on a _counters_ line.
func (x *writer) devicePlanes(space *spaceBuf, l *event.Layout) {
	byDevice := map[int][]*event.Row{}
	for i := range l.Rows {
		if t, ok := x.s.Track(&l.Rows[i]); ok && t.Kind == event.TrackDeviceStream {
			byDevice[t.Device] = append(byDevice[t.Device], &l.Rows[i])
		}
	}
	total := x.rel(x.m.Stop.Mono) * 1000
	overflow := int64(overflowLineIDs)
	for _, dev := range l.Devices {
		d := dev.Device
		p := newPlane(space, int64(d), fmt.Sprintf("%s%d", GPUPlanePrefix, d))
		rows := byDevice[d]
		slices.SortStableFunc(rows, func(a, b *event.Row) int {
			ta, _ := x.s.Track(a)
			tb, _ := x.s.Track(b)
			if c := cmp.Compare(ta.ID, tb.ID); c != 0 {
				return c
			}
			return cmp.Compare(a.Sub, b.Sub)
		})
		x.deviceStats(p, dev)
		for _, row := range rows {
			t, _ := x.s.Track(row)
			id := t.ID
			if row.Sub > 0 {
				id = overflow
				overflow++
			}
			p.beginLine(id, row.Name, total)
			x.events(p, row, true)
			p.endLine()
		}
		if cs := l.DeviceCounters[d]; len(cs) > 0 {
			// Stream lines use stream ids; the counters take an id no
			// stream has.
			p.beginLine(countersLineID, CountersLineName, total)
			x.counters(p, cs)
			p.endLine()
		}
		p.finish()
	}
}

// countersLineID is the id of a device plane's _counters_ line: one in
// xprof's derived-line range (0xdeadbeef and on) that xprof itself does
// not use on GPU planes (host offload ops are TPU's), because xprof's step
// analysis counts the events of every other line of a GPU plane as device
// activity, and ten samples a second would stretch every step's device
// time to the whole step (measured with xprof 2.24.2: 2 us of kernels read
// as 10-16 ms). The trace viewer shows the line's counters either way.
const countersLineID = 0xdeadbeef + 48

// deviceStats writes a device's identity and capabilities, with the
// names and value kinds xprof's device_caps_utils reads.
func (x *writer) deviceStats(p *plane, dev event.Track) {
	p.planeStatString("device_vendor", xprofVendor(dev.Vendor))
	if dev.DeviceName != "" {
		p.planeStatString("gpu_device_name", dev.DeviceName)
	}
	if dev.UUID != "" {
		p.planeStatString("device_uuid", dev.UUID)
	}
	if dev.PCIBusID != "" {
		p.planeStatString("pci_bus_id", dev.PCIBusID)
	}
	if c := dev.Caps; c != (event.DeviceCaps{}) {
		p.planeStatInt("clock_rate", c.ClockRateKHz)
		p.planeStatInt("core_count", c.Cores)
		p.planeStatUint("memory_bandwidth", c.MemoryBandwidth)
		p.planeStatUint("memory_size", c.MemoryBytes)
		p.planeStatInt("compute_cap_major", c.ComputeCapMajor)
		p.planeStatInt("compute_cap_minor", c.ComputeCapMinor)
	}
}

// noteStat is the Task Environment stat that holds one note.
const noteStat = "devprof_note"

func (x *writer) taskEnvPlane(space *spaceBuf) {
	p := newPlane(space, 0, TaskEnvPlaneName)
	p.planeStatUint("profile_start_time", uint64(x.m.Start.Wall))
	p.planeStatUint("profile_stop_time", uint64(x.m.Stop.Wall))
	for _, n := range x.m.Notes {
		p.planeStatString(noteStat, metatext.NoteLine(n))
	}
	p.finish()
}

// xprofVendor spells a device vendor as TSL writes device_vendor
// ("Nvidia"), which xprof's tools compare against. An unknown vendor is
// written as Nvidia, as devprof always did: every source of GPU streams
// devprof reads today (CUPTI, Kineto and TSL traces) is CUDA's.
func xprofVendor(v string) string {
	switch strings.ToUpper(v) {
	case "", "NVIDIA":
		return "Nvidia"
	case "AMD":
		return "AMD"
	}
	return v
}
