package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/metatext"
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
	if path, err = inputFile("summary", path, stderr); err != nil {
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
	if err := table.Write(stdout, *top); err != nil {
		return err
	}
	return writeDeviceCounters(stdout, s)
}

// writeDeviceCounters prints each device's counter series (utilization,
// memory, power...) as min, mean and max over the trace.
func writeDeviceCounters(w io.Writer, s *event.Snapshot) error {
	l := s.Layout()
	if len(l.DeviceCounters) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "device\tcounter\tunit\tsamples\tmin\tmean\tmax\t")
	for _, d := range l.Devices {
		type stat struct {
			unit           string
			n              int
			min, max, mean float64
		}
		var order []string
		series := map[string]*stat{}
		for _, r := range l.DeviceCounters[d.Device] {
			unit, v := s.Counter(r)
			name := s.Name(r)
			st := series[name]
			if st == nil {
				st = &stat{unit: unit, min: math.Inf(1), max: math.Inf(-1)}
				series[name] = st
				order = append(order, name)
			}
			st.n++
			st.min, st.max = min(st.min, v), max(st.max, v)
			st.mean += (v - st.mean) / float64(st.n) // running mean: no overflow on large byte counts
		}
		label := fmt.Sprintf("GPU %d", d.Device)
		if d.DeviceName != "" {
			label += " (" + d.DeviceName + ")"
		}
		for _, name := range order {
			st := series[name]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", label, name, st.unit, st.n, number(st.min), number(st.mean), number(st.max))
		}
	}
	return tw.Flush()
}

// number prints a counter value compactly.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
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
