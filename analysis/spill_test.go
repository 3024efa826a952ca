package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// outOfOrderTrace is syntheticTrace with every order a reader may break
// broken: each stream's work comes eight pieces at a time in reverse,
// the launch calls' links go down within each batch, and one stream's
// work starts out open, its ends learned only after later work came.
func outOfOrderTrace(sink event.Sink, n int) {
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	var streams [3]uint32
	for i := range streams {
		streams[i] = sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: int64(7 + i), Name: fmt.Sprintf("Stream #%d", 7+i)})
	}
	type work struct {
		s          int
		start, end int64
		link       uint64
	}
	var batch []work
	var open []uint64
	var ends []int64
	t := int64(0)
	step := sink.Span(event.Span{Name: "train", Start: 0, Track: host, Step: true, StepNum: 1, Unfinished: true})
	for i := range n {
		link := uint64(i + 1)
		s := i % 3
		start := t + 4000 + int64(i%5)*700
		batch = append(batch, work{s, start, start + 1500 + int64(i%11)*900, link})
		if len(batch) == 8 || i == n-1 {
			for j := len(batch) - 1; j >= 0; j-- {
				w := batch[j]
				args := []event.Arg{{Kind: event.ArgFlow, Num: w.link}}
				sink.Span(event.Span{Name: "cudaLaunchKernel", Start: w.start - 3000, End: w.start - 2500, Track: host, Args: args})
				if w.s == 2 {
					open = append(open, sink.Span(event.Span{Name: "late_end", Start: w.start, Track: streams[w.s], Args: args, Unfinished: true}))
					ends = append(ends, w.end)
					continue
				}
				sink.ActivityOf(event.ActivityKernel, streams[w.s], []string{"gemm", "relu", "all_reduce"}[i%3], w.start, w.end, args)
			}
			batch = batch[:0]
		}
		if len(open) > 16 {
			for k, id := range open {
				sink.EndSpan(id, ends[k])
			}
			open, ends = open[:0], ends[:0]
		}
		t += 2000
	}
	for k, id := range open {
		sink.EndSpan(id, ends[k])
	}
	sink.EndSpan(step, t)
}

// TestSpilledEqualsInMemory: an analysis that spills its work and launch
// calls to disk, record by record or in blocks, gives the report of one
// that keeps them in memory, in start order or not, and leaves no file.
func TestSpilledEqualsInMemory(t *testing.T) {
	traces := map[string]func(event.Sink){
		"known":          func(s event.Sink) { knownTrace(s, false) },
		"known, open":    func(s event.Sink) { knownTrace(s, true) },
		"kineto-like":    func(s event.Sink) { kinetoLike(s, []int64{5000, 3000, 1000, 1000, 1100, 1000, 1200, 1000}) },
		"synthetic":      func(s event.Sink) { syntheticTrace(s, 30_000) },
		"out of order":   func(s event.Sink) { outOfOrderTrace(s, 5000) },
		"kineto fixture": streamFixture(t, "kineto-h100-libwork.json.gz"),
		"jax fixture":    streamFixture(t, "jax-h100-train.xplane.pb"),
	}
	for name, write := range traces {
		t.Run(name, func(t *testing.T) {
			mem := NewAnalyzer(event.Meta{}, Options{Top: 7, MemoryBudget: -1})
			write(mem)
			want := mem.Report()
			for _, budget := range []int{1, 5000, 200_000} {
				dir := t.TempDir()
				a := NewAnalyzer(event.Meta{}, Options{Top: 7, MemoryBudget: budget, TempDir: dir})
				write(a)
				if budget == 1 && a.spill.size == 0 {
					t.Error("nothing spilled")
				}
				if name == "out of order" && budget == 1 {
					unsorted, late := 0, 0
					for _, st := range a.streams {
						if !st.sorted {
							unsorted++
						}
						late += len(st.ends)
					}
					if unsorted != 3 || late == 0 || a.launchesSorted {
						t.Errorf("%d streams out of order, %d ends learned after a spill, launches in order %v: the trace misses the paths it is for",
							unsorted, late, a.launchesSorted)
					}
				}
				r, err := a.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(r, want) {
					t.Errorf("budget %d: spilled\n got %+v\nwant %+v", budget, r, want)
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("budget %d: left %d files in %s", budget, len(left), dir)
				}
			}
		})
	}
}

// streamFixture writes a real trace into a sink as its reader streams it.
func streamFixture(t *testing.T, name string) func(event.Sink) {
	return func(s event.Sink) {
		path := fixture(name)
		f, err := formats.Detect(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.StreamFile(path, s, formats.ReadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpillFails: a temporary directory that cannot take the file fails
// the analysis with one line naming it, and Report says so in a note.
func TestSpillFails(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, finish := range []bool{true, false} {
		a := NewAnalyzer(event.Meta{}, Options{MemoryBudget: 1000, TempDir: notDir})
		syntheticTrace(a, 2000)
		if finish {
			r, err := a.Finish()
			if err == nil || r != nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), notDir) {
				t.Errorf("Finish: %v, %v; want one line naming %s", r, err, notDir)
			}
			continue
		}
		r := a.Report()
		if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], notDir) || r.Kernels.Count != 0 {
			t.Errorf("Report: notes %q, %d kernels", r.Notes, r.Kernels.Count)
		}
	}
}

// TestResetDropsSpill: Reset lets go of the spill file, and the analysis
// after it is the second pass's alone.
func TestResetDropsSpill(t *testing.T) {
	dir := t.TempDir()
	a := NewAnalyzer(event.Meta{}, Options{MemoryBudget: 1000, TempDir: dir})
	syntheticTrace(a, 5000)
	if a.spill.f == nil {
		t.Fatal("nothing spilled")
	}
	a.Reset()
	if a.spill.f != nil || a.spill.size != 0 {
		t.Error("Reset kept the spill file")
	}
	knownTrace(a, false)
	b := NewAnalyzer(event.Meta{}, Options{MemoryBudget: 1000, TempDir: dir})
	knownTrace(b, false)
	if got, want := a.Report(), b.Report(); !reflect.DeepEqual(got, want) {
		t.Errorf("after Reset\n got %+v\nwant %+v", got, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %d files", len(left))
	}
}
