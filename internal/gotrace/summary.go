package gotrace

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
)

// Summary is what a trace shows of the Go runtime: devprof summary's
// section. When the reader of a Go execution trace counted it over the
// whole file (event.Meta.GoRuntime) it is exact whatever bounds cut the
// tracks; otherwise it is counted from the tracks Convert writes, so
// that it reads the same from a session's snapshot and from any file
// written of it.
type Summary struct {
	// GCs counts GC cycles (slices on TrackGC named SliceGC); GCTotal is
	// their total length, in ns.
	GCs     int
	GCTotal int64
	// Pauses counts stop-the-world pauses; PauseTotal and PauseMax are
	// their total and longest, in ns.
	Pauses               int
	PauseTotal, PauseMax int64
	// Assists counts mark assists (RangeMarkAssist slices on goroutine
	// tracks); AssistTotal is their total length, in ns.
	Assists     int
	AssistTotal int64
	// Goroutines counts goroutines (their tracks, when counted from
	// tracks); PeakGoroutines is the most that existed at once (the
	// highest CounterGoroutines sample when counted from tracks; 0
	// without samples).
	Goroutines, PeakGoroutines int
	// CPUSamples counts CPU profile samples (InstantCPUSample).
	CPUSamples int
	// Exact reports that the figures cover the whole file as its reader
	// counted them, not only what its tracks hold.
	Exact bool
	// Regions are runtime/trace user regions by name, longest total
	// first.
	Regions []RegionStat
	// Tasks are runtime/trace user tasks by type, longest total first.
	Tasks []RegionStat
}

// RegionStat is one user region (or task) name's count and total time
// (ns).
type RegionStat struct {
	Name  string
	Count int
	Total int64
}

// RangeMarkAssist is the name of a goroutine's mark-assist slice, as
// the runtime names the range.
const RangeMarkAssist = "GC mark assist"

var goroutineTrack = regexp.MustCompile(`^G[0-9]+( |$)`)

// RuntimeTracks returns the ids (index+1 into s.Tracks) of the tracks
// Convert writes, or nil when s has none of them (no Go runtime track
// of its process named TrackGC, TrackSTW or a P's). Goroutine tracks
// ("G12 main.worker") count only beside those, in the same process, so
// that another tool's threads named so are left alone.
func RuntimeTracks(s *event.Snapshot) map[uint32]bool {
	procs := map[int]bool{}
	for _, t := range s.Tracks {
		if t.Kind == event.TrackHostThread && marksRuntime(t.Name) {
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
		if roleOf(t.Name) != roleOther {
			ids[uint32(i+1)] = true
		}
	}
	return ids
}

// marksRuntime reports whether a host thread's track of this name shows
// that its process has the Go runtime's tracks.
func marksRuntime(name string) bool {
	return name == TrackGC || name == TrackSTW || isProcTrack(name)
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

// role is what a track is to the summary.
type role uint8

const (
	roleOther role = iota
	roleGC
	roleSTW
	roleTasks
	roleProc
	roleGoroutine
)

func roleOf(name string) role {
	switch {
	case name == TrackGC:
		return roleGC
	case name == TrackSTW:
		return roleSTW
	case name == TrackTasks:
		return roleTasks
	case isProcTrack(name):
		return roleProc
	case goroutineTrack.MatchString(name):
		return roleGoroutine
	}
	return roleOther
}

// Summarizer accumulates a Summary from a stream — what an event.Sink
// receives — without a Snapshot. It keeps per-name totals and one entry
// per runtime track, never events, so its memory does not grow with the
// trace's length. Tracks count only in a process that has the runtime's
// own tracks (TrackGC, TrackSTW or a P's), as in RuntimeTracks; since a
// stream may name that track after the others, figures are kept per
// process and the choice is made in Result. The zero value is ready to
// use.
type Summarizer struct {
	tracks map[uint32]trackInfo
	procs  map[int]*procFigures
	// peak is the highest CounterGoroutines sample, of any process, as
	// Summarize has always read it.
	peak int
}

type trackInfo struct {
	role    role
	process int
}

// procFigures are one process's figures.
type procFigures struct {
	runtime bool // it has a track that marksRuntime
	sum     Summary
	gids    map[string]bool // goroutines with a track, by "G<id>" (a file read back may split one over several tracks)
	regions map[string]*RegionStat
	tasks   map[string]*RegionStat
}

func (z *Summarizer) proc(n int) *procFigures {
	if z.procs == nil {
		z.procs = map[int]*procFigures{}
	}
	p := z.procs[n]
	if p == nil {
		p = &procFigures{gids: map[string]bool{}, regions: map[string]*RegionStat{}, tasks: map[string]*RegionStat{}}
		z.procs[n] = p
	}
	return p
}

// Track registers track id, as a Sink's Track returned it. A track
// renamed later (a goroutine's, once its start function is known) is
// registered again under its new name.
func (z *Summarizer) Track(id uint32, t event.Track) {
	if t.Kind != event.TrackHostThread {
		return
	}
	r := roleOf(t.Name)
	if r == roleOther {
		if z.tracks != nil {
			delete(z.tracks, id)
		}
		return
	}
	if z.tracks == nil {
		z.tracks = map[uint32]trackInfo{}
	}
	z.tracks[id] = trackInfo{role: r, process: t.Process}
	p := z.proc(t.Process)
	p.runtime = p.runtime || marksRuntime(t.Name)
	if r == roleGoroutine {
		p.gids[strings.TrimSpace(goroutineTrack.FindString(t.Name))] = true
	}
}

// Span counts a finished span on a registered track (ended: a span that
// never ended counts with the trace's end). args are the span's; a
// session's link from a span to its goroutine (it carries ArgGoroutine)
// is not a region.
func (z *Summarizer) Span(track uint32, name string, start, end int64, args []event.Arg) {
	ti, ok := z.tracks[track]
	if !ok {
		return
	}
	p := z.proc(ti.process)
	d := end - start
	switch ti.role {
	case roleGC:
		if name == SliceGC {
			p.sum.GCs++
			p.sum.GCTotal += d
		}
	case roleSTW:
		if strings.HasPrefix(name, STWPrefix) {
			p.sum.Pauses++
			p.sum.PauseTotal += d
			p.sum.PauseMax = max(p.sum.PauseMax, d)
		}
	case roleTasks:
		add(p.tasks, name, d)
	case roleGoroutine:
		switch {
		case name == RangeMarkAssist:
			p.sum.Assists++
			p.sum.AssistTotal += d
		case !IsState(name) && !hasArg(args, ArgGoroutine):
			add(p.regions, name, d)
		}
	}
}

func add(m map[string]*RegionStat, name string, d int64) {
	rs := m[name]
	if rs == nil {
		rs = &RegionStat{Name: name}
		m[name] = rs
	}
	rs.Count++
	rs.Total += d
}

// Instant counts a point event on a registered track (CPU samples).
func (z *Summarizer) Instant(track uint32, name string, t int64) {
	if ti, ok := z.tracks[track]; ok && ti.role == roleGoroutine && name == InstantCPUSample {
		z.proc(ti.process).sum.CPUSamples++
	}
}

// Counter counts a counter sample, of track's series or (track 0) of
// the program's.
func (z *Summarizer) Counter(track uint32, name string, t int64, v float64) {
	if name == CounterGoroutines {
		z.peak = max(z.peak, int(v))
	}
}

// Result returns the Go runtime's summary: the reader's exact figures
// when m holds them (event.Meta.GoRuntime), else those of the tracks
// seen, and false when there were neither.
func (z *Summarizer) Result(m *event.Meta) (Summary, bool) {
	if m != nil && m.GoRuntime != nil {
		return FromMeta(m.GoRuntime), true
	}
	var sum Summary
	regions, tasks := map[string]*RegionStat{}, map[string]*RegionStat{}
	found := false
	for _, n := range slices.Sorted(maps.Keys(z.procs)) {
		p := z.procs[n]
		if !p.runtime {
			continue
		}
		found = true
		sum.GCs += p.sum.GCs
		sum.GCTotal += p.sum.GCTotal
		sum.Pauses += p.sum.Pauses
		sum.PauseTotal += p.sum.PauseTotal
		sum.PauseMax = max(sum.PauseMax, p.sum.PauseMax)
		sum.Assists += p.sum.Assists
		sum.AssistTotal += p.sum.AssistTotal
		sum.CPUSamples += p.sum.CPUSamples
		sum.Goroutines += len(p.gids)
		for _, rs := range p.regions {
			add(regions, rs.Name, 0)
			regions[rs.Name].Count += rs.Count - 1
			regions[rs.Name].Total += rs.Total
		}
		for _, rs := range p.tasks {
			add(tasks, rs.Name, 0)
			tasks[rs.Name].Count += rs.Count - 1
			tasks[rs.Name].Total += rs.Total
		}
	}
	if !found {
		return Summary{}, false
	}
	sum.PeakGoroutines = z.peak
	sum.Regions = sortedStats(regions)
	sum.Tasks = sortedStats(tasks)
	return sum, true
}

// sortedStats lists stats longest total first (then by name).
func sortedStats(m map[string]*RegionStat) []RegionStat {
	out := make([]RegionStat, 0, len(m))
	for _, rs := range m {
		out = append(out, *rs)
	}
	slices.SortFunc(out, func(a, b RegionStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// FromMeta returns the summary a reader's whole-file figures make.
func FromMeta(g *event.GoRuntime) Summary {
	sum := Summary{
		GCs: g.GCs, GCTotal: g.GCTotal,
		Pauses: g.Pauses, PauseTotal: g.PauseTotal, PauseMax: g.PauseMax,
		Assists: g.Assists, AssistTotal: g.AssistTotal,
		Goroutines: g.Goroutines, PeakGoroutines: g.PeakGoroutines,
		CPUSamples: g.CPUSamples, Exact: true,
	}
	regions, tasks := map[string]*RegionStat{}, map[string]*RegionStat{}
	for _, r := range g.Regions {
		regions[r.Name] = &RegionStat{Name: r.Name, Count: r.Count, Total: r.Total}
	}
	for _, r := range g.Tasks {
		tasks[r.Name] = &RegionStat{Name: r.Name, Count: r.Count, Total: r.Total}
	}
	sum.Regions, sum.Tasks = sortedStats(regions), sortedStats(tasks)
	return sum
}

// Summarize returns the Go runtime's summary of s (see Summarizer), and
// false when s has neither the reader's figures nor Go runtime tracks.
func Summarize(s *event.Snapshot) (Summary, bool) {
	var z Summarizer
	if s.Meta.GoRuntime != nil {
		return z.Result(&s.Meta)
	}
	for i, t := range s.Tracks {
		z.Track(uint32(i+1), t)
	}
	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindCounter:
			_, v := s.Counter(r)
			z.Counter(0, s.Name(r), r.Start(), v)
		case event.KindInstant:
			if r.OnTrack() {
				z.Instant(r.Lane(), s.Name(r), r.Start())
			}
		case event.KindSpan:
			if !r.OnTrack() {
				continue
			}
			if _, ok := z.tracks[r.Lane()]; !ok {
				continue
			}
			end, _ := s.EndOf(r)
			z.Span(r.Lane(), s.Name(r), r.Start(), end, s.Args(r))
		}
	}
	return z.Result(nil)
}

// hasArg reports whether args hold one with key k.
func hasArg(args []event.Arg, k string) bool {
	for _, a := range args {
		if a.Key == k {
			return true
		}
	}
	return false
}

// GoRuntime is the summary as the model carries it (event.Meta.GoRuntime),
// for a reader or a session to put in the snapshot's metadata.
func (s *Summary) GoRuntime() *event.GoRuntime {
	g := &event.GoRuntime{
		GCs: s.GCs, GCTotal: s.GCTotal,
		Pauses: s.Pauses, PauseTotal: s.PauseTotal, PauseMax: s.PauseMax,
		Assists: s.Assists, AssistTotal: s.AssistTotal,
		Goroutines: s.Goroutines, PeakGoroutines: s.PeakGoroutines,
		CPUSamples: s.CPUSamples,
	}
	for _, r := range s.Regions {
		g.Regions = append(g.Regions, event.GoRegion{Name: r.Name, Count: r.Count, Total: r.Total})
	}
	for _, r := range s.Tasks {
		g.Tasks = append(g.Tasks, event.GoRegion{Name: r.Name, Count: r.Count, Total: r.Total})
	}
	return g
}
