package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/internal/spanstats"
)

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("summary", stderr)
	top := fs.Int("top", 20, "show the top `N` span names (0 for all)")
	sortBy := fs.String("sort", "total", "order rows by `KEY`: total, self, count, mean or name")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object (every span name, whatever -top says) for scripts")
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkMaxEvents("summary", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("summary", *maxGoroutines, stderr); err != nil {
		return err
	}
	if *top < 0 {
		// -1 is a common guess for "all"; say what means all rather than
		// guess what a negative count means.
		fmt.Fprintf(stderr, "devprof summary: -top %d: want 0 (all) or more\n", *top)
		return errUsage
	}
	if !slices.Contains(spanstats.SortKeys, *sortBy) {
		fmt.Fprintf(stderr, "devprof summary: -sort %q: want one of %s\n", *sortBy, strings.Join(spanstats.SortKeys, ", "))
		return errUsage
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if path, err = inputFile("summary", path, stderr); err != nil {
		return err
	}
	d, f, err := readSummary("summary", path, stderr, readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines})
	if err != nil {
		return err
	}
	if err := d.table.Sort(*sortBy); err != nil {
		return err
	}
	for i := range d.groups {
		if err := d.groups[i].table.Sort(*sortBy); err != nil {
			return err
		}
	}
	table, groups := d.table, d.groups
	if *asJSON {
		return writeJSON(stdout, path, f, d)
	}
	fmt.Fprintf(stdout, "%s (%s): %s on %s, %s, %s\n", path, f.Display, plural(int64(table.Spans), "span"), plural(int64(table.Tracks), "row"),
		plural(int64(d.instants), "instant"), plural(int64(d.counters), "counter sample"))
	for _, line := range dropLines(&d.meta) {
		fmt.Fprintf(stdout, "warning: %s\n", line)
	}
	for _, w := range d.meta.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w.Text)
	}
	for _, n := range d.meta.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n.Text)
	}
	fmt.Fprintln(stdout)
	goRuntime := d.hasGoRuntime
	// A Go execution trace has no spans of its own: its section says it.
	if len(groups) < 2 && (table.Spans > 0 || !goRuntime) {
		if err := table.Write(stdout, *top); err != nil {
			return err
		}
	}
	for i, g := range groups {
		if len(groups) < 2 {
			break
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		kind := "process"
		if g.device >= 0 {
			kind = "device"
		}
		fmt.Fprintf(stdout, "%s %s: %s on %s\n", kind, g.label, plural(int64(g.table.Spans), "span"), plural(int64(g.table.Tracks), "row"))
		if err := g.table.Write(stdout, *top); err != nil {
			return err
		}
	}
	if err := writeGoRuntime(stdout, d.goRuntime, d.hasGoRuntime, *top); err != nil {
		return err
	}
	return writeDeviceCounters(stdout, d.devices)
}

// writeGoRuntime prints the Go runtime's section: the collector's cycles
// and pauses, goroutines, and the top runtime/trace regions.
func writeGoRuntime(w io.Writer, g gotrace.Summary, ok bool, top int) error {
	if !ok {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nGo runtime: %s; %s, %v in all, longest %v; %s",
		plural(int64(g.GCs), "GC cycle"), plural(int64(g.Pauses), "stop-the-world pause"),
		time.Duration(g.PauseTotal).Round(time.Microsecond), time.Duration(g.PauseMax).Round(time.Microsecond), plural(int64(g.Goroutines), "goroutine")); err != nil {
		return err
	}
	if g.PeakGoroutines > 0 {
		fmt.Fprintf(w, " (at most %d at once)", g.PeakGoroutines)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "GC cycles %v in all; %s, %v in all", time.Duration(g.GCTotal).Round(time.Microsecond),
		plural(int64(g.Assists), "mark assist"), time.Duration(g.AssistTotal).Round(time.Microsecond))
	if g.CPUSamples > 0 {
		fmt.Fprintf(w, "; %s", plural(int64(g.CPUSamples), "CPU sample"))
	}
	if !g.Exact {
		// A file written from a model carries the rows, not the reader's
		// whole-file figures: say that a bound on rows may have cut them.
		fmt.Fprint(w, " (counted on the rows the trace holds)")
	}
	fmt.Fprintln(w)
	if len(g.Regions) == 0 && len(g.Tasks) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, t := range []struct {
		kind  string
		stats []gotrace.RegionStat
	}{{"region", g.Regions}, {"task", g.Tasks}} {
		if len(t.stats) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\tcount\ttotal\t\n", t.kind)
		for i, r := range t.stats {
			if top > 0 && i == top {
				break
			}
			fmt.Fprintf(tw, "%s\t%d\t%v\t\n", r.Name, r.Count, time.Duration(r.Total))
		}
	}
	return tw.Flush()
}

// procGroup is one process's share of a summary, or one device's in a
// trace of several processes: its spans' table.
type procGroup struct {
	key      int // rowGroup's key: Track.Process (0 for the recording program), or deviceGroup(d)
	device   int // the device's ordinal, for a device group; -1 for a process
	pid      int64
	pidText  string  // the pid as the trace wrote it (a number or a quoted label)
	pidLabel *string // the label of a string pid, for -json
	name     string
	label    string // how the text summary names it: pid and name, or the device
	table    *spanstats.Table
}

// deviceGroup is the group key of device d's rows.
func deviceGroup(d int) int { return -2 - d }

// jsonSummary is what summary -json prints: a stable shape for scripts,
// durations in nanoseconds.
type jsonSummary struct {
	File           string        `json:"file"`
	Format         string        `json:"format"`
	Host           string        `json:"host,omitempty"`
	Spans          int           `json:"spans"`
	Rows           int           `json:"rows"`
	Instants       int           `json:"instants"`
	CounterSamples int           `json:"counter_samples"`
	WallNS         int64         `json:"wall_ns"`
	Dropped        int64         `json:"dropped"`
	Drops          []jsonDrops   `json:"drops"`
	Warnings       []jsonWarning `json:"warnings"`
	Notes          []jsonWarning `json:"notes"` // notes have no code
	Table          []jsonRow     `json:"table"`
	DeviceCounters []jsonCounter `json:"device_counters"`
	// Processes splits the table by process when the trace has several.
	Processes []jsonProcess `json:"processes,omitempty"`
	// Devices splits the devices' rows out of Processes' (each device
	// its own table) when the trace has several processes.
	Devices []jsonDevice `json:"devices,omitempty"`
	// GoRuntime is the Go runtime's section, when the trace has its
	// tracks.
	GoRuntime *jsonGoRuntime `json:"go_runtime,omitempty"`
}

// jsonGoRuntime is gotrace.Summary for summary -json.
type jsonGoRuntime struct {
	GCs            int   `json:"gc_cycles"`
	GCTotalNS      int64 `json:"gc_total_ns"`
	Pauses         int   `json:"stw_pauses"`
	PauseTotalNS   int64 `json:"stw_total_ns"`
	PauseMaxNS     int64 `json:"stw_max_ns"`
	Assists        int   `json:"mark_assists"`
	AssistTotalNS  int64 `json:"mark_assist_total_ns"`
	Goroutines     int   `json:"goroutines"`
	PeakGoroutines int   `json:"peak_goroutines"`
	CPUSamples     int   `json:"cpu_samples"`
	// Exact says the figures are the reader's, over the whole file,
	// whatever bounds cut the rows; false when they were counted on the
	// rows a file holds.
	Exact   bool         `json:"exact"`
	Regions []jsonRegion `json:"regions"`
	Tasks   []jsonRegion `json:"tasks"`
}

// jsonGoRuntimeOf is g as summary -json prints it (empty lists as []).
func jsonGoRuntimeOf(g gotrace.Summary) *jsonGoRuntime {
	out := &jsonGoRuntime{GCs: g.GCs, GCTotalNS: g.GCTotal, Pauses: g.Pauses, PauseTotalNS: g.PauseTotal, PauseMaxNS: g.PauseMax,
		Assists: g.Assists, AssistTotalNS: g.AssistTotal, Goroutines: g.Goroutines, PeakGoroutines: g.PeakGoroutines,
		CPUSamples: g.CPUSamples, Exact: g.Exact, Regions: []jsonRegion{}, Tasks: []jsonRegion{}}
	for _, r := range g.Regions {
		out.Regions = append(out.Regions, jsonRegion{r.Name, r.Count, r.Total})
	}
	for _, r := range g.Tasks {
		out.Tasks = append(out.Tasks, jsonRegion{r.Name, r.Count, r.Total})
	}
	return out
}

type jsonRegion struct {
	Name    string `json:"name"`
	Count   int    `json:"count"`
	TotalNS int64  `json:"total_ns"`
}

// jsonProcess is one process's part of summary -json.
type jsonProcess struct {
	PID   int64     `json:"pid"`
	Label *string   `json:"label,omitempty"` // a string pid as the trace wrote it
	Name  string    `json:"name"`
	Spans int       `json:"spans"`
	Rows  int       `json:"rows"`
	Table []jsonRow `json:"table"`
}

// jsonDevice is one device's part of summary -json (see Devices).
type jsonDevice struct {
	Device int       `json:"device"`
	Name   string    `json:"name"`
	Spans  int       `json:"spans"`
	Rows   int       `json:"rows"`
	Table  []jsonRow `json:"table"`
}

type jsonDrops struct {
	Source string `json:"source"`
	Events int64  `json:"events"`
}

type jsonWarning struct {
	Source string `json:"source"`
	Code   string `json:"code,omitempty"`
	Text   string `json:"text"`
}

type jsonRow struct {
	Name    string `json:"name"`
	Count   int    `json:"count"`
	TotalNS int64  `json:"total_ns"`
	SelfNS  int64  `json:"self_ns"`
	MeanNS  int64  `json:"mean_ns"`
	MinNS   int64  `json:"min_ns"`
	MaxNS   int64  `json:"max_ns"`
}

type jsonCounter struct {
	Device     int     `json:"device"`
	DeviceName string  `json:"device_name,omitempty"`
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Samples    int     `json:"samples"`
	Min        float64 `json:"min"`
	Mean       float64 `json:"mean"`
	Max        float64 `json:"max"`
}

func writeJSON(w io.Writer, path string, f *formats.Format, d *summaryData) error {
	// Empty lists print as [], not null, so scripts can iterate them as
	// they are.
	t := d.table
	out := jsonSummary{
		File: path, Format: f.Name, Host: d.meta.Host,
		Spans: t.Spans, Rows: t.Tracks, Instants: d.instants, CounterSamples: d.counters,
		WallNS: int64(t.Wall), Dropped: d.meta.Dropped(),
		Drops: []jsonDrops{}, Warnings: []jsonWarning{}, Notes: []jsonWarning{},
		Table: []jsonRow{}, DeviceCounters: []jsonCounter{},
	}
	for _, x := range d.meta.Drops {
		out.Drops = append(out.Drops, jsonDrops{x.Source, x.Events})
	}
	for _, x := range d.meta.Warnings {
		out.Warnings = append(out.Warnings, jsonWarning{x.Source, x.Code, x.Text})
	}
	for _, x := range d.meta.Notes {
		out.Notes = append(out.Notes, jsonWarning{Source: x.Source, Text: x.Text})
	}
	out.Table = jsonRows(t)
	for _, g := range d.groups {
		if len(d.groups) < 2 {
			break
		}
		if g.device >= 0 {
			out.Devices = append(out.Devices, jsonDevice{Device: g.device, Name: g.name, Spans: g.table.Spans, Rows: g.table.Tracks, Table: jsonRows(g.table)})
			continue
		}
		out.Processes = append(out.Processes, jsonProcess{PID: g.pid, Label: g.pidLabel, Name: g.name, Spans: g.table.Spans, Rows: g.table.Tracks, Table: jsonRows(g.table)})
	}
	for _, c := range d.devices {
		out.DeviceCounters = append(out.DeviceCounters, jsonCounter{c.device, c.deviceName, c.name, c.unit, c.n, c.min, c.mean, c.max})
	}
	if d.hasGoRuntime {
		out.GoRuntime = jsonGoRuntimeOf(d.goRuntime)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// jsonRows returns the rows of a table for -json ([] when empty).
func jsonRows(t *spanstats.Table) []jsonRow {
	out := []jsonRow{}
	for _, r := range t.Rows {
		out = append(out, jsonRow{r.Name, r.Count, int64(r.Total), int64(r.Self), int64(r.Mean), int64(r.Min), int64(r.Max)})
	}
	return out
}

// counterStat is one device counter series over the trace.
type counterStat struct {
	device         int
	deviceName     string
	name, unit     string
	n              int
	min, max, mean float64
}

// writeDeviceCounters prints each device's counter series as min, mean
// and max over the trace.
func writeDeviceCounters(w io.Writer, stats []counterStat) error {
	if len(stats) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "device\tcounter\tunit\tsamples\tmin\tmean\tmax\t")
	for _, st := range stats {
		label := fmt.Sprintf("GPU %d", st.device)
		if st.deviceName != "" {
			label += " (" + st.deviceName + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", label, st.name, st.unit, st.n, number(st.min), number(st.mean), number(st.max))
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

// dropLines words what a trace lost, one line per kind: events (spans,
// instants, counter samples the recorder or a reader could not keep),
// which make the totals low, and flows a reader dropped for lack of a
// second end (sources named "… flows", as chrome.DropsFlows), which are
// arrows, not events: they cost no span, so the totals stay whole.
func dropLines(m *event.Meta) []string {
	events, flows := *m, *m
	events.Drops, flows.Drops = nil, nil
	for _, d := range m.Drops {
		if d.Events <= 0 {
			continue
		}
		if strings.HasSuffix(d.Source, " flows") {
			flows.Drops = append(flows.Drops, d)
		} else {
			events.Drops = append(events.Drops, d)
		}
	}
	var lines []string
	if n := events.Dropped(); n > 0 {
		lines = append(lines, strings.TrimPrefix(metatext.DropSummary(&events), "devprof: ")+"; totals are low")
	}
	if n := flows.Dropped(); n > 0 {
		var parts []string
		for _, d := range flows.Drops {
			parts = append(parts, fmt.Sprintf("%s: %d", d.Source, d.Events))
		}
		lines = append(lines, fmt.Sprintf("%s dropped (%s): flows are arrows between events; every span and event is counted",
			plural(n, "one-ended flow"), strings.Join(parts, "; ")))
	}
	return lines
}
