package formats_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// Converting a trace: the file names choose the formats, and Read tells
// which one it found.
func Example() {
	dir, err := os.MkdirTemp("", "formats-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b := event.NewBuilder(event.Meta{Host: "example", Stop: event.ClockAnchor{Mono: 100}})
	b.Span(event.Span{Name: "step", Start: 10, End: 90})
	in := filepath.Join(dir, "run.pftrace.gz")
	if err := formats.WriteFile(in, nil, b.Snapshot()); err != nil {
		log.Fatal(err)
	}

	s, f, err := formats.Read(in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d event(s), opens in %s\n", f.Display, len(s.Events), f.Viewer)
	out := filepath.Join(dir, "example"+formats.XPlane.SessionExt)
	if err := formats.WriteFile(out, nil, s); err != nil {
		log.Fatal(err)
	}
	_, f, err = formats.Read(out)
	fmt.Println(f.Display, err)
	// Output:
	// Perfetto: 1 event(s), opens in ui.perfetto.dev
	// TensorBoard profile (XSpace) <nil>
}
