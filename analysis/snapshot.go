package analysis

import (
	"cmp"
	"slices"

	"github.com/devprof/devprof/event"
)

// Analyze analyzes a trace already in memory: it replays s into an
// Analyzer, as a reader would stream it, and returns the report.
func Analyze(s *event.Snapshot, opt Options) *Report {
	a := NewAnalyzer(s.Meta, opt)
	Replay(s, a)
	return a.Report()
}

// Replay writes the events of s into sink in the order a reader gives
// them: by start time, parents before children. Spans on no track (a
// session's lanes) go on a host-thread track of their own per lane,
// registered after s's tracks.
func Replay(s *event.Snapshot, sink event.Sink) {
	for _, p := range s.Processes {
		sink.Process(p)
	}
	ids := make([]uint32, len(s.Tracks))
	for i, t := range s.Tracks {
		ids[i] = sink.Track(t)
	}
	trackOf := func(r *event.Record) uint32 {
		if r.Lane() == 0 || int(r.Lane()) > len(ids) {
			return 0
		}
		return ids[r.Lane()-1]
	}
	lanes := map[uint32]uint32{}
	laneTrack := func(lane uint32) uint32 {
		id, ok := lanes[lane]
		if !ok {
			id = sink.Track(event.Track{Kind: event.TrackHostThread, ID: int64(lane)})
			lanes[lane] = id
		}
		return id
	}
	events := slices.Clone(s.Events)
	slices.SortStableFunc(events, func(x, y *event.Record) int {
		return cmp.Or(cmp.Compare(x.Start(), y.Start()), cmp.Compare(x.ID(), y.ID()))
	})
	ids2 := map[uint64]uint64{} // the snapshot's span IDs -> the sink's, for parents
	var args []event.Arg
	for _, r := range events {
		args = s.AppendArgs(args[:0], r)
		end, finished := s.EndOf(r)
		name := s.Name(r)
		switch r.Kind() {
		case event.KindSpan:
			sp := event.Span{Name: name, Start: r.Start(), End: end, Parent: ids2[r.Parent()], Args: args,
				Step: r.IsStep(), StepNum: r.StepNum(), Unfinished: !finished}
			if r.OnTrack() {
				sp.Track = trackOf(r)
			} else {
				sp.Track = laneTrack(r.Lane())
			}
			ids2[r.ID()] = sink.Span(sp)
		case event.KindActivity:
			sink.ActivityOf(r.Activity(), trackOf(r), name, r.Start(), end, args)
		case event.KindInstant:
			var track uint32
			if r.OnTrack() {
				track = trackOf(r)
			}
			sink.Instant(name, r.Start(), track, ids2[r.Parent()], args)
		case event.KindCounter:
			unit, v := s.Counter(r)
			if r.OnTrack() {
				sink.TrackCounter(trackOf(r), name, unit, r.Start(), v)
			} else {
				sink.Counter(name, unit, r.Start(), v)
			}
		}
	}
	*sink.Meta() = s.Meta
}
