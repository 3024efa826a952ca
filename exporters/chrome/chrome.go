package chrome

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

// Write encodes s as gzip-compressed Trace Event Format JSON to w (the
// <host>.trace.json.gz of a run directory).
func Write(w io.Writer, s *event.Snapshot) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	err := WritePlain(zw, s)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	return err
}

// WritePlain encodes s as uncompressed Trace Event Format JSON to w.
func WritePlain(w io.Writer, s *event.Snapshot) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	j := &jw{w: bw, s: s, m: &s.Meta}
	j.write()
	if err := bw.Flush(); j.err == nil {
		j.err = err
	}
	return j.err
}

type jw struct {
	argBuf []event.Arg // reused: one record's arguments at a time
	// v1 are the flows written in the v1 form (s/t/f events) because some
	// slice is in it and another flow at once (an event has one bind_id);
	// v1Ends collects their slices as they are written.
	v1     map[uint64]bool
	v1Ends map[uint64][]flowEnd
	w      *bufio.Writer
	s      *event.Snapshot
	m      *event.Meta
	b      []byte
	first  bool
	err    error
}

func (j *jw) flush() {
	if j.err == nil {
		_, j.err = j.w.Write(j.b)
	}
	j.b = j.b[:0]
}

// us formats ticks as microseconds since the session start.
func (j *jw) us(b []byte, t int64) []byte {
	d := t - j.m.Start.Mono
	return strconv.AppendFloat(b, float64(d)/1e3, 'f', -1, 64)
}

func (j *jw) begin() {
	if !j.first {
		j.b = append(j.b, ",\n"...)
	}
	j.first = false
}

// counter writes one counter sample ("C") on process pid.
func (j *jw) counter(r *event.Record, pid pidTok, tid int) {
	j.begin()
	j.b = append(j.b, `{"ph":"C","pid":`...)
	j.b = append(j.b, pid...)
	if tid >= 0 {
		j.b = append(j.b, `,"tid":`...)
		j.b = strconv.AppendInt(j.b, int64(tid), 10)
	}
	j.b = append(j.b, `,"ts":`...)
	j.b = j.us(j.b, r.Start())
	j.b = append(j.b, `,"name":`...)
	j.b = appendString(j.b, j.s.Name(r))
	j.b = append(j.b, `,"args":{`...)
	unit, v := j.s.Counter(r)
	if unit == "" {
		unit = "value"
	}
	j.b = appendString(j.b, unit)
	j.b = append(j.b, ':')
	j.b = appendFloat(j.b, v)
	j.b = append(j.b, "}}"...)
	j.flush()
}

// pidTok is a pid as JSON text: a number, or a quoted string label.
type pidTok string

func numPID(n int64) pidTok { return pidTok(strconv.FormatInt(n, 10)) }

// processPIDs returns the pid of each of s's processes (Snapshot.Processes),
// numeric or its label, and the greatest numeric pid of the program and
// those processes; it tells whether the program's pid is one of theirs.
func processPIDs(s *event.Snapshot) (pids []pidTok, maxPID int64, shared bool) {
	maxPID = int64(s.Meta.PID)
	for _, p := range s.Processes {
		if p.IsLabel {
			pids = append(pids, pidTok(appendString(nil, p.Label)))
			continue
		}
		pids = append(pids, numPID(p.PID))
		maxPID = max(maxPID, p.PID)
		shared = shared || p.PID == int64(s.Meta.PID)
	}
	return pids, maxPID, shared
}

func (j *jw) write() {
	l := j.s.CompactLayout()
	pid := numPID(int64(j.m.PID))
	procPIDs, maxPID, shared := processPIDs(j.s)
	var programPIDs []pidTok // the pids of the program's threads, for the reader
	j.b = append(j.b, `{"displayTimeUnit":"ns","traceEvents":[`...)
	j.first = true
	if !shared {
		j.meta("process_name", pid, 0, j.m.Program)
		programPIDs = append(programPIDs, pid)
	}
	// Every other process with its own pid, name, labels and order.
	for k, p := range j.s.Processes {
		j.meta("process_name", procPIDs[k], 0, p.Name)
		if len(p.Labels) > 0 {
			j.metaArg("process_labels", procPIDs[k], "labels", appendString(nil, strings.Join(p.Labels, ",")))
		}
		if p.Sorted {
			j.metaArg("process_sort_index", procPIDs[k], "sort_index", strconv.AppendInt(nil, p.SortIndex, 10))
		}
	}
	// Device streams are threads, and device counters counters, of one
	// process per device, numbered past every other pid.
	devicePID := map[int]pidTok{}
	for k, dev := range l.Devices {
		p := numPID(maxPID + 1 + int64(k))
		devicePID[dev.Device] = p
		programPIDs = append(programPIDs, p)
		name := "GPU " + strconv.Itoa(dev.Device)
		if dev.DeviceName != "" {
			name += " (" + dev.DeviceName + ")"
		}
		j.meta("process_name", p, 0, name)
	}
	// A device whose memory is tracked is a process too.
	memory := j.s.MemoryTimelines(memoryTopTags)
	for _, tl := range memory {
		if _, ok := devicePID[tl.Device]; !ok && tl.Device >= 0 {
			p := numPID(maxPID + 1 + int64(len(devicePID)))
			devicePID[tl.Device] = p
			programPIDs = append(programPIDs, p)
			j.meta("process_name", p, 0, "GPU "+strconv.Itoa(tl.Device))
		}
	}
	j.planV1()
	tids := rowTIDs(j.s, l.Rows)
	for i := range l.Rows {
		row := &l.Rows[i]
		tid := tids[i]
		rowPID := pid
		memRow := false
		sortIndex, sorted := int64(i+1), true
		if t, ok := j.s.Track(row); ok {
			switch t.Kind {
			case event.TrackDeviceStream:
				rowPID = devicePID[t.Device]
			case event.TrackMemory:
				memRow = true
				if p, ok := devicePID[t.Device]; ok {
					rowPID = p
				}
			case event.TrackHostThread:
				if t.Process > 0 && t.Process <= len(procPIDs) {
					// A thread of another process keeps its order
					// only if the source gave one.
					rowPID, sorted = procPIDs[t.Process-1], false
				}
			}
			if t.Sorted {
				sortIndex, sorted = t.SortIndex, true
			}
		}
		j.meta("thread_name", rowPID, tid, row.Name)
		if sorted {
			j.sortIndex(rowPID, tid, sortIndex)
		}
		for k := range row.Len() {
			sp := row.Span(k)
			if memRow && sp.End == sp.Start() && sp.Finished {
				j.instant(sp.Record, rowPID, tid, "t")
				continue
			}
			j.begin()
			j.b = append(j.b, `{"ph":"X","pid":`...)
			j.b = append(j.b, rowPID...)
			j.b = append(j.b, `,"tid":`...)
			j.b = strconv.AppendInt(j.b, int64(tid), 10)
			j.b = append(j.b, `,"ts":`...)
			j.b = j.us(j.b, sp.Start())
			j.b = append(j.b, `,"dur":`...)
			j.b = strconv.AppendFloat(j.b, float64(sp.End-sp.Start())/1e3, 'f', -1, 64)
			j.b = append(j.b, `,"name":`...)
			j.b = appendString(j.b, j.s.Name(sp.Record))
			j.flow(sp.Record, rowPID, tid)
			j.args(sp.Record, sp.Finished)
			j.b = append(j.b, '}')
			j.flush()
		}
		for _, r := range row.Instants {
			j.instant(r, rowPID, tid, "t")
		}
	}
	j.writeV1()
	// Loose instants and host counters go to their owner's process; a
	// thread's counter carries the thread's tid too (the format's "C"
	// events are process-scoped: viewers and readers keep the process).
	threadTID := map[uint32]int{}
	for i := range l.Rows {
		if l.Rows[i].Track != 0 && l.Rows[i].Sub == 0 {
			threadTID[l.Rows[i].Track] = tids[i]
		}
	}
	ownerPID := func(r *event.Record) (pidTok, int, bool) {
		proc, thread, _ := j.s.Owner(r)
		p := pid
		if proc > 0 && proc <= len(procPIDs) {
			p = procPIDs[proc-1]
		}
		tid, ok := threadTID[thread]
		return p, tid, ok && thread != 0
	}
	for _, r := range l.Loose {
		p, _, _ := ownerPID(r)
		j.instant(r, p, 0, "p")
	}
	for _, r := range l.Counters {
		p, tid, ok := ownerPID(r)
		if !ok {
			tid = -1
		}
		j.counter(r, p, tid)
	}
	for _, dev := range l.Devices {
		for _, r := range l.DeviceCounters[dev.Device] {
			j.counter(r, devicePID[dev.Device], -1)
		}
	}
	for i := range memory {
		p := pid
		if memory[i].Device >= 0 {
			p = devicePID[memory[i].Device]
		}
		j.memoryCounters(&memory[i], p)
	}
	// Warnings, notes and drops as process instants, as in the Perfetto
	// file: the viewer shows them to people, the reader turns them back
	// into metadata.
	for _, mk := range metatext.Markers(j.m) {
		at := j.m.Start.Mono
		if mk.AtStop {
			at = j.m.Stop.Mono
		}
		j.begin()
		j.b = append(j.b, `{"ph":"i","s":"p","pid":`...)
		j.b = append(j.b, pid...)
		j.b = append(j.b, `,"ts":`...)
		j.b = j.us(j.b, at)
		j.b = append(j.b, `,"name":`...)
		j.b = appendString(j.b, mk.Name)
		j.b = append(j.b, `,"args":{`...)
		for i, a := range mk.Args {
			if i > 0 {
				j.b = append(j.b, ',')
			}
			j.arg(a)
		}
		j.b = append(j.b, "}}"...)
		j.flush()
	}
	j.b = append(j.b, "],\n"...)
	j.b = append(j.b, `"otherData":{"host":`...)
	j.b = appendString(j.b, j.m.Host)
	j.b = append(j.b, `,"dropped_events":`...)
	j.b = strconv.AppendInt(j.b, j.m.Dropped(), 10)
	j.b = append(j.b, `,"start_unix_ns":`...)
	j.b = strconv.AppendInt(j.b, j.m.Start.Wall, 10)
	if len(j.s.Processes) > 0 {
		// Which pids hold the program's threads, and which process
		// Meta describes, so that the reader keeps the rest apart.
		j.b = append(j.b, `,"pid":`...)
		j.b = strconv.AppendInt(j.b, int64(j.m.PID), 10)
		j.b = append(j.b, `,"program":`...)
		j.b = appendString(j.b, j.m.Program)
		j.b = append(j.b, `,"program_pids":[`...)
		for k, p := range programPIDs {
			if k > 0 {
				j.b = append(j.b, ',')
			}
			j.b = append(j.b, p...)
		}
		j.b = append(j.b, ']')
	}
	j.b = append(j.b, "}}\n"...)
	j.flush()
}

func (j *jw) meta(name string, pid pidTok, tid int, value string) {
	j.begin()
	j.b = append(j.b, `{"ph":"M","name":"`...)
	j.b = append(j.b, name...)
	j.b = append(j.b, `","pid":`...)
	j.b = append(j.b, pid...)
	j.b = append(j.b, `,"tid":`...)
	j.b = strconv.AppendInt(j.b, int64(tid), 10)
	j.b = append(j.b, `,"args":{"name":`...)
	j.b = appendString(j.b, value)
	j.b = append(j.b, "}}"...)
	j.flush()
}

// metaArg writes a process metadata event whose one argument, key, has
// the JSON value v.
func (j *jw) metaArg(name string, pid pidTok, key string, v []byte) {
	j.begin()
	j.b = append(j.b, `{"ph":"M","name":"`...)
	j.b = append(j.b, name...)
	j.b = append(j.b, `","pid":`...)
	j.b = append(j.b, pid...)
	j.b = append(j.b, `,"tid":0,"args":{`...)
	j.b = appendString(j.b, key)
	j.b = append(j.b, ':')
	j.b = append(j.b, v...)
	j.b = append(j.b, "}}"...)
	j.flush()
}

func (j *jw) sortIndex(pid pidTok, tid int, index int64) {
	j.begin()
	j.b = append(j.b, `{"ph":"M","name":"thread_sort_index","pid":`...)
	j.b = append(j.b, pid...)
	j.b = append(j.b, `,"tid":`...)
	j.b = strconv.AppendInt(j.b, int64(tid), 10)
	j.b = append(j.b, `,"args":{"sort_index":`...)
	j.b = strconv.AppendInt(j.b, index, 10)
	j.b = append(j.b, "}}"...)
	j.flush()
}

func (j *jw) instant(r *event.Record, pid pidTok, tid int, scope string) {
	j.begin()
	j.b = append(j.b, `{"ph":"i","s":"`...)
	j.b = append(j.b, scope...)
	j.b = append(j.b, `","pid":`...)
	j.b = append(j.b, pid...)
	if scope == "t" {
		j.b = append(j.b, `,"tid":`...)
		j.b = strconv.AppendInt(j.b, int64(tid), 10)
	}
	j.b = append(j.b, `,"ts":`...)
	j.b = j.us(j.b, r.Start())
	j.b = append(j.b, `,"name":`...)
	j.b = appendString(j.b, j.s.Name(r))
	j.flow(r, pid, tid)
	j.args(r, true)
	j.b = append(j.b, '}')
	j.flush()
}

// flow links the event to the others that carry its flow id, in the "flow
// v2" form: bind_id with flow_in and flow_out, which the Perfetto importer
// chains in time order. An event has one bind_id: the flows planV1 put in
// the v1 form are noted for writeV1 instead.
func (j *jw) flow(r *event.Record, pid pidTok, tid int) {
	j.argBuf = j.s.AppendArgs(j.argBuf[:0], r)
	bound := false
	for _, a := range j.argBuf {
		if a.Kind != event.ArgFlow {
			continue
		}
		if j.v1[a.Num] {
			j.v1Ends[a.Num] = append(j.v1Ends[a.Num], flowEnd{t: r.Start(), id: r.ID(), pid: pid, tid: tid})
			continue
		}
		if !bound {
			j.b = append(j.b, `,"bind_id":`...)
			j.b = strconv.AppendUint(j.b, a.Num, 10)
			j.b = append(j.b, `,"flow_in":true,"flow_out":true`...)
			bound = true
		}
	}
}

// flowEnd is a slice of a v1 flow: where and when to bind it.
type flowEnd struct {
	t   int64
	id  uint64
	pid pidTok
	tid int
}

// planV1 picks the flows to write in the v1 form: a slice may carry one
// v2 flow (its bind_id); any other flow through it, and so every slice of
// that flow, goes v1, until each slice has at most one v2 flow left.
func (j *jw) planV1() {
	var multi [][]uint64
	var ids []uint64 // reused: a record's flows, kept only when several
	for _, r := range j.s.Events {
		if r.NArgs() == 0 || r.Kind() != event.KindSpan && r.Kind() != event.KindActivity {
			continue
		}
		// Every record passes here: resolving its arguments (Args) would
		// allocate a slice a record, which the garbage collector lets
		// pile up on top of the model for the whole write.
		ids = j.s.AppendFlows(ids[:0], r)
		if len(ids) > 1 {
			multi = append(multi, slices.Clone(ids))
		}
	}
	if len(multi) == 0 {
		return
	}
	j.v1, j.v1Ends = map[uint64]bool{}, map[uint64][]flowEnd{}
	for changed := true; changed; {
		changed = false
		for _, ids := range multi {
			kept := false
			for _, id := range ids {
				switch {
				case j.v1[id]:
				case !kept:
					kept = true
				default:
					j.v1[id], changed = true, true
				}
			}
		}
	}
}

// writeV1 writes the v1 flows: for each, in time order, an "s" at its
// first slice, "t" at the middle ones and an "f" (bound to the enclosing
// slice, "bp":"e") at its last, each at its slice's start on its thread,
// so that a reader binds it to that slice (or, where a child starts with
// its parent, to the child: the JSON format cannot tell them apart).
func (j *jw) writeV1() {
	ids := make([]uint64, 0, len(j.v1Ends))
	for id := range j.v1Ends {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ends := j.v1Ends[id]
		if len(ends) < 2 {
			continue
		}
		slices.SortFunc(ends, func(a, b flowEnd) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		for k, e := range ends {
			ph := `"t"`
			switch k {
			case 0:
				ph = `"s"`
			case len(ends) - 1:
				ph = `"f","bp":"e"`
			}
			j.begin()
			j.b = append(j.b, `{"ph":`...)
			j.b = append(j.b, ph...)
			j.b = append(j.b, `,"id":`...)
			j.b = strconv.AppendUint(j.b, id, 10)
			j.b = append(j.b, `,"cat":"devprof","name":"flow","pid":`...)
			j.b = append(j.b, e.pid...)
			j.b = append(j.b, `,"tid":`...)
			j.b = strconv.AppendInt(j.b, int64(e.tid), 10)
			j.b = append(j.b, `,"ts":`...)
			j.b = j.us(j.b, e.t)
			j.b = append(j.b, '}')
			j.flush()
		}
	}
}

// rowTIDs gives each row its tid. A thread of another process that a
// reader brought in (Track.Process > 0) keeps its own tid on its first
// row, so that a conversion writes the tids the source had (Kineto's GPU
// "stream 13" is tid 13); every other row is numbered by its place, as
// devprof's own lanes always were, skipping the tids kept in its process.
func rowTIDs(s *event.Snapshot, rows []event.Row) []int {
	type key struct {
		proc int
		tid  int64
	}
	kept := map[key]bool{}
	tids := make([]int, len(rows))
	own := make([]bool, len(rows)) // the row keeps its thread's tid (which may be 0)
	for i := range rows {
		t, ok := s.Track(&rows[i])
		if !ok || t.Kind != event.TrackHostThread || t.Process <= 0 || rows[i].Sub != 0 ||
			t.ID < 0 || t.ID > math.MaxInt32 || kept[key{t.Process, t.ID}] {
			continue
		}
		kept[key{t.Process, t.ID}] = true
		tids[i], own[i] = int(t.ID), true
	}
	for i := range rows {
		if own[i] {
			continue
		}
		p, n := procOf(s, &rows[i]), int64(i+1)
		for kept[key{p, n}] {
			n += int64(len(rows))
		}
		kept[key{p, n}] = true
		tids[i] = int(n)
	}
	return tids
}

// procOf is the process a row's thread belongs to (0: the program's).
func procOf(s *event.Snapshot, row *event.Row) int {
	if t, ok := s.Track(row); ok && t.Kind == event.TrackHostThread {
		return t.Process
	}
	return 0
}

// memoryTopTags is how many tag sets of a memory track get a value of
// their own in its "by tags" counter, as in the Perfetto file.
const memoryTopTags = 8

// memoryCounters writes a memory track's counters on process pid: the
// bytes in use at each event, and its bytes by tag set.
func (j *jw) memoryCounters(tl *event.MemoryTimeline, pid pidTok) {
	name := j.s.Tracks[tl.Track-1].Name
	if name == "" {
		name = "GPU " + strconv.Itoa(tl.Device) + " memory"
		if tl.Device < 0 {
			name = "host memory"
		}
	}
	for i, t := range tl.Times {
		j.begin()
		j.b = append(j.b, `{"ph":"C","pid":`...)
		j.b = append(j.b, pid...)
		j.b = append(j.b, `,"ts":`...)
		j.b = j.us(j.b, t)
		j.b = append(j.b, `,"name":`...)
		j.b = appendString(j.b, name+" in use")
		j.b = append(j.b, `,"args":{"bytes":`...)
		j.b = strconv.AppendUint(j.b, tl.InUse[i], 10)
		j.b = append(j.b, "}},\n"...)
		j.b = append(j.b, `{"ph":"C","pid":`...)
		j.b = append(j.b, pid...)
		j.b = append(j.b, `,"ts":`...)
		j.b = j.us(j.b, t)
		j.b = append(j.b, `,"name":`...)
		j.b = appendString(j.b, name+" by tags")
		j.b = append(j.b, `,"args":{`...)
		for k := range tl.Series {
			if k > 0 {
				j.b = append(j.b, ',')
			}
			j.b = appendString(j.b, tl.Series[k].Key)
			j.b = append(j.b, ':')
			j.b = strconv.AppendUint(j.b, tl.Series[k].Bytes[i], 10)
		}
		j.b = append(j.b, "}}"...)
		j.flush()
	}
}

// arg appends a (not a flow) as "key":value.
func (j *jw) arg(a event.Arg) {
	j.b = appendString(j.b, a.Key)
	j.b = append(j.b, ':')
	switch a.Kind {
	case event.ArgInt:
		j.b = strconv.AppendInt(j.b, int64(a.Num), 10)
	case event.ArgUint:
		j.b = strconv.AppendUint(j.b, a.Num, 10)
	case event.ArgFloat:
		j.b = appendFloat(j.b, a.Float())
	case event.ArgBool:
		j.b = strconv.AppendBool(j.b, a.Num != 0)
	case event.ArgString:
		j.b = appendString(j.b, a.Str)
	case event.ArgDuration:
		j.b = appendString(j.b, a.Duration().String())
	}
}

func (j *jw) args(r *event.Record, finished bool) {
	j.argBuf = j.s.AppendArgs(j.argBuf[:0], r)
	args := event.UniqueKeys(j.argBuf)
	step := r.IsStep()
	if len(args) == 0 && !step && finished {
		return
	}
	j.b = append(j.b, `,"args":{`...)
	n := 0
	sep := func() {
		if n > 0 {
			j.b = append(j.b, ',')
		}
		n++
	}
	memory := r.Activity() == event.ActivityAlloc || r.Activity() == event.ActivityFree
	for _, a := range args {
		if a.Kind == event.ArgFlow {
			continue
		}
		if memory && a.Key == event.ArgAddress && a.Kind == event.ArgUint {
			// As people read pointers.
			a = event.Arg{Key: a.Key, Kind: event.ArgString, Str: "0x" + strconv.FormatUint(a.Num, 16)}
		}
		sep()
		j.arg(a)
	}
	if step {
		sep()
		j.b = append(j.b, `"step_num":`...)
		j.b = strconv.AppendInt(j.b, r.StepNum(), 10)
	}
	if !finished {
		sep()
		j.b = append(j.b, `"unfinished":true`...)
	}
	j.b = append(j.b, '}')
}

// appendFloat writes a JSON number; NaN and infinities, which JSON cannot
// hold, become strings.
func appendFloat(b []byte, f float64) []byte {
	if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
		return appendString(b, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
