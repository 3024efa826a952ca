package tables_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tables"
)

// streamSpan is a span a test puts on a Chrome file's stream.
type streamSpan struct {
	name       string
	start, end int64
	args       []event.Arg
}

// TestChromeStreamWork writes the spans of a stream of a "GPU 0"
// process as a Chrome reader gives them, in start order, out of it and
// with late ends, into a Writer and into a Builder's snapshot, and
// checks which are kernels (of which kind) and which are the ranges a
// profiler annotated on the stream (rows of spans): the same every way.
func TestChromeStreamWork(t *testing.T) {
	corr := []event.Arg{{Key: "correlation", Kind: event.ArgInt, Num: 5}}
	sync := []event.Arg{{Key: "wait_on_stream", Kind: event.ArgInt, Num: 8}}
	work := []streamSpan{
		{"record_function A", 0, 100, nil},    // encloses gemm: a range
		{"gemm", 10, 20, corr},                // a kernel (linked)
		{"Stream Sync", 25, 90, sync},         // a wait: not work, not "next"
		{"relu", 30, 40, nil},                 // encloses the memset: a range
		{"Memset (Device)", 35, 38, nil},      // a memset
		{"ncclKernel_AllReduce", 50, 80, nil}, // a collective: never a range
		{"Memcpy HtoD", 60, 70, nil},          // a copy
		{"softmax", 200, 300, nil},            // the next does not end inside: a kernel
		{"tail", 250, 400, nil},               // nothing after it: a kernel
	}
	wantKernels := []string{"Memcpy HtoD memcpy", "Memset (Device) memset", "Stream Sync sync", "gemm kernel", "ncclKernel_AllReduce kernel", "softmax kernel", "tail kernel"}
	wantSpans := []string{"host work -1", "record_function A 0", "relu 0"}

	feed := func(sink event.Sink, order []int, unfinished bool) {
		host := sink.Process(event.Process{PID: 100, Name: "python3"})
		gpu := sink.Process(event.Process{PID: 0, Name: "python3", Labels: []string{"GPU 0"}})
		th := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 100, Process: host})
		st := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 7, Name: "stream 7 ", Process: gpu})
		sink.Span(event.Span{Name: "host work", Start: 0, End: 500, Track: th})
		var open []uint64
		for _, i := range order {
			w := work[i]
			if unfinished && i%2 == 0 {
				open = append(open, sink.Span(event.Span{Name: w.name, Start: w.start, Track: st, Args: w.args, Unfinished: true}))
				continue
			}
			sink.TrackSlice(st, w.name, w.start, w.end, w.args)
		}
		// End the open spans, each at its own end.
		k := 0
		for _, i := range order {
			if unfinished && i%2 == 0 {
				sink.EndSpan(open[k], work[i].end)
				k++
			}
		}
		m := sink.Meta()
		m.Start = event.ClockAnchor{Wall: wall0}
		m.Stop = event.ClockAnchor{Mono: 1000, Wall: wall0 + 1000}
	}
	inOrder := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	shuffled := []int{1, 0, 4, 3, 2, 6, 5, 8, 7}
	for _, c := range []struct {
		name       string
		order      []int
		unfinished bool
	}{
		{"in start order", inOrder, false},
		{"out of start order", shuffled, false},
		{"ends late", inOrder, true},
		{"out of order, ends late", shuffled, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Host: "h"})
			if err != nil {
				t.Fatal(err)
			}
			feed(w, c.order, c.unfinished)
			paths, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			b := event.NewBuilder(event.Meta{})
			feed(b, c.order, c.unfinished)
			dir2 := t.TempDir()
			paths2, err := tables.WriteSnapshot(dir2, b.Snapshot(), tables.Options{Run: "r", Host: "h"})
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []struct {
				how   string
				root  string
				paths []string
			}{{"streamed", dir, paths}, {"from the snapshot", dir2, paths2}} {
				var kernels, spans []string
				for _, k := range readAll[tables.Kernel](t, got.root, got.paths[3]) {
					kernels = append(kernels, k.Name+" "+k.Kind)
					if k.Device != 0 || k.Stream != 7 || k.Track != "stream 7 " {
						t.Errorf("%s: kernel %s on device %d stream %d track %q", got.how, k.Name, k.Device, k.Stream, k.Track)
					}
					if (k.CorrelationID != 0) != (k.Name == "gemm") {
						t.Errorf("%s: kernel %s correlation %d", got.how, k.Name, k.CorrelationID)
					}
				}
				for _, s := range readAll[tables.Span](t, got.root, got.paths[0]) {
					spans = append(spans, fmt.Sprintf("%s %d", s.Name, s.Device))
				}
				slices.Sort(kernels)
				slices.Sort(spans)
				if !slices.Equal(kernels, wantKernels) || !slices.Equal(spans, wantSpans) {
					t.Errorf("%s:\n kernels %q\n  want   %q\n spans %q\n  want %q", got.how, kernels, wantKernels, spans, wantSpans)
				}
				hosts := readAll[tables.Host](t, got.root, got.paths[7])
				if len(hosts) != 2 || hosts[1].Device != 0 || hosts[1].Kernels != int64(len(wantKernels)) {
					t.Errorf("%s: hosts %+v", got.how, hosts)
				}
			}
		})
	}
}

// TestProfilerSteps checks that PyTorch's ProfilerStep#N spans are the
// steps of a trace that marks none, and only of such a trace.
func TestProfilerSteps(t *testing.T) {
	for _, marked := range []bool{false, true} {
		dir := t.TempDir()
		w, err := tables.NewWriter(dir, event.Meta{Start: event.ClockAnchor{Wall: wall0}}, tables.Options{Run: "r", Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		th := w.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
		for i := range int64(3) {
			if marked {
				w.Span(event.Span{Name: "train", Start: i * 100, End: i*100 + 99, Track: th, Step: true, StepNum: i})
			}
			w.Span(event.Span{Name: fmt.Sprintf("ProfilerStep#%d", 7+i), Start: i*100 + 1, End: i*100 + 90, Track: th})
			w.Span(event.Span{Name: "ProfilerStep#x", Start: i*100 + 2, End: i*100 + 80, Track: th})
		}
		paths, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range readAll[tables.Step](t, dir, paths[6]) {
			got = append(got, fmt.Sprintf("%s %d %d", s.Name, s.StepNum, s.DurNS))
		}
		want := []string{"ProfilerStep#7 7 89", "ProfilerStep#8 8 89", "ProfilerStep#9 9 89"}
		if marked {
			want = []string{"train 0 99", "train 1 99", "train 2 99"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("marked %v: steps %q, want %q", marked, got, want)
		}
		for _, s := range readAll[tables.Span](t, dir, paths[0]) {
			if s.Step != (marked == (s.Name == "train")) && s.Name != "ProfilerStep#x" || s.Name == "ProfilerStep#x" && s.Step ||
				s.Step && strings.HasPrefix(s.Name, "ProfilerStep#") && s.StepNum != int64(s.Name[len(s.Name)-1]-'0') {
				t.Errorf("marked %v: span %s step %v %d", marked, s.Name, s.Step, s.StepNum)
			}
		}
	}
}
