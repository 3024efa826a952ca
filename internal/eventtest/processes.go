package eventtest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
)

// MultiProcessSnapshot returns a snapshot of several processes, as a trace
// another tool wrote holds them: besides the recording program (pid 100,
// with a span on its lanes and a device stream), a named process with
// labels and a sort index (620), pid 0 (a real pid), a process known only
// by a string pid ("Spans") without a name, and one whose pid is the
// program's own (100; a writer must keep the two apart). Their host
// threads have tids, names and some sort indices; spans nest three deep;
// flows cross processes, one of them through three slices, one from the
// program to the device.
func MultiProcessSnapshot() *event.Snapshot {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "multi", Program: "trainer", PID: 100,
		Start: event.ClockAnchor{Mono: 0, Boot: 5e9, Wall: 1.7e18},
		Stop:  event.ClockAnchor{Mono: 20 * ms, Boot: 5e9 + 20*ms, Wall: 1.7e18 + 20*ms}})
	py := b.Process(event.Process{PID: 620, Name: "python3", Labels: []string{"rank 0", "host a"}, SortIndex: 2, Sorted: true})
	zero := b.Process(event.Process{PID: 0, Name: "pid zero", SortIndex: -1, Sorted: true})
	spans := b.Process(event.Process{PID: 621, Label: "Spans", IsLabel: true})
	twin := b.Process(event.Process{PID: 100, Name: "twin"})
	main := b.Track(event.Track{Kind: event.TrackHostThread, Process: py, ID: 620, Name: "MainThread", SortIndex: 1, Sorted: true})
	worker := b.Track(event.Track{Kind: event.TrackHostThread, Process: py, ID: 631, Name: "worker", SortIndex: 0, Sorted: true})
	zt := b.Track(event.Track{Kind: event.TrackHostThread, Process: zero, ID: 5, Name: "zero thread"})
	st := b.Track(event.Track{Kind: event.TrackHostThread, Process: spans, ID: 1, Name: "PyTorch Profiler"})
	tt := b.Track(event.Track{Kind: event.TrackHostThread, Process: twin, ID: 7, Name: "twin thread"})
	gpu := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "H100", ID: 7, Name: "Stream #7(Compute)"})
	flow := func(id uint64) []event.Arg { return []event.Arg{{Kind: event.ArgFlow, Num: id}} }

	step := b.Span(event.Span{Name: "step", Start: ms, End: 10 * ms, Track: main, Args: []event.Arg{{Key: "n", Kind: event.ArgInt, Num: 3}}})
	fw := b.Span(event.Span{Name: "forward", Start: 2 * ms, End: 5 * ms, Parent: step, Track: main})
	b.Span(event.Span{Name: "matmul", Start: 3 * ms, End: 4 * ms, Parent: fw, Track: main, Args: flow(11)})
	b.Span(event.Span{Name: "recv", Start: 6 * ms, End: 7 * ms, Track: zt, Args: flow(11)})
	b.Span(event.Span{Name: "send", Start: 2 * ms, End: 3 * ms, Track: worker, Args: flow(12)})
	b.Span(event.Span{Name: "relay", Start: 4 * ms, End: 5 * ms, Track: st, Args: flow(12)})
	b.Span(event.Span{Name: "sink", Start: 8 * ms, End: 9 * ms, Track: tt, Args: flow(12)})
	tr := b.Span(event.Span{Name: "train", Start: ms, End: 12 * ms})
	b.Span(event.Span{Name: "launch", Start: 2 * ms, End: 3 * ms, Parent: tr, Args: flow(13)})
	b.Activity(gpu, "kernel", 4*ms, 6*ms, flow(13))
	return b.Snapshot()
}

// ProcessFacts describes a snapshot's processes, their threads and the
// spans on those threads in a form that survives conversion: processes
// by pid, string pid, name and labels (with sort indices when sorted is
// set), threads by process name, tid and name, spans by thread, name,
// duration and parent, and each flow as the names of its slices in time
// order. Each list is sorted. The program (Process 0) is left out of the
// processes and threads, as its own metadata carries it and its lanes
// become threads when read; its spans are the program's.
func ProcessFacts(s *event.Snapshot, sorted bool) (procs, threads, spans, flows []string) {
	procName := func(p event.Process) string {
		if p.Name != "" {
			return p.Name
		}
		return fmt.Sprintf("pid %d %q", p.PID, p.Label)
	}
	return facts(s, false,
		func(p event.Process) string {
			d := fmt.Sprintf("%d label=%v%q name=%q labels=%q", p.PID, p.IsLabel, p.Label, p.Name, p.Labels)
			if sorted {
				d += fmt.Sprintf(" sort=%v,%d", p.Sorted, p.SortIndex)
			}
			return d
		},
		func(p event.Process, t event.Track) string {
			d := fmt.Sprintf("%s/%d %s", procName(p), t.ID, t.Name)
			if sorted {
				d += fmt.Sprintf(" sort=%v,%d", t.Sorted, t.SortIndex)
			}
			return d
		})
}

// ConversionFacts is ProcessFacts in the terms a conversion between
// formats must keep: a process by its numeric pid, or by the string it had
// in place of one (the number a reader gives a string pid depends on the
// other ids of the file), with its name and labels; a thread by its
// process and name (Perfetto gives tid 0, the idle task's there, a tid of
// its own). withThreads leaves out the processes that hold no thread.
func ConversionFacts(s *event.Snapshot, withThreads bool) (procs, threads, spans, flows []string) {
	key := func(p event.Process) string {
		if p.IsLabel {
			return fmt.Sprintf("label %q name %q labels %q", p.Label, p.Name, p.Labels)
		}
		return fmt.Sprintf("pid %d name %q labels %q", p.PID, p.Name, p.Labels)
	}
	return facts(s, withThreads, key, func(p event.Process, t event.Track) string { return key(p) + " / " + t.Name })
}

// facts lists processes by procKey, threads by threadKey, spans by their
// thread, name, duration and parent, and flows by their slices' names in
// time order, each list sorted.
func facts(s *event.Snapshot, withThreads bool, procKey func(event.Process) string, threadKey func(event.Process, event.Track) string) (procs, threads, spans, flows []string) {
	threadOf := map[uint32]string{}
	hasThreads := map[int]bool{}
	for i, t := range s.Tracks {
		if t.Kind != event.TrackHostThread || t.Process == 0 {
			continue // the program's threads are its lanes after a reader
		}
		d := threadKey(s.ProcessOf(t), t)
		threadOf[uint32(i+1)] = d
		hasThreads[t.Process] = true
		if !slices.Contains(threads, d) {
			threads = append(threads, d)
		}
	}
	for i, p := range s.Processes {
		if !withThreads || hasThreads[i+1] {
			procs = append(procs, procKey(p))
		}
	}
	byFlow := map[uint64][]*event.Record{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				byFlow[a.Num] = append(byFlow[a.Num], r)
			}
		}
		if r.Kind() != event.KindSpan {
			continue
		}
		where := "program"
		if d, ok := threadOf[r.Lane()]; ok && r.OnTrack() {
			where = d
		}
		parent := ""
		if p := s.Lookup(r.Parent()); p != nil {
			parent = s.Name(p)
		}
		end, _ := s.EndOf(r)
		spans = append(spans, fmt.Sprintf("%s: %s %d parent=%q", where, s.Name(r), end-r.Start(), parent))
	}
	for _, rs := range byFlow {
		slices.SortStableFunc(rs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = s.Name(r)
		}
		flows = append(flows, strings.Join(names, " -> "))
	}
	for _, l := range [][]string{procs, threads, spans, flows} {
		slices.Sort(l)
	}
	return procs, threads, spans, flows
}
