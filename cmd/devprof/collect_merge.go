package main

import (
	"fmt"
	"math"
	"os"

	"github.com/devprof/devprof/event"
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
	base := int64(math.MaxInt64)
	for _, h := range hosts {
		base = min(base, h.snap.Meta.Start.Wall)
	}
	if len(hosts) == 0 {
		base = 0
	}
	local, _ := os.Hostname()
	meta := event.Meta{Host: local, PID: os.Getpid(), Program: "devprof collect",
		Start: event.ClockAnchor{Mono: 0, Boot: base, Wall: base}}
	var stop int64
	for _, h := range hosts {
		m := &h.snap.Meta
		stop = max(stop, m.Stop.Mono-m.Start.Mono+m.Start.Wall-base)
		meta.HostTracerLevel = max(meta.HostTracerLevel, m.HostTracerLevel)
		meta.DeviceTracerLevel = max(meta.DeviceTracerLevel, m.DeviceTracerLevel)
		meta.MaxEvents += m.MaxEvents
	}
	meta.Stop = event.ClockAnchor{Mono: stop, Boot: base + stop, Wall: base + stop}
	b := event.NewBuilder(meta)
	nextDevice := 0
	for hi, h := range hosts {
		mergeHost(b, hi, h, base, &nextDevice)
		captureWindow(b, h, base)
	}
	return b.Snapshot()
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
		if r.Flags&event.FlagOnTrack != 0 || r.Kind == event.KindActivity {
			if r.Lane > 0 && int(r.Lane) <= len(tracks) {
				return tracks[r.Lane-1]
			}
			return 0
		}
		return lane(r.Lane)
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
		start := r.Start + shift
		switch r.Kind {
		case event.KindSpan:
			end, finished := s.EndOf(r)
			ids[r.ID] = b.Span(event.Span{Name: name, Start: start, End: end + shift, Parent: ids[r.Parent],
				Track: trackOf(r), Args: args, Step: r.Flags&event.FlagStep != 0, StepNum: r.ID2, Unfinished: !finished})
		case event.KindInstant:
			var track uint32
			if r.Flags&event.FlagOnTrack != 0 || r.Parent == 0 {
				track = trackOf(r)
			}
			b.Instant(name, start, track, ids[r.Parent], args)
		case event.KindCounter:
			unit, v := s.Counter(r)
			if r.Flags&event.FlagOnTrack != 0 {
				if t := trackOf(r); t != 0 {
					b.TrackCounter(t, name, unit, start, v)
				}
				continue
			}
			b.Counter(h.name+": "+name, unit, start, v)
		case event.KindActivity:
			end, _ := s.EndOf(r)
			if t := trackOf(r); t != 0 {
				ids[r.ID] = b.ActivityOf(r.Activity(), t, name, start, end+shift, args)
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
