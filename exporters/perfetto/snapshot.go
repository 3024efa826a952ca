package perfetto

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

var (
	gpuProcess  = regexp.MustCompile(`^GPU (\d+)(?: \((.*)\))?$`)
	streamTrack = regexp.MustCompile(`^Stream #(-?\d+)`)
)

// Snapshot converts a decoded trace to the event model. Times stay on the
// trace clock (ns). The first process that is not a GPU is the program
// (Meta); every other process that is not a GPU becomes an event.Process
// (name, labels, rank as sort index; devprof's ProcessLabel* labels give
// back a string pid, a moved pid and the lack of a name). Threads become
// host-thread tracks of their process, with their ranks; the threads of a
// process named "GPU <n>" (as devprof writes device activity) become
// device streams again; flows become flow arguments, and the slice
// nesting the parents. devprof's warning, note and drop instants become
// the snapshot's metadata again, and the threads it marks as memory events
// (MemoryEventsDescription) memory tracks again, without the counters it
// derived from them.
func (t *Trace) Snapshot() *event.Snapshot {
	b := event.NewBuilder(event.Meta{})
	t.into(b)
	return b.Snapshot()
}

// into writes the trace into sink, as Snapshot describes.
func (t *Trace) into(sink event.Sink) {
	c := &converter{t: t, byUUID: map[uint64]*Track{}, procName: map[int64]string{}, procs: map[int64]*Track{}, tracks: map[uint64]uint32{},
		kinds: map[uint32]event.TrackKind{}}
	meta := c.meta()
	c.pid = meta.PID
	c.b = sink
	m := sink.Meta()
	m.Program, m.PID, m.Start, m.Stop = meta.Program, meta.PID, meta.Start, meta.Stop
	c.processes()
	c.flowEnds()
	c.ids = make([]uint64, len(t.Slices))
	for i := range t.Slices {
		c.slice(i)
	}
	var marks metatext.Collector
	c.instants(&marks)
	c.counters()
	marks.ApplyMeta(c.b.Meta())
	c.drops()
}

// flowEnds finds the flow ids that only one slice or instant carries: a
// flow needs two ends to be drawn, and trace_processor makes no flow of
// one. In a file other than devprof's they are dropped and counted (with a
// warning); a file devprof wrote keeps them, as the Chrome reader does:
// there a flow with one end is the recording's own, its other end perhaps
// in another trace.
func (c *converter) flowEnds() {
	for _, tr := range c.t.Tracks {
		if tr.Kind == TrackProcess && slices.ContainsFunc(tr.Labels, func(l string) bool { return strings.HasPrefix(l, "devprof host=") }) {
			return
		}
	}
	ends := map[uint64]int{}
	count := func(ids ...[]uint64) {
		seen := map[uint64]bool{}
		for _, l := range ids {
			for _, id := range l {
				if id&ParentFlowBit == 0 && !seen[id] {
					seen[id] = true
					ends[id]++
				}
			}
		}
	}
	for i := range c.t.Slices {
		count(c.t.Slices[i].FlowIDs, c.t.Slices[i].TerminatingFlowIDs)
	}
	for i := range c.t.Instants {
		count(c.t.Instants[i].FlowIDs)
	}
	c.lone = map[uint64]bool{}
	for id, n := range ends {
		if n < 2 {
			c.lone[id] = true
		}
	}
	if n := int64(len(c.lone)); n > 0 {
		m := c.b.Meta()
		m.AddDrops(DropsReader, n)
		m.Warnings = append(m.Warnings, event.Warning{Source: DropsReader, Code: "flow_one_ended",
			Text: fmt.Sprintf("perfetto reader dropped %d %s with one end (of %d in the file)", n, plural(n, "flow", "flows"), len(ends))})
	}
}

// DropsReader is the drop source (event.Meta.AddDrops) under which
// Snapshot counts the events Read dropped (Trace.Drops).
const DropsReader = "perfetto reader"

// drops counts the events the reader dropped in the snapshot's drops and
// says, in one warning per kind, what and how many.
func (c *converter) drops() {
	addDrops(c.b.Meta(), c.t.Drops)
}

// addDrops counts the events the reader dropped in m's drops and says,
// in one warning per kind, what and how many.
func addDrops(m *event.Meta, drops []Drop) {
	for _, d := range drops {
		m.AddDrops(DropsReader, d.Events)
		m.Warnings = append(m.Warnings, event.Warning{Source: DropsReader, Code: d.Stat,
			Text: fmt.Sprintf("perfetto reader dropped %d %s (%s); the first at %s", d.Events, plural(d.Events, "event", "events"), d.Stat, d.First)})
	}
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// converter holds what Snapshot builds as it goes.
type converter struct {
	t        *Trace
	b        event.Sink
	kinds    map[uint32]event.TrackKind // the kinds of the tracks registered in b
	pid      int                        // the process the snapshot is of
	byUUID   map[uint64]*Track          // the trace's tracks
	procName map[int64]string           // process names by pid
	procs    map[int64]*Track           // process tracks by pid
	tracks   map[uint64]uint32          // track uuid -> builder track (0: the process level)
	ids      []uint64                   // builder IDs of t.Slices, 0 until added
	progUUID uint64                     // the program's process track (Meta), 0 if none
	lone     map[uint64]bool            // flow ids with one end, dropped
	procNum  map[int64]int              // pid of another host process -> its Track.Process
	twinNum  int                        // the Track.Process of the process that shares the program's pid, 0 if none
}

// timeSpan returns the first and last time of any slice, instant or
// counter sample (0, 0 for an empty trace).
func (t *Trace) timeSpan() (lo, hi int64) {
	lo, hi = int64(1<<62), int64(-1<<62)
	see := func(a, b int64) {
		lo, hi = min(lo, a), max(hi, b)
	}
	for _, s := range t.Slices {
		see(s.Start, s.Start+max(s.Dur, 0))
	}
	for _, i := range t.Instants {
		see(i.TS, i.TS)
	}
	for _, c := range t.Counters {
		see(c.TS, c.TS)
	}
	if lo > hi {
		lo, hi = 0, 0
	}
	return lo, hi
}

// meta returns the snapshot's metadata: its time span, and the first
// process that is not a GPU as its program. It indexes the tracks and
// process names on the way.
func (c *converter) meta() event.Meta {
	t := c.t
	lo, hi := t.timeSpan()
	meta := event.Meta{Host: "", Program: "perfetto",
		Start: event.ClockAnchor{Mono: lo, Boot: lo}, Stop: event.ClockAnchor{Mono: hi, Boot: hi}}
	if t.WallStart != 0 {
		meta.Start.Wall = t.WallStart + lo - t.WallStartTS
		meta.Stop.Wall = t.WallStart + hi - t.WallStartTS
	}
	for i := range t.Tracks {
		tr := &t.Tracks[i]
		c.byUUID[tr.UUID] = tr
		if tr.Kind == TrackProcess {
			c.procName[tr.PID] = tr.Name
			c.procs[tr.PID] = tr
			// The first process that is not a GPU is the program, pid 0
			// included: a later process does not take its place.
			if c.progUUID == 0 && !gpuProcess.MatchString(tr.Name) {
				meta.Program, meta.PID = tr.Name, int(tr.PID)
				if slices.Contains(tr.Labels, ProcessLabelUnnamed) {
					meta.Program = ""
				}
				c.progUUID = tr.UUID
			}
		}
	}
	return meta
}

// processes registers every process track other than the program's and
// the devices' as an event.Process, in the order of the file, with the
// pid, string pid and name devprof's labels (ProcessLabelStringPID, …)
// kept, and its rank as its sort index.
func (c *converter) processes() {
	c.procNum = map[int64]int{}
	c.registerTwin()
	for i := range c.t.Tracks {
		tr := &c.t.Tracks[i]
		if tr.Kind != TrackProcess || tr.UUID == c.progUUID || tr.PID == int64(c.pid) {
			continue
		}
		if _, dup := c.procNum[tr.PID]; dup {
			continue
		}
		if _, dev := c.deviceOf(tr.PID); dev {
			continue
		}
		c.procNum[tr.PID] = c.b.Process(processOfTrack(tr))
	}
}

// registerTwin registers the process the program's track says the model
// held apart from the program under the program's own pid
// (ProcessLabelTwinName and the labels with it), before any other: the
// threads described as its (TwinThreadDescription) are its again.
func (c *converter) registerTwin() {
	prog := c.byUUID[c.progUUID]
	if c.progUUID == 0 || prog == nil || c.twinNum != 0 {
		return
	}
	p, twin := event.Process{PID: prog.PID}, false
	for _, l := range prog.Labels {
		if v, ok := strings.CutPrefix(l, ProcessLabelTwinName); ok {
			p.Name, twin = v, true
		} else if v, ok := strings.CutPrefix(l, ProcessLabelTwinLabel); ok {
			p.Labels = append(p.Labels, v)
		} else if v, ok := strings.CutPrefix(l, ProcessLabelTwinStringPID); ok {
			p.Label, p.IsLabel = v, true
		} else if v, ok := strings.CutPrefix(l, ProcessLabelTwinSort); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				p.SortIndex, p.Sorted = n, true
			}
		}
	}
	if twin {
		c.twinNum = c.b.Process(p)
	}
}

// processOfTrack returns the event.Process of a process track: its pid,
// string pid and name as devprof's labels (ProcessLabelStringPID, …)
// keep them, and its rank as its sort index.
func processOfTrack(tr *Track) event.Process {
	p := event.Process{PID: tr.PID, Name: tr.Name, SortIndex: tr.Rank, Sorted: tr.Ranked}
	for _, l := range tr.Labels {
		if v, ok := strings.CutPrefix(l, ProcessLabelStringPID); ok {
			p.Label, p.IsLabel = v, true
		} else if v, ok := strings.CutPrefix(l, ProcessLabelPID); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				p.PID = n
			}
		} else if l == ProcessLabelUnnamed {
			p.Name = ""
		} else {
			p.Labels = append(p.Labels, l)
		}
	}
	return p
}

// processOf returns the Track.Process of a host thread of pid: 0 for the
// program's, else its process, registered on first use when the file
// described none.
func (c *converter) processOf(pid int64) int {
	if pid == int64(c.pid) {
		return 0
	}
	n, ok := c.procNum[pid]
	if !ok {
		n = c.b.Process(event.Process{PID: pid})
		c.procNum[pid] = n
	}
	return n
}

// trackOf returns the builder track of a track uuid for a slice, adding
// it on first use: 0 (the program's lanes) for the program's process
// track, a thread of its process for another process's track (the model's
// processes hold slices on their threads only), else the track's own.
func (c *converter) trackOf(uuid uint64) uint32 {
	if id, ok := c.tracks[uuid]; ok {
		return id
	}
	tr := c.byUUID[uuid]
	var id uint32
	switch {
	case tr == nil:
		id = c.track(event.Track{Kind: event.TrackHostThread, Name: fmt.Sprintf("track %d", uuid)})
	case tr.Kind == TrackProcess && (uuid == c.progUUID || tr.PID == int64(c.pid)):
		id = 0
	case tr.Description == MemoryEventsDescription:
		id = c.track(c.memoryTrack(tr))
	default:
		id = c.track(c.threadTrack(tr))
	}
	c.tracks[uuid] = id
	return id
}

// instantTrackOf returns the builder track of a track uuid for an
// instant: an instant on another process's own track (not one of its
// threads) belongs to that process (its TrackProcess track); any other
// goes where a slice would.
func (c *converter) instantTrackOf(uuid uint64) uint32 {
	if tr := c.byUUID[uuid]; tr != nil && tr.Kind == TrackProcess && uuid != c.progUUID && tr.PID != int64(c.pid) {
		if _, dev := c.deviceOf(tr.PID); !dev {
			return c.b.ProcessTrack(c.processOf(tr.PID))
		}
	}
	return c.trackOf(uuid)
}

// inProcess returns the pid of the process a track belongs to: its own,
// or its nearest process or thread ancestor's; false for a track of no
// process (a global track).
func (c *converter) inProcess(tr *Track) (int64, bool) {
	for range maxTrackAncestors {
		if tr.Kind == TrackProcess || tr.Kind == TrackThread {
			return tr.PID, true
		}
		if tr = c.byUUID[tr.ParentUUID]; tr == nil {
			break
		}
	}
	return 0, false
}

// threadTrack returns the model's track for a thread track, or for
// another track events are on: a device stream on a "GPU <n>" process
// other than the snapshot's, a host thread otherwise, of the track's
// process (the program when it has none). A process track of another
// process becomes a thread of that process (named after it, with its pid
// as tid).
func (c *converter) threadTrack(tr *Track) event.Track {
	pid, inProc := c.inProcess(tr)
	dev, ok := c.deviceOf(tr.PID)
	if !ok || !inProc {
		t := event.Track{Kind: event.TrackHostThread, ID: tr.TID, Name: trimOverflow(tr.Name), SortIndex: tr.Rank, Sorted: tr.Ranked}
		if tr.Kind == TrackProcess {
			t.ID, t.SortIndex, t.Sorted = tr.PID, 0, false
		}
		if inProc {
			t.Process = c.processOf(pid)
			if pid == int64(c.pid) && c.twinNum != 0 && tr.Description == TwinThreadDescription {
				t.Process = c.twinNum
			}
		}
		return t
	}
	dev.Kind, dev.ID, dev.Name = event.TrackDeviceStream, tr.TID, trimOverflow(tr.Name)
	if sm := streamTrack.FindStringSubmatch(tr.Name); sm != nil {
		dev.ID, _ = strconv.ParseInt(sm[1], 10, 64)
	}
	return dev
}

// memoryTrack returns the model's track for a thread that holds memory
// events: the memory of the device its process stands for, else host
// memory.
func (c *converter) memoryTrack(tr *Track) event.Track {
	t := event.Track{Kind: event.TrackMemory, Device: -1, Name: trimOverflow(tr.Name)}
	if dev, ok := c.deviceOf(tr.PID); ok {
		t.Device = dev.Device
	}
	return t
}

// deviceOf returns the device a process stands for (Kind TrackDevice), or
// false for the snapshot's own process and any other: a process named
// "GPU <n>" ("GPU <n> (<device name>)"), with the index, vendor and UUID
// of devprof's process labels where it has them.
func (c *converter) deviceOf(pid int64) (event.Track, bool) {
	m := gpuProcess.FindStringSubmatch(c.procName[pid])
	if m == nil || pid == int64(c.pid) {
		return event.Track{}, false
	}
	t := event.Track{Kind: event.TrackDevice, DeviceName: m[2]}
	t.Device, _ = strconv.Atoi(m[1])
	if p := c.procs[pid]; p != nil {
		for _, l := range p.Labels {
			if v, ok := strings.CutPrefix(l, DeviceLabelIndex); ok {
				if n, err := strconv.Atoi(v); err == nil && n >= 0 {
					t.Device = n
				}
			} else if v, ok := strings.CutPrefix(l, DeviceLabelVendor); ok {
				t.Vendor = v
			} else if v, ok := strings.CutPrefix(l, DeviceLabelUUID); ok {
				t.UUID = v
			} else if v, ok := strings.CutPrefix(l, DeviceLabelPCI); ok {
				t.PCIBusID = v
			} else if v, ok := strings.CutPrefix(l, DeviceLabelCaps); ok {
				t.Caps = ParseCaps(v)
			}
		}
	}
	return t, true
}

// slice adds slice i, after its parent: a span, or activity on a device
// stream.
func (c *converter) slice(i int) {
	if c.ids[i] != 0 {
		return
	}
	s := &c.t.Slices[i]
	var parent uint64
	if s.Parent >= 0 && s.Parent < len(c.t.Slices) && s.Parent != i {
		c.slice(s.Parent)
		parent = c.ids[s.Parent]
	}
	sp := event.Span{Name: s.Name, Start: s.Start, End: s.Start + s.Dur, Parent: parent, Unfinished: s.Dur < 0}
	sp.Args, sp.Step, sp.StepNum = convertArgs(s.Args, &sp.Unfinished)
	for _, f := range append(append([]uint64(nil), s.FlowIDs...), s.TerminatingFlowIDs...) {
		if f&ParentFlowBit == 0 && !c.lone[f] {
			sp.Args = append(sp.Args, event.Arg{Kind: event.ArgFlow, Num: f})
		}
	}
	sp.Track = c.trackOf(s.Track)
	if sp.Track != 0 && c.isDevice(sp.Track) {
		c.ids[i] = c.b.ActivityOf(event.ActivityUnknown, sp.Track, s.Name, s.Start, s.Start+max(s.Dur, 0), sp.Args)
		return
	}
	c.ids[i] = c.b.Span(sp)
}

// enclosingSlices finds, for every instant, the innermost slice on its
// track that contains it: the span it was recorded in (0: none). One sweep
// per track over its slices in start order and its instants in time order
// (Trace keeps both sorted so), with the open slices on a stack: linear,
// where a scan of the track's slices per instant was quadratic (most of
// the time of converting a JAX capture with ten thousand instants).
func (c *converter) enclosingSlices() []uint64 {
	out := make([]uint64, len(c.t.Instants))
	slicesOf := map[uint64][]int{}
	for i := range c.t.Slices {
		slicesOf[c.t.Slices[i].Track] = append(slicesOf[c.t.Slices[i].Track], i)
	}
	instantsOf := map[uint64][]int{}
	for k := range c.t.Instants {
		if tr := c.t.Instants[k].Track; len(slicesOf[tr]) > 0 {
			instantsOf[tr] = append(instantsOf[tr], k)
		}
	}
	var stack []int
	for track, ins := range instantsOf {
		sl := slicesOf[track]
		stack = stack[:0]
		// ended reports whether slice i is over at t (slices are closed on
		// the left, open on the right; Dur < 0 never ended).
		ended := func(i int, t int64) bool {
			s := &c.t.Slices[i]
			return s.Dur >= 0 && s.Start+s.Dur <= t
		}
		j := 0
		for _, k := range ins {
			ts := c.t.Instants[k].TS
			for ; j < len(sl) && c.t.Slices[sl[j]].Start <= ts; j++ {
				for len(stack) > 0 && ended(stack[len(stack)-1], c.t.Slices[sl[j]].Start) {
					stack = stack[:len(stack)-1]
				}
				stack = append(stack, sl[j])
			}
			for len(stack) > 0 && ended(stack[len(stack)-1], ts) {
				stack = stack[:len(stack)-1]
			}
			// The top of the stack is the innermost open slice: it started
			// last of those that contain ts.
			if len(stack) > 0 {
				out[k] = c.ids[stack[len(stack)-1]]
			}
		}
	}
	return out
}

// instants adds the instants; those devprof wrote to show the metadata
// go to marks instead, to become metadata again.
func (c *converter) instants(marks *metatext.Collector) {
	encl := c.enclosingSlices()
	for k := range c.t.Instants {
		in := &c.t.Instants[k]
		var unfinished bool
		args, _, _ := convertArgs(in.Args, &unfinished)
		if marks.Take(in.Name, args) {
			continue
		}
		for _, f := range in.FlowIDs {
			if f&ParentFlowBit == 0 && !c.lone[f] {
				args = append(args, event.Arg{Kind: event.ArgFlow, Num: f})
			}
		}
		track := c.instantTrackOf(in.Track)
		if c.kinds[track] == event.TrackMemory {
			c.b.ActivityOf(memoryKind(in.Name), track, in.Name, in.TS, in.TS, memoryArgs(args))
			continue
		}
		c.b.Instant(in.Name, in.TS, track, encl[k], args)
	}
}

// counters adds the counter samples, named after their tracks, under
// their parents as trace_processor keeps them: a counter track under a
// GPU process is that device's; under a thread track, that thread's;
// under another process's track (or a track of it), that process's; the
// rest (the program's, and global counters, which the model has no place
// for but the program) the program's.
func (c *converter) counters() {
	devices := map[int64]uint32{}  // GPU process pid -> its TrackDevice track
	parents := map[uint64]uint32{} // counter track uuid -> the builder track of its parent (0: the program)
	for _, cs := range c.t.Counters {
		tr := c.byUUID[cs.Track]
		if tr == nil {
			c.b.Counter(unnamedCounter, "", cs.TS, cs.Value)
			continue
		}
		if tr.Description == MemoryCounterDescription {
			continue // derived from the memory events again
		}
		id, seen := parents[cs.Track]
		if !seen {
			id = c.counterParent(tr, devices)
			parents[cs.Track] = id
		}
		if id == 0 {
			c.b.Counter(tr.Name, tr.Unit, cs.TS, cs.Value)
			continue
		}
		c.b.TrackCounter(id, tr.Name, tr.Unit, cs.TS, cs.Value)
	}
}

// counterParent returns the builder track a counter track's samples go
// on (0: the program's, as plain counters).
func (c *converter) counterParent(tr *Track, devices map[int64]uint32) uint32 {
	pid, inProc := c.inProcess(tr)
	if !inProc {
		return 0
	}
	if dev, ok := c.deviceOf(pid); ok {
		id, seen := devices[pid]
		if !seen {
			id = c.track(dev)
			devices[pid] = id
		}
		return id
	}
	// The nearest thread ancestor, if any.
	for p, n := c.byUUID[tr.ParentUUID], 0; p != nil && n < maxTrackAncestors; p, n = c.byUUID[p.ParentUUID], n+1 {
		if p.Kind == TrackThread {
			return c.trackOf(p.UUID)
		}
		if p.Kind == TrackProcess {
			break
		}
	}
	if pid == int64(c.pid) {
		return 0
	}
	return c.b.ProcessTrack(c.processOf(pid))
}

// track registers a track in the sink.
func (c *converter) track(t event.Track) uint32 {
	id := c.b.Track(t)
	c.kinds[id] = t.Kind
	return id
}

// isDevice reports whether a sink track is a device stream or a memory
// track, whose slices are activity.
func (c *converter) isDevice(id uint32) bool {
	k, ok := c.kinds[id]
	return ok && (k == event.TrackDeviceStream || k == event.TrackMemory)
}

// memoryKind is the kind of a memory event, by its name.
func memoryKind(name string) event.ActivityKind {
	switch name {
	case event.ActivityAlloc.String():
		return event.ActivityAlloc
	case event.ActivityFree.String():
		return event.ActivityFree
	}
	return event.ActivityUnknown
}

// memoryArgs gives a memory event's address its model type again (the
// writer shows it in hex).
func memoryArgs(args []event.Arg) []event.Arg {
	for i, a := range args {
		if a.Key != event.ArgAddress || a.Kind != event.ArgString {
			continue
		}
		if h, ok := strings.CutPrefix(a.Str, "0x"); ok {
			if v, err := strconv.ParseUint(h, 16, 64); err == nil {
				args[i] = event.Arg{Key: a.Key, Kind: event.ArgUint, Num: v}
			}
		}
	}
	return args
}

// trimOverflow turns the name of an overflow row ("python (2)") back into
// its track's name, so converting merges the rows again.
func trimOverflow(name string) string {
	if i := strings.LastIndex(name, " ("); i > 0 && strings.HasSuffix(name, ")") {
		if _, err := strconv.Atoi(name[i+2 : len(name)-1]); err == nil {
			return name[:i]
		}
	}
	return name
}

// convertArgs maps debug annotations to event arguments; devprof's own
// step_num and unfinished annotations become span properties again.
func convertArgs(in []Arg, unfinished *bool) (args []event.Arg, step bool, stepNum int64) {
	return appendArgs(nil, in, unfinished)
}

// appendArgs is convertArgs appending to args.
func appendArgs(args []event.Arg, in []Arg, unfinished *bool) (_ []event.Arg, step bool, stepNum int64) {
	for _, a := range in {
		switch a.Name {
		case "step_num":
			if v, ok := a.Value.(int64); ok {
				step, stepNum = true, v
				continue
			}
		case "unfinished":
			if v, ok := a.Value.(bool); ok && v {
				*unfinished = true
				continue
			}
		}
		switch v := a.Value.(type) {
		case int64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgInt, Num: uint64(v)})
		case uint64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgUint, Num: v})
		case float64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgFloat, Num: math.Float64bits(v)})
		case bool:
			x := uint64(0)
			if v {
				x = 1
			}
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgBool, Num: x})
		case string:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgString, Str: v})
		}
	}
	return args, step, stepNum
}
