package main

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
)

// pipedAggregator runs summary's aggregator on a goroutine of its own, so
// that reading a trace and summing it up use two cores: the reader's
// calls are queued in batches and applied in order on the other side.
// The aggregator's IDs are sequential (a track, a process, a span each
// take the next), so the pipe hands out the very IDs it will, without
// waiting for it; its metadata is the aggregator's own, which it reads
// only once the pipe is closed.
type pipedAggregator struct {
	a      *summaryAggregator
	batch  *pipeBatch
	full   chan *pipeBatch // batches for the aggregator, in order
	free   chan *pipeBatch // batches it has applied, to fill again
	done   chan struct{}   // closed when the aggregator's goroutine ends
	closed bool

	// The aggregator's counters, kept in step with it.
	tracks     uint32
	procs      int
	spans      uint64
	procTracks map[int]uint32
}

// pipeOp is one call queued for the aggregator.
type pipeOp struct {
	kind       pipeKind
	unfinished bool
	goRegion   bool // the span carries the goroutine argument (the aggregator's only use of arguments)
	track      uint32
	ref        int    // index into the batch's tracks or procs, for those calls
	want       uint64 // the ID the pipe handed out for the call
	id         uint64
	start, end int64
	name, unit string
	v          float64
	activity   event.ActivityKind
}

type pipeKind uint8

const (
	opTrack pipeKind = iota + 1
	opSetTrackName
	opProcess
	opProcessTrack
	opSpan
	opEndSpan
	opTrackSlice
	opInstant
	opCounter
	opTrackCounter
	opActivity
)

// pipeBatch is a run of calls, with the tracks and processes they
// register.
type pipeBatch struct {
	ops    []pipeOp
	tracks []event.Track
	procs  []event.Process
}

// pipeBatchOps is how many calls make a batch: enough that handing one
// over costs nothing per call, few enough to stay in cache.
const pipeBatchOps = 4096

// goArg is what a span that carried the goroutine argument shows the
// aggregator.
var goArg = []event.Arg{{Key: gotrace.ArgGoroutine}}

func newPipedAggregator(a *summaryAggregator) *pipedAggregator {
	p := &pipedAggregator{a: a, full: make(chan *pipeBatch, 4), free: make(chan *pipeBatch, 6), procTracks: map[int]uint32{}}
	for range 6 {
		p.free <- &pipeBatch{ops: make([]pipeOp, 0, pipeBatchOps)}
	}
	p.batch = <-p.free
	p.start()
	return p
}

func (p *pipedAggregator) start() {
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for b := range p.full {
			p.apply(b)
			b.ops, b.tracks, b.procs = b.ops[:0], b.tracks[:0], b.procs[:0]
			p.free <- b
		}
	}()
}

// apply makes the aggregator's calls of a batch, in order, and checks
// that each ID it gives is the one the pipe handed out.
func (p *pipedAggregator) apply(b *pipeBatch) {
	a := p.a
	for i := range b.ops {
		op := &b.ops[i]
		var got uint64
		switch op.kind {
		case opTrack:
			got = uint64(a.Track(b.tracks[op.ref]))
		case opSetTrackName:
			a.SetTrackName(op.track, op.name)
		case opProcess:
			got = uint64(a.Process(b.procs[op.ref]))
		case opProcessTrack:
			got = uint64(a.ProcessTrack(op.ref))
		case opSpan:
			s := event.Span{Name: op.name, Start: op.start, End: op.end, Parent: op.id, Track: op.track, Unfinished: op.unfinished}
			if op.goRegion {
				s.Args = goArg
			}
			got = a.Span(s)
		case opEndSpan:
			a.EndSpan(op.id, op.end)
		case opTrackSlice:
			var args []event.Arg
			if op.goRegion {
				args = goArg
			}
			got = a.TrackSlice(op.track, op.name, op.start, op.end, args)
		case opInstant:
			a.Instant(op.name, op.start, op.track, op.id, nil)
		case opCounter:
			a.Counter(op.name, op.unit, op.start, op.v)
		case opTrackCounter:
			a.TrackCounter(op.track, op.name, op.unit, op.start, op.v)
		case opActivity:
			got = a.ActivityOf(op.activity, op.track, op.name, op.start, op.end, nil)
		}
		if got != op.want {
			a.fail("summary's pipe handed out ID %d where the aggregator gave %d", op.want, got)
		}
	}
}

func (p *pipedAggregator) put(op pipeOp) {
	b := p.batch
	b.ops = append(b.ops, op)
	if len(b.ops) == pipeBatchOps {
		p.full <- b
		p.batch = <-p.free
	}
}

// close applies what is queued and ends the aggregator's goroutine: the
// aggregator may be read once it returns.
func (p *pipedAggregator) close() {
	if p.closed {
		return
	}
	p.closed = true
	p.full <- p.batch
	p.batch = nil
	close(p.full)
	<-p.done
}

// Reset implements event.Sink: what is queued is applied (and then
// discarded with the rest), and the pipe starts over with the
// aggregator.
func (p *pipedAggregator) Reset() {
	p.close()
	p.a.Reset()
	p.tracks, p.procs, p.spans = 0, 0, 0
	clear(p.procTracks)
	p.closed = false
	p.full = make(chan *pipeBatch, 4)
	p.batch = <-p.free
	p.start()
}

// Meta implements event.Sink: the aggregator's, which it reads only at
// the end.
func (p *pipedAggregator) Meta() *event.Meta { return p.a.Meta() }

// Track implements event.Sink.
func (p *pipedAggregator) Track(t event.Track) uint32 {
	b := p.batch
	b.tracks = append(b.tracks, t)
	p.tracks++
	p.put(pipeOp{kind: opTrack, ref: len(b.tracks) - 1, want: uint64(p.tracks)})
	return p.tracks
}

// SetTrackName implements event.Sink.
func (p *pipedAggregator) SetTrackName(id uint32, name string) {
	p.put(pipeOp{kind: opSetTrackName, track: id, name: name})
}

// Process implements event.Sink.
func (p *pipedAggregator) Process(pr event.Process) int {
	b := p.batch
	b.procs = append(b.procs, pr)
	p.procs++
	p.put(pipeOp{kind: opProcess, ref: len(b.procs) - 1, want: uint64(p.procs)})
	return p.procs
}

// ProcessTrack implements event.Sink.
func (p *pipedAggregator) ProcessTrack(process int) uint32 {
	if id, ok := p.procTracks[process]; ok {
		return id
	}
	p.tracks++
	p.put(pipeOp{kind: opProcessTrack, ref: process, want: uint64(p.tracks)})
	p.procTracks[process] = p.tracks
	return p.tracks
}

// hasGoroutine reports whether a span's arguments name the goroutine it
// ran on (gotrace's regions): the only argument summary looks at.
func hasGoroutine(args []event.Arg) bool {
	for _, a := range args {
		if a.Key == gotrace.ArgGoroutine {
			return true
		}
	}
	return false
}

// Span implements event.Sink.
func (p *pipedAggregator) Span(s event.Span) uint64 {
	p.spans++
	p.put(pipeOp{kind: opSpan, name: s.Name, start: s.Start, end: s.End, id: s.Parent, track: s.Track,
		unfinished: s.Unfinished, goRegion: s.Track != 0 && hasGoroutine(s.Args), want: p.spans})
	return p.spans
}

// EndSpan implements event.Sink.
func (p *pipedAggregator) EndSpan(id uint64, end int64) {
	p.put(pipeOp{kind: opEndSpan, id: id, end: end})
}

// TrackSlice implements event.Sink.
func (p *pipedAggregator) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	p.spans++
	p.put(pipeOp{kind: opTrackSlice, track: track, name: name, start: start, end: end, goRegion: hasGoroutine(args), want: p.spans})
	return p.spans
}

// Instant implements event.Sink.
func (p *pipedAggregator) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	p.put(pipeOp{kind: opInstant, name: name, start: t, track: track, id: parent})
}

// Counter implements event.Sink.
func (p *pipedAggregator) Counter(name, unit string, t int64, v float64) {
	p.put(pipeOp{kind: opCounter, name: name, unit: unit, start: t, v: v})
}

// TrackCounter implements event.Sink.
func (p *pipedAggregator) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	p.put(pipeOp{kind: opTrackCounter, track: track, name: name, unit: unit, start: t, v: v})
}

// ActivityOf implements event.Sink.
func (p *pipedAggregator) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	p.spans++
	p.put(pipeOp{kind: opActivity, activity: kind, track: track, name: name, start: start, end: end, want: p.spans})
	return p.spans
}
