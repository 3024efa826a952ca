package perfetto

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
)

// processCounts counts a trace's process and thread tracks and its flow
// ids.
func processCounts(tr *Trace) (procs, threads, flows int) {
	ids := map[uint64]bool{}
	for _, tk := range tr.Tracks {
		switch tk.Kind {
		case TrackProcess:
			procs++
		case TrackThread:
			threads++
		}
	}
	for _, s := range tr.Slices {
		for _, f := range append(slices.Clone(s.FlowIDs), s.TerminatingFlowIDs...) {
			if f&ParentFlowBit == 0 {
				ids[f] = true
			}
		}
	}
	return procs, threads, len(ids)
}

// TestProcessesRoundTrip: every process of a multi-process snapshot is a
// process track of its own (pid 0 included; the one that shares the
// program's pid is the program's track, as a pid is one process in
// Perfetto, and its threads are marked as its), each thread sits under its
// process with its tid, and reading the file back gives the same
// processes, threads, spans and flows, sort indices included.
func TestProcessesRoundTrip(t *testing.T) {
	orig := eventtest.MultiProcessSnapshot()
	var buf bytes.Buffer
	if err := Write(&buf, orig, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "processes.pftrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "processes", path, orig)
	tr := mustRead(t, buf.Bytes())

	pids := map[int64]string{}
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackProcess {
			if other, dup := pids[tk.PID]; dup {
				t.Errorf("pid %d is both %q and %q", tk.PID, other, tk.Name)
			}
			pids[tk.PID] = tk.Name
		}
	}
	for pid, name := range map[int64]string{100: "trainer", 620: "python3", 0: "pid zero", 621: "Spans"} {
		if pids[pid] != name {
			t.Errorf("pid %d is %q, want %q (processes %v)", pid, pids[pid], name, pids)
		}
	}
	threads := map[string][2]int64{}
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackThread {
			threads[tk.Name] = [2]int64{tk.PID, tk.TID}
		}
	}
	for name, want := range map[string][2]int64{"MainThread": {620, 620}, "worker": {620, 631}, "zero thread": {0, 5}, "PyTorch Profiler": {621, 1}} {
		if threads[name] != want {
			t.Errorf("thread %q is (pid, tid) %v, want %v", name, threads[name], want)
		}
	}
	if tw := threads["twin thread"]; tw != [2]int64{100, 7} {
		t.Errorf("twin thread is %v, want tid 7 of the program's pid 100", tw)
	}

	got := tr.Snapshot()
	if got.Meta.Program != "trainer" || got.Meta.PID != 100 {
		t.Errorf("program %q pid %d, want trainer 100", got.Meta.Program, got.Meta.PID)
	}
	wp, wt, ws, wf := eventtest.ProcessFacts(orig, true)
	gp, gt, gs, gf := eventtest.ProcessFacts(got, true)
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"processes", gp, wp}, {"threads", gt, wt}, {"spans", gs, ws}, {"flows", gf, wf}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s read back:\n got %q\nwant %q", c.what, c.got, c.want)
		}
	}

	// Perfetto -> model -> Perfetto keeps the processes, threads and flows.
	var again bytes.Buffer
	if err := Write(&again, got, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	p1, t1, f1 := processCounts(tr)
	p2, t2, f2 := processCounts(mustRead(t, again.Bytes()))
	if p1 != p2 || t1 != t2 || f1 != f2 || p1 != 5 || f1 != 3 {
		t.Errorf("processes, threads, flows: %d %d %d, then %d %d %d (want 5 processes, 3 flows)", p1, t1, f1, p2, t2, f2)
	}
}

// TestProcessOrdering: sort indices become sibling_order_rank, with the
// uuid 0 descriptor asking for explicit order; a snapshot without them
// writes no such descriptor.
func TestProcessOrdering(t *testing.T) {
	tr := mustRead(t, encode(t, eventtest.MultiProcessSnapshot(), false))
	if tr.Tracks[0].UUID != 0 || tr.Tracks[0].Kind != TrackPlain {
		t.Fatalf("first track %+v, want the ordering descriptor (uuid 0)", tr.Tracks[0])
	}
	ranks := map[string]int64{}
	for _, tk := range tr.Tracks {
		if tk.Ranked {
			ranks[tk.Name] = tk.Rank
		}
	}
	want := map[string]int64{"python3": 2, "pid zero": -1, "MainThread": 1, "worker": 0}
	if len(ranks) != len(want) {
		t.Errorf("ranks %v, want %v", ranks, want)
	}
	for n, r := range want {
		if got, ok := ranks[n]; !ok || got != r {
			t.Errorf("rank of %q is %d (%v), want %d", n, got, ok, r)
		}
	}
	b := event.NewBuilder(event.Meta{Program: "p", PID: 3})
	b.Process(event.Process{PID: 4, Name: "other"})
	b.Span(event.Span{Name: "s", Start: 1, End: 2, Track: b.Track(event.Track{Kind: event.TrackHostThread, Process: 1, ID: 9, Name: "t"})})
	for _, tk := range mustRead(t, encode(t, b.Snapshot(), false)).Tracks {
		if tk.UUID == 0 || tk.Ranked {
			t.Errorf("unsorted snapshot wrote %+v", tk)
		}
	}
}

// TestOwnersRoundTrip: counters and instants stay under their owners: a
// process's counter is a counter track under its process track, a
// thread's under its thread track (a thread with only counter samples
// included), an instant of a process on no thread is on its process
// track; reading the file back, and writing and reading it again, gives
// each the same owner, thread included.
func TestOwnersRoundTrip(t *testing.T) {
	orig := eventtest.OwnedSnapshot()
	var buf bytes.Buffer
	if err := Write(&buf, orig, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "owners.pftrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "owners", path, orig)
	tr := mustRead(t, buf.Bytes())
	byUUID := map[uint64]Track{}
	for _, tk := range tr.Tracks {
		byUUID[tk.UUID] = tk
	}
	parents := map[string]string{} // counter track -> its parent's kind and name
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackCounter {
			p := byUUID[tk.ParentUUID]
			parents[tk.Name] = p.Kind.String() + " " + p.Name
		}
	}
	for name, want := range map[string]string{"load": "process trainer", "rss": "thread MainThread", "queue": "thread sampler", "utilization": "process python3"} {
		if parents[name] != want {
			t.Errorf("counter track %q is under %q, want %q", name, parents[name], want)
		}
	}
	for _, in := range tr.Instants {
		if in.Name == "global mark" || in.Name == "Iteration Start: PyTorch Profiler" {
			if k := byUUID[in.Track]; k.Kind != TrackProcess {
				t.Errorf("instant %q on %+v, want a process track", in.Name, k)
			}
		}
	}
	want := eventtest.OwnerFacts(orig, true)
	got := tr.Snapshot()
	if g := eventtest.OwnerFacts(got, true); !slices.Equal(g, want) {
		t.Errorf("owners read back:\n got %q\nwant %q", g, want)
	}
	var again bytes.Buffer
	if err := Write(&again, got, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if g := eventtest.OwnerFacts(mustRead(t, again.Bytes()).Snapshot(), true); !slices.Equal(g, want) {
		t.Errorf("owners after a second round trip:\n got %q\nwant %q", g, want)
	}
}
