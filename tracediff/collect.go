package tracediff

import (
	"maps"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
)

// Kind says where a name ran: on the host (a span) or on a device (a
// kernel, copy, memset or other device activity).
type Kind uint8

// The kinds of names compared.
const (
	KindSpan   Kind = iota // a span on the host: annotations, threads, runtime regions, host API calls
	KindDevice             // work on a device: kernels, copies, memsets, synchronizations
)

// String returns the kind's name: "span" or "device".
func (k Kind) String() string {
	if k == KindDevice {
		return "device"
	}
	return "span"
}

// Rows are names alone, not names of a kind: a file may hold device
// work as device activity (a session's XSpace says which kind, a
// Perfetto file does not) or as spans on a track that says nothing of a
// device (devprof's Chrome JSON read back, a Kineto trace's kernels),
// so that a kind in the key would split one run's rows by the format it
// was written in. A name is device work when any instance was (activity,
// or a span on a device's track). Allocations and frees are points, not
// durations, and are left out.

// Profile is what a Collector kept of one trace: the durations of
// every span and device-activity name.
type Profile struct {
	// Meta is the trace's metadata, as its reader filled it in.
	Meta event.Meta
	// Names holds each name's durations.
	Names map[string]*Durations
	// Events counts the events read: spans, activity, instants and
	// counter samples.
	Events int64
}

// Options configure a Collector.
type Options struct {
	// SampleSize bounds the durations kept per name (0:
	// DefaultSampleSize).
	SampleSize int
}

// Collector is an event.Sink that keeps, per span and device-activity
// name, the count, total and self time of its instances and a bounded
// sample of their durations — not the events: a reader streams a trace
// of any length into it in memory that grows with the names, the spans
// open at once and the sample size only.
//
// Self time needs a span's children, which arrive after it: a span is
// held, with the name its children's time is taken from, until a later
// span on its track starts at or past its end (readers emit each
// track's spans in start order, parents first).
type Collector struct {
	opts    Options
	initial event.Meta
	meta    event.Meta
	names   map[string]*Durations

	nextID uint64
	events int64
	// device holds the ids of the device tracks (stream or device),
	// whose spans are device work.
	device map[uint32]bool
	// goTracks holds the ids of a Go execution trace's P and goroutine
	// tracks, whose slices are compared by function (goFunction).
	goTracks map[uint32]bool
	// live holds the spans that may still end (Unfinished) or still get
	// children, by ID; stacks holds them per track, innermost last.
	live   map[uint64]*liveSpan
	stacks map[uint32]*trackStack
	free   []*liveSpan
}

// liveSpan is a span the Collector still holds.
type liveSpan struct {
	id uint64
	d  *Durations
	// parent is whose self time its duration is taken from (nil: none),
	// parentID that span's ID.
	parent   *Durations
	parentID uint64
	start    int64
	end      int64
	known    bool  // end is known (and counted)
	kids     int64 // time of children that ended while its end was not known
}

// trackStack holds a track's spans that may still get children,
// innermost last.
type trackStack struct {
	spans []*liveSpan
	// limit is the length past which the stack is trimmed: maxStack, or
	// twice what a trim could not let go of (spans still open), so that
	// trimming stays amortized constant time a span.
	limit int
}

// maxStack bounds the ended spans held per track: a track whose spans
// overlap without nesting (async slices) would otherwise grow its stack
// with every span. Past it the older half of the ended spans are let
// go; a late child of one of them leaves its time in the parent's self
// time.
const maxStack = 1 << 14

// NewCollector returns a Collector whose metadata starts as meta's.
func NewCollector(meta event.Meta, o Options) *Collector {
	if o.SampleSize <= 0 {
		o.SampleSize = DefaultSampleSize
	}
	c := &Collector{opts: o, initial: meta}
	c.Reset()
	return c
}

var _ event.Sink = (*Collector)(nil)

// Reset implements event.Sink.
func (c *Collector) Reset() {
	*c = Collector{
		opts:     c.opts,
		initial:  c.initial,
		meta:     c.initial,
		names:    map[string]*Durations{},
		live:     map[uint64]*liveSpan{},
		stacks:   map[uint32]*trackStack{},
		device:   map[uint32]bool{},
		goTracks: map[uint32]bool{},
	}
}

// Meta implements event.Sink.
func (c *Collector) Meta() *event.Meta { return &c.meta }

// Track implements event.Sink. Of a track only whether it is a
// device's, and whether it is a Go execution trace's P or goroutine, is
// kept: rows are names.
func (c *Collector) Track(t event.Track) uint32 {
	c.nextID++
	id := uint32(c.nextID)
	switch {
	case t.Kind == event.TrackDeviceStream || t.Kind == event.TrackDevice:
		c.device[id] = true
	case isGoTrack(t.Name):
		c.goTracks[id] = true
	}
	return id
}

// SetTrackName implements event.Sink: a goroutine's track is renamed
// once its start function is known, and a reader may name any track
// late.
func (c *Collector) SetTrackName(id uint32, name string) {
	if c.device[id] {
		return
	}
	if isGoTrack(name) {
		c.goTracks[id] = true
	} else {
		delete(c.goTracks, id)
	}
}

// unnamedGoroutine is the row of the executions of goroutines whose
// start function the trace does not give: the name devprof's Go trace
// reader gives their slices on a P's track.
const unnamedGoroutine = "goroutine"

// isGoTrack reports whether a track's name is one devprof gives a Go
// execution trace's P ("Go P3") or goroutine ("G12 main.worker", "G12"),
// in a session's trace or a Go trace read, in any format written since.
func isGoTrack(name string) bool {
	if rest, ok := strings.CutPrefix(name, "Go P"); ok {
		return rest != "" && strings.Trim(rest, "0123456789") == ""
	}
	_, ok := goroutineFunction(name)
	return ok
}

// goFunction is the name a Go trace's P or goroutine track slice is
// compared by: a goroutine's execution named "G24 main.worker" (its
// goroutine and start function, as devprof's Go trace reader named them
// before it named them by the function alone) counts as "main.worker",
// and a bare "G24" as unnamedGoroutine, so that the rows of two runs are
// the functions they ran rather than goroutine ids that differ from
// run to run. Other names are left alone.
func goFunction(name string) string {
	if fn, ok := goroutineFunction(name); ok {
		return fn
	}
	return name
}

// goroutineFunction reads "G<digits> <function>" or "G<digits>": the
// function, or unnamedGoroutine.
func goroutineFunction(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "G")
	if !ok {
		return "", false
	}
	id, fn, named := strings.Cut(rest, " ")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", false
	}
	switch {
	case !named:
		return unnamedGoroutine, true
	case fn == "":
		return "", false
	}
	return fn, true
}

// Process implements event.Sink.
func (c *Collector) Process(event.Process) int { c.nextID++; return int(c.nextID) }

// ProcessTrack implements event.Sink.
func (c *Collector) ProcessTrack(int) uint32 { c.nextID++; return uint32(c.nextID) }

// Instant implements event.Sink: instants have no duration.
func (c *Collector) Instant(string, int64, uint32, uint64, []event.Arg) { c.events++ }

// Counter implements event.Sink.
func (c *Collector) Counter(string, string, int64, float64) { c.events++ }

// TrackCounter implements event.Sink.
func (c *Collector) TrackCounter(uint32, string, string, int64, float64) { c.events++ }

func (c *Collector) durations(name string) *Durations {
	d := c.names[name]
	if d == nil {
		d = &Durations{seed: nameSeed(name)}
		c.names[name] = d
	}
	return d
}

// Span implements event.Sink.
func (c *Collector) Span(s event.Span) uint64 {
	return c.span(s.Track, s.Name, s.Start, s.End, s.Parent, !s.Unfinished)
}

// TrackSlice implements event.Sink.
func (c *Collector) TrackSlice(track uint32, name string, start, end int64, _ []event.Arg) uint64 {
	return c.span(track, name, start, end, 0, true)
}

func (c *Collector) span(track uint32, name string, start, end int64, parent uint64, known bool) uint64 {
	c.events++
	c.nextID++
	if c.goTracks[track] {
		name = goFunction(name)
	}
	sp := c.newSpan()
	*sp = liveSpan{id: c.nextID, d: c.durations(name), start: start, end: max(end, start), known: known}
	if c.device[track] {
		sp.d.Device = true
	}
	ts := c.stacks[track]
	if ts == nil {
		ts = &trackStack{limit: maxStack}
		c.stacks[track] = ts
	}
	c.popEnded(ts, start)
	if p := c.live[parent]; p != nil && parent != 0 {
		sp.parent, sp.parentID = p.d, parent
	}
	if known {
		c.count(sp)
	}
	c.live[sp.id] = sp
	ts.spans = append(ts.spans, sp)
	if len(ts.spans) > ts.limit {
		ts.spans = c.trim(ts.spans)
		ts.limit = max(maxStack, 2*len(ts.spans))
	}
	return sp.id
}

// popEnded lets go of the spans on top of a track's stack that ended by
// t: no span starting from t on can be their child.
func (c *Collector) popEnded(ts *trackStack, t int64) {
	st := ts.spans
	for len(st) > 0 {
		top := st[len(st)-1]
		if !top.known || top.end > t {
			break
		}
		st[len(st)-1] = nil
		st = st[:len(st)-1]
		c.release(top)
	}
	ts.spans = st
}

// trim lets go of the older half of an overgrown stack's ended spans.
func (c *Collector) trim(st []*liveSpan) []*liveSpan {
	drop := len(st) / 2
	out := st[:0]
	for i, sp := range st {
		if i < drop && sp.known {
			c.release(sp)
			continue
		}
		out = append(out, sp)
	}
	clear(st[len(out):])
	return out
}

func (c *Collector) release(sp *liveSpan) {
	delete(c.live, sp.id)
	*sp = liveSpan{}
	c.free = append(c.free, sp)
}

func (c *Collector) newSpan() *liveSpan {
	if n := len(c.free); n > 0 {
		sp := c.free[n-1]
		c.free = c.free[:n-1]
		return sp
	}
	return new(liveSpan)
}

// count adds a span whose end is known to its name's durations, and
// takes its time from its parent's self time: now if the parent's end is
// known (a span let go had its end known), else when it ends, so that a
// parent that never ends keeps its children's time out of self time as
// it keeps its own.
func (c *Collector) count(sp *liveSpan) {
	dur := sp.end - sp.start
	sp.d.add(dur, c.opts.SampleSize)
	sp.d.Self -= sp.kids
	sp.kids = 0
	if sp.parent == nil {
		return
	}
	if p := c.live[sp.parentID]; p != nil && !p.known {
		p.kids += dur
	} else {
		sp.parent.Self -= dur
	}
}

// EndSpan implements event.Sink.
func (c *Collector) EndSpan(id uint64, end int64) {
	sp := c.live[id]
	if sp == nil || sp.known {
		return
	}
	sp.end, sp.known = max(end, sp.start), true
	c.count(sp)
}

// ActivityOf implements event.Sink. Device activity has no children: it
// is counted and let go.
func (c *Collector) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, _ []event.Arg) uint64 {
	c.events++
	c.nextID++
	if kind != event.ActivityAlloc && kind != event.ActivityFree {
		d := c.durations(name)
		d.Device = true
		d.add(max(end, start)-start, c.opts.SampleSize)
	}
	return c.nextID
}

// Profile returns what the collector kept: the spans that never ended
// are counted as Unfinished. The collector is done with once it is
// called.
func (c *Collector) Profile() *Profile {
	for _, id := range slices.Sorted(maps.Keys(c.live)) {
		if sp := c.live[id]; !sp.known {
			sp.d.Unfinished++
		}
	}
	for _, d := range c.names {
		d.Sample() // sorted once, here, rather than by every reader
	}
	c.live, c.stacks, c.free = nil, nil, nil
	return &Profile{Meta: c.meta, Names: c.names, Events: c.events}
}

// Sorted returns the profile's names in order.
func (p *Profile) Sorted() []string { return slices.Sorted(maps.Keys(p.Names)) }
