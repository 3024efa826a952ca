package main

import (
	"fmt"
	"io"

	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/spanstats"
)

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("summary", stderr)
	top := fs.Int("top", 20, "show the top `N` span names (0 for all)")
	sortBy := fs.String("sort", "total", "order rows by `KEY`: total, self, count, mean or name")
	if err := parse(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	t, err := perfetto.ReadFile(path)
	if err != nil {
		return err
	}
	spans := make([]spanstats.Span, len(t.Slices))
	for i, s := range t.Slices {
		spans[i] = spanstats.Span{Name: s.Name, Start: s.Start, Dur: s.Dur, Track: s.Track, Parent: s.Parent}
	}
	table := spanstats.Compute(spans)
	if err := table.Sort(*sortBy); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d spans on %d tracks, %d instants, %d counter samples\n\n", path, table.Spans, table.Tracks, len(t.Instants), len(t.Counters))
	return table.Write(stdout, *top)
}
