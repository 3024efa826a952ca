package main

import (
	"fmt"
	"math"
	"os"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// collectedHost is one host's trace as devprof collect read it back from
// its <host>.xplane.pb.
type collectedHost struct {
	name string // the address as given (127.0.0.1:9999)
	snap *event.Snapshot
}

// mergeHosts makes one snapshot of the hosts' traces with one process per
// host, named after the host, holding that host's threads (and the
// host's own other processes as processes named "<host>: <name>").
//
// Clocks: an XSpace's times are wall-clock (Unix) nanoseconds; the reader
// gives them back relative to the profile start with Meta.Start.Wall the
// start's wall-clock time. Each host's events are moved onto one timeline
// by that wall-clock start: a time t of host h becomes
// t - h.Start.Mono + (h.Start.Wall - earliest Start.Wall), so the merged
// timeline starts at the earliest host's start and Meta.Start.Wall is its
// wall-clock time. Hosts are thereby aligned exactly as well as their
// wall clocks agree (on one machine exactly; across machines, NTP's
// skew remains; nothing better is in an XSpace).
//
// Devices keep their streams but are renumbered so that each host's
// devices stay apart, their names prefixed with the host; flow ids are
// kept apart per host the same way. Counters that belong to no track
// (process-wide) are named "<host>: <counter>".
//
// The trace's own process is the collector ("devprof collect"): it holds
// the hosts' warnings, notes and drops (each prefixed with its host),
// and one span per host, "capture <host>", over the window that host
// recorded, with what it returned (its program, pid, events kept and
// dropped) — so the collector's row says when each host captured and how
// the windows line up, instead of being an empty process.
func mergeHosts(hosts []collectedHost) *event.Snapshot {
	s, _ := mergeHostsFrom(len(hosts),
		func(i int) (event.Meta, error) { return hosts[i].snap.Meta, nil },
		func(i int) (collectedHost, error) { return hosts[i], nil })
	return s
}

// mergeHostFiles merges the hosts' traces in the XSpace files at paths
// (names[i] is the address paths[i] came from) as mergeHosts does,
// reading one file at a time (see mergeHostsFrom). A file that cannot be
// read is left out, with an error naming its host.
func mergeHostFiles(names, paths []string) (*event.Snapshot, []error) {
	fail := func(i int, err error) error {
		return fmt.Errorf("%s: the xplane it sent cannot be read back: %w", names[i], err)
	}
	return mergeHostsFrom(len(paths),
		func(i int) (event.Meta, error) {
			var m metaOnly
			if err := formats.XPlane.StreamFile(paths[i], &m, formats.ReadOptions{}); err != nil {
				return event.Meta{}, fail(i, err)
			}
			return m.meta, nil
		},
		func(i int) (collectedHost, error) {
			s, err := formats.XPlane.ReadFile(paths[i], nil)
			if err != nil {
				return collectedHost{}, fail(i, err)
			}
			return collectedHost{name: names[i], snap: s}, nil
		})
}

// mergeHostsFrom makes one snapshot of n hosts' traces as mergeHosts
// describes, holding one host's trace at a time beside the merged one:
// meta(i) is host i's metadata, asked of every host first (the merged
// timeline starts at the earliest host's start, which every event's
// place depends on), and host(i) its trace, asked for in turn, merged
// and let go. A host either fails for is left out, its error returned.
func mergeHostsFrom(n int, meta func(i int) (event.Meta, error), host func(i int) (collectedHost, error)) (*event.Snapshot, []error) {
	var errs []error
	var ok []int // the hosts whose metadata read
	base := int64(math.MaxInt64)
	metas := make([]event.Meta, n)
	for i := range n {
		m, err := meta(i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.Drops, m.Warnings, m.Notes = nil, nil, nil // the trace's own are merged from it
		metas[i] = m
		ok = append(ok, i)
		base = min(base, m.Start.Wall)
	}
	if len(ok) == 0 {
		base = 0
	}
	local, _ := os.Hostname()
	merged := event.Meta{Host: local, PID: os.Getpid(), Program: "devprof collect",
		Start: event.ClockAnchor{Mono: 0, Boot: base, Wall: base}}
	var stop int64
	for _, i := range ok {
		m := &metas[i]
		stop = max(stop, m.Stop.Mono-m.Start.Mono+m.Start.Wall-base)
		merged.HostTracerLevel = max(merged.HostTracerLevel, m.HostTracerLevel)
		merged.DeviceTracerLevel = max(merged.DeviceTracerLevel, m.DeviceTracerLevel)
		merged.MaxEvents += m.MaxEvents
	}
	merged.Stop = event.ClockAnchor{Mono: stop, Boot: base + stop, Wall: base + stop}
	b := event.NewBuilder(merged)
	nextDevice := 0
	hi := 0
	for _, i := range ok {
		h, err := host(i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mergeHost(b, hi, h, base, &nextDevice)
		captureWindow(b, h, base)
		hi++
	}
	return b.Snapshot(), errs
}

// metaOnly is an event.Sink that keeps a trace's metadata and nothing
// else: how mergeHostFiles learns a host's clock anchors without holding
// its events.
type metaOnly struct {
	ids  uint64
	meta event.Meta
}

func (m *metaOnly) next() uint64                                        { m.ids++; return m.ids }
func (m *metaOnly) Track(event.Track) uint32                            { return uint32(m.next()) }
func (m *metaOnly) SetTrackName(uint32, string)                         {}
func (m *metaOnly) Process(event.Process) int                           { return int(m.next()) }
func (m *metaOnly) ProcessTrack(int) uint32                             { return uint32(m.next()) }
func (m *metaOnly) Span(event.Span) uint64                              { return m.next() }
func (m *metaOnly) EndSpan(uint64, int64)                               {}
func (m *metaOnly) Instant(string, int64, uint32, uint64, []event.Arg)  {}
func (m *metaOnly) Counter(string, string, int64, float64)              {}
func (m *metaOnly) TrackCounter(uint32, string, string, int64, float64) {}
func (m *metaOnly) Meta() *event.Meta                                   { return &m.meta }
func (m *metaOnly) Reset()                                              { *m = metaOnly{} }
func (m *metaOnly) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	return m.next()
}
func (m *metaOnly) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	return m.next()
}

// captureWindow adds the collector's span for host h's capture window
// (see mergeHosts).
func captureWindow(b *event.Builder, h collectedHost, base int64) {
	m := &h.snap.Meta
	start := m.Start.Wall - base
	args := []event.Arg{
		{Key: "host", Kind: event.ArgString, Str: h.name},
		{Key: "program", Kind: event.ArgString, Str: m.Program},
		{Key: "pid", Kind: event.ArgInt, Num: uint64(m.PID)},
		{Key: "events", Kind: event.ArgInt, Num: uint64(len(h.snap.Events))},
		{Key: "dropped", Kind: event.ArgInt, Num: uint64(m.Dropped())},
	}
	if m.Host != "" && m.Host != h.name {
		args = append(args, event.Arg{Key: "hostname", Kind: event.ArgString, Str: m.Host})
	}
	b.Span(event.Span{Name: "capture " + h.name, Start: start, End: start + m.Stop.Mono - m.Start.Mono, Args: args})
}

// flowHostShift keeps the flow ids of different hosts apart: host i's
// flow ids get i in their top byte.
const flowHostShift = 56

// mergeHost adds one host's events to b (see mergeHosts).
func mergeHost(b *event.Builder, hi int, h collectedHost, base int64, nextDevice *int) {
	s := h.snap
	m := &s.Meta
	shift := m.Start.Wall - base - m.Start.Mono
	labels := []string{fmt.Sprintf("program %s", m.Program)}
	if m.Host != "" && m.Host != h.name {
		labels = append(labels, "host "+m.Host)
	}
	main := b.Process(event.Process{PID: int64(m.PID), Name: h.name, Labels: labels,
		SortIndex: int64(hi), Sorted: true})
	procs := make([]int, len(s.Processes))
	for i, p := range s.Processes {
		p.Name = h.name + ": " + p.Name
		p.Sorted = false // hosts are ordered; their own processes follow the UI's order
		procs[i] = b.Process(p)
	}
	devices := map[int]int{}
	device := func(d int) int {
		if d < 0 {
			return d
		}
		n, ok := devices[d]
		if !ok {
			n = *nextDevice
			*nextDevice++
			devices[d] = n
		}
		return n
	}
	tracks := make([]uint32, len(s.Tracks))
	for i, t := range s.Tracks {
		switch t.Kind {
		case event.TrackHostThread, event.TrackProcess:
			if t.Process > 0 && t.Process <= len(procs) {
				t.Process = procs[t.Process-1]
			} else {
				t.Process = main
			}
		default:
			t.Device = device(t.Device)
			if t.DeviceName != "" {
				t.DeviceName = h.name + ": " + t.DeviceName
			} else {
				t.DeviceName = h.name
			}
		}
		tracks[i] = b.Track(t)
	}
	// Spans the recorder kept on its implicit lanes (no track) go onto a
	// thread of the host's process per lane.
	lanes := map[uint32]uint32{}
	lane := func(l uint32) uint32 {
		id, ok := lanes[l]
		if !ok {
			id = b.Track(event.Track{Kind: event.TrackHostThread, ID: int64(l), Name: fmt.Sprintf("lane %d", l), Process: main})
			lanes[l] = id
		}
		return id
	}
	trackOf := func(r *event.Record) uint32 {
		if r.OnTrack() || r.Kind() == event.KindActivity {
			if r.Lane() > 0 && int(r.Lane()) <= len(tracks) {
				return tracks[r.Lane()-1]
			}
			return 0
		}
		return lane(r.Lane())
	}
	ids := map[uint64]uint64{}
	var args []event.Arg
	for _, r := range s.Events {
		args = s.AppendArgs(args[:0], r)
		for i := range args {
			if args[i].Kind == event.ArgFlow {
				args[i].Num = args[i].Num&(1<<flowHostShift-1) | uint64(hi)<<flowHostShift
			}
		}
		// JAX repeats stat keys (_src); the merged trace keeps them apart
		// as the writers would ("_src (2)"), so the model says what the
		// file says.
		args = event.UniqueKeys(args)
		name := s.Name(r)
		start := r.Start() + shift
		switch r.Kind() {
		case event.KindSpan:
			end, finished := s.EndOf(r)
			ids[r.ID()] = b.Span(event.Span{Name: name, Start: start, End: end + shift, Parent: ids[r.Parent()],
				Track: trackOf(r), Args: args, Step: r.IsStep(), StepNum: r.StepNum(), Unfinished: !finished})
		case event.KindInstant:
			var track uint32
			if r.OnTrack() || r.Parent() == 0 {
				track = trackOf(r)
			}
			b.Instant(name, start, track, ids[r.Parent()], args)
		case event.KindCounter:
			unit, v := s.Counter(r)
			if r.OnTrack() {
				if t := trackOf(r); t != 0 {
					b.TrackCounter(t, name, unit, start, v)
				}
				continue
			}
			b.Counter(h.name+": "+name, unit, start, v)
		case event.KindActivity:
			end, _ := s.EndOf(r)
			if t := trackOf(r); t != 0 {
				ids[r.ID()] = b.ActivityOf(r.Activity(), t, name, start, end+shift, args)
			}
		}
	}
	for _, d := range m.Drops {
		b.AddDrops(h.name+": "+d.Source, d.Events)
	}
	for _, w := range m.Warnings {
		w.Text = h.name + ": " + w.Text
		b.Warn(w)
	}
	for _, n := range m.Notes {
		n.Text = h.name + ": " + n.Text
		b.Note(n)
	}
}
