package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/internal/spanstats"
	"github.com/devprof/devprof/tracediff"
)

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("diff", stderr)
	threshold := fs.Float64("threshold", 0, "exit 1 when a span or device name got significantly slower by more than `PCT` percent (its estimated change per instance), for CI; not set: never")
	alpha := fs.Float64("alpha", tracediff.DefaultAlpha, "significance level `A` of the rank test: a change with a larger p-value is \"~\" (noise)")
	top := fs.Int("top", 20, "show the first `N` rows (0 for all)")
	asJSON := fs.Bool("json", false, "print the comparison as one JSON object (every name, whatever -top says) for scripts")
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	thresholdSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "threshold" {
			thresholdSet = true
		}
	})
	switch {
	case thresholdSet && !(*threshold >= 0):
		fmt.Fprintf(stderr, "devprof diff: -threshold %v: want a percentage, 0 or more\n", *threshold)
		return errUsage
	case !(*alpha > 0 && *alpha < 1):
		fmt.Fprintf(stderr, "devprof diff: -alpha %v: want a significance level between 0 and 1 (0.05, 0.01)\n", *alpha)
		return errUsage
	case *top < 0:
		fmt.Fprintf(stderr, "devprof diff: -top %d: want 0 (all) or more\n", *top)
		return errUsage
	}
	if err := checkMaxEvents("diff", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("diff", *maxGoroutines, stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "devprof diff: want two arguments, BASE and NEW, got %d\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	lim := readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines}
	var sides [2]diffSide
	for i, arg := range fs.Args() {
		path, err := inputFile("diff", arg, stderr)
		if err != nil {
			return err
		}
		p, f, err := readProfile(path, stderr, lim)
		if err != nil {
			return err
		}
		sides[i] = diffSide{path: path, format: f, profile: p}
	}
	r := tracediff.Compare(sides[0].profile, sides[1].profile, *alpha)
	var slower []tracediff.Row
	if thresholdSet {
		slower = r.Slower(*threshold / 100)
	}
	if *asJSON {
		if err := writeDiffJSON(stdout, sides, r, thresholdSet, *threshold, slower); err != nil {
			return err
		}
	} else if err := writeDiff(stdout, sides, r, *top); err != nil {
		return err
	}
	if len(slower) > 0 {
		names := make([]string, 0, 3)
		for _, row := range slower[:min(3, len(slower))] {
			names = append(names, fmt.Sprintf("%s %q %s", row.Kind, row.Name, pct(row.Change)))
		}
		more := ""
		if len(slower) > 3 {
			more = fmt.Sprintf(" and %d more", len(slower)-3)
		}
		return fmt.Errorf("%s significantly slower by more than %g%%: %s%s", plural(int64(len(slower)), "name"), *threshold, strings.Join(names, ", "), more)
	}
	return nil
}

// diffSide is one of the two traces compared.
type diffSide struct {
	path    string
	format  *formats.Format
	profile *tracediff.Profile
}

// readProfile streams the trace at path (a file or a URL) into a
// tracediff.Collector, showing progress on a terminal.
func readProfile(path string, stderr io.Writer, lim readLimits) (*tracediff.Profile, *formats.Format, error) {
	if runstore.IsURL(path) {
		var f *formats.Format
		p, err := readRemote(path, func(local string) (p *tracediff.Profile, err error) {
			p, f, err = readProfile(local, stderr, lim)
			return p, err
		})
		return p, f, err
	}
	f, err := formats.Detect(path)
	if err != nil {
		return nil, nil, err
	}
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
	o := formats.ReadOptions{MaxEvents: lim.maxEvents}
	if isTerminal(stderr) {
		m := &progressMeter{w: stderr, label: "devprof diff: reading " + path, every: 200 * time.Millisecond}
		defer m.clear()
		o.Progress = m.update
	}
	if f == formats.GoTrace {
		err = decodeGoTrace(path, c, lim, o.Progress)
	} else {
		err = f.StreamFile(path, c, o)
	}
	if err != nil {
		return nil, nil, err
	}
	return c.Profile(), f, nil
}

// writeDiff prints the comparison as a table: per name the two runs'
// count, total, mean, p50 and p95, the estimated change per instance
// with its confidence interval, the p-value and the verdict.
func writeDiff(w io.Writer, sides [2]diffSide, r *tracediff.Report, top int) error {
	var b strings.Builder
	for i, s := range sides {
		label := [2]string{"base", "new "}[i]
		fmt.Fprintf(&b, "%s: %s (%s), %s\n", label, s.path, s.format.Display, plural(s.profile.Events, "event"))
		m := &s.profile.Meta
		for _, line := range dropLines(m) {
			fmt.Fprintf(&b, "warning: %s: %s\n", strings.TrimSpace(label), line)
		}
		for _, wr := range m.Warnings {
			fmt.Fprintf(&b, "warning: %s: %s\n", strings.TrimSpace(label), wr.Text)
		}
	}
	if changed := r.Changed(); changed == 0 {
		fmt.Fprintf(&b, "no change: none of %s changed beyond noise (alpha %g)\n\n", plural(int64(len(r.Rows)), "name"), r.Alpha)
	} else {
		fmt.Fprintf(&b, "%d of %s changed beyond noise (alpha %g; ~: within noise)\n\n", changed, plural(int64(len(r.Rows)), "name"), r.Alpha)
	}
	rows := r.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	// The names' column reads left-aligned (the figures right-aligned):
	// padded to one width, tabwriter's right alignment leaves it so.
	width := len("name")
	names := make([]string, len(rows))
	for i, row := range rows {
		names[i] = row.Kind.String() + " " + truncName(row.Name, 48)
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	ci := fmt.Sprintf("[%g%% CI]", 100*(1-r.Alpha))
	fmt.Fprintf(tw, "%s\tcount\ttotal\tΔ self\tmean\tp50\tp95\tchange\t%s\tp\t\n", pad("name"), ci)
	for i, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			pad(names[i]),
			arrow(fmt.Sprint(row.Base.Count), fmt.Sprint(row.New.Count)),
			arrow(dur(float64(row.Base.Total)), dur(float64(row.New.Total))),
			signedDur(row.Impact),
			arrow(dur(row.Base.Mean), dur(row.New.Mean)),
			arrow(dur(row.Base.P50), dur(row.New.P50)),
			arrow(dur(row.Base.P95), dur(row.New.P95)),
			pct(row.Change), interval(row.ChangeLow, row.ChangeHigh), pValue(row), row.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) < len(r.Rows) {
		fmt.Fprintf(&b, "… %s more (-top 0 for all)\n", plural(int64(len(r.Rows)-len(rows)), "name"))
	}
	if len(r.Rows) == 0 {
		b.WriteString("(no spans or device work in either trace)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// truncName keeps the table's first column readable; -json has every
// name whole.
func truncName(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func arrow(base, new string) string { return base + " → " + new }

// dur writes nanoseconds with three significant digits; "-" for none.
func dur(ns float64) string {
	if math.IsNaN(ns) {
		return "-"
	}
	return spanstats.FormatDuration(time.Duration(math.Round(ns)))
}

func signedDur(ns int64) string {
	if ns > 0 {
		return "+" + dur(float64(ns))
	}
	return dur(float64(ns))
}

// pct writes a fraction as a signed percentage; "-" where undefined.
func pct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "+∞%"
	case math.IsInf(v, -1):
		return "-∞%"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

func interval(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return ""
	}
	if math.IsInf(lo, -1) && math.IsInf(hi, 1) {
		return "[unbounded]"
	}
	return "[" + pct(lo) + ", " + pct(hi) + "]"
}

// pValue writes the row's p-value; "-" where no test ran (too few
// instances, a name in one trace only).
func pValue(row tracediff.Row) string {
	switch {
	case !tested(row):
		return "-"
	case row.P < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", row.P)
}

func tested(row tracediff.Row) bool {
	return row.Verdict == tracediff.NoChange || row.Significant()
}

// diffJSON is what devprof diff -json prints. Times are nanoseconds;
// a figure that does not exist (a mean of nothing, an unbounded
// interval) is null.
type diffJSON struct {
	Base      diffInputJSON `json:"base"`
	New       diffInputJSON `json:"new"`
	Alpha     float64       `json:"alpha"`
	Threshold *float64      `json:"threshold_pct,omitempty"`
	// Slower names the rows past the threshold (empty without one).
	Slower []diffKeyJSON `json:"slower"`
	Rows   []diffRowJSON `json:"rows"`
}

type diffInputJSON struct {
	Path     string   `json:"path"`
	Format   string   `json:"format"`
	Events   int64    `json:"events"`
	Dropped  int64    `json:"dropped_events"`
	Warnings []string `json:"warnings"`
}

type diffKeyJSON struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

type diffStatsJSON struct {
	Count      int64    `json:"count"`
	Unfinished int64    `json:"unfinished"`
	Total      int64    `json:"total_ns"`
	Self       int64    `json:"self_ns"`
	Mean       *float64 `json:"mean_ns"`
	P50        *float64 `json:"p50_ns"`
	P95        *float64 `json:"p95_ns"`
	Sampled    bool     `json:"sampled"`
}

type diffRowJSON struct {
	diffKeyJSON
	Verdict    string        `json:"verdict"`
	P          *float64      `json:"p"`
	Base       diffStatsJSON `json:"base"`
	New        diffStatsJSON `json:"new"`
	Shift      *float64      `json:"shift_ns"`
	ShiftLow   *float64      `json:"shift_low_ns"`
	ShiftHigh  *float64      `json:"shift_high_ns"`
	Change     *float64      `json:"change"`
	ChangeLow  *float64      `json:"change_low"`
	ChangeHigh *float64      `json:"change_high"`
	Impact     int64         `json:"impact_self_ns"`
}

// finite is v, or nil (null) when v is NaN or infinite, which JSON
// cannot hold.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func statsJSON(s tracediff.Stats) diffStatsJSON {
	return diffStatsJSON{Count: s.Count, Unfinished: s.Unfinished, Total: s.Total, Self: s.Self,
		Mean: finite(s.Mean), P50: finite(s.P50), P95: finite(s.P95), Sampled: s.Sampled}
}

func writeDiffJSON(w io.Writer, sides [2]diffSide, r *tracediff.Report, thresholdSet bool, threshold float64, slower []tracediff.Row) error {
	input := func(s diffSide) diffInputJSON {
		in := diffInputJSON{Path: s.path, Format: s.format.Name, Events: s.profile.Events, Dropped: s.profile.Meta.Dropped(), Warnings: []string{}}
		for _, wr := range s.profile.Meta.Warnings {
			in.Warnings = append(in.Warnings, wr.Text)
		}
		return in
	}
	out := diffJSON{Base: input(sides[0]), New: input(sides[1]), Alpha: r.Alpha, Slower: []diffKeyJSON{}, Rows: []diffRowJSON{}}
	if thresholdSet {
		out.Threshold = &threshold
	}
	for _, row := range slower {
		out.Slower = append(out.Slower, diffKeyJSON{row.Kind.String(), row.Name})
	}
	for _, row := range r.Rows {
		var p *float64 // null where no test ran
		if tested(row) {
			p = finite(row.P)
		}
		out.Rows = append(out.Rows, diffRowJSON{
			diffKeyJSON: diffKeyJSON{row.Kind.String(), row.Name}, Verdict: row.Verdict.String(), P: p,
			Base: statsJSON(row.Base), New: statsJSON(row.New),
			Shift: finite(row.Shift), ShiftLow: finite(row.ShiftLow), ShiftHigh: finite(row.ShiftHigh),
			Change: finite(row.Change), ChangeLow: finite(row.ChangeLow), ChangeHigh: finite(row.ChangeHigh),
			Impact: row.Impact,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
