package main

import (
	"fmt"
	"github.com/devprof/devprof/internal/metatext"
	"io"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
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
	s, f, err := formats.Read(path)
	if err != nil {
		return err
	}
	table := spanstats.Compute(spansOf(s))
	if err := table.Sort(*sortBy); err != nil {
		return err
	}
	instants, counters := 0, 0
	for _, r := range s.Events {
		switch r.Kind {
		case event.KindInstant:
			instants++
		case event.KindCounter:
			counters++
		}
	}
	fmt.Fprintf(stdout, "%s (%s): %d spans on %d rows, %d instants, %d counter samples\n", path, f.Display, table.Spans, table.Tracks, instants, counters)
	if s.Meta.Dropped() > 0 {
		fmt.Fprintf(stdout, "warning: %s; totals are low\n", strings.TrimPrefix(metatext.DropSummary(&s.Meta), "devprof: "))
	}
	for _, w := range s.Meta.Warnings {
		fmt.Fprintf(stdout, "note: %s\n", w.Text)
	}
	fmt.Fprintln(stdout)
	return table.Write(stdout, *top)
}

// spansOf flattens the layout of s for spanstats: a span's track is its
// row, and its parent the span directly above it on that row, so self time
// subtracts only nested work, not work running beside it.
func spansOf(s *event.Snapshot) []spanstats.Span {
	l := s.Layout()
	var out []spanstats.Span
	for ri := range l.Rows {
		var stack []int // indexes into out
		for _, p := range l.Rows[ri].Spans {
			for len(stack) > 0 && out[stack[len(stack)-1]].Start+out[stack[len(stack)-1]].Dur <= p.Start {
				stack = stack[:len(stack)-1]
			}
			parent := -1
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			out = append(out, spanstats.Span{Name: s.Name(p.Record), Start: p.Start, Dur: p.End - p.Start, Track: uint64(ri), Parent: parent})
			stack = append(stack, len(out)-1)
		}
	}
	return out
}
