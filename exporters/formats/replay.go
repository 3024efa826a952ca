package formats

import (
	"github.com/devprof/devprof/event"
)

// Replay writes the snapshot s into sink as a reader would have: its
// metadata, processes and tracks, then its events in s.Events order
// (the order its reader added them), each span's parent and track
// translated to the ids sink gives. It is how a format whose reader
// cannot stream yet feeds a Sink (Format.StreamFile).
//
// A Builder fed this way builds s again, but for two facts the model
// does not keep: a span on a track that its reader added as a
// TrackSlice comes back as a Span (which matters only to a child of it
// on no track, whose lane it then shares), and a recording's own lanes
// come back as a Builder numbers them (one per tree of spans).
func Replay(s *event.Snapshot, sink event.Sink) {
	m := sink.Meta()
	*m = s.Meta
	m.Drops = append([]event.Drops(nil), s.Meta.Drops...)
	m.Warnings = append([]event.Warning(nil), s.Meta.Warnings...)
	m.Notes = append([]event.Note(nil), s.Meta.Notes...)
	procs := make([]int, len(s.Processes)+1) // process number in s -> in sink
	for i, p := range s.Processes {
		p.Labels = append([]string(nil), p.Labels...)
		procs[i+1] = sink.Process(p)
	}
	tracks := make([]uint32, len(s.Tracks)+1) // track id in s -> in sink
	for i, t := range s.Tracks {
		if t.Process > 0 && t.Process < len(procs) {
			t.Process = procs[t.Process]
		}
		tracks[i+1] = sink.Track(t)
	}
	track := func(r *event.Record) uint32 {
		if r.Kind() != event.KindActivity && !r.OnTrack() || int(r.Lane()) >= len(tracks) {
			return 0
		}
		return tracks[r.Lane()]
	}
	// Span id in s -> in sink: a Builder numbers its records densely,
	// so a slice by id, with a map for any id far past the count.
	dense := make([]uint64, len(s.Events)+1)
	var sparse map[uint64]uint64
	setID := func(id, to uint64) {
		if id < uint64(len(dense)) {
			dense[id] = to
			return
		}
		if sparse == nil {
			sparse = map[uint64]uint64{}
		}
		sparse[id] = to
	}
	idOf := func(id uint64) uint64 {
		if id < uint64(len(dense)) {
			return dense[id]
		}
		return sparse[id]
	}
	var args []event.Arg
	for _, r := range s.Events {
		args = s.AppendArgs(args[:0], r)
		name := s.Name(r)
		switch r.Kind() {
		case event.KindSpan:
			sp := event.Span{Name: name, Start: r.Start(), Parent: idOf(r.Parent()), Track: track(r), Args: args,
				Step: r.IsStep(), StepNum: r.StepNum()}
			end, finished := s.EndOf(r)
			sp.End, sp.Unfinished = end, !finished
			setID(r.ID(), sink.Span(sp))
		case event.KindActivity:
			end, _ := s.EndOf(r)
			setID(r.ID(), sink.ActivityOf(r.Activity(), track(r), name, r.Start(), end, args))
		case event.KindInstant:
			sink.Instant(name, r.Start(), track(r), idOf(r.Parent()), args)
		case event.KindCounter:
			unit, v := s.Counter(r)
			if t := track(r); t != 0 {
				sink.TrackCounter(t, name, unit, r.Start(), v)
			} else {
				sink.Counter(name, unit, r.Start(), v)
			}
		}
	}
}
