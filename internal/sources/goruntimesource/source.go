package goruntimesource

import (
	"bytes"
	"fmt"
	"io"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/goruntime"
)

// Source runs the Go execution tracer for one session.
type Source struct {
	buf   *recorder.Buffer
	opts  goruntime.Options
	fr    *trace.FlightRecorder
	start int64 // session monotonic ns at Start

	once   sync.Once
	report recorder.SourceReport
	stats  Stats
	cpuOn  bool             // this source started the CPU profiler
	cpu    *profile.Profile // the CPU samples, by span (Options.CPUProfile)
}

// Stats are the facts of the last Stop: what the parse read and made.
type Stats struct {
	gotrace.Stats
	// TraceBytes is the size of the execution trace parsed.
	TraceBytes int
	// Parse is how long the parse took.
	Parse time.Duration
	// Linked counts spans linked to the goroutine they began on;
	// Unlinked, spans whose goroutine the trace did not show.
	Linked, Unlinked int
	// Samples counts CPU profile samples (Options.CPUProfile); Attributed,
	// those that fell in a span.
	Samples, Attributed int
}

// Start starts the runtime's flight recorder for a session writing into
// buf. It fails when another flight recorder is running in the program
// (the runtime allows one); runtime/trace.Start (go test -trace) may run
// beside it.
func Start(buf *recorder.Buffer, o goruntime.Options) (*Source, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{
		// Everything since the session began, up to the byte bound.
		MinAge:   100 * 365 * 24 * time.Hour,
		MaxBytes: uint64(maxBytes(o)),
	})
	if err := fr.Start(); err != nil {
		return nil, fmt.Errorf("go runtime tracing: %w", err)
	}
	s := &Source{buf: buf, opts: o, fr: fr, start: recorder.Mono()}
	if o.CPUProfile {
		// The samples travel in the execution trace; the profiler's own
		// output is not needed.
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			s.warn("cpu_profile", "CPU samples are off: %v (the program's own CPU profile is running?)", err)
		} else {
			s.cpuOn = true
		}
	}
	return s, nil
}

// maxBytes is the flight recorder's window o asks for.
func maxBytes(o goruntime.Options) int64 {
	if o.MaxBytes == 0 {
		return goruntime.DefaultMaxBytes
	}
	return o.MaxBytes
}

// Stop takes the execution trace, stops the tracer and writes the trace's
// tracks into the buffer. Later calls return the first call's report.
func (s *Source) Stop() recorder.SourceReport {
	s.once.Do(s.stop)
	return s.report
}

// LastStats returns the facts of Stop (zero before it).
func (s *Source) LastStats() Stats { return s.stats }

func (s *Source) stop() {
	var tr bytes.Buffer
	_, err := s.fr.WriteTo(&tr)
	s.fr.Stop()
	if s.cpuOn {
		pprof.StopCPUProfile()
	}
	if err != nil {
		s.warn("snapshot", "the Go runtime is not shown: taking its execution trace failed: %v", err)
		return
	}
	s.stats.TraceBytes = tr.Len()
	t0 := time.Now()
	res, err := gotrace.Convert(&tr, &sink{b: s.buf, open: map[uint64]begunSlice{}}, gotrace.Options{MonoClock: true, MaxGoroutines: s.opts.MaxGoroutines, KeepRuns: true, KeepSamples: s.cpuOn})
	s.stats.Parse = time.Since(t0)
	s.stats.Stats = res.Stats
	if err != nil {
		s.warn("parse", "the Go runtime's execution trace is incomplete: %v", err)
	}
	s.report.Dropped += res.Dropped
	s.report.GoRuntime = res.Summary.GoRuntime()
	if res.Dropped > 0 {
		s.note("%d goroutines got a track of their own (GoRuntime.MaxGoroutines); %d events of the other %d are left out (the Ps' tracks still show them run)",
			res.Tracks, res.Dropped, res.Goroutines-res.Tracks)
	}
	// The flight recorder keeps a window: past its byte bound the oldest
	// part of the session is gone.
	if late := res.First - s.start; res.Events > 0 && late > int64(50*time.Millisecond) {
		s.warn("window", "the Go runtime is shown from %v after the session's start: its execution trace outgrew GoRuntime.MaxBytes (%d MiB, advanced key go_runtime_max_bytes)",
			time.Duration(late).Round(time.Millisecond), maxBytes(s.opts)>>20)
	}
	s.link(res)
	if s.cpuOn {
		s.stats.Samples = len(res.Samples)
		s.note("CPU profile: %d samples, %d of them in a span", s.stats.Samples, s.stats.Attributed)
	}
	s.note("Go execution trace: %d events (%d KiB) parsed in %v; %d GCs, %d stop-the-world pauses (%v in all, longest %v), %d goroutines; %d spans linked to the goroutine they began on",
		res.Events, s.stats.TraceBytes>>10, s.stats.Parse.Round(time.Microsecond), res.GCs, res.Pauses, time.Duration(res.PauseTotal), time.Duration(res.PauseMax), res.Goroutines, s.stats.Linked)
}

// linkTolerance is how far a span's start may lie outside the goroutine
// run found on its P: the span's clock and the trace's are the same
// monotonic clock, but the trace's has 64 ns steps, the P is read a few
// instructions before the span's start, and the span's time-stamp-counter
// reading is converted through calibration points that a loaded machine
// can take late. Runs within it of a span's start are candidates; the
// span's end picks among them (goroutineOf).
const linkTolerance = 20_000

// link finds the goroutine each host span began on and, for a root span
// or one whose parent began on another goroutine, adds a slice on that
// goroutine's track under the span: every output draws the link from the
// span to it.
func (s *Source) link(res *gotrace.Result) {
	spans, ok := s.buf.SpanOrigins()
	if !ok {
		s.note("spans are not linked to goroutines: GOMAXPROCS grew during the session")
		if s.cpuOn {
			s.attribute(res, nil, nil)
		}
		return
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].ID < spans[j].ID })
	byG := map[int64][]gotrace.Run{}
	for _, runs := range res.Runs {
		for _, r := range runs {
			byG[r.G] = append(byG[r.G], r)
		}
	}
	for _, runs := range byG {
		sort.Slice(runs, func(i, j int) bool { return runs[i].Start < runs[j].Start })
	}
	gor := make(map[uint64]int64, len(spans))
	for _, sp := range spans {
		g, ok := goroutineOf(res.Runs[int64(sp.P)], byG, sp.Start, sp.End)
		if !ok {
			s.stats.Unlinked++
			continue
		}
		gor[sp.ID] = g
	}
	for _, sp := range spans {
		g, ok := gor[sp.ID]
		if !ok {
			continue
		}
		if pg, ok := gor[sp.Parent]; ok && sp.Parent != 0 && pg == g {
			continue // a child on its parent's goroutine: the parent's link says it
		}
		tr := res.GoTrack[g]
		if tr == 0 {
			s.stats.Unlinked++
			continue
		}
		end := sp.End
		if end == 0 {
			end = max(res.Last, sp.Start)
		}
		// One nanosecond after the span: viewers (Perfetto's importer)
		// order events of one time by their place in the file, and the
		// link must leave the span before it reaches the goroutine.
		if s.buf.TrackSpanMono(tr, sp.ID, sp.Name, sp.Start+1, max(end, sp.Start+1), []event.Arg{{Key: gotrace.ArgGoroutine, Kind: event.ArgInt, Num: uint64(g)}}) != 0 {
			s.stats.Linked++
		}
	}
	if s.cpuOn {
		s.attribute(res, spans, gor)
	}
}

// goroutineOf returns the goroutine that began a span at start (ending
// at end, 0 if open) on the P whose runs (in time order) are given. Near
// the boundary of two runs the two clocks' small disagreement leaves two
// candidates: the one that was running (on any P, byG) when the span
// ended began it, as the goroutine that began a span is the one that ends
// it; failing that, the run that holds start itself.
func goroutineOf(runs []gotrace.Run, byG map[int64][]gotrace.Run, start, end int64) (int64, bool) {
	i := sort.Search(len(runs), func(i int) bool { return runs[i].End >= start-linkTolerance })
	var cand []gotrace.Run
	for ; i < len(runs) && runs[i].Start <= start+linkTolerance; i++ {
		cand = append(cand, runs[i])
	}
	switch len(cand) {
	case 0:
		return 0, false
	case 1:
		return cand[0].G, true
	}
	if end != 0 {
		var ran []gotrace.Run
		for _, c := range cand {
			if runningAt(byG[c.G], end) {
				ran = append(ran, c)
			}
		}
		if len(ran) == 1 {
			return ran[0].G, true
		}
		if len(ran) > 1 {
			cand = ran
		}
	}
	for _, c := range cand {
		if c.Start <= start && start <= c.End {
			return c.G, true
		}
	}
	return cand[0].G, true
}

// runningAt reports whether one of a goroutine's runs (in time order)
// covers t, within linkTolerance.
func runningAt(runs []gotrace.Run, t int64) bool {
	i := sort.Search(len(runs), func(i int) bool { return runs[i].End >= t-linkTolerance })
	return i < len(runs) && runs[i].Start <= t+linkTolerance
}

func (s *Source) warn(code, format string, args ...any) {
	s.report.Warnings = append(s.report.Warnings, event.Warning{Source: goruntime.SourceName, Code: code, Text: fmt.Sprintf(format, args...)})
}

func (s *Source) note(format string, args ...any) {
	s.report.Notes = append(s.report.Notes, event.Note{Source: goruntime.SourceName, Text: fmt.Sprintf(format, args...)})
}

// sink writes what gotrace makes of the trace into the session's buffer;
// times are already the session's monotonic nanoseconds. The buffer
// takes whole slices, so a slice begun is held until it ends.
type sink struct {
	b    *recorder.Buffer
	open map[uint64]begunSlice
	next uint64
}

// begunSlice is a slice gotrace began and has not ended.
type begunSlice struct {
	track uint32
	name  string
	start int64
	args  []event.Arg
}

func (k *sink) Begin(track uint32, name string, start int64, args []event.Arg) uint64 {
	k.next++
	k.open[k.next] = begunSlice{track, name, start, slices.Clone(args)}
	return k.next
}

func (k *sink) End(id uint64, end int64) {
	s, ok := k.open[id]
	if !ok {
		return
	}
	delete(k.open, id)
	k.b.TrackSpanMono(s.track, 0, s.name, s.start, end, s.args)
}

func (k *sink) Track(t event.Track) uint32 { return k.b.AddTrack(t) }

func (k *sink) RenameTrack(id uint32, name string) { k.b.SetTrackName(id, name) }

func (k *sink) Slice(track uint32, parent uint64, name string, start, end int64, args []event.Arg) uint64 {
	return k.b.TrackSpanMono(track, parent, name, start, end, args)
}

func (k *sink) Instant(track uint32, name string, t int64, args []event.Arg) {
	k.b.TrackInstantMono(track, name, t, args)
}

func (k *sink) Counter(name, unit string, t int64, v float64) {
	k.b.TrackCounterMono(0, name, unit, t, v)
}
