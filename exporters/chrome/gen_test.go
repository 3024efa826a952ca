package chrome

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// genTrace is a multi-process Chrome trace made from the format's
// published rules (shared/reference/perfetto.md §4, the Trace Event
// Format document), with what a reader must find in it.
type genTrace struct {
	events   []map[string]any
	procs    map[string]string  // pid key (number, or quoted label) → process description
	threads  map[string]string  // "pid key/thread name" → sort ("" if none)
	slices   int                // X events
	flows    map[[2]string]bool // complete flows, as (from, to) slice names
	oneEnded int                // flows with a single end
}

// genMultiProcess makes a random trace: 1-4 processes with numeric pids
// (0 among them), string pids ("" among them), names, labels (repeats
// included, which the viewer keeps once) and sort indexes; 1-3 threads
// each with names and sort indexes; root slices with nested children;
// and flows between slices in both forms (v1 s/f, f binding the next
// slice or the enclosing one with "bp":"e"; v2 bind_id with flow_out and
// flow_in), ids reused once a flow has ended, and flows with one end.
func genMultiProcess(r *rand.Rand) *genTrace {
	g := &genTrace{procs: map[string]string{}, threads: map[string]string{}, flows: map[[2]string]bool{}}
	type root struct {
		name     string
		pid, tid any
	}
	var roots []root
	pidChoices := []any{0, 1, 620, 7, "Spans", "", "Traces"}
	r.Shuffle(len(pidChoices), func(i, j int) { pidChoices[i], pidChoices[j] = pidChoices[j], pidChoices[i] })
	nproc := 1 + r.IntN(4)
	for pi, pid := range pidChoices[:nproc] {
		key := fmt.Sprint(pid)
		if s, ok := pid.(string); ok {
			key = strconv.Quote(s)
		}
		var name, labels, sort string
		if r.IntN(3) > 0 {
			name = fmt.Sprintf("proc%d", pi)
			g.events = append(g.events, map[string]any{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": map[string]any{"name": name}})
		}
		if r.IntN(2) == 0 {
			g.events = append(g.events, map[string]any{"ph": "M", "name": "process_labels", "pid": pid, "args": map[string]any{"labels": "x,y,x"}})
			labels = `["x" "y"]`
		}
		if r.IntN(2) == 0 {
			n := r.IntN(1000) - 500
			g.events = append(g.events, map[string]any{"ph": "M", "name": "process_sort_index", "pid": pid, "args": map[string]any{"sort_index": n}})
			sort = strconv.Itoa(n)
		}
		g.procs[key] = fmt.Sprintf("%q %s %s", name, labels, sort)
		nthr := 1 + r.IntN(3)
		for ti := range nthr {
			tid := 100 + ti
			tname := fmt.Sprintf("thread %d.%d", pi, ti)
			g.events = append(g.events, map[string]any{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": map[string]any{"name": tname}})
			tsort := ""
			if r.IntN(2) == 0 {
				n := r.IntN(50)
				g.events = append(g.events, map[string]any{"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": map[string]any{"sort_index": n}})
				tsort = strconv.Itoa(n)
			}
			g.threads[key+"/"+tname] = tsort
			for k := range 1 + r.IntN(4) {
				roots = append(roots, root{fmt.Sprintf("%s.%d", tname, k), pid, tid})
			}
		}
	}
	// Every root starts at its own time (100 µs apart, 50 µs long, so a
	// thread's roots never overlap); some hold a child from +10 to +30.
	r.Shuffle(len(roots), func(i, j int) { roots[i], roots[j] = roots[j], roots[i] })
	xs := make([]map[string]any, len(roots))
	for i, rt := range roots {
		ts := float64(100 * (i + 1))
		xs[i] = map[string]any{"ph": "X", "name": rt.name, "pid": rt.pid, "tid": rt.tid, "ts": ts, "dur": 50}
		g.slices++
		if r.IntN(2) == 0 {
			g.events = append(g.events, map[string]any{"ph": "X", "name": rt.name + " child", "pid": rt.pid, "tid": rt.tid, "ts": ts + 10, "dur": 20})
			g.slices++
		}
	}
	// Flows join consecutive roots (a, b): their time windows never
	// overlap, so ids can be reused from one pair to the next.
	for k := 0; k+1 < len(roots); k += 2 {
		a, b := roots[k], roots[k+1]
		at, bt := xs[k]["ts"].(float64), xs[k+1]["ts"].(float64)
		id := k / 2 % 2
		flowEv := func(ph, name string, rt root, ts float64, extra map[string]any) {
			e := map[string]any{"ph": ph, "name": name, "cat": "c", "id": id, "pid": rt.pid, "tid": rt.tid, "ts": ts}
			for k, v := range extra {
				e[k] = v
			}
			g.events = append(g.events, e)
		}
		switch r.IntN(7) {
		case 0: // v1, f bound to the enclosing slice
			flowEv("s", "m", a, at+5, nil)
			if r.IntN(2) == 0 {
				flowEv("t", "m", b, bt+1, nil)
			}
			flowEv("f", "m", b, bt+2, map[string]any{"bp": "e"})
			g.flows[[2]string{a.name, b.name}] = true
		case 1: // v1, f bound to the next slice that begins on its thread
			flowEv("s", "m", a, at+5, nil)
			flowEv("f", "m", b, bt-20, nil)
			g.flows[[2]string{a.name, b.name}] = true
		case 2: // v2
			xs[k]["bind_id"], xs[k]["flow_out"] = id, true
			xs[k+1]["bind_id"], xs[k+1]["flow_in"] = id, true
			g.flows[[2]string{a.name, b.name}] = true
		case 3: // v1 with no f
			flowEv("s", "lone s", a, at+5, nil)
			g.oneEnded++
		case 4: // v1 with no s
			flowEv("f", "lone f", b, bt+2, map[string]any{"bp": "e"})
			g.oneEnded++
		case 5: // v2 with no flow_out
			xs[k+1]["bind_id"], xs[k+1]["flow_in"] = "lone", true
			g.oneEnded++
		}
	}
	g.events = append(g.events, xs...)
	r.Shuffle(len(g.events), func(i, j int) { g.events[i], g.events[j] = g.events[j], g.events[i] })
	// A process whose only event Read skips still exists.
	if r.IntN(2) == 0 {
		g.events = append(g.events, map[string]any{"ph": "O", "name": "snapshot", "pid": 99, "id": 1, "ts": 1})
		g.procs["99"] = `""  `
	}
	return g
}

func (g *genTrace) json(t testing.TB) []byte {
	b, err := json.Marshal(g.events)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadGeneratedMultiProcess reads hundreds of generated traces and
// checks the processes, threads, slices and flows against what the
// generator meant, then the round trip through Chrome JSON.
func TestReadGeneratedMultiProcess(t *testing.T) {
	for seed := range uint64(400) {
		g := genMultiProcess(rand.New(rand.NewPCG(seed, 19)))
		data := g.json(t)
		s, err := Read(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := checkSnapshot(s); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d: "+format+"\n%s", append([]any{seed}, append(args, data)...)...)
		}
		procs := map[string]string{}
		maxNum := int64(0)
		for _, p := range s.Processes {
			labels := ""
			if len(p.Labels) > 0 {
				labels = fmt.Sprintf("%q", p.Labels)
			}
			sort := ""
			if p.Sorted {
				sort = strconv.FormatInt(p.SortIndex, 10)
			}
			procs[procKey(p)] = fmt.Sprintf("%q %s %s", p.Name, labels, sort)
			if !p.IsLabel {
				maxNum = max(maxNum, p.PID)
			}
		}
		if fmt.Sprint(procs) != fmt.Sprint(g.procs) {
			fail("processes\n%v\nwant\n%v", procs, g.procs)
		}
		for _, p := range s.Processes {
			if p.IsLabel && p.PID <= maxNum {
				fail("string pid %q numbered %d, not past every number", p.Label, p.PID)
			}
		}
		threads := map[string]string{}
		for _, tk := range s.Tracks {
			if tk.Process == 0 {
				fail("track %q in no process", tk.Name)
			}
			sort := ""
			if tk.Sorted {
				sort = strconv.FormatInt(tk.SortIndex, 10)
			}
			threads[procKey(s.ProcessOf(tk))+"/"+tk.Name] = sort
		}
		if fmt.Sprint(threads) != fmt.Sprint(g.threads) {
			fail("threads\n%v\nwant\n%v", threads, g.threads)
		}
		ends := map[uint64][]string{}
		spans := 0
		for _, r := range s.Events {
			if r.Kind() != event.KindSpan {
				continue
			}
			spans++
			for _, a := range s.Args(r) {
				if a.Kind == event.ArgFlow {
					ends[a.Num] = append(ends[a.Num], s.Name(r))
				}
			}
		}
		if spans != g.slices {
			fail("%d slices, want %d", spans, g.slices)
		}
		flows := map[[2]string]bool{}
		for _, names := range ends {
			if len(names) != 2 {
				fail("a flow binds %q", names)
			}
			slices.Sort(names)
			flows[[2]string{names[0], names[1]}] = true
		}
		want := map[[2]string]bool{}
		for f := range g.flows {
			n := []string{f[0], f[1]}
			slices.Sort(n)
			want[[2]string{n[0], n[1]}] = true
		}
		if fmt.Sprint(flows) != fmt.Sprint(want) {
			fail("flows\n%v\nwant\n%v", flows, want)
		}
		if s.Meta.Dropped() != int64(g.oneEnded) {
			fail("%d dropped, want %d one-ended flows", s.Meta.Dropped(), g.oneEnded)
		}
		checkRoundTrip(t, s)
		if t.Failed() {
			t.Fatalf("seed %d: round trip\n%s", seed, data)
		}
	}
}

var writeGenCorpus = flag.Bool("gencorpus", false, "write generated multi-process traces to the FuzzRead corpus")

// TestGeneratedCorpus writes, with -gencorpus, a few generated traces as
// seeds of FuzzRead's corpus (testdata/fuzz/FuzzRead/gen-*), and checks
// that they are there.
func TestGeneratedCorpus(t *testing.T) {
	for seed := range uint64(4) {
		path := filepath.Join("testdata", "fuzz", "FuzzRead", fmt.Sprintf("gen-%d", seed))
		data := genMultiProcess(rand.New(rand.NewPCG(seed, 19))).json(t)
		entry := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if *writeGenCorpus {
			if err := os.WriteFile(path, []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != entry {
			t.Errorf("%s is not the generated trace of seed %d (go test -run TestGeneratedCorpus -gencorpus): %v", path, seed, err)
		}
	}
}
