package sinkpipe

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
)

// logSink records every call it is given, in its own IDs, with copies
// of the arguments; ids says how it numbers what it registers.
type logSink struct {
	ids   idStyle
	meta  event.Meta
	init  event.Meta
	calls []string
	n     uint64 // IDs given so far (all kinds share the count)
	// procTracks are the tracks ProcessTrack registered, by process.
	procTracks map[int]uint32
	// panicAt makes the sink panic at its panicAt-th call (0: never).
	panicAt int
	// tracks, procs and spans count what it registered.
	tracks, procs, spans int
}

// idStyle is how a sink numbers what it hands out.
type idStyle int

const (
	sequential idStyle = iota // 1, 2, 3, … per kind (the Analyzer, the Builder)
	scattered                 // shared and sparse: no two runs alike
	descending                // going down from a large number
)

func newLogSink(ids idStyle, meta event.Meta) *logSink {
	s := &logSink{ids: ids, init: meta}
	s.Reset()
	return s
}

func (s *logSink) log(format string, a ...any) {
	if s.panicAt > 0 && len(s.calls)+1 == s.panicAt {
		panic(fmt.Sprintf("call %d", s.panicAt))
	}
	s.calls = append(s.calls, fmt.Sprintf(format, a...))
}

// next is the ID of the next thing handed out, of a kind that has given
// count so far.
func (s *logSink) next(count int) uint64 {
	s.n++
	switch s.ids {
	case scattered:
		return s.n*7919 + uint64(s.n%3)*1_000_003
	case descending:
		return 1<<40 - s.n*3
	}
	return uint64(count + 1)
}

func (s *logSink) Reset() {
	s.meta = s.init
	s.calls = append(s.calls[:0:0], "reset")
	s.n = 0
	s.procTracks = map[int]uint32{}
	s.tracks, s.procs, s.spans = 0, 0, 0
}

func (s *logSink) Meta() *event.Meta { return &s.meta }

func (s *logSink) Track(t event.Track) uint32 {
	id := uint32(s.next(s.tracks))
	s.tracks++
	s.log("track %+v = %d", t, id)
	return id
}

func (s *logSink) SetTrackName(id uint32, name string) { s.log("name %d %q", id, name) }

func (s *logSink) Process(p event.Process) int {
	id := int(s.next(s.procs) % (1 << 30))
	s.procs++
	s.log("process %+v = %d", p, id)
	return id
}

func (s *logSink) ProcessTrack(process int) uint32 {
	if id, ok := s.procTracks[process]; ok {
		s.log("process track %d = %d (again)", process, id)
		return id
	}
	id := uint32(s.next(s.tracks))
	s.tracks++
	s.procTracks[process] = id
	s.log("process track %d = %d", process, id)
	return id
}

func (s *logSink) Span(sp event.Span) uint64 {
	id := s.next(s.spans)
	s.spans++
	s.log("span %+v = %d", sp, id)
	return id
}

func (s *logSink) EndSpan(id uint64, end int64) { s.log("end %d %d", id, end) }

func (s *logSink) TrackSlice(track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := s.next(s.spans)
	s.spans++
	s.log("slice %d %q %d %d %+v = %d", track, name, start, end, args, id)
	return id
}

func (s *logSink) Instant(name string, t int64, track uint32, parent uint64, args []event.Arg) {
	s.log("instant %q %d %d %d %+v", name, t, track, parent, args)
}

func (s *logSink) Counter(name, unit string, t int64, v float64) {
	s.log("counter %q %q %d %v", name, unit, t, v)
}

func (s *logSink) TrackCounter(track uint32, name, unit string, t int64, v float64) {
	s.log("track counter %d %q %q %d %v", track, name, unit, t, v)
}

func (s *logSink) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	id := s.next(s.spans)
	s.spans++
	s.log("activity %v %d %q %d %d %+v = %d", kind, track, name, start, end, args, id)
	return id
}

// script is a reader: it writes a random trace into a sink, passing back
// the IDs the sink gave as a reader does (parents, EndSpan, tracks,
// processes), reusing one argument slice for every call and scribbling
// over it once each call returns, and filling in the metadata. With
// resets it starts over once in a while, as a reader that reads its
// file again.
func script(sink event.Sink, seed uint64, calls int, resets bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var (
		tracks []uint32
		procs  []int
		spans  []uint64
		open   []uint64
		args   = make([]event.Arg, 0, 8)
	)
	names := []string{"step", "matmul", "ncclAllReduce", "memcpy HtoD", "cudaLaunchKernel", ""}
	pick := func(xs []uint32) uint32 {
		if len(xs) == 0 || rng.IntN(8) == 0 {
			return 0
		}
		return xs[rng.IntN(len(xs))]
	}
	parent := func() uint64 {
		if len(spans) == 0 || rng.IntN(3) == 0 {
			return 0
		}
		return spans[rng.IntN(len(spans))]
	}
	fill := func() []event.Arg {
		args = args[:0]
		for range rng.IntN(4) {
			args = append(args, event.Arg{Key: names[rng.IntN(len(names))], Kind: event.ArgInt, Num: rng.Uint64(), Str: names[rng.IntN(len(names))]})
		}
		return args
	}
	scribble := func() {
		for i := range args[:cap(args)] {
			args[:cap(args)][i] = event.Arg{Key: "scribbled", Num: 0xdead}
		}
	}
	t := int64(0)
	for i := range calls {
		t += rng.Int64N(1000)
		switch c := rng.IntN(22); {
		case c == 0:
			tracks = append(tracks, sink.Track(event.Track{Kind: event.TrackKind(rng.IntN(4)), Name: names[rng.IntN(len(names))], ID: rng.Int64N(9),
				Process: int(pick(nil)) + func() int {
					if len(procs) > 0 && rng.IntN(2) == 0 {
						return procs[rng.IntN(len(procs))]
					}
					return 0
				}()}))
		case c == 1 && len(tracks) > 0:
			sink.SetTrackName(tracks[rng.IntN(len(tracks))], fmt.Sprint("renamed ", i))
		case c == 2:
			labels := []string{"a", "b"}
			procs = append(procs, sink.Process(event.Process{PID: rng.Int64N(100), Name: names[rng.IntN(len(names))], Labels: labels}))
			labels[0] = "scribbled"
		case c == 3:
			process := 0
			if len(procs) > 0 && rng.IntN(4) > 0 {
				process = procs[rng.IntN(len(procs))]
			}
			tracks = append(tracks, sink.ProcessTrack(process))
		case c <= 7:
			s := event.Span{Name: names[rng.IntN(len(names))], Start: t, End: t + rng.Int64N(500), Parent: parent(), Track: pick(tracks),
				Args: fill(), Unfinished: rng.IntN(3) == 0}
			if rng.IntN(5) == 0 {
				s.Step, s.StepNum = true, rng.Int64N(100)
			}
			id := sink.Span(s)
			scribble()
			spans = append(spans, id)
			if s.Unfinished {
				open = append(open, id)
			}
		case c == 8 && len(open) > 0:
			k := rng.IntN(len(open))
			sink.EndSpan(open[k], t)
			open = append(open[:k], open[k+1:]...)
		case c == 9:
			// An ID the sink never gave: the reader's mistake, passed on
			// as it is.
			sink.EndSpan(1<<50+uint64(i), t)
		case c <= 12:
			spans = append(spans, sink.TrackSlice(pick(tracks), names[rng.IntN(len(names))], t, t+rng.Int64N(500), fill()))
			scribble()
		case c == 13:
			sink.Instant(names[rng.IntN(len(names))], t, pick(tracks), parent(), fill())
			scribble()
		case c == 14:
			sink.Counter(names[rng.IntN(len(names))], "B", t, rng.Float64())
		case c == 15:
			sink.TrackCounter(pick(tracks), names[rng.IntN(len(names))], "%", t, rng.Float64())
		case c <= 19:
			spans = append(spans, sink.ActivityOf(event.ActivityKind(rng.IntN(6)), pick(tracks), names[rng.IntN(len(names))], t, t+rng.Int64N(500), fill()))
			scribble()
		case c == 20:
			m := sink.Meta()
			m.Warnings = append(m.Warnings, event.Warning{Text: fmt.Sprint("warning ", i)})
			m.AddDrops("source", int64(i))
			m.Stop.Mono = t
		case c == 21 && resets && rng.IntN(40) == 0:
			sink.Reset()
			tracks, procs, spans, open = nil, nil, nil, nil
		}
	}
}

// TestPipeSameCalls: through the Pipe, a sink is given exactly the calls
// a reader makes of it directly, in its own IDs, whatever IDs it hands
// out, and ends with the same metadata; batch sizes from one call (every
// call a hand-over) to the default.
func TestPipeSameCalls(t *testing.T) {
	start := event.Meta{Host: "h", Warnings: make([]event.Warning, 1, 4)}
	for _, ids := range []idStyle{sequential, scattered, descending} {
		for _, size := range []struct{ ops, depth int }{{1, 1}, {3, 2}, {64, 4}, {batchOps, depth}} {
			for seed := range uint64(6) {
				direct := newLogSink(ids, start)
				script(direct, seed, 3000, seed%2 == 1)
				piped := newLogSink(ids, start)
				p := newPipe(piped, size.ops, size.depth)
				script(p, seed, 3000, seed%2 == 1)
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(direct.meta, piped.meta) {
					t.Fatalf("ids %d, batch %d, seed %d: metadata %+v, want %+v", ids, size.ops, seed, piped.meta, direct.meta)
				}
				if d := firstDiff(direct.calls, piped.calls); d != "" {
					t.Fatalf("ids %d, batch %d, seed %d: %s", ids, size.ops, seed, d)
				}
			}
		}
	}
}

func firstDiff(want, got []string) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("call %d: %s, want %s", i, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d calls, want %d", len(got), len(want))
	}
	return ""
}

// TestPipeMetaAtClose: Close hands the sink the metadata the reader
// wrote; a Reset starts the reader's over from the sink's.
func TestPipeMetaAtClose(t *testing.T) {
	sink := newLogSink(sequential, event.Meta{Host: "made"})
	p := New(sink)
	if p.Meta().Host != "made" {
		t.Fatalf("the Pipe's metadata starts as %+v", *p.Meta())
	}
	p.Meta().Host = "written"
	p.Meta().Notes = append(p.Meta().Notes, event.Note{Text: "before the reset"})
	p.Reset()
	if p.Meta().Host != "made" || len(p.Meta().Notes) != 0 {
		t.Fatalf("after Reset the Pipe's metadata is %+v", *p.Meta())
	}
	p.Meta().Host = "read again"
	p.Counter("c", "", 1, 2)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if sink.meta.Host != "read again" {
		t.Errorf("after Close the sink's metadata is %+v", sink.meta)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestPipeSinkPanics: a sink that panics stops nothing on the reader's
// side (its calls, far more than the queue holds, are dropped), and
// Close reports the panic and leaves no goroutine behind; a Reset after
// it does not call the broken sink again.
func TestPipeSinkPanics(t *testing.T) {
	for _, reset := range []bool{false, true} {
		sink := newLogSink(sequential, event.Meta{})
		sink.panicAt = 100
		p := newPipe(sink, 16, 2)
		finished := make(chan error, 1)
		go func() {
			script(p, 1, 20000, false)
			if reset {
				p.Reset()
				script(p, 2, 1000, false)
			}
			finished <- p.Close()
		}()
		select {
		case err := <-finished:
			var pe *PanicError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "call 100") || len(pe.Stack) == 0 {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the reader is stuck behind a sink that panicked")
		}
		select {
		case <-p.done:
		default:
			t.Fatal("the consumer's goroutine still runs after Close")
		}
		if len(sink.calls) != sink.panicAt-1 || !reflect.DeepEqual(sink.meta, event.Meta{}) {
			t.Errorf("the sink logged %d calls, want %d before its panic; metadata %+v", len(sink.calls), sink.panicAt-1, sink.meta)
		}
	}
}

// TestPipeIDMap: the span table keeps one run for a sink numbering in
// sequence, translates every ID of one that does not, and passes IDs
// it never handed out through.
func TestPipeIDMap(t *testing.T) {
	var m idMap
	for i := range uint64(1000) {
		m.addSpan(i + 1)
	}
	if len(m.runs) != 1 || m.span(1) != 1 || m.span(1000) != 1000 || m.span(1001) != 1001 || m.span(0) != 0 {
		t.Fatalf("sequential: runs %v", m.runs)
	}
	m.reset()
	want := map[uint64]uint64{}
	rng := rand.New(rand.NewPCG(1, 2))
	var last uint64 = 50
	for i := range uint64(5000) {
		// Runs of random length, jumping about.
		if rng.IntN(10) == 0 {
			last = rng.Uint64N(1 << 40)
		} else {
			last++
		}
		m.addSpan(last)
		want[i+1] = last
	}
	if len(m.runs) < 300 || len(m.runs) > 700 {
		t.Errorf("%d runs for about 500 jumps", len(m.runs))
	}
	for pipe, sink := range want {
		if got := m.span(pipe); got != sink {
			t.Fatalf("span %d = %d, want %d", pipe, got, sink)
		}
	}
}

// factsSink notes the metadata it has at each counter sample.
type factsSink struct {
	*logSink
	seen []event.Meta
}

func (s *factsSink) Counter(name, unit string, t int64, v float64) {
	s.seen = append(s.seen, *s.Meta())
	s.logSink.Counter(name, unit, t, v)
}

// TestPipeFactsAhead: the clock anchor, host, program and pid the reader
// writes reach the sink with the next batch handed over, before Close;
// the rest of the metadata (notes here) only at Close.
func TestPipeFactsAhead(t *testing.T) {
	sink := &factsSink{logSink: newLogSink(sequential, event.Meta{})}
	p := newPipe(sink, 4, 2)
	p.Counter("c", "", 0, 0)
	anchor := event.ClockAnchor{Mono: 5, Wall: 1_700_000_000_000_000_005}
	m := p.Meta()
	m.Start, m.Host, m.Program, m.PID = anchor, "h", "prog", 7
	m.Notes = append(m.Notes, event.Note{Text: "at the end"})
	for i := range 12 {
		p.Counter("c", "", int64(i+1), 0)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	last := sink.seen[len(sink.seen)-1]
	if last.Start != anchor || last.Host != "h" || last.Program != "prog" || last.PID != 7 {
		t.Errorf("the sink had %+v at the last sample, before Close", last)
	}
	if len(last.Notes) != 0 {
		t.Errorf("notes reached the sink before Close: %+v", last.Notes)
	}
	if len(sink.meta.Notes) != 1 {
		t.Errorf("after Close the sink's notes are %+v", sink.meta.Notes)
	}
}
