package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/spanstats"
)

// summaryAggregator is the event.Sink devprof summary reads a trace
// into: it computes everything summary prints while the reader streams,
// keeping names, tracks and the spans still open on each layout row, not
// events.
//
// Self time and rows must be what event.Layout gives on the whole
// snapshot: a span's parent for self time is the span directly above it
// on its layout row. So the aggregator places spans as Layout does, one
// group of rows (a track, or the program's lanes) at a time, in the
// order Layout sorts them — which is the order a reader emits them in on
// each track (start order, parents first). A reader may add a span
// before it knows its end (Span.Unfinished, then EndSpan); each
// placement decision that needed an unknown end is taken the way a
// properly nested stream has it, and written down as a bound on that
// end, checked when the end arrives. A stream out of order on a track,
// or an end that breaks a bound, sets errRestream: the caller reads the
// trace again into an aggregator made with buffered set, which keeps
// every span and lays each group out at the end, as Layout does.
//
// The program's lanes (spans on no track, which no file reader emits)
// are always laid out at the end: a lane is the tree of a root, which
// only the whole trace tells.
type summaryAggregator struct {
	buffered bool
	err      error // errRestream, with why, once the stream broke an assumption

	meta, initial event.Meta
	tracks        []event.Track
	procs         []event.Process
	procTracks    map[int]uint32
	names         []string
	nameIDs       map[string]uint32

	nextID uint64
	live   map[uint64]*aggSpan // spans on a row's stack, open, or buffered
	groups map[uint32]*aggGroup
	// sums holds the span table of each group's rows (a track's, by its
	// id; 0: the program's lanes).
	sums map[uint32]*trackSum

	free []*aggSpan // spans counted and let go, for reuse

	instants, counterSamples int
	series                   map[seriesKey]*seriesStat
	seriesSeq                int
	goRuntime                gotrace.Summarizer
}

// errRestream says a stream broke the order the aggregator relies on;
// summary then reads the trace again into a buffered aggregator.
var errRestream = errors.New("the trace's spans are out of order: reading it again, keeping every span")

// aggKind is how a span was added, which decides its lane (see
// event.Builder.laneOf) and whether it has a parent to sit beneath.
type aggKind uint8

const (
	aggNoTrack  aggKind = iota // Span on no track: a lane of the program
	aggOnTrack                 // Span on a track
	aggSlice                   // TrackSlice: a root on a track
	aggActivity                // device activity
)

// aggSpan is a span the aggregator still holds.
type aggSpan struct {
	id, parent uint64
	start, end int64
	known      bool // end is known
	kind       aggKind
	goRegion   bool // it carries gotrace.ArgGoroutine (not a region, for the Go runtime's section)
	group      uint32
	name       uint32
	lane       uint32
	depth      int32 // ancestors, as Layout counts them to break ties; -1 unknown
	row        int32 // its row in its group, once placed
	stackAt    int32 // its index in its row's stack
	placed     bool
	// isLast and pinned keep a span that its group (the last span
	// added) or its track (the first) still point to from being reused.
	isLast, pinned bool
	rowParent      *aggSpan // the span directly above it on its row
	kidSum         int64    // time of its direct children on its row
	// minEnd and maxEnd bound an unknown end: decisions taken before it
	// was known hold only inside them. within is the span it was put
	// beneath while both ends were unknown (it must end by within's end);
	// pairs bound it against another unknown end (spans tied on start).
	minEnd, maxEnd int64
	within         *aggSpan
	pairs          []*endPair
	activePairs    int
}

// endPair says hi's end is at least lo's end plus gap (0 or 1 ns), for
// two spans whose ends were both unknown when a decision needed them.
type endPair struct {
	hi, lo *aggSpan
	gap    int64
	done   bool
}

// aggGroup is the rows of one track (or of the program's lanes).
type aggGroup struct {
	id      uint32
	rows    []aggRow
	last    *aggSpan   // the span the stream gave last, for the order check
	pending []*aggSpan // spans laid out at the end (buffered, or lanes)
}

type aggRow struct {
	stack []*aggSpan
	lane  uint32 // lane of the row's first span
	name  uint32 // name of the row's first span
}

// trackSum is the table of one track's rows.
type trackSum struct {
	sum  spanstats.Sum
	rows int
	// first is the sort key of the track's first placed span: the order
	// in which Layout creates rows (which device name a device gets).
	first *aggSpan
}

type seriesKey struct {
	device int
	name   string
}

// seriesStat is one device counter series, running.
type seriesStat struct {
	counterStat
	firstT   int64
	firstSeq int
}

// maxLaneRows is event.Layout's: how many lane rows it opens before it
// reuses any free one.
const maxLaneRows = 64

func newSummaryAggregator(buffered bool) *summaryAggregator {
	a := &summaryAggregator{buffered: buffered}
	a.Reset()
	return a
}

// Reset implements event.Sink.
func (a *summaryAggregator) Reset() {
	*a = summaryAggregator{
		buffered: a.buffered,
		meta:     a.initial,
		initial:  a.initial,
		names:    []string{""},
		nameIDs:  map[string]uint32{"": 0},
		live:     map[uint64]*aggSpan{},
		groups:   map[uint32]*aggGroup{},
		sums:     map[uint32]*trackSum{},
		series:   map[seriesKey]*seriesStat{},
	}
}

// Err returns errRestream (wrapped, saying why) when the stream broke
// the order the aggregator relies on.
func (a *summaryAggregator) Err() error { return a.err }

func (a *summaryAggregator) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("%w (%s)", errRestream, fmt.Sprintf(format, args...))
	}
}

// Meta implements event.Sink.
func (a *summaryAggregator) Meta() *event.Meta { return &a.meta }

// Track implements event.Sink.
func (a *summaryAggregator) Track(t event.Track) uint32 {
	a.tracks = append(a.tracks, t)
	id := uint32(len(a.tracks))
	a.goRuntime.Track(id, t)
	return id
}

// SetTrackName implements event.Sink.
func (a *summaryAggregator) SetTrackName(id uint32, name string) {
	if id > 0 && int(id) <= len(a.tracks) {
		a.tracks[id-1].Name = name
		a.goRuntime.Track(id, a.tracks[id-1])
	}
}

// Process implements event.Sink.
func (a *summaryAggregator) Process(p event.Process) int {
	a.procs = append(a.procs, p)
	return len(a.procs)
}

// ProcessTrack implements event.Sink.
func (a *summaryAggregator) ProcessTrack(process int) uint32 {
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

func (a *summaryAggregator) intern(s string) uint32 {
	if id, ok := a.nameIDs[s]; ok {
		return id
	}
	id := uint32(len(a.names))
	a.names = append(a.names, s)
	a.nameIDs[s] = id
	return id
}

// Span implements event.Sink.
func (a *summaryAggregator) Span(s event.Span) uint64 {
	a.nextID++
	if a.err != nil {
		return a.nextID
	}
	sp := a.newSpan()
	*sp = aggSpan{id: a.nextID, parent: s.Parent, start: s.Start, group: s.Track, name: a.intern(s.Name), kind: aggOnTrack}
	if s.Track == 0 {
		sp.kind = aggNoTrack
		sp.lane = uint32(sp.id)
		if l, ok := a.laneOf(s.Parent); ok {
			sp.lane = l
		}
	}
	if !s.Unfinished {
		sp.known, sp.end = true, max(s.End, s.Start)
	}
	sp.goRegion = s.Track != 0 && hasGoroutine(s.Args)
	a.add(sp)
	return sp.id
}

// TrackSlice implements event.Sink.
func (a *summaryAggregator) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	a.nextID++
	if a.err != nil {
		return a.nextID
	}
	sp := a.newSpan()
	*sp = aggSpan{id: a.nextID, start: start, end: max(end, start), known: true, group: track, name: a.intern(name), kind: aggSlice}
	sp.goRegion = hasGoroutine(args)
	a.add(sp)
	return sp.id
}

// ActivityOf implements event.Sink.
func (a *summaryAggregator) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	a.nextID++
	if a.err != nil {
		return a.nextID
	}
	sp := a.newSpan()
	*sp = aggSpan{id: a.nextID, start: start, end: max(end, start), known: true, group: track, name: a.intern(name), kind: aggActivity}
	a.add(sp)
	return a.nextID
}

// Instant implements event.Sink.
func (a *summaryAggregator) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	a.instants++
	if track != 0 {
		a.goRuntime.Instant(track, name, t)
	}
}

// Counter implements event.Sink.
func (a *summaryAggregator) Counter(name, unit string, t int64, v float64) {
	a.counterSamples++
	a.goRuntime.Counter(0, name, t, v)
}

// TrackCounter implements event.Sink.
func (a *summaryAggregator) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	a.counterSamples++
	a.goRuntime.Counter(track, name, t, v)
	if track == 0 || int(track) > len(a.tracks) {
		return
	}
	tr := &a.tracks[track-1]
	if tr.Kind != event.TrackDevice && tr.Kind != event.TrackDeviceStream {
		return
	}
	k := seriesKey{tr.Device, name}
	st := a.series[k]
	if st == nil {
		st = &seriesStat{counterStat: counterStat{device: tr.Device, name: name, unit: unit, min: math.Inf(1), max: math.Inf(-1)}, firstT: t, firstSeq: a.seriesSeq}
		a.series[k] = st
	} else if t < st.firstT {
		// An earlier sample names the series' unit, as Layout's time
		// order has it.
		st.firstT, st.firstSeq, st.unit = t, a.seriesSeq, unit
	}
	a.seriesSeq++
	st.n++
	st.min, st.max = min(st.min, v), max(st.max, v)
	st.mean += (v - st.mean) / float64(st.n) // running mean, as deviceCounters has it
}

// EndSpan implements event.Sink.
func (a *summaryAggregator) EndSpan(id uint64, end int64) {
	if a.err != nil {
		return
	}
	sp := a.live[id]
	if sp == nil || sp.known || sp.kind == aggSlice {
		return
	}
	a.setEnd(sp, max(end, sp.start))
}

// newSpan returns a span to fill in: one let go, or a new one.
func (a *summaryAggregator) newSpan() *aggSpan {
	if n := len(a.free); n > 0 {
		sp := a.free[n-1]
		a.free = a.free[:n-1]
		return sp
	}
	return new(aggSpan)
}

// laneOf is event.Builder's laneOf over the spans the aggregator holds:
// the lane a child on no track of span id shares.
func (a *summaryAggregator) laneOf(id uint64) (uint32, bool) {
	for {
		sp := a.live[id]
		switch {
		case sp == nil && id != 0 && id <= a.nextID:
			a.fail("a span on no track names a span let go as its parent")
			return 0, false
		case sp == nil:
			return 0, false
		case sp.kind == aggNoTrack:
			return sp.lane, true
		case sp.kind != aggOnTrack:
			return 0, false
		}
		p := a.live[sp.parent]
		if p != nil && p.kind == aggNoTrack && sp.parent < id {
			return p.lane, true
		}
		if sp.parent == 0 || sp.parent >= id || p != nil && p.kind != aggOnTrack {
			return uint32(id), true
		}
		if p == nil {
			a.fail("a span on no track has an ancestor let go")
			return 0, false
		}
		id = sp.parent
	}
}

// add takes a new span: its depth, then its place (now, or at the end).
func (a *summaryAggregator) add(sp *aggSpan) {
	sp.minEnd, sp.maxEnd = math.MinInt64, math.MaxInt64
	sp.depth = 0
	if sp.parent != 0 && sp.kind != aggActivity {
		switch p := a.live[sp.parent]; {
		case p != nil && p.depth >= 0:
			sp.depth = p.depth + 1
		case p != nil || sp.parent <= a.nextID:
			sp.depth = -1 // its chain runs through a span let go
		}
	}
	a.live[sp.id] = sp
	g := a.group(sp.group)
	if a.buffered || sp.group == 0 {
		g.pending = append(g.pending, sp)
		return
	}
	if last := g.last; last != nil {
		if sp.start < last.start {
			a.fail("track %d goes back in time", sp.group)
			return
		}
		if sp.start == last.start {
			a.orderTie(last, sp)
		}
	}
	if g.last != nil {
		g.last.isLast = false
	}
	g.last, sp.isLast = sp, true
	a.place(g, sp)
}

func (a *summaryAggregator) sum(id uint32) *trackSum {
	s := a.sums[id]
	if s == nil {
		s = &trackSum{}
		a.sums[id] = s
	}
	return s
}

func (a *summaryAggregator) group(id uint32) *aggGroup {
	g := a.groups[id]
	if g == nil {
		g = &aggGroup{id: id}
		a.groups[id] = g
	}
	return g
}

// orderTie holds x before y, two spans of a group that start together,
// to Layout's order: the longer first, then the shallower (then the one
// added first, which x is).
func (a *summaryAggregator) orderTie(x, y *aggSpan) {
	gap := int64(1)
	if x.depth >= 0 && y.depth >= 0 && x.depth <= y.depth || y.parent == x.id {
		gap = 0 // a child is deeper than its parent, whatever their depths
	}
	a.bound(x, y, gap)
}

// bound holds hi's end at or above lo's end plus gap: checked now when
// both ends are known, else written down on the one (or two) unknown.
func (a *summaryAggregator) bound(hi, lo *aggSpan, gap int64) {
	switch {
	case hi.known && lo.known:
		if hi.end < lo.end+gap {
			a.fail("spans starting together on track %d came longest last", hi.group)
		}
	case hi.known:
		a.atMost(lo, hi.end-gap)
	case lo.known:
		a.atLeast(hi, lo.end+gap)
	default:
		p := &endPair{hi: hi, lo: lo, gap: gap}
		hi.addPair(p)
		lo.addPair(p)
	}
}

func (a *summaryAggregator) atLeast(sp *aggSpan, t int64) {
	sp.minEnd = max(sp.minEnd, t)
	if sp.minEnd > sp.maxEnd {
		a.fail("a span's end contradicts its row")
	}
}

func (a *summaryAggregator) atMost(sp *aggSpan, t int64) {
	sp.maxEnd = min(sp.maxEnd, t)
	if sp.minEnd > sp.maxEnd {
		a.fail("a span's end contradicts its row")
	}
}

func (sp *aggSpan) addPair(p *endPair) {
	if len(sp.pairs) >= 8 && len(sp.pairs) >= 2*sp.activePairs {
		// Drop the resolved: a long span's children each leave one.
		sp.pairs = slices.DeleteFunc(sp.pairs, func(p *endPair) bool { return p.done })
	}
	sp.pairs = append(sp.pairs, p)
	sp.activePairs++
}

// setEnd learns an unknown end: it must lie within the bounds the
// decisions taken without it wrote down.
func (a *summaryAggregator) setEnd(sp *aggSpan, end int64) {
	sp.end, sp.known = end, true
	if w := sp.within; w != nil {
		sp.within = nil
		if !w.known {
			a.atLeast(w, end)
		} else if end > w.end {
			a.fail("a span on track %d outlived the span it was put beneath", sp.group)
		}
	}
	if sp.placed {
		// The one child that may have been put beneath it with both ends
		// unknown is directly above it.
		st := a.groups[sp.group].rows[sp.row].stack
		if i := int(sp.stackAt) + 1; i < len(st) && st[i].within == sp {
			st[i].within = nil
			if !st[i].known {
				a.atMost(st[i], end)
			}
		}
	}
	if end < sp.minEnd || end > sp.maxEnd {
		a.fail("a span on track %d ended at %d, outside [%d, %d] where its row's layout had it", sp.group, end, sp.minEnd, sp.maxEnd)
	}
	for _, p := range sp.pairs {
		if p.done {
			continue
		}
		p.done = true
		p.hi.activePairs--
		p.lo.activePairs--
		if p.hi == sp {
			a.bound(sp, p.lo, p.gap)
		} else {
			a.bound(p.hi, sp, p.gap)
		}
	}
	sp.pairs = nil
}

// fits reports whether child ends within parent (Layout puts it beneath
// its parent only then). An unknown end is taken as a nested stream has
// it: an open child ends within an open parent, and after a parent that
// has ended.
func (a *summaryAggregator) fits(child, parent *aggSpan) bool {
	switch {
	case child.known && parent.known:
		return child.end <= parent.end
	case child.known:
		a.atLeast(parent, child.end)
		return true
	case parent.known:
		a.atLeast(child, parent.end+1)
		return false
	}
	child.within = parent
	return true
}

// popTo pops the spans of row ri that end by t, as Layout's popTo: an
// open span on top is taken to end after t.
func (a *summaryAggregator) popTo(g *aggGroup, ri int, t int64) {
	row := &g.rows[ri]
	for len(row.stack) > 0 {
		top := row.stack[len(row.stack)-1]
		if !top.known {
			a.atLeast(top, t+1)
			return
		}
		if top.end > t {
			return
		}
		row.stack = row.stack[:len(row.stack)-1]
		a.done(top)
	}
}

// place puts sp on a row of g as Layout does: beneath its parent when
// the parent is the innermost open span of its row in this group and sp
// ends in time, else on the first free row (of the program's lanes, one
// its lane or name used, until they are crowded).
func (a *summaryAggregator) place(g *aggGroup, sp *aggSpan) {
	if sp.kind != aggActivity && sp.parent != 0 {
		if p := a.live[sp.parent]; p != nil && p.placed && p.group == g.id {
			at := int(p.row)
			a.popTo(g, at, sp.start)
			st := g.rows[at].stack
			if len(st) > 0 && st[len(st)-1] == p && a.fits(sp, p) {
				a.push(g, at, sp)
				return
			}
		}
	}
	ri := -1
	crowded := g.id == 0 && len(g.rows) >= maxLaneRows
	for j := range g.rows {
		a.popTo(g, j, sp.start)
		row := &g.rows[j]
		if len(row.stack) == 0 && (g.id != 0 || crowded || row.lane == sp.lane || row.name == sp.name) {
			ri = j
			break
		}
	}
	if ri < 0 {
		ri = len(g.rows)
		g.rows = append(g.rows, aggRow{lane: sp.lane, name: sp.name})
		s := a.sum(g.id)
		s.rows++
		if s.first == nil {
			s.first, sp.pinned = sp, true
		}
	}
	a.push(g, ri, sp)
}

func (a *summaryAggregator) push(g *aggGroup, ri int, sp *aggSpan) {
	row := &g.rows[ri]
	if n := len(row.stack); n > 0 {
		sp.rowParent = row.stack[n-1]
	}
	sp.placed, sp.row, sp.stackAt = true, int32(ri), int32(len(row.stack))
	row.stack = append(row.stack, sp)
}

// done counts a span popped off its row: every child it will have on
// its row has been counted, and its end is known.
func (a *summaryAggregator) done(sp *aggSpan) {
	d := sp.end - sp.start
	if sp.rowParent != nil {
		sp.rowParent.kidSum += d
		sp.rowParent = nil
	}
	a.sum(sp.group).sum.Add(a.names[sp.name], sp.start, d, d-sp.kidSum)
	if sp.kind == aggOnTrack || sp.kind == aggSlice {
		var args []event.Arg
		if sp.goRegion {
			args = goroutineArg
		}
		a.goRuntime.Span(sp.group, a.names[sp.name], sp.start, sp.end, args)
	}
	if !a.buffered {
		delete(a.live, sp.id)
		if !sp.isLast && !sp.pinned {
			*sp = aggSpan{}
			a.free = append(a.free, sp)
		}
	}
}

// goroutineArg stands for a span's arguments when they held
// gotrace.ArgGoroutine, which is all the Go runtime's summary asks of
// them.
var goroutineArg = []event.Arg{{Key: gotrace.ArgGoroutine, Kind: event.ArgInt}}

// finish ends the spans that never ended at the trace's stop, lays out
// what was held for the end, and counts every span still on a row.
func (a *summaryAggregator) finish() error {
	if a.err != nil {
		return a.err
	}
	stop := a.meta.Stop.Mono
	for _, id := range slices.Sorted(maps.Keys(a.live)) {
		if sp := a.live[id]; !sp.known {
			a.setEnd(sp, max(stop, sp.start))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a.groups)) {
		g := a.groups[id]
		slices.SortFunc(g.pending, a.layoutOrder)
		for _, sp := range g.pending {
			a.place(g, sp)
		}
		g.pending = nil
	}
	for _, id := range slices.Sorted(maps.Keys(a.groups)) {
		g := a.groups[id]
		for ri := range g.rows {
			st := g.rows[ri].stack
			for i := len(st) - 1; i >= 0; i-- {
				a.done(st[i])
			}
			g.rows[ri].stack = nil
		}
	}
	return a.err
}

// layoutOrder is Layout's order of spans: by start, longest first, then
// shallowest, then as added.
func (a *summaryAggregator) layoutOrder(x, y *aggSpan) int {
	if c := cmp.Compare(x.start, y.start); c != 0 {
		return c
	}
	if c := cmp.Compare(y.end, x.end); c != 0 {
		return c
	}
	if x.depth != y.depth {
		if x.depth < 0 || y.depth < 0 {
			a.fail("spans tied on start and end whose depths were let go")
		}
		return cmp.Compare(x.depth, y.depth)
	}
	return cmp.Compare(x.id, y.id)
}

// summaryData is what devprof summary prints of a trace.
type summaryData struct {
	meta  event.Meta
	table *spanstats.Table
	// groups splits table by process (and device) when the trace has
	// several processes; one group or none otherwise.
	groups             []procGroup
	instants, counters int
	events             int64 // every event read: spans, activity, instants, counter samples
	devices            []counterStat
	goRuntime          gotrace.Summary
	hasGoRuntime       bool
	// buffered says the trace was read keeping every span (its spans
	// were out of order on a track).
	buffered bool
}

// result finishes the aggregation and returns its tables: the whole
// trace's, and, when it has several processes, each process's and each
// device's (see groupKey).
func (a *summaryAggregator) result() (*summaryData, error) {
	if err := a.finish(); err != nil {
		return nil, err
	}
	d := &summaryData{meta: a.meta, instants: a.instants, counters: a.counterSamples, buffered: a.buffered,
		events: int64(a.nextID) + int64(a.instants) + int64(a.counterSamples)}
	d.goRuntime, d.hasGoRuntime = a.goRuntime.Result(&a.meta)
	runtime := gotrace.RuntimeTracks(&event.Snapshot{Tracks: a.tracks}) // the Go runtime's rows have a section of their own
	counted := func(id uint32) bool {
		t, ok := a.track(id)
		return !runtime[id] && !(ok && t.Kind == event.TrackMemory) // a memory track's allocations are not work
	}
	ids := slices.Sorted(maps.Keys(a.sums))
	table := func(group int, devices bool) *spanstats.Table {
		var sum spanstats.Sum
		rows := 0
		for _, id := range ids {
			if s := a.sums[id]; counted(id) && (group == -1 || a.groupKey(id, devices) == group) {
				sum.Merge(&s.sum)
				rows += s.rows
			}
		}
		return sum.Table(rows)
	}
	d.table = table(-1, false)
	d.groups = a.processGroups(ids)
	splitDevices := slices.ContainsFunc(d.groups, func(g procGroup) bool { return g.device >= 0 })
	for i := range d.groups {
		d.groups[i].table = table(d.groups[i].key, splitDevices)
	}
	d.devices = a.deviceCounters()
	return d, nil
}

func (a *summaryAggregator) track(id uint32) (event.Track, bool) {
	if id == 0 || int(id) > len(a.tracks) {
		return event.Track{}, false
	}
	return a.tracks[id-1], true
}

// groupKey returns the group the rows of track id belong to: its
// Track.Process for a host thread; for lanes and device tracks 0, the
// program's, or, with devices split out, deviceGroup of a device track's
// ordinal.
func (a *summaryAggregator) groupKey(id uint32, devices bool) int {
	t, ok := a.track(id)
	switch {
	case !ok:
		return 0
	case t.Kind == event.TrackHostThread:
		return t.Process
	case devices && t.Kind != event.TrackProcess:
		return deviceGroup(t.Device)
	}
	return 0
}

// processGroups returns the processes whose rows hold spans, the
// program's first and then in process order, when there are several; a
// trace of one process gives one group or none. In a trace of several
// processes (devprof collect's merge of hosts) each device is a group of
// its own after them: its rows belong to no host process in the model,
// and counting them under the recording program's (the collector's)
// would say that process ran them. ids are the groups that have rows.
func (a *summaryAggregator) processGroups(ids []uint32) []procGroup {
	seen := map[int]bool{}
	for _, id := range ids {
		if a.sums[id].rows > 0 {
			seen[a.groupKey(id, false)] = true
		}
	}
	var out []procGroup
	for n := 0; n <= len(a.procs); n++ {
		if !seen[n] {
			continue
		}
		var p event.Process
		if n == 0 {
			p = event.Process{PID: int64(a.meta.PID), Name: a.meta.Program}
		} else {
			p = a.procs[n-1]
		}
		g := procGroup{key: n, device: -1, pid: p.PID, pidText: fmt.Sprint(p.PID), name: p.Name}
		if p.IsLabel {
			g.pidText = fmt.Sprintf("%q", p.Label)
			g.pidLabel = &a.procs[n-1].Label
		}
		g.label = g.pidText
		if p.Name != "" {
			g.label += " (" + p.Name + ")"
		}
		if len(p.Labels) > 0 {
			g.label += " [" + strings.Join(p.Labels, ", ") + "]"
		}
		out = append(out, g)
	}
	if len(out) < 2 {
		return out
	}
	// A device is named by the first of its rows that names it, in the
	// order Layout makes rows: by each track's first span.
	var devTracks []uint32
	for _, id := range ids {
		if a.sums[id].rows > 0 && a.groupKey(id, true) < -1 {
			devTracks = append(devTracks, id)
		}
	}
	slices.SortFunc(devTracks, func(x, y uint32) int {
		p, q := a.sums[x].first, a.sums[y].first
		return cmp.Or(cmp.Compare(p.start, q.start), cmp.Compare(q.end, p.end), cmp.Compare(p.depth, q.depth), cmp.Compare(p.id, q.id))
	})
	devices := map[int]string{}
	for _, id := range devTracks {
		if t, _ := a.track(id); devices[t.Device] == "" {
			devices[t.Device] = t.DeviceName
		}
	}
	for _, dev := range slices.Sorted(maps.Keys(devices)) {
		g := procGroup{key: deviceGroup(dev), device: dev, name: devices[dev], label: fmt.Sprintf("%d", dev)}
		if g.name != "" {
			g.label += " (" + g.name + ")"
		}
		out = append(out, g)
	}
	return out
}

// deviceCounters returns each device's counter series (utilization,
// memory, power...) with min, mean and max, devices in order and series
// in the order they first appear.
func (a *summaryAggregator) deviceCounters() []counterStat {
	all := slices.Collect(maps.Values(a.series))
	slices.SortFunc(all, func(x, y *seriesStat) int {
		return cmp.Or(cmp.Compare(x.device, y.device), cmp.Compare(x.firstT, y.firstT), cmp.Compare(x.firstSeq, y.firstSeq))
	})
	names := map[int]string{}
	for _, t := range a.tracks {
		if (t.Kind == event.TrackDevice || t.Kind == event.TrackDeviceStream) && names[t.Device] == "" {
			names[t.Device] = t.DeviceName
		}
	}
	out := make([]counterStat, 0, len(all))
	for _, st := range all {
		c := st.counterStat
		c.deviceName = names[c.device]
		out = append(out, c)
	}
	return out
}
