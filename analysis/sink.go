package analysis

import (
	"math"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// Analyzer is an event.Sink that analyzes a trace as a reader streams it.
// It keeps what the answers need, not the events: each piece of device
// work's interval, name and launch link, by stream; each launch call's
// link, start, name and the host span around it; each host thread's
// root spans and the spans around launch calls, once each (24 bytes);
// the steps; the spans still open on each host thread. The device
// work, launch calls and host spans, which grow with the trace, are held
// in memory within Options.MemoryBudget and spilled past it to a
// temporary file, read back in chunks by Report: the analysis of a trace
// of any length holds about the budget (BenchmarkAnalyze,
// BenchmarkAnalyzeFile).
//
// Report returns the analysis once the reader is done. An Analyzer is
// not safe for concurrent use.
type Analyzer struct {
	opt  Options
	meta event.Meta
	// initial is the metadata NewAnalyzer was given, for Reset.
	initial event.Meta

	tracks     []trackInfo
	procs      []event.Process
	procTracks map[int]uint32
	names      []string
	nameIDs    map[string]uint32
	nextID     uint64
	events     int64
	first      int64
	last       int64

	// streams holds each stream's work, by track id; order lists the
	// tracks as their first work came.
	streams map[uint32]*stream
	order   []uint32
	// openOps are device work added Unfinished, by ID, until EndSpan.
	openOps map[uint64]opRef

	// launches are the launch calls, as they came; launchesSorted says
	// their links never went down (readers number flows and correlation
	// ids in order), so that Report need not sort them.
	launches       spool[launchRec]
	launchesSorted bool
	lastLaunch     uint64
	// mem is the bytes of work and launch calls held in memory; past the
	// budget they go to spill.
	mem   int
	spill spillFile
	// collective caches isCollective by name id (0: not asked yet, 1:
	// yes, 2: no).
	collective []uint8
	// nodes are the host spans that enclosed a launch call and the host
	// threads' root spans, each once, spilled with the work; nodeEnds
	// holds the ends learned of nodes spilled while open.
	nodes    spool[hostNode]
	nodeEnds map[int32]int64

	threads map[uint32]*thread
	// openSpans are host spans added Unfinished, by ID, until EndSpan.
	openSpans map[uint64]*hostSpan

	steps []stepRec
	// markerSteps and profilerSteps count the steps marked as steps and
	// those named ProfilerStep#N: where a trace has both, markers win.
	markerSteps, profilerSteps int

	occupancy map[uint32]*occupancySum
	// outOfOrder counts spans that began before an earlier span of their
	// thread: the enclosing-span bookkeeping assumes start order.
	outOfOrder int64
}

// The bytes a record takes in memory, for the budget.
const (
	workMem   = 32
	launchMem = 40
	nodeMem   = 24
	rootMem   = 4
)

// trackInfo is what the analysis needs of a registered track.
type trackInfo struct {
	t      event.Track
	device int // the device ordinal of a stream, -1 for a host track
}

// category is what device work was: what the temporal breakdown adds it
// to.
type category uint8

const (
	catNone category = iota // not device work (a sync, an allocation)
	catCompute
	catComm
	catMemory
)

func (c category) String() string {
	switch c {
	case catCompute:
		return "compute"
	case catComm:
		return "communication"
	case catMemory:
		return "memory"
	}
	return "none"
}

// opRef finds a piece of device work: its stream, index and start.
type opRef struct {
	s     *stream
	i     int
	start int64
}

// hostNode is a host span that enclosed a launch call, or a root span of
// a host thread.
type hostNode struct {
	start, end int64 // end is math.MaxInt64 until known
	name       uint32
	parent     int32
}

// hostSpan is a span on a host thread's stack.
type hostSpan struct {
	start, end int64 // end is math.MaxInt64 until known
	name       uint32
	node       int32 // its hostNode once it enclosed a launch, else -1
	step       int32 // the step it is, in steps; -1 for none
	// th and busy are its thread and its index in th.busy while it is
	// open inside a step (-1 otherwise).
	th   *thread
	busy int32
}

// thread is a host thread's spans still open, by time, and the step in
// progress on it.
type thread struct {
	stack []*hostSpan
	free  []*hostSpan
	// roots are the thread's spans that began with no other open, in
	// nodes, in start order: what the thread was doing when a gap began
	// that no span around the launch call covers.
	roots spool[int32]
	// step is the step whose host busy time the thread's spans add to
	// (-1: none); busy holds their intervals until the step closes (an
	// open span's end is patched in by EndSpan).
	step      int32
	busy      []interval
	lastStart int64
	hadSpan   bool
}

// interval is a stretch of time; end is math.MaxInt64 until known.
type interval struct{ start, end int64 }

// stepRec is a step as found.
type stepRec struct {
	num        int64
	start, end int64 // end is math.MaxInt64 until known
	hostBusy   int64
	profiler   bool // named ProfilerStep#N rather than marked
}

type occupancySum struct {
	sum float64
	n   int64
}

// NewAnalyzer returns an Analyzer for a trace with the given metadata
// (what a reader starts a sink with; it fills in the rest).
func NewAnalyzer(meta event.Meta, opt Options) *Analyzer {
	a := &Analyzer{opt: opt, initial: meta}
	a.Reset()
	return a
}

// Reset implements event.Sink.
func (a *Analyzer) Reset() {
	a.spill.close()
	*a = Analyzer{
		opt:       a.opt,
		meta:      a.initial,
		initial:   a.initial,
		names:     []string{""},
		nameIDs:   map[string]uint32{"": 0},
		streams:   map[uint32]*stream{},
		openOps:   map[uint64]opRef{},
		threads:   map[uint32]*thread{},
		openSpans: map[uint64]*hostSpan{},
		occupancy: map[uint32]*occupancySum{},
		first:     math.MaxInt64,
		last:      math.MinInt64,
		spill:     spillFile{dir: a.opt.TempDir},

		launchesSorted: true,
	}
}

// Events returns how many events the sink was given so far.
func (a *Analyzer) Events() int64 { return a.events }

// Meta implements event.Sink.
func (a *Analyzer) Meta() *event.Meta { return &a.meta }

// Track implements event.Sink.
func (a *Analyzer) Track(t event.Track) uint32 {
	a.tracks = append(a.tracks, trackInfo{t: t, device: a.deviceOf(t)})
	return uint32(len(a.tracks))
}

// deviceOf returns the device whose stream t is, -1 for a track of the
// host, as event.StreamOf reads it (the tables read it alike).
func (a *Analyzer) deviceOf(t event.Track) int {
	if d, _, ok := event.StreamOf(t, a.procs); ok {
		return d
	}
	return -1
}

// SetTrackName implements event.Sink.
func (a *Analyzer) SetTrackName(id uint32, name string) {
	if id > 0 && int(id) <= len(a.tracks) {
		t := &a.tracks[id-1]
		t.t.Name = name
		if _, worked := a.streams[id]; !worked {
			t.device = a.deviceOf(t.t)
		}
	}
}

// Process implements event.Sink.
func (a *Analyzer) Process(p event.Process) int {
	p.Labels = append([]string(nil), p.Labels...)
	a.procs = append(a.procs, p)
	return len(a.procs)
}

// ProcessTrack implements event.Sink.
func (a *Analyzer) ProcessTrack(process int) uint32 {
	if id, ok := a.procTracks[process]; ok {
		return id
	}
	if a.procTracks == nil {
		a.procTracks = map[int]uint32{}
	}
	id := a.Track(event.Track{Kind: event.TrackProcess, Process: process})
	a.procTracks[process] = id
	return id
}

func (a *Analyzer) intern(s string) uint32 {
	if id, ok := a.nameIDs[s]; ok {
		return id
	}
	id := uint32(len(a.names))
	a.names = append(a.names, s)
	a.nameIDs[s] = id
	return id
}

func (a *Analyzer) id() uint64 {
	a.nextID++
	a.events++
	return a.nextID
}

func (a *Analyzer) seen(start, end int64) {
	a.first = min(a.first, start)
	a.last = max(a.last, end, start)
}

func (a *Analyzer) device(track uint32) int {
	if track == 0 || int(track) > len(a.tracks) {
		return -1
	}
	return a.tracks[track-1].device
}

// Span implements event.Sink.
func (a *Analyzer) Span(s event.Span) uint64 {
	id := a.id()
	end := s.End
	if s.Unfinished {
		end = math.MaxInt64
		a.seen(s.Start, s.Start)
	} else {
		a.seen(s.Start, s.End)
	}
	if a.device(s.Track) >= 0 {
		a.deviceWork(id, event.ActivityUnknown, s.Track, s.Name, s.Start, end, s.Args)
		return id
	}
	a.hostSpan(id, s.Track, s.Name, s.Start, end, s.Args, s.Step, s.StepNum)
	return id
}

// EndSpan implements event.Sink.
func (a *Analyzer) EndSpan(id uint64, end int64) {
	if ref, ok := a.openOps[id]; ok {
		delete(a.openOps, id)
		end = max(end, ref.start)
		ref.s.setEnd(ref.i, end)
		a.seen(ref.start, end)
		return
	}
	h, ok := a.openSpans[id]
	if !ok {
		return
	}
	delete(a.openSpans, id)
	h.end = max(end, h.start)
	a.seen(h.start, h.end)
	if h.node >= 0 {
		if n := a.nodes.at(int(h.node)); n != nil {
			n.end = h.end
		} else {
			if a.nodeEnds == nil {
				a.nodeEnds = map[int32]int64{}
			}
			a.nodeEnds[h.node] = h.end
		}
	}
	if h.step >= 0 {
		a.steps[h.step].end = h.end
	}
	if h.busy >= 0 && int(h.busy) < len(h.th.busy) && h.th.busy[h.busy].start == h.start {
		h.th.busy[h.busy].end = h.end
	}
}

// TrackSlice implements event.Sink.
func (a *Analyzer) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := a.id()
	a.seen(start, end)
	if a.device(track) >= 0 {
		a.deviceWork(id, event.ActivityUnknown, track, name, start, end, args)
		return id
	}
	a.hostSpan(id, track, name, start, end, args, false, 0)
	return id
}

// Instant implements event.Sink.
func (a *Analyzer) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	a.events++
	a.seen(t, t)
}

// Counter implements event.Sink.
func (a *Analyzer) Counter(name, unit string, t int64, v float64) {
	a.events++
	a.seen(t, t)
}

// TrackCounter implements event.Sink.
func (a *Analyzer) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	a.events++
	a.seen(t, t)
}

// ActivityOf implements event.Sink.
func (a *Analyzer) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := a.id()
	a.seen(start, end)
	switch {
	case a.device(track) >= 0:
		a.deviceWork(id, kind, track, name, start, end, args)
	case kind == event.ActivityAPI || kind == event.ActivityUnknown:
		// A driver call recorded as activity on a host thread (CUPTI's
		// API records): a launch when it is linked to device work.
		if link := linkOf(args); link != 0 {
			id := a.intern(name)
			a.addLaunch(link, id, id, start, -1, track)
		}
	}
	return id
}

// linkOf returns what ties a launch call to its device work: a flow id
// (as 2n) or else a correlation id (as 2n+1), 0 for none.
func linkOf(args []event.Arg) uint64 {
	var corr uint64
	for i := range args {
		switch {
		case args[i].Kind == event.ArgFlow:
			return args[i].Num << 1
		case corr == 0 && (args[i].Key == "correlation" || args[i].Key == "correlation_id") && (args[i].Kind == event.ArgInt || args[i].Kind == event.ArgUint):
			corr = args[i].Num<<1 | 1
		}
	}
	return corr
}

// deviceWork adds work on a device stream.
func (a *Analyzer) deviceWork(id uint64, kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) {
	nameID := a.intern(name)
	c := classify(kind, name, args)
	if c == catComm && !a.isCollective(nameID) {
		c = catCompute
	}
	if c == catNone {
		return
	}
	link := linkOf(args)
	st := a.streams[track]
	if st == nil {
		st = &stream{track: track, sorted: true}
		a.streams[track] = st
		a.order = append(a.order, track)
	}
	if st.work.len() > 0 && start < st.lastStart {
		st.sorted = false
	}
	st.lastStart = start
	if end == math.MaxInt64 {
		a.openOps[id] = opRef{st, st.work.len(), start}
	}
	w := workRec{start: start, end: max(end, start), link: link, name: nameID, flags: uint8(c)}
	if kind == event.ActivityUnknown && link == 0 && c == catCompute {
		w.flags |= flagMayEnclose
	}
	st.work.tail = append(st.work.tail, w)
	a.grew(workMem)
	if c == catCompute || c == catComm {
		if pct, ok := occupancyOf(args); ok {
			o := a.occupancy[nameID]
			if o == nil {
				o = &occupancySum{}
				a.occupancy[nameID] = o
			}
			o.sum += pct
			o.n++
		}
	}
}

// occupancyOf returns the occupancy a kernel's arguments give, in
// percent: xprof's theoretical_occupancy_pct, Kineto's estimate, or
// the occ_pct TSL and devprof write into xprof's kernel_details.
func occupancyOf(args []event.Arg) (float64, bool) {
	for i := range args {
		switch args[i].Key {
		case "kernel_details":
			if args[i].Kind != event.ArgString {
				continue
			}
			_, rest, ok := strings.Cut(args[i].Str, "occ_pct:")
			if !ok {
				continue
			}
			rest, _, _ = strings.Cut(rest, " ")
			if pct, err := strconv.ParseFloat(rest, 64); err == nil {
				return pct, true
			}
		case "theoretical_occupancy_pct", "est. achieved occupancy %", "occupancy_pct":
			switch args[i].Kind {
			case event.ArgFloat:
				return args[i].Float(), true
			case event.ArgInt:
				return float64(args[i].Int()), true
			case event.ArgUint:
				return float64(args[i].Num), true
			}
		}
	}
	return 0, false
}

// isCollective is the package's isCollective, once per name.
func (a *Analyzer) isCollective(name uint32) bool {
	if int(name) >= len(a.collective) {
		a.collective = append(a.collective, make([]uint8, int(name)+1-len(a.collective))...)
	}
	if a.collective[name] == 0 {
		a.collective[name] = 2
		if event.IsCollective(a.names[name]) {
			a.collective[name] = 1
		}
	}
	return a.collective[name] == 1
}

// classify says what device work was (see the package doc), except that
// a kernel it does not know to be memory or not device work is catComm:
// the caller decides between communication and compute by its name
// (Analyzer.isCollective, which asks each name once).
func classify(kind event.ActivityKind, name string, args []event.Arg) category {
	k, work := event.WorkKind(kind, name, args)
	switch {
	case !work:
		return catNone
	case k == event.ActivityKernel:
		return catComm
	}
	return catMemory
}

// hostSpan adds a span of the host: to its thread's stack, to its step's
// host busy time, as a step, and as a launch call when it is linked to
// device work.
func (a *Analyzer) hostSpan(id uint64, track uint32, name string, start, end int64, args []event.Arg, step bool, stepNum int64) {
	th := a.threads[track]
	if th == nil {
		th = &thread{step: -1}
		a.threads[track] = th
	}
	if th.hadSpan && start < th.lastStart {
		a.outOfOrder++
	}
	th.hadSpan, th.lastStart = true, max(th.lastStart, start)
	// Spans that ended by now are no longer around this one.
	for len(th.stack) > 0 {
		top := th.stack[len(th.stack)-1]
		if top.end > start {
			break
		}
		th.stack = th.stack[:len(th.stack)-1]
		th.free = append(th.free, top)
	}
	nameID := a.intern(name)
	stepIdx := int32(-1)
	profiler := false
	if !step {
		if n, ok := event.ProfilerStep(name); ok {
			step, stepNum, profiler = true, n, true
			a.profilerSteps++
		}
	} else {
		a.markerSteps++
	}
	busy := int32(-1)
	if step {
		a.closeStep(th)
		stepIdx = int32(len(a.steps))
		a.steps = append(a.steps, stepRec{num: stepNum, start: start, end: end, profiler: profiler})
		th.step = stepIdx
	} else if th.step >= 0 {
		if st := &a.steps[th.step]; start >= st.end {
			a.closeStep(th)
		} else if start >= st.start {
			busy = int32(len(th.busy))
			th.busy = append(th.busy, interval{start, end})
		}
	}
	var h *hostSpan
	if k := len(th.free); k > 0 {
		h, th.free = th.free[k-1], th.free[:k-1]
	} else {
		h = new(hostSpan)
	}
	*h = hostSpan{start: start, end: end, name: nameID, node: -1, step: stepIdx, th: th, busy: busy}
	if end == math.MaxInt64 {
		a.openSpans[id] = h
	}
	if link := linkOf(args); link != 0 {
		who, node := nameID, a.nodeOf(th)
		if node >= 0 {
			who = th.stack[len(th.stack)-1].name
		}
		a.addLaunch(link, nameID, who, start, node, track)
	}
	if len(th.stack) == 0 {
		h.node = a.addNode(hostNode{start: start, end: end, name: nameID, parent: -1})
		th.roots.tail = append(th.roots.tail, h.node)
		a.grew(rootMem)
	}
	th.stack = append(th.stack, h)
}

// nodeOf returns the hostNode of the innermost span open on th, making
// nodes for it and its enclosing spans as needed; -1 when none is open.
func (a *Analyzer) nodeOf(th *thread) int32 {
	parent := int32(-1)
	for _, h := range th.stack {
		if h.node < 0 {
			h.node = a.addNode(hostNode{start: h.start, end: h.end, name: h.name, parent: parent})
		}
		parent = h.node
	}
	return parent
}

// addLaunch records a launch call. One link, one launch: the first call
// a link names is the one that launched (a correlation id is the
// launch's own); Report keeps the first.
func (a *Analyzer) addLaunch(link uint64, name, who uint32, start int64, node int32, thread uint32) {
	if a.launches.len() > 0 && link < a.lastLaunch {
		a.launchesSorted = false
	}
	a.lastLaunch = link
	a.launches.tail = append(a.launches.tail, launchRec{link: link, start: start, name: name, who: who, node: node, thread: thread,
		seq: uint64(a.launches.len())})
	a.grew(launchMem)
}

// addNode adds a host span to nodes and returns its index.
func (a *Analyzer) addNode(n hostNode) int32 {
	a.nodes.tail = append(a.nodes.tail, n)
	a.grew(nodeMem)
	return int32(a.nodes.len() - 1)
}

// node returns node i, spilled or not.
func (a *Analyzer) node(i int32) hostNode {
	n := a.nodes.get(&a.spill, nodeCodec, int(i))
	if end, ok := a.nodeEnds[i]; ok {
		n.end = end
	}
	return n
}

// grew counts n more bytes held of work, launch calls and host spans,
// and spills them all once they pass half the budget: with the room
// their slices keep to grow, they hold about the budget.
func (a *Analyzer) grew(n int) {
	a.mem += n
	if b := a.opt.memoryBudget(); b > 0 && a.mem > b/2 {
		for _, id := range a.order {
			a.streams[id].work.flush(&a.spill, workCodec)
		}
		a.launches.flush(&a.spill, launchCodec)
		a.nodes.flush(&a.spill, nodeCodec)
		for _, th := range a.threads {
			th.roots.flush(&a.spill, int32Codec)
		}
		a.mem = 0
	}
}

// setEnd sets the end of work i, spilled or not.
func (s *stream) setEnd(i int, end int64) {
	if w := s.work.at(i); w != nil {
		w.end = end
		return
	}
	if s.ends == nil {
		s.ends = map[int]int64{}
	}
	s.ends[i] = end
}

// closeStep ends the step in progress on th: its host busy time is the
// union of the intervals of the spans in it, clipped to it (an end still
// unknown runs to the step's end, or the trace's).
func (a *Analyzer) closeStep(th *thread) {
	if th.step < 0 {
		return
	}
	st := &a.steps[th.step]
	limit := st.end
	if limit == math.MaxInt64 {
		limit = a.last
	}
	st.hostBusy = unionWithin(th.busy, st.start, limit)
	th.step, th.busy = -1, th.busy[:0]
}

var _ event.Sink = (*Analyzer)(nil)
