// Package spanstats aggregates spans by name into the table `devprof summary`
// prints: how many spans of each name there are, their total, self, mean,
// min and max time, and their share of the trace's wall time.
//
// It sits after the readers in devprof's flow (readers → spanstats → CLI): a
// reader such as exporters/perfetto.Read turns a trace file into slices, the
// CLI hands them to Compute as Spans, sorts the Table and writes it. The
// package knows nothing of any trace format.
package spanstats

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Span is one span of a trace, as a reader gives it.
type Span struct {
	Name string
	// Start and Dur are in ns. A negative Dur means the span never ended;
	// Compute skips it.
	Start, Dur int64
	// Track identifies the timeline (thread, row) the span is on.
	Track uint64
	// Parent is the index of the enclosing span in the slice given to
	// Compute, -1 for none. A parent on another track (a child handed to
	// another goroutine) is allowed.
	Parent int
}

// Row holds the statistics of all spans of one name.
type Row struct {
	Name  string
	Count int
	// Total is the sum of the spans' durations; Self is Total minus the time
	// covered by each span's direct children on the same track.
	Total, Self    time.Duration
	Mean, Min, Max time.Duration
}

// Table is the aggregate of a set of spans, one row per span name.
type Table struct {
	Rows []Row
	// Wall is the trace extent: from the first span's start to the last
	// span's end.
	Wall time.Duration
	// Spans counts the spans aggregated (those that ended); Tracks counts
	// the distinct tracks they are on.
	Spans, Tracks int
}

// Compute aggregates spans by name and sorts the rows by total time.
//
// A span's self time is its duration minus the union of the intervals of its
// direct children on the same track, each clipped to the span: overlapping
// children are not counted twice, and children on other tracks (concurrent
// work begun under it) do not reduce it. Spans with Dur < 0 are skipped, as
// children too.
func Compute(spans []Span) *Table {
	// Children intervals, grouped by parent.
	type child struct {
		parent     int
		start, end int64
	}
	var kids []child
	for i, s := range spans {
		p := s.Parent
		if s.Dur < 0 || p < 0 || p >= len(spans) || p == i {
			continue
		}
		ps := spans[p]
		if ps.Dur < 0 || ps.Track != s.Track {
			continue
		}
		start, end := max(s.Start, ps.Start), min(spanEnd(s), spanEnd(ps))
		if start < end {
			kids = append(kids, child{p, start, end})
		}
	}
	slices.SortFunc(kids, func(a, b child) int {
		return cmp.Or(cmp.Compare(a.parent, b.parent), cmp.Compare(a.start, b.start))
	})
	covered := map[int]int64{}
	for i := 0; i < len(kids); {
		p := kids[i].parent
		var sum int64
		curStart, curEnd := kids[i].start, kids[i].end
		for ; i < len(kids) && kids[i].parent == p; i++ {
			if k := kids[i]; k.start > curEnd {
				sum += curEnd - curStart
				curStart, curEnd = k.start, k.end
			} else {
				curEnd = max(curEnd, k.end)
			}
		}
		covered[p] = sum + curEnd - curStart
	}

	var sum Sum
	tracks := map[uint64]bool{}
	for i, s := range spans {
		if s.Dur < 0 {
			continue
		}
		tracks[s.Track] = true
		sum.Add(s.Name, s.Start, s.Dur, s.Dur-covered[i])
	}
	return sum.Table(len(tracks))
}

// Sum accumulates the table of spans given one at a time, for a consumer
// that works out each span's self time itself and cannot hold them all
// (devprof summary reading a trace as a stream): it keeps one row per
// name, not the spans. The zero value is an empty sum.
type Sum struct {
	rows        map[string]*Row
	spans       int
	first, last int64
}

// Add counts one span of name, from start for dur ns, with self ns of
// it not covered by its direct children.
func (s *Sum) Add(name string, start, dur, self int64) {
	if s.rows == nil {
		s.rows = map[string]*Row{}
	}
	if s.spans == 0 {
		s.first, s.last = start, start+dur
	}
	s.spans++
	s.first, s.last = min(s.first, start), max(s.last, start+dur)
	d := time.Duration(dur)
	r := s.rows[name]
	if r == nil {
		r = &Row{Name: name, Min: d, Max: d}
		s.rows[name] = r
	}
	r.Count++
	r.Total += d
	r.Self += time.Duration(self)
	r.Min, r.Max = min(r.Min, d), max(r.Max, d)
}

// Merge adds the spans counted in o to s.
func (s *Sum) Merge(o *Sum) {
	if o.spans == 0 {
		return
	}
	if s.rows == nil {
		s.rows = map[string]*Row{}
	}
	if s.spans == 0 {
		s.first, s.last = o.first, o.last
	}
	s.spans += o.spans
	s.first, s.last = min(s.first, o.first), max(s.last, o.last)
	for name, or := range o.rows {
		r := s.rows[name]
		if r == nil {
			c := *or
			s.rows[name] = &c
			continue
		}
		r.Count += or.Count
		r.Total += or.Total
		r.Self += or.Self
		r.Min, r.Max = min(r.Min, or.Min), max(r.Max, or.Max)
	}
}

// Spans returns how many spans s has counted.
func (s *Sum) Spans() int { return s.spans }

// Table returns the table of the spans counted, rows sorted by total
// time, saying they lie on tracks distinct tracks (which Sum does not
// tell apart).
func (s *Sum) Table(tracks int) *Table {
	t := &Table{Spans: s.spans, Tracks: tracks}
	if s.spans > 0 {
		t.Wall = time.Duration(s.last - s.first)
	}
	t.Rows = make([]Row, 0, len(s.rows))
	for _, r := range s.rows {
		r := *r
		r.Mean = r.Total / time.Duration(r.Count)
		t.Rows = append(t.Rows, r)
	}
	t.Sort("total")
	return t
}

func spanEnd(s Span) int64 { return s.Start + s.Dur }

// SortKeys lists the keys Sort accepts; the first is the default.
var SortKeys = []string{"total", "self", "count", "mean", "name"}

// Sort orders the rows by key: "total" (the default, also for ""), "self",
// "count" or "mean", largest first, or "name", alphabetically. Ties are
// broken by name. An unknown key is an error that lists the choices.
func (t *Table) Sort(by string) error {
	var key func(r *Row) int64
	switch by {
	case "", "total":
		key = func(r *Row) int64 { return int64(r.Total) }
	case "self":
		key = func(r *Row) int64 { return int64(r.Self) }
	case "count":
		key = func(r *Row) int64 { return int64(r.Count) }
	case "mean":
		key = func(r *Row) int64 { return int64(r.Mean) }
	case "name":
		key = func(r *Row) int64 { return 0 }
	default:
		return fmt.Errorf("unknown sort key %q (choose %s)", by, strings.Join(SortKeys, ", "))
	}
	slices.SortFunc(t.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(key(&b), key(&a)), strings.Compare(a.Name, b.Name))
	})
	return nil
}

// MaxNameWidth is the width, in runes, beyond which Write truncates a name
// with "…".
const MaxNameWidth = 48

// Write prints the first top rows (all of them if top <= 0) as an aligned
// text table with the columns Name, Count, Total, Self, Mean, Min, Max and
// "% wall" (Total as a share of Wall; above 100% when spans of a name run
// concurrently). Durations are written for people, e.g. 12.3ms.
func (t *Table) Write(w io.Writer, top int) error {
	rows := t.Rows
	if top > 0 && top < len(rows) {
		rows = rows[:top]
	}
	cells := [][]string{{"Name", "Count", "Total", "Self", "Mean", "Min", "Max", "% wall"}}
	for _, r := range rows {
		pct := "-"
		if t.Wall > 0 {
			pct = fmt.Sprintf("%.1f%%", 100*float64(r.Total)/float64(t.Wall))
		}
		cells = append(cells, []string{
			truncate(r.Name, MaxNameWidth), fmt.Sprint(r.Count),
			FormatDuration(r.Total), FormatDuration(r.Self), FormatDuration(r.Mean),
			FormatDuration(r.Min), FormatDuration(r.Max), pct,
		})
	}
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range cells {
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0 && len(row) == 1:
				b.WriteString(c)
			case i == 0:
				b.WriteString(c + pad) // names align left
			default:
				b.WriteString("  " + pad + c) // numbers align right
			}
		}
		b.WriteByte('\n')
	}
	if len(rows) == 0 {
		b.WriteString("(no spans)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// FormatDuration writes d with about three significant digits in the largest
// unit that keeps the number under 1000: 850ns, 1.50µs, 12.3ms, 250ms, 1.23s.
// Beyond 1000 seconds it writes whole seconds.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	if d < time.Microsecond {
		return fmt.Sprintf("%dns", int64(d))
	}
	units := []struct {
		size time.Duration
		name string
	}{{time.Microsecond, "µs"}, {time.Millisecond, "ms"}, {time.Second, "s"}}
	for i, u := range units {
		v := float64(d) / float64(u.size)
		switch {
		case v < 9.995:
			return fmt.Sprintf("%.2f%s", v, u.name)
		case v < 99.95:
			return fmt.Sprintf("%.1f%s", v, u.name)
		case v < 999.5 || i == len(units)-1:
			return fmt.Sprintf("%.0f%s", v, u.name)
		}
	}
	panic("unreachable")
}
