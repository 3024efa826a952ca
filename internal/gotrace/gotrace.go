// Package gotrace turns a Go execution trace (the format of runtime/trace,
// go test -trace and /debug/pprof/trace, read with golang.org/x/exp/trace)
// into the event model's tracks: the garbage collector's cycles and
// stop-the-world pauses, each P's goroutine executions, each goroutine's
// states (running, runnable, blocked, in a system call) with its
// runtime/trace regions and logs, user tasks, and the runtime's heap,
// heap-goal, goroutine and GOMAXPROCS counters.
//
// It sits beside the flow rather than in it: it writes through a Sink, so
// that the Go-runtime source (sources/goruntime, a session's buffer) and
// the Go-trace reader (exporters/gotrace, any trace file, through
// event.Builder) produce the same tracks from the same code. It imports
// only the event model.
package gotrace

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	xtrace "golang.org/x/exp/trace"

	"github.com/devprof/devprof/event"
)

// Track names and counter names, as every output shows them; Stats (and
// devprof summary on a file read back) finds the collector's slices by
// them.
const (
	TrackGC  = "Go GC"             // GC cycles ("GC" slices, the concurrent mark phase)
	TrackSTW = "Go stop-the-world" // stop-the-world pauses ("STW: <reason>" slices)
	// TrackTasks holds runtime/trace user tasks.
	TrackTasks = "Go tasks"
	// ProcPrefix begins the name of a P's track ("Go P0"): the goroutines
	// that ran on it, each execution a slice named by the goroutine's
	// start function ("main.worker", or RunUnnamed) with the goroutine in
	// its ArgGoroutine argument.
	ProcPrefix = "Go P"
	// RunUnnamed names the execution slice of a goroutine whose start
	// function the trace has not shown (one running when the trace began,
	// until its stack is seen).
	RunUnnamed = "goroutine"
	// GoroutinePrefix begins the name of a goroutine's track ("G12
	// main.worker"): its states, regions and logs.
	GoroutinePrefix = "G"

	// SliceGC names a GC cycle's slice on TrackGC.
	SliceGC = "GC"
	// STWPrefix begins a pause's slice name on TrackSTW.
	STWPrefix = "STW: "

	CounterHeap       = "Go heap in use" // bytes: /memory/classes/heap/objects:bytes
	CounterHeapGoal   = "Go heap goal"   // bytes: /gc/heap/goal:bytes
	CounterGoroutines = "Go goroutines"  // goroutines that exist
	CounterGOMAXPROCS = "Go GOMAXPROCS"  // /sched/gomaxprocs:threads
	metricHeap        = "/memory/classes/heap/objects:bytes"
	metricHeapGoal    = "/gc/heap/goal:bytes"
	metricGOMAXPROCS  = "/sched/gomaxprocs:threads"
	rangeGC           = "GC concurrent mark phase" // the runtime's name for a GC cycle's range

	// ArgGoroutine (int) is the goroutine an execution slice ran (on a P's
	// track) or a linked span began on.
	ArgGoroutine = "goroutine"
	// ArgP (int) is the P a goroutine ran on.
	ArgP = "P"
	// InstantCPUSample names a CPU profile sample on a goroutine's track;
	// ArgFunction (string) is the function it was in, ArgSpan (string)
	// the innermost span it fell in, when a session attributed it.
	InstantCPUSample = "CPU sample"
	ArgFunction      = "function"
	ArgSpan          = "span"
)

// Sort indexes order the runtime's tracks after the program's own rows
// in viewers that honour them: the collector first, then the Ps, then
// tasks and goroutines.
const (
	sortGC         = 1 << 20
	sortSTW        = sortGC + 1
	sortProc       = sortGC + 16
	sortTasks      = sortGC + 1<<12
	sortGoroutines = sortTasks + 1
)

// Sink receives what Convert makes of a trace. Times are nanoseconds on
// the sink's timeline (trace times plus Options.Offset). Each method
// returns false (or 0) when the sink had no room; Convert counts nothing
// itself for that, the sink does.
//
// Convert adds each slice when it begins (Begin), in time order, and
// ends it when the trace says (End): on every track slices come in
// nondecreasing start order, enclosing ones first, so that a sink that
// keeps only open slices (devprof summary's) can place each as it comes.
// Only what began before the trace and is learned of at its end (a
// region, task or range whose begin the trace does not hold) comes as a
// complete Slice, at its start, the trace's first event.
type Sink interface {
	// Track registers a track and returns its id.
	Track(t event.Track) uint32
	// Begin adds a slice on a track, as a root, whose end comes later
	// (End); it returns the slice's handle, or 0 if it was dropped. The
	// sink copies args if it keeps them.
	Begin(track uint32, name string, start int64, args []event.Arg) uint64
	// End ends slice id (a handle Begin returned) at end.
	End(id uint64, end int64)
	// Slice adds a complete slice on a track, as a child of span parent
	// (an ID of the sink's) or with parent 0 as a root; it returns the
	// slice's ID, or 0 if it was dropped.
	Slice(track uint32, parent uint64, name string, start, end int64, args []event.Arg) uint64
	// Instant adds a point event on a track.
	Instant(track uint32, name string, t int64, args []event.Arg)
	// Counter adds one sample of a host counter series.
	Counter(name, unit string, t int64, v float64)
}

// Renamer is a Sink that can rename a track it registered: a goroutine
// that was running when the trace began is named (by its start function)
// only once a later event shows its stack, and its track is renamed then.
type Renamer interface {
	RenameTrack(id uint32, name string)
}

// DefaultMaxGoroutines is how many goroutines get a track of their own
// when Options.MaxGoroutines is 0.
const DefaultMaxGoroutines = 1000

// Options configure a conversion.
type Options struct {
	// Offset is added to every trace time: the sink's time of trace time
	// zero.
	Offset int64
	// MonoClock places events on the system's monotonic clock (the one
	// runtime.nanotime and devprof's sessions read) through the trace's
	// first clock snapshot (Go 1.25 and later), replacing Offset; a trace
	// without one keeps Offset.
	MonoClock bool
	// MaxGoroutines bounds the goroutines that get a track of their own:
	// the events of the rest are counted in Stats.Dropped (the Ps' tracks
	// still show when they ran). 0 means DefaultMaxGoroutines; negative,
	// none.
	MaxGoroutines int
	// KeepRuns keeps every goroutine execution per P in Result.Runs, for a
	// caller that joins other events to the goroutine that ran them.
	KeepRuns bool
	// Progress, if set, is called every 1<<16 events with the count so
	// far.
	Progress func(events int64)
	// Clock, if set, is called when the trace's first clock snapshot is
	// read, with the Unix time of trace time zero (Result.Clock's Wall
	// less its Trace): a sink that writes Unix times as events come needs
	// it before the end.
	Clock func(wallOffset int64)
	// KeepSamples keeps the trace's CPU profile samples in Result.Samples
	// instead of writing them as instants, for a caller that attributes
	// them first (to the spans they fell in).
	KeepSamples bool
}

// Sample is one CPU profile sample of the trace: when, on which
// goroutine, and its stack, leaf first.
type Sample struct {
	T     int64
	G     int64
	Stack []Frame
}

// Frame is one frame of a sample's stack.
type Frame struct {
	Func, File string
	Line       int64
}

// Run is one execution of a goroutine on a P.
type Run struct {
	Start, End int64 // sink times
	G          int64
}

// Stats are the facts of a conversion.
type Stats struct {
	// Events is how many trace events were read.
	Events int64
	// GCs counts GC cycles (concurrent mark phases) that began in the
	// trace or were under way at its start; a cycle under way when the
	// tracer starts a new generation counts once, as the toolchain
	// counts it.
	GCs int
	// Pauses counts stop-the-world pauses; PauseTotal and PauseMax are
	// their total and longest, in ns.
	Pauses               int
	PauseTotal, PauseMax int64
	// Goroutines counts distinct goroutines the trace names in a state
	// change (as go tool trace -d=parsed lists them: GoID=N).
	Goroutines int
	// Tracks counts goroutines that got a track of their own.
	Tracks int
	// Dropped counts events left out: those of goroutines over
	// MaxGoroutines.
	Dropped int64
	// First and Last are the sink times of the first and last event.
	First, Last int64
	// Clock is the trace's first clock snapshot (Go 1.25 and later); Wall
	// is zero when the trace has none.
	Clock struct {
		Trace int64 // trace time
		Mono  int64 // the system's monotonic clock at that time
		Wall  int64 // Unix nanoseconds at that time
	}
}

// Result is what Convert returns.
type Result struct {
	Stats
	// Runs lists, per P, the goroutine executions in time order (only
	// with Options.KeepRuns).
	Runs map[int64][]Run
	// GoTrack maps a goroutine to its track (0: none), for the callers
	// that join events to goroutines: only with Options.KeepRuns or
	// KeepSamples.
	GoTrack map[int64]uint32
	// Samples are the CPU profile samples (only with Options.KeepSamples).
	Samples []Sample
	// Summary is the Go runtime's summary of the whole trace, counted
	// before MaxGoroutines (or a sink's own bound) left anything out:
	// what a reader puts in event.Meta.GoRuntime.
	Summary Summary
}

// ErrUnsupported wraps the error for a trace whose format golang.org/x/exp/trace
// does not read.
var ErrUnsupported = errors.New("not a Go execution trace devprof can read")

// goState is what Convert knows of one goroutine.
type goState struct {
	name    string // its start function
	track   uint32
	noTrack bool // over MaxGoroutines
	seen    bool // named in a state change (Stats.Goroutines)
	// trackName is the start function its track was named by.
	trackName string
	p         int64
	stateID   uint64 // the sink's handle of the state's slice (0: none)
	regions   []openRange
	ranges    map[string]openRange // goroutine-scoped ranges (mark assist, STW) by name
}

// openRange is a slice begun and not yet ended.
type openRange struct {
	name  string
	start int64
	args  []event.Arg // of one added whole (before)
	id    uint64      // the sink's handle (0: dropped)
	// before marks one that began before the trace, learned of at its
	// end: it is added whole then (see Sink).
	before bool
}

type procState struct {
	track uint32
	g     int64 // goroutine running, -1 none
	start int64
	runID uint64 // the sink's handle of the run's slice
	// ranges holds proc-scoped ranges (incremental sweep) by name.
	ranges map[string]openRange
}

type converter struct {
	sink Sink
	o    Options
	res  Result

	gs      goTable
	free    []*goState // states of exited goroutines, for new ones to reuse
	nameBuf []byte     // where goTrackName builds a name
	ps      map[xtrace.ProcID]*procState
	// psByID holds the Ps of ps with small IDs (all of them, in a real
	// trace: IDs run from 0 to GOMAXPROCS-1), indexed by ID.
	psByID    []*procState
	gcTrack   uint32
	stwTrack  uint32
	taskTrack uint32
	gc        map[string]openRange // global ranges by name
	tasks     map[xtrace.TaskID]openRange
	live      int   // goroutines that exist
	liveAt    int64 // time of the last goroutine-count sample
	liveSent  int   // value of the last sample
	args      []event.Arg
	blocked   map[string]string // "blocked: <reason>" by reason
	// lastReason and lastBlocked are the last reason stateName looked up
	// in blocked, and its state's name.
	lastReason, lastBlocked string
	// starts remembers the start function of each stack seen in this
	// generation (startFunc), lastStack the last one looked up.
	starts    map[xtrace.Stack]string
	lastStack xtrace.Stack
	lastStart string
	first     bool

	// The whole trace's figures, whatever reaches the sink (Result.Summary).
	sum                    Summary
	regionStats, taskStats map[string]*RegionStat
}

// Convert reads the Go execution trace r and writes its tracks to sink.
// An error names what could not be read; what was converted before it
// stays in the sink.
func Convert(r io.Reader, sink Sink, o Options) (*Result, error) {
	c, err := convert(r, sink, o)
	return &c.res, err
}

// convert is Convert, returning the converter so that a test can see
// the state it kept.
func convert(r io.Reader, sink Sink, o Options) (*converter, error) {
	if o.MaxGoroutines == 0 {
		o.MaxGoroutines = DefaultMaxGoroutines
	}
	c := &converter{sink: sink, o: o,
		ps: map[xtrace.ProcID]*procState{},
		gc: map[string]openRange{}, tasks: map[xtrace.TaskID]openRange{}, blocked: map[string]string{}, starts: map[xtrace.Stack]string{}, first: true,
		regionStats: map[string]*RegionStat{}, taskStats: map[string]*RegionStat{}, sum: Summary{Exact: true}}
	if o.KeepRuns || o.KeepSamples {
		c.res.GoTrack = map[int64]uint32{}
	}
	if o.KeepRuns {
		c.res.Runs = map[int64][]Run{}
	}
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return c, explain(err)
	}
	// Events are parsed a batch at a time and then converted: the parser
	// and the converter each find their own tables still in the caches,
	// where taking turns an event at a time evicts them.
	evs := make([]xtrace.Event, 0, eventBatch)
	for {
		evs = evs[:0]
		for len(evs) < eventBatch {
			var ev xtrace.Event
			ev, err = tr.ReadEvent()
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		for i := range evs {
			c.event(&evs[i])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.finish()
			return c, fmt.Errorf("go execution trace: after %d events: %w", c.res.Events, err)
		}
	}
	c.finish()
	return c, nil
}

// eventBatch is how many events convert parses before converting them.
const eventBatch = 256

// versionRe finds the Go version in x/exp/trace's refusal of a header.
var versionRe = regexp.MustCompile(`version go 1\.([0-9]+)`)

// explain turns the reader's refusal of a header into an error naming the
// trace's Go version and the ones devprof reads.
func explain(err error) error {
	if m := versionRe.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%w: a trace of Go 1.%s, whose format golang.org/x/exp/trace (as devprof is built) does not read; devprof reads traces of Go 1.11 to 1.26", ErrUnsupported, m[1])
	}
	return fmt.Errorf("%w: %v", ErrUnsupported, err)
}

func (c *converter) time(ev *xtrace.Event) int64 { return int64(ev.Time()) + c.o.Offset }

func (c *converter) event(ev *xtrace.Event) {
	c.res.Events++
	if c.o.MonoClock && c.res.Events == 1 && ev.Kind() == xtrace.EventSync {
		if cs := ev.Sync().ClockSnapshot; cs != nil {
			c.o.Offset = int64(cs.Mono) - int64(cs.Trace)
		}
	}
	if c.o.Progress != nil && c.res.Events&(1<<16-1) == 0 {
		c.o.Progress(c.res.Events)
	}
	t := c.time(ev)
	if c.first {
		c.res.First, c.first = t, false
	}
	c.res.Last = max(c.res.Last, t)
	switch ev.Kind() {
	case xtrace.EventSync:
		// A new generation: its stacks are in tables of their own, and
		// the previous generation's, which the stacks remembered point
		// to, may go.
		clear(c.starts)
		c.lastStack, c.lastStart = xtrace.NoStack, ""
		if cs := ev.Sync().ClockSnapshot; cs != nil && c.res.Clock.Wall == 0 {
			c.res.Clock.Trace, c.res.Clock.Mono, c.res.Clock.Wall = int64(cs.Trace), int64(cs.Mono), cs.Wall.UnixNano()
			if c.o.Clock != nil {
				c.o.Clock(c.res.Clock.Wall - c.res.Clock.Trace)
			}
		}
	case xtrace.EventMetric:
		c.metric(ev, t)
	case xtrace.EventStateTransition:
		st := ev.StateTransition()
		switch st.Resource.Kind {
		case xtrace.ResourceGoroutine:
			c.goTransition(ev, &st, t)
		case xtrace.ResourceProc:
			// A P that stops running ends the goroutine run on it, if the
			// goroutine's own transition did not already.
			if from, to := st.Proc(); from.Executing() && !to.Executing() {
				c.endRun(st.Resource.Proc(), t)
			}
		}
	case xtrace.EventRangeBegin, xtrace.EventRangeActive:
		c.rangeBegin(ev, t)
	case xtrace.EventRangeEnd:
		c.rangeEnd(ev, t)
	case xtrace.EventTaskBegin:
		tk := ev.Task()
		or := openRange{name: taskName(tk.Type), start: t}
		or.id = c.sink.Begin(c.tasks0(), or.name, t, c.taskArgs(tk))
		c.tasks[tk.ID] = or
	case xtrace.EventTaskEnd:
		tk := ev.Task()
		or, ok := c.tasks[tk.ID]
		if !ok { // begun before the trace: it runs from the trace's start
			or = openRange{name: taskName(tk.Type), start: c.res.First, args: c.taskArgs(tk), before: true}
		}
		delete(c.tasks, tk.ID)
		c.task(or, t)
	case xtrace.EventRegionBegin:
		if g := c.goroutine(ev.Goroutine()); g != nil {
			rg := ev.Region()
			id := c.goBegin(g, ev.Goroutine(), rg.Type, t, taskArgs(rg.Task))
			g.regions = append(g.regions, openRange{name: rg.Type, start: t, id: id})
		}
	case xtrace.EventRegionEnd:
		if g := c.goroutine(ev.Goroutine()); g != nil {
			rg := ev.Region()
			or := openRange{name: rg.Type, start: c.res.First, args: taskArgs(rg.Task), before: true}
			// The innermost open region of that type ends; one begun
			// before the trace runs from its start.
			for i := len(g.regions) - 1; i >= 0; i-- {
				if g.regions[i].name == rg.Type {
					or = g.regions[i]
					g.regions = append(g.regions[:i], g.regions[i+1:]...)
					break
				}
			}
			c.region(g, ev.Goroutine(), or, t)
		}
	case xtrace.EventLog:
		if g := c.goroutine(ev.Goroutine()); g != nil {
			l := ev.Log()
			name := l.Category
			if name == "" {
				name = "log"
			}
			if tr := c.goTrack(g, ev.Goroutine()); tr != 0 {
				c.sink.Instant(tr, name, t, append(taskArgs(l.Task), event.Arg{Key: "message", Kind: event.ArgString, Str: l.Message}))
			} else {
				c.res.Dropped++
			}
		}
	case xtrace.EventStackSample:
		// A CPU profile sample: where the goroutine was, on its track.
		g := c.goroutine(ev.Goroutine())
		if g == nil {
			return
		}
		c.sum.CPUSamples++
		if c.o.KeepSamples {
			sm := Sample{T: t, G: int64(ev.Goroutine())}
			for f := range ev.Stack().Frames() {
				sm.Stack = append(sm.Stack, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
			}
			c.res.Samples = append(c.res.Samples, sm)
			return
		}
		fn := ""
		for f := range ev.Stack().Frames() {
			fn = f.Func
			break
		}
		if tr := c.goTrack(g, ev.Goroutine()); tr != 0 {
			c.sink.Instant(tr, InstantCPUSample, t, []event.Arg{{Key: ArgFunction, Kind: event.ArgString, Str: fn}})
		} else {
			c.res.Dropped++
		}
	}
}

func taskName(typ string) string {
	if typ == "" {
		return "task"
	}
	return typ
}

func parentTask(id xtrace.TaskID) int64 {
	if id == xtrace.NoTask {
		return 0
	}
	return int64(id)
}

func taskArgs(id xtrace.TaskID) []event.Arg {
	if id == xtrace.NoTask || id == 0 {
		return nil
	}
	return []event.Arg{intArg("task", int64(id))}
}

func intArg(k string, v int64) event.Arg {
	return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(v)}
}

// taskArgs are the arguments of a task's slice.
func (c *converter) taskArgs(tk xtrace.Task) []event.Arg {
	c.args = append(c.args[:0], intArg("task", int64(tk.ID)), intArg("parent task", parentTask(tk.Parent)))
	return c.args
}

// task ends a user task at end (adds it whole, if it began before the
// trace).
func (c *converter) task(tk openRange, end int64) {
	add(c.taskStats, tk.name, end-tk.start)
	c.endOrAdd(c.tasks0(), tk, end)
}

// endOrAdd ends slice r at end, or adds it whole on track when it began
// before the trace.
func (c *converter) endOrAdd(track uint32, r openRange, end int64) {
	switch {
	case r.before:
		c.sink.Slice(track, 0, r.name, r.start, end, r.args)
	case r.id != 0:
		c.sink.End(r.id, end)
	}
}

func (c *converter) tasks0() uint32 {
	if c.taskTrack == 0 {
		c.taskTrack = c.sink.Track(event.Track{Kind: event.TrackHostThread, Name: TrackTasks, SortIndex: sortTasks, Sorted: true})
	}
	return c.taskTrack
}

func (c *converter) metric(ev *xtrace.Event, t int64) {
	m := ev.Metric()
	if m.Value.Kind() != xtrace.ValueUint64 {
		return
	}
	v := float64(m.Value.Uint64())
	switch m.Name {
	case metricHeap:
		c.sink.Counter(CounterHeap, "bytes", t, v)
	case metricHeapGoal:
		c.sink.Counter(CounterHeapGoal, "bytes", t, v)
	case metricGOMAXPROCS:
		c.sink.Counter(CounterGOMAXPROCS, "", t, v)
	default:
		c.sink.Counter("Go "+m.Name, "", t, v)
	}
}

// goroutine returns the state of goroutine id, creating it if new.
func (c *converter) goroutine(id xtrace.GoID) *goState {
	if id == xtrace.NoGoroutine {
		return nil
	}
	g := c.gs.get(id)
	if g == nil {
		if n := len(c.free); n > 0 {
			g, c.free = c.free[n-1], c.free[:n-1]
			*g = goState{p: -1}
		} else {
			g = &goState{p: -1}
		}
		c.gs.put(id, g)
	}
	return g
}

// proc returns the state of P p, nil if it has none yet.
func (c *converter) proc(p xtrace.ProcID) *procState {
	if uint64(p) < uint64(len(c.psByID)) {
		return c.psByID[p]
	}
	return c.ps[p]
}

// goTrack returns goroutine id's track, registering it on first use, or
// 0 when it is over the bound.
func (c *converter) goTrack(g *goState, id xtrace.GoID) uint32 {
	if g.track != 0 || g.noTrack {
		return g.track
	}
	if c.o.MaxGoroutines < 0 || c.res.Tracks >= c.o.MaxGoroutines {
		g.noTrack = true
		return 0
	}
	g.track = c.sink.Track(event.Track{Kind: event.TrackHostThread, Name: c.goTrackName(g, int64(id)), SortIndex: sortGoroutines + int64(id), Sorted: true})
	g.trackName = g.name
	c.res.Tracks++
	if c.res.GoTrack != nil {
		c.res.GoTrack[int64(id)] = g.track
	}
	return g.track
}

// rename gives goroutine id's track the name of its start function when
// the track was registered before the name was known.
func (c *converter) rename(g *goState, id xtrace.GoID) {
	if rn, ok := c.sink.(Renamer); ok && g.track != 0 && g.name != g.trackName {
		rn.RenameTrack(g.track, c.goTrackName(g, int64(id)))
		g.trackName = g.name
	}
}

// region ends a user region of goroutine id at end (adds it whole, if
// it began before the trace).
func (c *converter) region(g *goState, id xtrace.GoID, r openRange, end int64) {
	add(c.regionStats, r.name, end-r.start)
	switch {
	case r.before:
		c.goSlice(g, id, r.name, r.start, end, r.args)
	case r.id != 0:
		c.sink.End(r.id, end)
	}
}

// goBegin begins a slice on a goroutine's track, counting it as dropped
// when the goroutine has none.
func (c *converter) goBegin(g *goState, id xtrace.GoID, name string, start int64, args []event.Arg) uint64 {
	if tr := c.goTrack(g, id); tr != 0 {
		return c.sink.Begin(tr, name, start, args)
	}
	c.res.Dropped++
	return 0
}

// goSlice adds a slice on a goroutine's track, counting it as dropped
// when the goroutine has none.
func (c *converter) goSlice(g *goState, id xtrace.GoID, name string, start, end int64, args []event.Arg) {
	if tr := c.goTrack(g, id); tr != 0 {
		c.sink.Slice(tr, 0, name, start, end, args)
		return
	}
	c.res.Dropped++
}

func (c *converter) procTrack(p xtrace.ProcID) *procState {
	ps := c.proc(p)
	if ps == nil {
		ps = &procState{g: -1}
		ps.track = c.sink.Track(event.Track{Kind: event.TrackHostThread, Name: ProcPrefix + strconv.FormatInt(int64(p), 10), SortIndex: sortProc + int64(p), Sorted: true})
		c.ps[p] = ps
		// A P's ID is below GOMAXPROCS; a damaged trace's may be any
		// number, which only the map holds.
		if p >= 0 && p < maxIndexedProcs {
			if int(p) >= len(c.psByID) {
				c.psByID = append(c.psByID, make([]*procState, int(p)+1-len(c.psByID))...)
			}
			c.psByID[p] = ps
		}
	}
	return ps
}

// maxIndexedProcs bounds the Ps converter.psByID holds.
const maxIndexedProcs = 4096

// startFunc is startFunc(s), remembered per stack for the current
// generation: a server creates its goroutines from a few places, and
// walking a stack's frames (an iterator) for each of hundreds of
// thousands of them was a tenth of the converter's own time.
func (c *converter) startFunc(s xtrace.Stack) string {
	if s == c.lastStack {
		return c.lastStart
	}
	name, ok := c.starts[s]
	if !ok {
		name = startFunc(s)
		if len(c.starts) >= maxStarts {
			clear(c.starts)
		}
		c.starts[s] = name
	}
	c.lastStack, c.lastStart = s, name
	return name
}

// maxStarts bounds converter.starts: a trace made so that every goroutine
// starts from a stack of its own must not grow it with the file.
const maxStarts = 4096

// startFunc names a goroutine by the outermost frame of a stack (its
// start function).
func startFunc(s xtrace.Stack) string {
	name := ""
	for f := range s.Frames() {
		if f.Func != "runtime.goexit" {
			name = f.Func
		}
	}
	return name
}

func (c *converter) goTransition(ev *xtrace.Event, st *xtrace.StateTransition, t int64) {
	id := st.Resource.Goroutine()
	from, to := st.Goroutine()
	g := c.goroutine(id)
	if !g.seen {
		g.seen = true
		c.res.Goroutines++
	}
	if g.name == "" {
		switch {
		case from == xtrace.GoNotExist || from == xtrace.GoUndetermined:
			g.name = c.startFunc(st.Stack)
		case ev.Goroutine() == id:
			// One that existed before the trace, running: its own stack
			// when it stops names it.
			g.name = c.startFunc(ev.Stack())
		}
		// Named now, before the state that ends goes to the sink: a
		// sink that writes rows as slices end (tables.Export) writes
		// them under the name the track keeps.
		c.rename(g, id)
	}
	if from == xtrace.GoNotExist || from == xtrace.GoUndetermined {
		if to != xtrace.GoNotExist {
			c.live++
		}
	} else if to == xtrace.GoNotExist {
		c.live--
	}
	c.sum.PeakGoroutines = max(c.sum.PeakGoroutines, c.live)
	c.sampleLive(t)
	// The state that ends.
	if g.stateID != 0 {
		c.sink.End(g.stateID, t)
		g.stateID = 0
	}
	if from == xtrace.GoRunning || (from.Executing() && !to.Executing()) {
		if g.p >= 0 {
			c.endRun(xtrace.ProcID(g.p), t)
		}
	}
	g.p = -1
	if to == xtrace.GoNotExist && len(g.regions) == 0 && len(g.ranges) == 0 {
		// An exited goroutine's state goes (goroutine IDs are never
		// reused): a server that starts a goroutine per request makes
		// millions, and keeping each would grow with the file, not the
		// bound. Its track, if it has one, keeps its final name.
		c.rename(g, id)
		c.gs.delete(id)
		if len(c.free) < 1024 {
			c.free = append(c.free, g)
		}
		return
	}
	var args []event.Arg
	if to == xtrace.GoRunning {
		if p := ev.Proc(); p != xtrace.NoProc {
			g.p = int64(p)
			ps := c.procTrack(p)
			if ps.g >= 0 { // a run the trace never ended
				c.endRun(p, t)
			}
			ps.g, ps.start = int64(id), t
			c.args = append(c.args[:0], intArg(ArgGoroutine, int64(id)))
			ps.runID = c.sink.Begin(ps.track, runName(g), t, c.args)
			args = append(c.args[:0], intArg(ArgP, g.p))
		}
	}
	// The state that begins.
	if to != xtrace.GoNotExist && to != xtrace.GoUndetermined {
		g.stateID = c.goBegin(g, id, c.stateName(to, st.Reason), t, args)
	}
}

// endRun closes the goroutine run on P p at t.
func (c *converter) endRun(p xtrace.ProcID, t int64) {
	ps := c.proc(p)
	if ps == nil || ps.g < 0 {
		return
	}
	gid := ps.g
	ps.g = -1
	if ps.runID != 0 {
		c.sink.End(ps.runID, t)
		ps.runID = 0
	}
	if c.o.KeepRuns {
		c.res.Runs[int64(p)] = append(c.res.Runs[int64(p)], Run{Start: ps.start, End: t, G: gid})
	}
}

// goTrackName is the name of a goroutine's own track ("G12
// main.worker", "G12" while its start function is unknown).
func (c *converter) goTrackName(g *goState, id int64) string {
	// Built in a buffer kept across goroutines: one allocation, for the
	// string. (Not one a block of names: a name a sink keeps would keep
	// its whole block.)
	b := append(c.nameBuf[:0], GoroutinePrefix...)
	b = strconv.AppendInt(b, id, 10)
	if g.name != "" {
		b = append(append(b, ' '), g.name...)
	}
	c.nameBuf = b
	return string(b)
}

// runName is the name of a goroutine's execution slice on a P's track:
// its start function, which many goroutines share, with the goroutine's
// ID in the slice's ArgGoroutine argument. A name of each goroutine's
// own would be a string made and interned per goroutine (a server's
// trace starts hundreds of thousands) and would make every goroutine a
// name of its own to whatever compares or aggregates by name (devprof
// diff of two runs).
func runName(g *goState) string {
	if g.name == "" {
		return RunUnnamed
	}
	return g.name
}

// stateName is stateName with "blocked: <reason>" made once per reason:
// a handful of reasons name millions of slices.
func (c *converter) stateName(s xtrace.GoState, reason string) string {
	if s != xtrace.GoWaiting || reason == "" {
		return stateName(s, reason)
	}
	if reason == c.lastReason {
		return c.lastBlocked
	}
	n, ok := c.blocked[reason]
	if !ok {
		n = stateName(s, reason)
		c.blocked[reason] = n
	}
	c.lastReason, c.lastBlocked = reason, n
	return n
}

// stateName is how a goroutine state shows on its track.
func stateName(s xtrace.GoState, reason string) string {
	switch s {
	case xtrace.GoRunning:
		return "running"
	case xtrace.GoRunnable:
		return "runnable"
	case xtrace.GoSyscall:
		return "syscall"
	case xtrace.GoWaiting:
		if reason != "" {
			return "blocked: " + reason
		}
		return "blocked"
	}
	return s.String()
}

// sampleLive writes the goroutine count when it changed, at most every
// 10 µs (a burst of creations is one step, not thousands of samples).
func (c *converter) sampleLive(t int64) {
	if c.live == c.liveSent || (t-c.liveAt < 10_000 && c.liveAt != 0) {
		return
	}
	c.sink.Counter(CounterGoroutines, "", t, float64(c.live))
	c.liveAt, c.liveSent = t, c.live
}

// rangeBegin opens a range of the runtime's (a GC cycle, a mark assist,
// a sweep, a pause). Each generation of a trace (the tracer starts one
// about every second) announces the ranges under way as active: one
// already open is the same range going on, and only one the trace has
// not seen begin (under way when the trace began) opens, at the trace's
// start.
func (c *converter) rangeBegin(ev *xtrace.Event, t int64) {
	r := ev.Range()
	var open map[string]openRange
	var g *goState
	var ps *procState
	gid := xtrace.NoGoroutine
	switch r.Scope.Kind {
	case xtrace.ResourceNone:
		open = c.gc
	case xtrace.ResourceGoroutine:
		gid = r.Scope.Goroutine()
		if g = c.goroutine(gid); g == nil {
			return
		}
		if g.ranges == nil {
			g.ranges = map[string]openRange{}
		}
		open = g.ranges
	case xtrace.ResourceProc:
		ps = c.procTrack(r.Scope.Proc())
		if ps.ranges == nil {
			ps.ranges = map[string]openRange{}
		}
		open = ps.ranges
	default:
		return
	}
	if ev.Kind() == xtrace.EventRangeActive {
		if _, ok := open[r.Name]; ok {
			return
		}
		t = c.res.First
	}
	or := openRange{name: r.Name, start: t}
	if tr, name, args := c.rangeSlice(r.Scope.Kind, g, gid, ps, r.Name); tr != 0 {
		or.id = c.sink.Begin(tr, name, t, args)
	} else {
		c.res.Dropped++
	}
	open[r.Name] = or
}

func (c *converter) rangeEnd(ev *xtrace.Event, t int64) {
	r := ev.Range()
	var open map[string]openRange
	var g *goState
	var ps *procState
	gid := xtrace.NoGoroutine
	switch r.Scope.Kind {
	case xtrace.ResourceNone:
		open = c.gc
	case xtrace.ResourceGoroutine:
		gid = ev.Goroutine()
		if r.Scope.Goroutine() != xtrace.NoGoroutine {
			gid = r.Scope.Goroutine()
		}
		if g = c.goroutine(gid); g == nil {
			return
		}
		open = g.ranges
	case xtrace.ResourceProc:
		ps = c.procTrack(r.Scope.Proc())
		open = ps.ranges
	default:
		return
	}
	or, ok := open[r.Name]
	if !ok { // begun before the trace
		or = openRange{name: r.Name, start: c.res.First, before: true}
	}
	delete(open, r.Name)
	c.endRange(r.Scope.Kind, g, gid, ps, or, t)
}

// gcArgs are the arguments of a GC cycle's slice.
var gcArgs = []event.Arg{{Key: "phase", Kind: event.ArgString, Str: "concurrent mark"}}

// rangeSlice says where a range of the runtime's shows: its track, and
// its slice's name and arguments. A pause shows on TrackSTW and the
// collector's other global ranges on TrackGC; a goroutine's range on its
// track (0 when it has none), a P's on the P's.
func (c *converter) rangeSlice(scope xtrace.ResourceKind, g *goState, gid xtrace.GoID, ps *procState, name string) (uint32, string, []event.Arg) {
	switch {
	case strings.HasPrefix(name, "stop-the-world"):
		if c.stwTrack == 0 {
			c.stwTrack = c.sink.Track(event.Track{Kind: event.TrackHostThread, Name: TrackSTW, SortIndex: sortSTW, Sorted: true})
		}
		return c.stwTrack, STWPrefix + strings.TrimSuffix(strings.TrimPrefix(name, "stop-the-world ("), ")"), nil
	case scope == xtrace.ResourceNone:
		if c.gcTrack == 0 {
			c.gcTrack = c.sink.Track(event.Track{Kind: event.TrackHostThread, Name: TrackGC, SortIndex: sortGC, Sorted: true})
		}
		if name == rangeGC {
			return c.gcTrack, SliceGC, gcArgs
		}
		return c.gcTrack, name, nil
	case scope == xtrace.ResourceGoroutine:
		return c.goTrack(g, gid), name, nil
	}
	return ps.track, name, nil
}

// endRange ends a range of the runtime's at end, counting it: a GC
// cycle, a pause, a mark assist. One that began before the trace is
// added whole.
func (c *converter) endRange(scope xtrace.ResourceKind, g *goState, gid xtrace.GoID, ps *procState, or openRange, end int64) {
	d := end - or.start
	switch {
	case strings.HasPrefix(or.name, "stop-the-world"):
		c.res.Pauses++
		c.res.PauseTotal += d
		c.res.PauseMax = max(c.res.PauseMax, d)
	case scope == xtrace.ResourceNone && or.name == rangeGC:
		c.res.GCs++
		c.sum.GCTotal += d
	case scope == xtrace.ResourceGoroutine && or.name == RangeMarkAssist:
		c.sum.Assists++
		c.sum.AssistTotal += d
	}
	switch {
	case or.before:
		if tr, name, args := c.rangeSlice(scope, g, gid, ps, or.name); tr != 0 {
			c.sink.Slice(tr, 0, name, or.start, end, args)
		} else {
			c.res.Dropped++
		}
	case or.id != 0:
		c.sink.End(or.id, end)
	}
}

// finish closes what the trace left open at its last event.
func (c *converter) finish() {
	// In a fixed order, so that one trace always converts the same way.
	end := c.res.Last
	for _, p := range slices.Sorted(maps.Keys(c.ps)) {
		ps := c.ps[p]
		if ps.g >= 0 {
			c.endRun(p, end)
		}
		for _, name := range slices.Sorted(maps.Keys(ps.ranges)) {
			c.endRange(xtrace.ResourceProc, nil, xtrace.NoGoroutine, ps, ps.ranges[name], end)
		}
	}
	for _, id := range c.gs.ids() {
		g := c.gs.get(id)
		if g.stateID != 0 {
			c.sink.End(g.stateID, end)
			g.stateID = 0
		}
		for _, r := range g.regions {
			c.region(g, id, r, end)
		}
		c.rename(g, id)
		for _, name := range slices.Sorted(maps.Keys(g.ranges)) {
			c.endRange(xtrace.ResourceGoroutine, g, id, nil, g.ranges[name], end)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.gc)) {
		c.endRange(xtrace.ResourceNone, nil, xtrace.NoGoroutine, nil, c.gc[name], end)
	}
	for _, id := range slices.Sorted(maps.Keys(c.tasks)) {
		c.task(c.tasks[id], end)
	}
	if c.liveSent != c.live {
		c.sink.Counter(CounterGoroutines, "", end, float64(c.live))
	}
	c.res.Summary = c.summary()
}

// summary returns the whole trace's figures so far.
func (c *converter) summary() Summary {
	sum := c.sum
	sum.GCs, sum.Pauses, sum.PauseTotal, sum.PauseMax = c.res.GCs, c.res.Pauses, c.res.PauseTotal, c.res.PauseMax
	sum.Goroutines = c.res.Goroutines
	sum.Regions, sum.Tasks = sortedStats(c.regionStats), sortedStats(c.taskStats)
	return sum
}
