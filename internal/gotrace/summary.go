package gotrace

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
)

// Summary is what a snapshot shows of the Go runtime: devprof summary's
// section, computed from the tracks Convert writes, so that it reads the
// same from a session's snapshot and from any file written of it.
type Summary struct {
	// GCs counts GC cycles (slices on TrackGC named SliceGC).
	GCs int
	// Pauses counts stop-the-world pauses; PauseTotal and PauseMax are
	// their total and longest, in ns.
	Pauses               int
	PauseTotal, PauseMax int64
	// Goroutines counts goroutine tracks; PeakGoroutines is the highest
	// CounterGoroutines sample (0 without samples).
	Goroutines, PeakGoroutines int
	// Regions are runtime/trace user regions by name, longest total
	// first.
	Regions []RegionStat
}

// RegionStat is one user region name's count and total time (ns).
type RegionStat struct {
	Name  string
	Count int
	Total int64
}

var goroutineTrack = regexp.MustCompile(`^G[0-9]+( |$)`)

// RuntimeTracks returns the ids (index+1 into s.Tracks) of the tracks
// Convert writes, or nil when s has none of them (no Go runtime track
// of its process named TrackGC, TrackSTW or a P's). Goroutine tracks
// ("G12 main.worker") count only beside those, in the same process, so
// that another tool's threads named so are left alone.
func RuntimeTracks(s *event.Snapshot) map[uint32]bool {
	procs := map[int]bool{}
	for _, t := range s.Tracks {
		if t.Kind == event.TrackHostThread && (t.Name == TrackGC || t.Name == TrackSTW || isProcTrack(t.Name)) {
			procs[t.Process] = true
		}
	}
	if len(procs) == 0 {
		return nil
	}
	ids := map[uint32]bool{}
	for i, t := range s.Tracks {
		if t.Kind != event.TrackHostThread || !procs[t.Process] {
			continue
		}
		if t.Name == TrackGC || t.Name == TrackSTW || t.Name == TrackTasks || isProcTrack(t.Name) || goroutineTrack.MatchString(t.Name) {
			ids[uint32(i+1)] = true
		}
	}
	return ids
}

func isProcTrack(name string) bool {
	rest, ok := strings.CutPrefix(name, ProcPrefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsState reports whether name is one of the goroutine states Convert
// writes on a goroutine's track ("running", "blocked: chan receive", …)
// or a range of the runtime's own (mark assist, sweep), rather than a
// user region.
func IsState(name string) bool {
	switch name {
	case "running", "runnable", "syscall", "blocked", InstantCPUSample:
		return true
	}
	return strings.HasPrefix(name, "blocked: ") || strings.HasPrefix(name, "GC ") || strings.HasPrefix(name, "stop-the-world")
}

// Summarize returns the Go runtime's summary of s, and false when s has
// no Go runtime tracks.
func Summarize(s *event.Snapshot) (Summary, bool) {
	ids := RuntimeTracks(s)
	if ids == nil {
		return Summary{}, false
	}
	var sum Summary
	regions := map[string]*RegionStat{}
	// A file read back may hold a goroutine's overflow rows as tracks of
	// their own ("G12 main.worker (2)"): goroutines count by id.
	gids := map[string]bool{}
	for id := range ids {
		if m := goroutineTrack.FindString(s.Tracks[id-1].Name); m != "" {
			gids[strings.TrimSpace(m)] = true
		}
	}
	sum.Goroutines = len(gids)
	for _, r := range s.Events {
		if r.Kind == event.KindCounter {
			if s.Name(r) == CounterGoroutines {
				_, v := s.Counter(r)
				sum.PeakGoroutines = max(sum.PeakGoroutines, int(v))
			}
			continue
		}
		if r.Kind != event.KindSpan || r.Flags&event.FlagOnTrack == 0 || !ids[r.Lane] {
			continue
		}
		t := s.Tracks[r.Lane-1]
		name := s.Name(r)
		end, _ := s.EndOf(r)
		switch {
		case t.Name == TrackGC && name == SliceGC:
			sum.GCs++
		case t.Name == TrackSTW && strings.HasPrefix(name, STWPrefix):
			d := end - r.Start
			sum.Pauses++
			sum.PauseTotal += d
			sum.PauseMax = max(sum.PauseMax, d)
		case goroutineTrack.MatchString(t.Name) && !IsState(name) && !linked(s, r):
			rs := regions[name]
			if rs == nil {
				rs = &RegionStat{Name: name}
				regions[name] = rs
			}
			rs.Count++
			rs.Total += end - r.Start
		}
	}
	for _, rs := range regions {
		sum.Regions = append(sum.Regions, *rs)
	}
	slices.SortFunc(sum.Regions, func(a, b RegionStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return sum, true
}

// linked reports whether r is the slice a session adds under a span on
// the goroutine it began on (it carries ArgGoroutine), not a region.
func linked(s *event.Snapshot, r *event.Record) bool {
	for _, a := range s.Args(r) {
		if a.Key == ArgGoroutine {
			return true
		}
	}
	return false
}
