package goruntimesource

import (
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/recorder"
)

// cpuPeriod is the CPU profiler's sampling period (runtime/pprof's 100 Hz).
const cpuPeriod = 10 * time.Millisecond

// ownSpan is a span with the goroutine it began on, for attributing the
// CPU samples of that goroutine.
type ownSpan struct {
	name       string
	start, end int64
}

// attribute writes each CPU sample as an instant on its goroutine's row
// with the innermost span (begun on that goroutine) it fell in, and
// builds the CPU profile with those spans as labels.
func (s *Source) attribute(res *gotrace.Result, spans []recorder.SpanOrigin, gor map[uint64]int64) {
	byG := map[int64][]ownSpan{}
	for _, sp := range spans {
		g, ok := gor[sp.ID]
		if !ok {
			continue
		}
		end := sp.End
		if end == 0 {
			end = max(res.Last, sp.Start)
		}
		byG[g] = append(byG[g], ownSpan{sp.Name, sp.Start, end})
	}
	for _, l := range byG {
		sort.Slice(l, func(i, j int) bool { return l[i].start < l[j].start })
	}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        int64(cpuPeriod),
		TimeNanos:     time.Now().Add(-time.Duration(recorder.Mono() - s.start)).UnixNano(),
		DurationNanos: res.Last - s.start,
	}
	locs := map[gotrace.Frame]*profile.Location{}
	funcs := map[[2]string]*profile.Function{}
	for _, sm := range res.Samples {
		span := innermost(byG[sm.G], sm.T)
		leaf := ""
		if len(sm.Stack) > 0 {
			leaf = sm.Stack[0].Func
		}
		if tr := res.GoTrack[sm.G]; tr != 0 {
			args := []event.Arg{{Key: gotrace.ArgFunction, Kind: event.ArgString, Str: leaf}}
			if span != "" {
				args = append(args, event.Arg{Key: gotrace.ArgSpan, Kind: event.ArgString, Str: span})
			}
			s.buf.TrackInstantMono(tr, gotrace.InstantCPUSample, sm.T, args)
		}
		ps := &profile.Sample{Value: []int64{1, int64(cpuPeriod)}}
		if span != "" {
			ps.Label = map[string][]string{gotrace.ArgSpan: {span}}
		}
		for _, f := range sm.Stack {
			loc := locs[f]
			if loc == nil {
				fn := funcs[[2]string{f.Func, f.File}]
				if fn == nil {
					fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Func, SystemName: f.Func, Filename: f.File}
					funcs[[2]string{f.Func, f.File}] = fn
					p.Function = append(p.Function, fn)
				}
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: f.Line}}}
				locs[f] = loc
				p.Location = append(p.Location, loc)
			}
			ps.Location = append(ps.Location, loc)
		}
		p.Sample = append(p.Sample, ps)
		if span != "" {
			s.stats.Attributed++
		}
	}
	s.cpu = p
}

// innermost returns the name of the innermost span of one goroutine's
// (sorted by start) that holds t: the latest begun that has not ended.
func innermost(spans []ownSpan, t int64) string {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].start > t })
	for j, steps := i-1, 0; j >= 0 && steps < 256; j, steps = j-1, steps+1 {
		if spans[j].end >= t {
			return spans[j].name
		}
	}
	return ""
}

// CPUProfile returns the session's CPU profile, its samples labelled with
// the span they fell in (span=<name>), or nil when Options.CPUProfile was
// off or the profiler could not run. Valid after Stop.
func (s *Source) CPUProfile() *profile.Profile { return s.cpu }
