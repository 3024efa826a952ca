package gotrace_test

import (
	"bytes"
	"context"
	"reflect"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/gotrace"
	igotrace "github.com/devprof/devprof/internal/gotrace"
)

// manyGoroutinesTrace records n goroutines that each run a user region
// "work" inside a task, and a GC.
func manyGoroutinesTrace(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use (go test -trace?): %v", err)
	}
	ctx, task := rtrace.NewTask(context.Background(), "batch")
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rtrace.WithRegion(ctx, "work", func() {})
		}()
	}
	wg.Wait()
	task.End()
	rtrace.Stop()
	return buf.Bytes()
}

// Caps limit what is drawn, never what is counted: with a few goroutine
// rows and a few events kept, the Go runtime's figures in the model are
// those of the whole file (the same as an uncapped read's tracks show),
// and each cap is named in a warning with the flag that raises it.
func TestCapsCountWholeFile(t *testing.T) {
	const n = 300
	data := manyGoroutinesTrace(t, n)
	full, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{MaxGoroutines: 1 << 20, MaxEvents: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Meta.Warnings) != 0 {
		t.Fatalf("an uncapped read warns: %v", full.Meta.Warnings)
	}
	want, ok := igotrace.Summarize(full)
	if !ok || !want.Exact {
		t.Fatalf("no whole-file figures in the model: %+v", want)
	}
	if want.Goroutines < n || len(want.Regions) != 1 || want.Regions[0].Count != n || len(want.Tasks) != 1 || want.Tasks[0].Count != 1 {
		t.Fatalf("whole-file figures %+v: want at least %d goroutines, %d regions \"work\", one task", want, n, n)
	}
	capped, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{MaxGoroutines: 5, MaxEvents: 50})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := igotrace.Summarize(capped)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("capped: %+v\nwant the whole file's %+v", got, want)
	}
	var codes []string
	for _, w := range capped.Meta.Warnings {
		codes = append(codes, w.Code)
		flag := map[string]string{"max_goroutines": "-max_goroutines N", "max_events": "-max_events N"}[w.Code]
		if flag == "" || !strings.Contains(w.Text, flag) || !strings.Contains(w.Text, "counts cover") {
			t.Errorf("warning %q (%s) does not name its flag and what the counts cover", w.Text, w.Code)
		}
	}
	if !reflect.DeepEqual(codes, []string{"max_goroutines", "max_events"}) {
		t.Errorf("warnings %v, want one for each cap", codes)
	}
	if capped.Meta.Dropped() == 0 {
		t.Error("capped: nothing counted as dropped")
	}
}

// Decode into a sink that keeps nothing fills the same Meta as Read.
func TestDecodeFillsMeta(t *testing.T) {
	data := manyGoroutinesTrace(t, 20)
	s, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{Name: "x.out", MaxGoroutines: 3})
	if err != nil {
		t.Fatal(err)
	}
	k := &nullSink{}
	if err := gotrace.Decode(bytes.NewReader(data), k, gotrace.Options{Name: "x.out", MaxGoroutines: 3}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(k.meta, s.Meta) {
		t.Errorf("Decode's Meta %+v\nRead's %+v", k.meta, s.Meta)
	}
	if k.events == 0 || k.events != len(s.Events) {
		t.Errorf("Decode gave the sink %d events, Read kept %d", k.events, len(s.Events))
	}
}

// nullSink counts what it is given and keeps only the Meta.
type nullSink struct {
	meta   event.Meta
	tracks uint32
	ids    uint64
	events int
}

func (k *nullSink) Track(event.Track) uint32               { k.tracks++; return k.tracks }
func (k *nullSink) SetTrackName(uint32, string)            {}
func (k *nullSink) Process(event.Process) int              { return 1 }
func (k *nullSink) ProcessTrack(int) uint32                { k.tracks++; return k.tracks }
func (k *nullSink) Span(event.Span) uint64                 { k.events++; k.ids++; return k.ids }
func (k *nullSink) EndSpan(uint64, int64)                  {}
func (k *nullSink) Meta() *event.Meta                      { return &k.meta }
func (k *nullSink) Reset()                                 { *k = nullSink{} }
func (k *nullSink) Counter(string, string, int64, float64) { k.events++ }
func (k *nullSink) TrackCounter(uint32, string, string, int64, float64) {
	k.events++
}
func (k *nullSink) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	k.events++
	k.ids++
	return k.ids
}
func (k *nullSink) Instant(string, int64, uint32, uint64, []event.Arg) { k.events++ }
func (k *nullSink) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	k.events++
	k.ids++
	return k.ids
}
