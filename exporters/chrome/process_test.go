package chrome

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// dumpProcs describes the processes of a snapshot and the threads under
// each, one line each.
func dumpProcs(s *event.Snapshot) string {
	var b strings.Builder
	for i, p := range s.Processes {
		fmt.Fprintf(&b, "proc %d pid=%d", i+1, p.PID)
		if p.IsLabel {
			fmt.Fprintf(&b, " label=%q", p.Label)
		}
		fmt.Fprintf(&b, " name=%q", p.Name)
		if len(p.Labels) > 0 {
			fmt.Fprintf(&b, " labels=%q", p.Labels)
		}
		if p.Sorted {
			fmt.Fprintf(&b, " sort=%d", p.SortIndex)
		}
		b.WriteString("\n")
	}
	for i, t := range s.Tracks {
		if t.Kind == event.TrackProcess {
			fmt.Fprintf(&b, "track %d proc=%d (the process)\n", i+1, t.Process)
			continue
		}
		fmt.Fprintf(&b, "track %d proc=%d %q tid=%d", i+1, t.Process, t.Name, t.ID)
		if t.Sorted {
			fmt.Fprintf(&b, " sort=%d", t.SortIndex)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestReadProcesses(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{{
		name: "numeric, zero and string pids",
		in: `[{"ph":"M","name":"process_name","pid":7,"args":{"name":"browser"}},
		  {"ph":"M","name":"process_labels","pid":7,"args":{"labels":"a,b,a"}},
		  {"ph":"M","name":"process_labels","pid":7,"args":{"labels":"c"}},
		  {"ph":"M","name":"process_sort_index","pid":7,"args":{"sort_index":-3}},
		  {"ph":"M","name":"thread_name","pid":7,"tid":2,"args":{"name":"main"}},
		  {"ph":"M","name":"thread_sort_index","pid":7,"tid":2,"args":{"sort_index":5}},
		  {"ph":"X","name":"a","pid":7,"tid":2,"ts":0,"dur":1},
		  {"ph":"X","name":"k","pid":0,"tid":13,"ts":0,"dur":1},
		  {"ph":"X","name":"s","pid":"Spans","tid":"PyTorch Profiler","ts":0,"dur":1},
		  {"ph":"i","s":"g","name":"g","pid":"","tid":"","ts":1},
		  {"ph":"i","name":"t","pid":"","tid":3,"ts":1},
		  {"ph":"O","name":"snapshot","pid":9,"id":1,"ts":1},
		  {"ph":"M","name":"process_name","pid":9,"args":{"name":"only snapshots"}}]`,
		want: `proc 1 pid=7 name="browser" labels=["a" "b" "c"] sort=-3
proc 2 pid=0 name=""
proc 3 pid=14 label="Spans" name=""
proc 4 pid=15 label="" name=""
proc 5 pid=9 name="only snapshots"
track 1 proc=1 "main" tid=2 sort=5
track 2 proc=2 "tid 13" tid=13
track 3 proc=3 "PyTorch Profiler" tid=16
track 4 proc=4 "tid 3" tid=3
track 5 proc=4 (the process)
`,
	}, {
		name: "devprof's own file keeps its program as Meta",
		in: `{"traceEvents":[{"ph":"M","name":"process_name","pid":42,"tid":0,"args":{"name":"prog"}},
		  {"ph":"M","name":"process_name","pid":43,"tid":0,"args":{"name":"GPU 0"}},
		  {"ph":"X","pid":42,"tid":1,"ts":5,"dur":1,"name":"train"},
		  {"ph":"X","pid":43,"tid":2,"ts":5,"dur":1,"name":"kernel"}],
		  "otherData":{"host":"h1","start_unix_ns":1700000000000000000}}`,
		want: `track 1 proc=0 "tid 1" tid=1
track 2 proc=0 "tid 2" tid=2
`,
	}, {
		name: "devprof's file naming its program's pids",
		in: `{"traceEvents":[{"ph":"M","name":"process_name","pid":42,"tid":0,"args":{"name":"prog"}},
		  {"ph":"M","name":"process_name","pid":43,"tid":0,"args":{"name":"GPU 0"}},
		  {"ph":"M","name":"process_name","pid":"x","tid":0,"args":{"name":"other"}},
		  {"ph":"X","pid":42,"tid":1,"ts":5,"dur":1,"name":"train"},
		  {"ph":"X","pid":43,"tid":2,"ts":5,"dur":1,"name":"kernel"},
		  {"ph":"X","pid":"x","tid":3,"ts":5,"dur":1,"name":"elsewhere"}],
		  "otherData":{"host":"h1","start_unix_ns":1700000000000000000,"program_pids":[42,43]}}`,
		want: `proc 1 pid=44 label="x" name="other"
track 1 proc=0 "tid 1" tid=1
track 2 proc=0 "tid 2" tid=2
track 3 proc=1 "tid 3" tid=3
`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			s := mustRead(t, []byte(c.in))
			if got := dumpProcs(s); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// shape summarizes what a round trip must keep: the processes (pid or
// label, name, labels, order), the threads of each by name and order,
// and the number of flows with two ends or more.
func shape(s *event.Snapshot) (procs []string, threads map[string]int, flows int) {
	for _, p := range s.Processes {
		procs = append(procs, procKey(p)+fmt.Sprintf(" %q %q %v/%d", p.Name, p.Labels, p.Sorted, p.SortIndex))
	}
	threads = map[string]int{}
	for _, t := range s.Tracks {
		key := procKey(s.ProcessOf(t)) + "/" + t.Name
		if t.Sorted {
			key += fmt.Sprintf(" sort %d", t.SortIndex)
		}
		threads[key]++
	}
	ends := map[uint64]int{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				ends[a.Num]++
			}
		}
	}
	for _, n := range ends {
		if n >= 2 {
			flows++
		}
	}
	return procs, threads, flows
}

func procKey(p event.Process) string {
	if p.IsLabel {
		return fmt.Sprintf("%q", p.Label)
	}
	return fmt.Sprint(p.PID)
}

// checkRoundTrip writes s as Chrome JSON, reads it back and checks that
// the processes, threads and flows are the same.
func checkRoundTrip(t *testing.T, s *event.Snapshot) *event.Snapshot {
	t.Helper()
	got := mustRead(t, encode(t, s))
	wp, wt, wf := shape(s)
	gp, gt, gf := shape(got)
	if !slices.Equal(gp, wp) {
		t.Errorf("processes\n%q\nwant\n%q", gp, wp)
	}
	if !maps.Equal(gt, wt) {
		t.Errorf("threads\n%v\nwant\n%v", gt, wt)
	}
	if gf != wf {
		t.Errorf("%d flows, want %d", gf, wf)
	}
	if got.Meta.PID != s.Meta.PID || got.Meta.Program != s.Meta.Program {
		t.Errorf("meta pid %d program %q, want %d %q", got.Meta.PID, got.Meta.Program, s.Meta.PID, s.Meta.Program)
	}
	return got
}

// TestRoundTripKineto converts PyTorch's trace to Chrome JSON and back.
func TestRoundTripKineto(t *testing.T) {
	s, err := ReadFile(realKineto)
	if err != nil {
		t.Fatal(err)
	}
	got := checkRoundTrip(t, s)
	if len(got.Processes) != 21 {
		t.Errorf("%d processes, want 21", len(got.Processes))
	}
	if _, _, f := shape(got); f != 2500 {
		t.Errorf("%d flows, want 2500", f)
	}
}

// TestOwnersRoundTrip: counters and loose instants keep their process
// through a Chrome JSON file: "C" events carry their process's pid (and
// a thread's tid), instants on no thread are process-scoped instants of
// their process. The format's counters belong to processes, so a
// thread's counter comes back as its process's.
func TestOwnersRoundTrip(t *testing.T) {
	orig := eventtest.OwnedSnapshot()
	got := mustRead(t, encode(t, orig))
	want := eventtest.OwnerFacts(orig, false)
	if g := eventtest.OwnerFacts(got, false); !slices.Equal(g, want) {
		t.Errorf("owners read back:\n got %q\nwant %q", g, want)
	}
	again := mustRead(t, encode(t, got))
	if g := eventtest.OwnerFacts(again, false); !slices.Equal(g, want) {
		t.Errorf("owners after a second round trip:\n got %q\nwant %q", g, want)
	}
}
