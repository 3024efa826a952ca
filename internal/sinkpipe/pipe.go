package sinkpipe

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/devprof/devprof/event"
)

// Pipe is an event.Sink that applies every call, in order, to another
// sink on a goroutine of its own. A reader writes into it from one
// goroutine; Close waits for the sink to catch up and must be called
// before the sink is read (and before its goroutine can end).
//
// Each call's arguments are copied into the batch that carries it (a
// reader reuses its argument slices once a call returns); strings are
// passed as they are. The sink sees each call's Args only for the call,
// as the Sink contract says.
//
// The IDs the Pipe returns are its own, handed out in sequence: tracks,
// processes, and spans (Span, TrackSlice and ActivityOf share one
// sequence). The consumer's side translates those a call passes back
// (a track, a process, a parent, EndSpan's id) into the sink's own.
// Spans are mapped as runs of consecutive IDs, so a sink whose span IDs
// go up one at a time (analysis.Analyzer) costs one entry, event.Builder
// (whose instants and counter samples take IDs too) one per stretch of
// spans between them, and a sink that returns arbitrary IDs an entry a
// span. An ID the Pipe never
// handed out passes through unchanged, as the sink would have seen it
// without the Pipe.
//
// Meta is the Pipe's: a copy of the sink's metadata when the Pipe was
// made (or when the reader last called Reset), which the reader fills
// in, and which Close writes into the sink's. A sink therefore sees the
// metadata only once the Pipe is closed; analysis.Analyzer and the
// other sinks in devprof read theirs only when asked for a result.
type Pipe struct {
	sink  event.Sink
	meta  event.Meta
	batch *batch
	full  chan *batch // batches for the consumer, in order
	free  chan *batch // batches it has applied, to fill again
	done  chan struct{}
	// failed is set by the consumer once the sink panicked: the reader's
	// calls are dropped from then on (their IDs still handed out), and
	// Close returns failure.
	failed  atomic.Bool
	failure error
	closed  bool

	// The IDs handed out so far, and the track each process's
	// ProcessTrack got.
	tracks     uint32
	procs      int
	spans      uint64
	procTracks map[int]uint32

	// The consumer's side: the sink's IDs of the Pipe's.
	ids idMap
}

// Batches are a few thousand calls: handing one over wakes the
// consumer, and the runtime's wake-ups cost CPU time that smaller
// batches multiply, while larger ones leave the caches. A reader and an
// Analyzer through the Pipe (BenchmarkAnalyzeFile, 1M events, -cpu 2)
// ran faster and took less CPU time at 4096 calls a batch than at 1024,
// though the Pipe alone into a sink that does nothing (BenchmarkPipe)
// was cheaper at 1024. depth batches wait at most, so a reader ahead of
// its sink holds about depth × batchOps calls before it waits.
const (
	batchOps = 4096
	depth    = 4
)

// New starts a Pipe in front of sink. The Pipe owns sink until Close
// returns: nothing else may call it, or read its metadata, meanwhile.
func New(sink event.Sink) *Pipe { return newPipe(sink, batchOps, depth) }

func newPipe(sink event.Sink, ops, depth int) *Pipe {
	p := &Pipe{sink: sink, meta: *sink.Meta(), free: make(chan *batch, depth+2), procTracks: map[int]uint32{}}
	for range depth + 2 {
		p.free <- &batch{ops: make([]op, 0, ops)}
	}
	p.start(depth)
	return p
}

// start takes a batch to fill and starts the consumer.
func (p *Pipe) start(depth int) {
	p.batch = <-p.free
	p.full = make(chan *batch, depth)
	p.done = make(chan struct{})
	go p.consume()
}

// consume applies the batches as they come until the Pipe closes,
// handing each back to be filled again. Once the sink has panicked it
// only hands them back, so that the reader never waits on it.
func (p *Pipe) consume() {
	defer close(p.done)
	for b := range p.full {
		if !p.failed.Load() {
			p.applyGuarded(b)
		}
		b.clear()
		p.free <- b
	}
}

// PanicError is what Close returns when the sink panicked: the value it
// panicked with and the consumer's stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

// Error says what the sink panicked with, in one line (the stack is in
// Stack, for who wants it).
func (e *PanicError) Error() string { return fmt.Sprintf("the sink panicked: %v", e.Value) }

func (p *Pipe) applyGuarded(b *batch) {
	defer func() {
		if v := recover(); v != nil {
			p.failure = &PanicError{Value: v, Stack: debug.Stack()}
			p.failed.Store(true)
		}
	}()
	p.apply(b)
}

// next returns the next call's place in the batch being filled, zero
// but for its kind, handing the batch over first if it is full. Calls
// are written where they stay rather than built and copied in: the
// reader's side of the Pipe is what it adds to the reader's time.
func (p *Pipe) next(kind opKind) *op {
	b := p.batch
	if len(b.ops) == cap(b.ops) {
		p.handOver()
		b = p.batch
	}
	b.ops = b.ops[:len(b.ops)+1]
	o := &b.ops[len(b.ops)-1]
	o.kind = kind
	return o
}

// handOver sends the batch being filled to the consumer and takes
// another; once the sink has failed, the calls are dropped instead.
func (p *Pipe) handOver() {
	if p.failed.Load() {
		p.batch.clear()
		return
	}
	p.batch.facts = factsOf(&p.meta)
	p.full <- p.batch
	p.batch = <-p.free
}

// stop hands over what is queued and waits for the consumer to apply it
// and end.
func (p *Pipe) stop() {
	p.batch.facts = factsOf(&p.meta)
	p.full <- p.batch
	p.batch = nil
	close(p.full)
	<-p.done
}

// Close applies every call queued, ends the consumer's goroutine and
// writes the Pipe's metadata into the sink's, which may be read once it
// returns. It returns a *PanicError when the sink panicked (the sink is
// then left as the panic left it, Close leaves its metadata as it was). Calls after
// Close are a bug; Close itself may be called again, returning the same.
func (p *Pipe) Close() error {
	if p.closed {
		return p.failure
	}
	p.closed = true
	p.stop()
	if p.failure == nil {
		*p.sink.Meta() = p.meta
	}
	return p.failure
}

// Reset implements event.Sink: what is queued is applied, the sink is
// Reset on the reader's goroutine while the consumer is stopped, and the
// Pipe starts over with the sink's metadata and fresh IDs. A sink that
// has panicked is not touched again: Close reports the panic.
func (p *Pipe) Reset() {
	p.stop()
	if p.failure == nil {
		p.sink.Reset()
		p.meta = *p.sink.Meta()
	}
	p.tracks, p.procs, p.spans = 0, 0, 0
	clear(p.procTracks)
	p.ids.reset()
	p.start(cap(p.full))
}

// Meta implements event.Sink: the Pipe's metadata, which Close hands to
// the sink.
func (p *Pipe) Meta() *event.Meta { return &p.meta }

// Track implements event.Sink.
func (p *Pipe) Track(t event.Track) uint32 {
	o := p.next(opTrack)
	b := p.batch
	o.id = uint64(len(b.tracks))
	b.tracks = append(b.tracks, t)
	p.tracks++
	return p.tracks
}

// SetTrackName implements event.Sink.
func (p *Pipe) SetTrackName(id uint32, name string) {
	o := p.next(opSetTrackName)
	o.track, o.name = id, name
}

// Process implements event.Sink.
func (p *Pipe) Process(pr event.Process) int {
	o := p.next(opProcess)
	b := p.batch
	o.id = uint64(len(b.procs))
	pr.Labels = slices.Clone(pr.Labels)
	b.procs = append(b.procs, pr)
	p.procs++
	return p.procs
}

// ProcessTrack implements event.Sink: a process's track takes a Pipe ID
// on first use, as the sink registers it then; every call is passed on.
func (p *Pipe) ProcessTrack(process int) uint32 {
	o := p.next(opProcessTrack)
	o.id = uint64(process)
	if id, ok := p.procTracks[process]; ok {
		o.flags = flagKnown
		return id
	}
	p.tracks++
	p.procTracks[process] = p.tracks
	return p.tracks
}

// Span implements event.Sink.
func (p *Pipe) Span(s event.Span) uint64 {
	o := p.next(opSpan)
	o.track, o.id, o.start, o.end, o.name = s.Track, s.Parent, s.Start, s.End, s.Name
	if s.Unfinished {
		o.flags |= flagUnfinished
	}
	if s.Step {
		o.flags |= flagStep
		o.num = uint64(s.StepNum)
	}
	p.batch.args(o, s.Args)
	p.spans++
	return p.spans
}

// EndSpan implements event.Sink.
func (p *Pipe) EndSpan(id uint64, end int64) {
	o := p.next(opEndSpan)
	o.id, o.end = id, end
}

// TrackSlice implements event.Sink.
func (p *Pipe) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	o := p.next(opTrackSlice)
	o.track, o.start, o.end, o.name = track, start, end, name
	p.batch.args(o, args)
	p.spans++
	return p.spans
}

// Instant implements event.Sink.
func (p *Pipe) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	o := p.next(opInstant)
	o.track, o.id, o.start, o.name = track, parent, t, name
	p.batch.args(o, args)
}

// Counter implements event.Sink.
func (p *Pipe) Counter(name, unit string, t int64, v float64) {
	o := p.next(opCounter)
	o.start, o.num, o.name, o.unit = t, floatBits(v), name, unit
}

// TrackCounter implements event.Sink.
func (p *Pipe) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	o := p.next(opTrackCounter)
	o.track, o.start, o.num, o.name, o.unit = track, t, floatBits(v), name, unit
}

// ActivityOf implements event.Sink.
func (p *Pipe) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	o := p.next(opActivity)
	o.activity, o.track, o.start, o.end, o.name = kind, track, start, end, name
	p.batch.args(o, args)
	p.spans++
	return p.spans
}

var _ event.Sink = (*Pipe)(nil)
