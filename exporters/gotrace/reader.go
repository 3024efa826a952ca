package gotrace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path/filepath"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
)

// SourceName names the reader in the snapshot's drops and notes.
const SourceName = "gotrace"

// Magic is how every Go execution trace begins ("go 1.22 trace\x00…").
var Magic = []byte("go 1.")

// Sniff reports whether head, the first bytes of a file, is a Go
// execution trace's header.
func Sniff(head []byte) bool {
	return bytes.HasPrefix(head, Magic) && bytes.Contains(head[:min(len(head), 16)], []byte(" trace"))
}

// DefaultMaxEvents is how many events Read keeps when Options.MaxEvents
// is 0: four times a session's default bound, and more than the viewers
// show at ease; a conversion holds about BytesPerEvent for each.
const DefaultMaxEvents = 4_000_000

// DefaultMaxGoroutines is how many goroutines Read gives a track of
// their own when Options.MaxGoroutines is 0: more than a 5 s
// /debug/pprof/trace of a busy server starts (one goroutine a request at
// 10,000 requests a second is 50,000), at a few hundred bytes a row.
// A session's own Go-runtime rows keep internal/gotrace's smaller
// default: its trace is of one program, drawn beside its spans.
const DefaultMaxGoroutines = 100_000

// BytesPerEvent is about how much memory (peak RSS) an event kept from
// a Go execution trace costs through a conversion to any output format
// (the model's record, its share of the goroutines' rows and names, and
// the writer's), as measured on a server's trace with 100,000 goroutine
// rows at the default bounds (the most, into .pftrace: 1.40 GB for 4 M
// events): what -max_events' help multiplies its bound by.
const BytesPerEvent = 350

// Options configure Read.
type Options struct {
	// Name is the file's path, for errors and the program's name.
	Name string
	// MaxEvents bounds the events kept: the first ones are, later ones
	// are counted as dropped and a warning says where the cut fell (the
	// collector's GC and pause slices go on, up to CollectorEvents more).
	// 0 means DefaultMaxEvents.
	MaxEvents int64
	// MaxGoroutines bounds the goroutines that get a track of their own:
	// the events of the rest are not drawn (counted as dropped, and a
	// warning says so) while the Ps' tracks still show them run, and the
	// Go runtime's figures (event.Meta.GoRuntime) still count them. 0
	// means DefaultMaxGoroutines; negative, none.
	MaxGoroutines int
	// Progress, if set, is called every 65536 trace events with the count
	// so far.
	Progress func(events int64)
}

// Read reads a Go execution trace, gzip-compressed or not, into the event
// model: Decode into an event.Builder. An unreadable file (not a Go
// trace, a format of a Go version golang.org/x/exp/trace does not read, a
// damaged one) is an error that says which.
func Read(r io.Reader, o Options) (*event.Snapshot, error) {
	b := event.NewBuilder(event.Meta{})
	if err := Decode(r, b, o); err != nil {
		return nil, err
	}
	return b.Snapshot(), nil
}

// Decode reads a Go execution trace, gzip-compressed or not, into dst as
// it parses it: golang.org/x/exp/trace holds one generation of the trace
// at a time and internal/gotrace keeps state for live goroutines only, so
// the file is never held whole. It keeps at most o.MaxEvents events (the
// collector's slices go on past the cut, CollectorEvents more) and gives
// at most o.MaxGoroutines goroutines a track; what either bound leaves
// out is counted as dropped and a warning names the flag that raises it,
// while dst.Meta().GoRuntime gets the Go runtime's figures over the
// whole file. It fills the rest of dst.Meta() too: the time span, drops,
// warnings, a note. An unreadable file is an error, with nothing in
// dst's Meta; a trace cut short is read up to where it ends, with a
// warning.
func Decode(r io.Reader, dst event.Sink, o Options) error {
	where := "go execution trace: "
	if o.Name != "" {
		where = o.Name + ": "
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var in io.Reader = br
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%snot a valid gzip stream: %w", where, err)
		}
		in = zr
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	maxGoroutines := o.MaxGoroutines
	if maxGoroutines == 0 {
		maxGoroutines = DefaultMaxGoroutines
	}
	// The program is named before the events come, for a sink that
	// writes rows as they do.
	if m := dst.Meta(); m.Program == "" {
		m.Program = "go program"
		if o.Name != "" {
			m.Program = filepath.Base(o.Name)
		}
	}
	k := &sink{b: dst, left: o.MaxEvents, collectorLeft: CollectorEvents}
	k.builder, _ = dst.(*event.Builder)
	// The wall clock's anchor goes into the metadata as soon as it is
	// read (the end sets it again, the same), for a sink that writes Unix
	// times as events come (tables.Export).
	anchor := func(off int64) { dst.Meta().Start = event.ClockAnchor{Wall: off} }
	res, err := gotrace.Convert(in, k, gotrace.Options{MaxGoroutines: maxGoroutines, Progress: o.Progress, Clock: anchor})
	if err != nil && res.Events == 0 {
		return fmt.Errorf("%s%w", where, err)
	}
	m := dst.Meta()
	if m.HostTracerLevel == 0 {
		m.HostTracerLevel = 3 // the level at which a session traces the Go runtime
	}
	m.MaxEvents = o.MaxEvents
	warn := func(code, text string) {
		m.Warnings = append(m.Warnings, event.Warning{Source: SourceName, Code: code, Text: text})
	}
	if err != nil {
		// What was read stays: a trace cut short (a process that died
		// mid-write) still shows up to where it ends.
		warn("truncated", fmt.Sprintf("the trace ends early: %v", err))
	}
	if res.Dropped > 0 {
		limit := fmt.Sprintf("past the %d-goroutine row limit", maxGoroutines)
		if maxGoroutines < 0 {
			limit = "with goroutine rows off"
		}
		warn("max_goroutines", fmt.Sprintf(
			"%d events of %d goroutines %s not drawn (raise with -max_goroutines N); the Go runtime's counts cover every goroutine",
			res.Dropped, res.Goroutines-res.Tracks, limit))
	}
	if k.dropped > 0 {
		// The first MaxEvents are kept, not the last: the builder appends,
		// and the start of a trace is where its goroutines get their
		// names. The collector's slices go on past the cut (their own
		// budget), and the Go runtime's counts cover the whole file.
		warn("max_events", fmt.Sprintf(
			"kept the first %d events, up to %.3f s into the trace's %.3f s; %d later events not drawn (raise with -max_events N, at about %d bytes of memory each); the Go runtime's counts cover the whole file",
			o.MaxEvents, float64(k.cutAt-res.First)/1e9, float64(res.Last-res.First)/1e9, k.dropped, BytesPerEvent))
	}
	m.AddDrops(SourceName, k.dropped+res.Dropped)
	m.Notes = append(m.Notes, event.Note{Source: SourceName, Text: fmt.Sprintf("Go execution trace: %d events; %d GCs, %d stop-the-world pauses, %d goroutines", res.Events, res.GCs, res.Pauses, res.Goroutines)})
	m.GoRuntime = res.Summary.GoRuntime()
	// The trace's clock is the runtime's monotonic clock; its clock
	// snapshot (Go 1.25 and later) anchors it to the wall clock.
	m.Start = event.ClockAnchor{Mono: res.First, Boot: res.First}
	m.Stop = event.ClockAnchor{Mono: res.Last, Boot: res.Last}
	if res.Clock.Wall != 0 {
		m.Start.Wall = res.Clock.Wall - (res.Clock.Trace - res.First)
		m.Stop.Wall = res.Clock.Wall + (res.Last - res.Clock.Trace)
	}
	return nil
}

// sink writes the trace into an event.Sink, keeping at most left events.
type sink struct {
	b event.Sink
	// builder is b when b is a Builder, whose BeginTrackSlice begins a
	// slice without the Span that the Sink interface's Span takes, and
	// whose EndSpan is called directly, not through the interface (a
	// trace's millions of slices).
	builder *event.Builder
	left    int64
	dropped int64
	cutAt   int64 // trace time of the first event dropped
	// gcTrack and stwTrack are the tracks of GC cycles and pauses (0
	// until registered), whose slices have a budget of their own
	// (CollectorEvents).
	gcTrack, stwTrack uint32
	collectorLeft     int64
}

func (k *sink) room(t int64) bool {
	if k.left <= 0 {
		if k.dropped == 0 {
			k.cutAt = t
		}
		k.dropped++
		return false
	}
	k.left--
	return true
}

// CollectorEvents is how many slices of the collector's tracks (GC
// cycles and stop-the-world pauses, a few per cycle) are kept past
// MaxEvents: the pauses a user converts a trace to find stay whole after
// the goroutines' rows are cut, at about 20 MB at most.
const CollectorEvents = 100_000

func (k *sink) Track(t event.Track) uint32 {
	id := k.b.Track(t)
	switch t.Name {
	case gotrace.TrackGC:
		k.gcTrack = id
	case gotrace.TrackSTW:
		k.stwTrack = id
	}
	return id
}

// collector reports whether track is the GC cycles' or the pauses'.
func (k *sink) collector(track uint32) bool {
	return track != 0 && (track == k.gcTrack || track == k.stwTrack)
}

func (k *sink) RenameTrack(id uint32, name string) { k.b.SetTrackName(id, name) }

func (k *sink) Slice(track uint32, parent uint64, name string, start, end int64, args []event.Arg) uint64 {
	if k.left <= 0 && k.collector(track) && k.collectorLeft > 0 {
		k.collectorLeft--
	} else if !k.room(start) {
		return 0
	}
	if parent == 0 {
		return k.b.TrackSlice(track, name, start, end, args)
	}
	return k.b.Span(event.Span{Name: name, Start: start, End: end, Parent: parent, Track: track, Args: args})
}

func (k *sink) Begin(track uint32, name string, start int64, args []event.Arg) uint64 {
	if k.left <= 0 && k.collector(track) && k.collectorLeft > 0 {
		k.collectorLeft--
	} else if !k.room(start) {
		return 0
	}
	if k.builder != nil {
		return k.builder.BeginTrackSlice(track, name, start, args)
	}
	return k.b.Span(event.Span{Name: name, Start: start, Track: track, Args: args, Unfinished: true})
}

func (k *sink) End(id uint64, end int64) {
	if k.builder != nil {
		k.builder.EndSpan(id, end)
		return
	}
	k.b.EndSpan(id, end)
}

func (k *sink) Instant(track uint32, name string, t int64, args []event.Arg) {
	if k.room(t) {
		k.b.Instant(name, t, track, 0, args)
	}
}

func (k *sink) Counter(name, unit string, t int64, v float64) {
	if k.room(t) {
		k.b.Counter(name, unit, t, v)
	}
}
