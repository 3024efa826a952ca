package tables_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tables"
)

// A trace streamed into a Writer becomes one Parquet file per table,
// partitioned by run and host; Read reads a table's rows back (an engine
// such as DuckDB reads the directory with hive partitioning).
func ExampleWriter() {
	dir, err := os.MkdirTemp("", "tables-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	start := event.ClockAnchor{Mono: 0, Boot: 0, Wall: 1_800_000_000_000_000_000}
	w, err := tables.NewWriter(dir, event.Meta{Host: "node-1", Start: start, Stop: event.ClockAnchor{Mono: 3000, Wall: start.Wall + 3000}}, tables.Options{Run: "job-7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := w.Process(event.Process{PID: 1, Name: "train"})
	tr := w.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
	for i := range 3 {
		w.Span(event.Span{Name: "step", Start: int64(i) * 1000, End: int64(i)*1000 + 900, Track: tr, Step: true, StepNum: int64(i)})
	}
	files, err := w.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(files), "tables; the spans in", files[0])

	f, err := os.Open(filepath.Join(dir, files[0]))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	spans, err := tables.Read[tables.Span](f, st.Size())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans {
		fmt.Println(s.Run, s.Host, s.Name, s.StartNS-start.Wall, s.DurNS)
	}
	// Output:
	// 8 tables; the spans in spans/run=job-7/host=node-1/node-1.parquet
	// job-7 node-1 step 0 900
	// job-7 node-1 step 1000 900
	// job-7 node-1 step 2000 900
}

// Export writes a trace file's tables as its reader decodes it, reading
// the file a second time only if its end changes rows already written
// (see Export); the read function is called with the sink to stream into.
func ExampleExport() {
	dir, err := os.MkdirTemp("", "tables-export")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	// A trace to export: in a program, a file a reader streams, as with
	// formats.Perfetto.StreamFile(path, sink, formats.ReadOptions{}).
	read := func(sink event.Sink) error {
		sink.Meta().Host = "node-2"
		tr := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
		root := sink.Span(event.Span{Name: "train", Start: 0, Track: tr, Unfinished: true})
		sink.Span(event.Span{Name: "forward", Start: 10, End: 400, Parent: root, Track: tr})
		sink.EndSpan(root, 1000)
		return nil
	}
	files, err := tables.Export(dir, event.Meta{}, tables.Options{Run: "job-8"}, read)
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open(filepath.Join(dir, files[0]))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	spans, err := tables.Read[tables.Span](f, st.Size())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans {
		fmt.Println(s.Host, s.Name, s.DurNS)
	}
	// Output:
	// node-2 forward 390
	// node-2 train 1000
}
