package eventtest

import (
	"fmt"
	"slices"

	"github.com/devprof/devprof/event"
)

// OwnedSnapshot returns a snapshot whose counter samples and instants
// belong to processes and threads (event.Snapshot.Owner): the program's
// own counter and instant (on no track); a process (python3, pid 620)
// with a counter of its own, a thread (MainThread) with a span and a
// counter, a thread (sampler) whose only events are counter samples,
// and an instant on no thread; and a process known by a string pid
// ("Traces", as Kineto writes its global instants) holding only an
// instant.
func OwnedSnapshot() *event.Snapshot {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "owned", Program: "trainer", PID: 100,
		Start: event.ClockAnchor{Mono: 0, Boot: 5e9, Wall: 1.7e18},
		Stop:  event.ClockAnchor{Mono: 20 * ms, Boot: 5e9 + 20*ms, Wall: 1.7e18 + 20*ms}})
	py := b.Process(event.Process{PID: 620, Name: "python3"})
	traces := b.Process(event.Process{PID: 621, Label: "Traces", IsLabel: true})
	main := b.Track(event.Track{Kind: event.TrackHostThread, Process: py, ID: 620, Name: "MainThread"})
	sampler := b.Track(event.Track{Kind: event.TrackHostThread, Process: py, ID: 77, Name: "sampler"})

	b.Span(event.Span{Name: "train", Start: ms, End: 12 * ms})
	b.Counter("load", "", 2*ms, 0.5)
	b.Counter("load", "", 3*ms, 0.75)
	b.Instant("checkpoint", 4*ms, 0, 0, nil)

	b.Span(event.Span{Name: "step", Start: ms, End: 10 * ms, Track: main})
	b.TrackCounter(main, "rss", "bytes", 2*ms, 1<<20)
	b.TrackCounter(main, "rss", "bytes", 5*ms, 3<<20)
	b.TrackCounter(sampler, "queue", "", 3*ms, 4)
	b.TrackCounter(sampler, "queue", "", 6*ms, 2)
	b.TrackCounter(b.ProcessTrack(py), "utilization", "%", 4*ms, 87.5)
	b.Instant("global mark", 7*ms, b.ProcessTrack(py), 0, []event.Arg{{Key: "why", Kind: event.ArgString, Str: "gc"}})
	b.Instant("Iteration Start: PyTorch Profiler", 8*ms, b.ProcessTrack(traces), 0, nil)
	return b.Snapshot()
}

// OwnerFacts lists the counter series and the instants that sit on no
// span of a snapshot with their owners (event.Snapshot.Owner), sorted:
// "counter NAME [UNIT] ×N: OWNER" with the samples' values, and
// "instant NAME: OWNER". An owner is its process (the program, or a
// process by name, else by its string pid), and with threads set, its
// thread's name after a slash.
func OwnerFacts(s *event.Snapshot, threads bool) []string {
	owner := func(r *event.Record) string {
		proc, thread, ok := s.Owner(r)
		if !ok {
			return "device"
		}
		o := "program"
		if proc > 0 && proc <= len(s.Processes) {
			p := s.Processes[proc-1]
			o = p.Name
			if o == "" {
				o = fmt.Sprintf("pid %q", p.Label)
			}
		}
		if threads && thread != 0 {
			o += "/" + s.Tracks[thread-1].Name
		}
		return o
	}
	series := map[string][]float64{}
	var out []string
	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindCounter:
			unit, v := s.Counter(r)
			k := fmt.Sprintf("counter %s [%s]: %s", s.Name(r), unit, owner(r))
			series[k] = append(series[k], v)
		case event.KindInstant:
			if s.Lookup(r.Parent()) == nil {
				out = append(out, fmt.Sprintf("instant %s: %s", s.Name(r), owner(r)))
			}
		}
	}
	for k, vs := range series {
		slices.Sort(vs)
		out = append(out, fmt.Sprintf("%s %v", k, vs))
	}
	slices.Sort(out)
	return out
}
