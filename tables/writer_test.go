package tables_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tables"
)

func readAll[T tables.Row](t *testing.T, root, rel string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tables.Read[T](f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return rows
}

const wall0 = 1_700_000_000_000_000_000

// TestWriterStream writes a hand-made stream with what arrives late in
// real files (span ends, a track's name, the clock anchor, the host) and
// checks every row.
func TestWriterStream(t *testing.T) {
	dir := t.TempDir()
	w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "run/1", SourceFormat: "test"})
	if err != nil {
		t.Fatal(err)
	}
	proc := w.Process(event.Process{PID: 77, Name: "worker-proc"})
	thread := w.Track(event.Track{Kind: event.TrackHostThread, ID: 42, Process: proc})
	stream := w.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7, Name: "Stream #7"})
	dev := w.Track(event.Track{Kind: event.TrackDevice, Device: 0, DeviceName: "NVIDIA H200", UUID: "GPU-1", Caps: event.DeviceCaps{Cores: 132, ComputeCapMajor: 9}})
	mem := w.Track(event.Track{Kind: event.TrackMemory, Device: 0, Name: "memory"})

	root := w.Span(event.Span{Name: "train", Start: 100, Track: thread, Unfinished: true})
	args := []event.Arg{{Key: "k", Kind: event.ArgInt, Num: 5}, {Key: "s", Kind: event.ArgString, Str: "a\"b\n"}, {Kind: event.ArgFlow, Num: 9}}
	child := w.Span(event.Span{Name: "step\xff", Start: 110, End: 150, Parent: root, Track: thread, Args: args, Step: true, StepNum: 3})
	args[0].Num = 999 // the reader reuses its slices
	w.Instant("mark", 120, 0, child, nil)
	w.TrackCounter(dev, "utilization", "%", 130, 87.5)
	w.Counter("heap", "bytes", 131, 1024)
	kernel := w.ActivityOf(event.ActivityKernel, stream, "gemm", 140, 145, []event.Arg{
		{Key: event.ArgGrid, Kind: event.ArgString, Str: "4,1,1"}, {Key: event.ArgBlock, Kind: event.ArgString, Str: "128,1,1"},
		{Key: event.ArgRegistersPerThread, Kind: event.ArgUint, Num: 32}, {Kind: event.ArgFlow, Num: 9}, {Key: "context", Kind: event.ArgUint, Num: 1}})
	w.ActivityOf(event.ActivityAlloc, mem, "alloc", 141, 141, []event.Arg{
		{Key: event.ArgAddress, Kind: event.ArgUint, Num: 0xdead}, {Key: event.ArgBytes, Kind: event.ArgUint, Num: 4096},
		{Key: event.ArgTags, Kind: event.ArgString, Str: "weights"}, {Key: event.ArgSpan, Kind: event.ArgString, Str: "train/step"},
		{Key: event.ArgInUse, Kind: event.ArgUint, Num: 8192}})
	w.EndSpan(root, 90) // before its start: ends at its start, as the Builder has it
	w.EndSpan(root, 500)
	open := w.Span(event.Span{Name: "tail", Start: 300, Track: thread, Unfinished: true})
	w.SetTrackName(thread, "main thread")
	m := w.Meta()
	m.Host, m.Program, m.PID = "hostA", "prog", 5
	m.Start = event.ClockAnchor{Mono: 100, Wall: wall0}
	m.Stop = event.ClockAnchor{Mono: 1000, Wall: wall0 + 900}
	m.AddDrops("cupti", 3)
	paths, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err == nil {
		t.Error("second Close: no error")
	}
	want := tables.PartitionPath(tables.TableSpans, "run/1", "hostA", "hostA")
	if paths[0] != want || !strings.Contains(want, "run=run%2F1/host=hostA/") {
		t.Fatalf("spans at %s, want %s (escaped)", paths[0], want)
	}

	spans := readAll[tables.Span](t, dir, paths[0])
	base := tables.Span{Run: "run/1", Host: "hostA", Session: "hostA", Track: "main thread", ThreadID: 42, Device: -1, PID: 77, Process: "worker-proc"}
	wantSpans := []tables.Span{
		func() tables.Span {
			s := base
			s.ID, s.ParentID, s.Name, s.StartNS, s.EndNS, s.DurNS, s.Finished = int64(child), int64(root), "step\ufffd", wall0+10, wall0+50, 40, true
			s.Step, s.StepNum, s.Args = true, 3, `{"k":5,"s":"a\"b\u000a"}`
			return s
		}(),
		func() tables.Span {
			s := base
			s.ID, s.Name, s.StartNS, s.EndNS, s.DurNS, s.Finished = int64(root), "train", wall0, wall0, 0, true
			return s
		}(),
		func() tables.Span {
			s := base
			s.ID, s.Name, s.StartNS, s.EndNS, s.DurNS = int64(open), "tail", wall0+200, wall0+900, 700
			return s
		}(),
	}
	if !reflect.DeepEqual(spans, wantSpans) {
		t.Errorf("spans:\n got %+v\nwant %+v", spans, wantSpans)
	}
	steps := readAll[tables.Step](t, dir, paths[6])
	if len(steps) != 1 || steps[0].SpanID != int64(child) || steps[0].StepNum != 3 || steps[0].DurNS != 40 || steps[0].Track != "main thread" {
		t.Errorf("steps: %+v", steps)
	}
	instants := readAll[tables.Instant](t, dir, paths[1])
	if len(instants) != 1 || instants[0].TimeNS != wall0+20 || instants[0].ParentID != int64(child) || instants[0].PID != 5 || instants[0].Process != "prog" {
		t.Errorf("instants: %+v", instants)
	}
	counters := readAll[tables.Counter](t, dir, paths[2])
	if len(counters) != 2 || counters[0].Device != 0 || counters[0].Value != 87.5 || counters[0].Unit != "%" ||
		counters[1].Device != -1 || counters[1].Name != "heap" || counters[1].TimeNS != wall0+31 {
		t.Errorf("counters: %+v", counters)
	}
	kernels := readAll[tables.Kernel](t, dir, paths[3])
	wantK := tables.Kernel{Run: "run/1", Host: "hostA", Session: "hostA", ID: int64(kernel), Kind: "kernel", Name: "gemm",
		StartNS: wall0 + 40, EndNS: wall0 + 45, DurNS: 5, Device: 0, Stream: 7, Track: "Stream #7", CorrelationID: 9,
		Grid: "4,1,1", Block: "128,1,1", RegistersPerThread: 32, SrcDevice: -1, DstDevice: -1,
		Args: `{"context":1}`}
	if len(kernels) != 1 || kernels[0] != wantK {
		t.Errorf("kernels:\n got %+v\nwant %+v", kernels, wantK)
	}
	memory := readAll[tables.Memory](t, dir, paths[4])
	if len(memory) != 1 || memory[0].Kind != "alloc" || memory[0].Address != 0xdead || memory[0].Bytes != 4096 ||
		memory[0].Tags != "weights" || memory[0].Site != "train/step" || memory[0].BytesInUse != 8192 || memory[0].Device != 0 {
		t.Errorf("memory: %+v", memory)
	}
	flows := readAll[tables.Flow](t, dir, paths[5])
	if len(flows) != 2 || flows[0].FlowID != 9 || flows[0].EventTable != "spans" || flows[1].EventTable != "kernels" || flows[1].EventID != int64(kernel) {
		t.Errorf("flows: %+v", flows)
	}
	hosts := readAll[tables.Host](t, dir, paths[7])
	if len(hosts) != 2 || hosts[0].Device != -1 || hosts[0].StartNS != wall0 || hosts[0].StopNS != wall0+900 ||
		hosts[0].DroppedEvents != 3 || hosts[0].Spans != 3 || hosts[0].Kernels != 1 || hosts[0].SourceFormat != "test" ||
		hosts[1].Device != 0 || hosts[1].DeviceName != "NVIDIA H200" || hosts[1].Cores != 132 || hosts[1].ComputeCapability != "9.0" {
		t.Errorf("hosts: %+v", hosts)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".spool-*")); len(left) != 0 {
		t.Errorf("spool left: %v", left)
	}
}

// TestWriterReset checks that Reset (a reader starting over) keeps
// nothing of what came before.
func TestWriterReset(t *testing.T) {
	dir := t.TempDir()
	w, err := tables.NewWriter(dir, event.Meta{Host: "h"}, tables.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	tr := w.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "first"})
	w.Span(event.Span{Name: "gone", Start: 1, End: 2, Track: tr})
	w.Span(event.Span{Name: "gone open", Start: 1, Track: tr, Unfinished: true})
	w.Meta().Host = "other"
	w.Reset()
	if w.Meta().Host != "h" {
		t.Errorf("Reset kept the metadata: host %q", w.Meta().Host)
	}
	tr = w.Track(event.Track{Kind: event.TrackHostThread, ID: 2, Name: "second"})
	id := w.Span(event.Span{Name: "kept", Start: 5, End: 7, Track: tr})
	paths, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	spans := readAll[tables.Span](t, dir, paths[0])
	if len(spans) != 1 || spans[0].Name != "kept" || spans[0].ID != int64(id) || id != 1 || spans[0].Track != "second" {
		t.Errorf("after Reset: %+v (id %d)", spans, id)
	}
}

// TestExportedOnce checks that a session is exported once into a
// directory: a second export of it fails and leaves the first intact,
// and neither leaves a spool.
func TestExportedOnce(t *testing.T) {
	dir := t.TempDir()
	export := func(name string) ([]string, error) {
		w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		w.Span(event.Span{Name: name, Start: 1, End: 2})
		return w.Close()
	}
	paths, err := export("first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export("second"); err == nil || !strings.Contains(err.Error(), "already exported") {
		t.Fatalf("second export: %v", err)
	}
	spans := readAll[tables.Span](t, dir, paths[0])
	if len(spans) != 1 || spans[0].Name != "first" {
		t.Errorf("first export now holds %+v", spans)
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("first export's %s: %v", p, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".spool-*")); len(left) != 0 {
		t.Errorf("spool left: %v", left)
	}
	w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Host: "h2"})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if left, _ := filepath.Glob(filepath.Join(dir, ".spool-*")); len(left) != 0 {
		t.Errorf("Abort left the spool: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "spans", "run=r", "host=h2")); !os.IsNotExist(err) {
		t.Errorf("Abort wrote a partition: %v", err)
	}
}

// spanV1Subset is the spans table of a version without the columns
// added since (a reader of version N reading N-1 meets such a file): the
// identity, name and times only.
type spanV1Subset struct {
	Run     string `parquet:"run,dict"`
	Host    string `parquet:"host,dict"`
	Session string `parquet:"session,dict"`
	ID      int64  `parquet:"id"`
	Name    string `parquet:"name,dict"`
	StartNS int64  `parquet:"start_ns"`
	DurNS   int64  `parquet:"dur_ns"`
}

func writeFile[T any](t *testing.T, path string, rows []T, meta map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var opts []parquet.WriterOption
	for k, v := range meta {
		opts = append(opts, parquet.KeyValueMetadata(k, v))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadOlderSchema: a file that lacks columns reads by name, the
// missing columns as zero values; a newer schema, another table or a
// file devprof did not write is refused with a clear error.
func TestReadOlderSchema(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.parquet")
	writeFile(t, old, []spanV1Subset{{Run: "r", Host: "h", Session: "s", ID: 3, Name: "op", StartNS: wall0, DurNS: 7}},
		map[string]string{tables.MetadataSchemaVersion: "1", tables.MetadataTable: tables.TableSpans})
	rows := readAll[tables.Span](t, dir, "old.parquet")
	want := []tables.Span{{Run: "r", Host: "h", Session: "s", ID: 3, Name: "op", StartNS: wall0, DurNS: 7}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("old file:\n got %+v\nwant %+v", rows, want)
	}
	for _, c := range []struct {
		name string
		meta map[string]string
		err  string
	}{
		{"newer", map[string]string{tables.MetadataSchemaVersion: "2", tables.MetadataTable: tables.TableSpans}, "newer than this devprof's 1"},
		{"other table", map[string]string{tables.MetadataSchemaVersion: "1", tables.MetadataTable: tables.TableKernels}, `holds table "kernels"`},
		{"foreign", nil, "not a devprof table"},
		{"bad version", map[string]string{tables.MetadataSchemaVersion: "x"}, "is not a version"},
	} {
		path := filepath.Join(dir, c.name+".parquet")
		writeFile(t, path, []spanV1Subset{{ID: 1}}, c.meta)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		_, err = tables.Read[tables.Span](f, st.Size())
		f.Close()
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
	f, err := os.Open(filepath.Join("..", "testdata", "real-gpu", "h200", "gpucheck.pftrace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if _, err := tables.Read[tables.Span](f, st.Size()); err == nil {
		t.Error("a Perfetto trace read as a table")
	}
}
