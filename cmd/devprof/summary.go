package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/spanstats"
)

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("summary", stderr)
	top := fs.Int("top", 20, "show the top `N` span names (0 for all)")
	sortBy := fs.String("sort", "total", "order rows by `KEY`: total, self, count, mean or name")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object (every span name, whatever -top says) for scripts")
	maxEvents := maxEventsFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkMaxEvents("summary", *maxEvents, stderr); err != nil {
		return err
	}
	if *top < 0 {
		// -1 is a common guess for "all"; say what means all rather than
		// guess what a negative count means.
		fmt.Fprintf(stderr, "devprof summary: -top %d: want 0 (all) or more\n", *top)
		return errUsage
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if path, err = inputFile("summary", path, stderr); err != nil {
		return err
	}
	s, f, err := readTrace("summary", path, stderr, *maxEvents)
	if err != nil {
		return err
	}
	table := spanstats.Compute(spansOf(s, -1, false))
	if err := table.Sort(*sortBy); err != nil {
		return err
	}
	groups := processGroups(s)
	splitDevices := slices.ContainsFunc(groups, func(g procGroup) bool { return g.device >= 0 })
	for i := range groups {
		groups[i].table = spanstats.Compute(spansOf(s, groups[i].key, splitDevices))
		if err := groups[i].table.Sort(*sortBy); err != nil {
			return err
		}
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
	if *asJSON {
		return writeJSON(stdout, path, f, s, table, groups, instants, counters)
	}
	fmt.Fprintf(stdout, "%s (%s): %s on %s, %s, %s\n", path, f.Display, plural(int64(table.Spans), "span"), plural(int64(table.Tracks), "row"),
		plural(int64(instants), "instant"), plural(int64(counters), "counter sample"))
	for _, line := range dropLines(&s.Meta) {
		fmt.Fprintf(stdout, "warning: %s\n", line)
	}
	for _, w := range s.Meta.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w.Text)
	}
	for _, n := range s.Meta.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n.Text)
	}
	fmt.Fprintln(stdout)
	_, goRuntime := gotrace.Summarize(s)
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
	if err := writeGoRuntime(stdout, s, *top); err != nil {
		return err
	}
	return writeDeviceCounters(stdout, s)
}

// writeGoRuntime prints the Go runtime's section: the collector's cycles
// and pauses, goroutines, and the top runtime/trace regions.
func writeGoRuntime(w io.Writer, s *event.Snapshot, top int) error {
	g, ok := gotrace.Summarize(s)
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
	if len(g.Regions) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "region\tcount\ttotal\t")
	for i, r := range g.Regions {
		if top > 0 && i == top {
			break
		}
		fmt.Fprintf(tw, "%s\t%d\t%v\t\n", r.Name, r.Count, time.Duration(r.Total))
	}
	return tw.Flush()
}

// procGroup is one process's share of a summary, or one device's in a
// trace of several processes: its spans' table.
type procGroup struct {
	key     int // rowGroup's key: Track.Process (0 for the recording program), or deviceGroup(d)
	device  int // the device's ordinal, for a device group; -1 for a process
	pid     int64
	pidText string // the pid as the trace wrote it (a number or a quoted label)
	name    string
	label   string // how the text summary names it: pid and name, or the device
	table   *spanstats.Table
}

// deviceGroup is the group key of device d's rows.
func deviceGroup(d int) int { return -2 - d }

// processGroups returns the processes whose rows hold spans, the
// program's first and then in Snapshot.Processes order, when there are
// several; a trace of one process gives one group or none. In a trace of
// several processes (devprof collect's merge of hosts) each device is a
// group of its own after them: its rows belong to no host process in
// the model, and counting them under the recording program's (the
// collector's) would say that process ran them.
func processGroups(s *event.Snapshot) []procGroup {
	l := s.Layout()
	seen := map[int]bool{}
	for ri := range l.Rows {
		if len(l.Rows[ri].Spans) > 0 {
			seen[rowGroup(s, &l.Rows[ri], false)] = true
		}
	}
	var out []procGroup
	for n := 0; n <= len(s.Processes); n++ {
		if !seen[n] {
			continue
		}
		var p event.Process
		if n == 0 {
			p = event.Process{PID: int64(s.Meta.PID), Name: s.Meta.Program}
		} else {
			p = s.Processes[n-1]
		}
		g := procGroup{key: n, device: -1, pid: p.PID, pidText: fmt.Sprint(p.PID), name: p.Name}
		if p.IsLabel {
			g.pidText = fmt.Sprintf("%q", p.Label)
		}
		g.label = g.pidText
		if p.Name != "" {
			g.label += " (" + p.Name + ")"
		}
		if len(p.Labels) > 0 {
			g.label += " [" + strings.Join(p.Labels, ", ") + "]"
		}
		out = append(out, g)
	}
	if len(out) < 2 {
		return out
	}
	devices := map[int]string{}
	for ri := range l.Rows {
		row := &l.Rows[ri]
		if t, ok := s.Track(row); ok && len(row.Spans) > 0 && rowGroup(s, row, true) < -1 && devices[t.Device] == "" {
			devices[t.Device] = t.DeviceName // the first of its rows that names it
		}
	}
	for _, d := range slices.Sorted(maps.Keys(devices)) {
		g := procGroup{key: deviceGroup(d), device: d, name: devices[d], label: fmt.Sprintf("%d", d)}
		if g.name != "" {
			g.label += " (" + g.name + ")"
		}
		out = append(out, g)
	}
	return out
}

// rowGroup returns the group a layout row belongs to: its Track.Process
// for a host thread; for lanes and device tracks 0, the program's, or,
// with devices split out, deviceGroup of a device track's ordinal.
func rowGroup(s *event.Snapshot, row *event.Row, devices bool) int {
	t, ok := s.Track(row)
	switch {
	case !ok:
		return 0
	case t.Kind == event.TrackHostThread:
		return t.Process
	case devices && t.Kind != event.TrackProcess:
		return deviceGroup(t.Device)
	}
	return 0
}

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
	GCs            int          `json:"gc_cycles"`
	Pauses         int          `json:"stw_pauses"`
	PauseTotalNS   int64        `json:"stw_total_ns"`
	PauseMaxNS     int64        `json:"stw_max_ns"`
	Goroutines     int          `json:"goroutines"`
	PeakGoroutines int          `json:"peak_goroutines"`
	Regions        []jsonRegion `json:"regions"`
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

func writeJSON(w io.Writer, path string, f *formats.Format, s *event.Snapshot, t *spanstats.Table, groups []procGroup, instants, counters int) error {
	// Empty lists print as [], not null, so scripts can iterate them as
	// they are.
	out := jsonSummary{
		File: path, Format: f.Name, Host: s.Meta.Host,
		Spans: t.Spans, Rows: t.Tracks, Instants: instants, CounterSamples: counters,
		WallNS: int64(t.Wall), Dropped: s.Meta.Dropped(),
		Drops: []jsonDrops{}, Warnings: []jsonWarning{}, Notes: []jsonWarning{},
		Table: []jsonRow{}, DeviceCounters: []jsonCounter{},
	}
	for _, d := range s.Meta.Drops {
		out.Drops = append(out.Drops, jsonDrops{d.Source, d.Events})
	}
	for _, x := range s.Meta.Warnings {
		out.Warnings = append(out.Warnings, jsonWarning{x.Source, x.Code, x.Text})
	}
	for _, x := range s.Meta.Notes {
		out.Notes = append(out.Notes, jsonWarning{Source: x.Source, Text: x.Text})
	}
	out.Table = jsonRows(t)
	for _, g := range groups {
		if len(groups) < 2 {
			break
		}
		if g.device >= 0 {
			out.Devices = append(out.Devices, jsonDevice{Device: g.device, Name: g.name, Spans: g.table.Spans, Rows: g.table.Tracks, Table: jsonRows(g.table)})
			continue
		}
		jp := jsonProcess{PID: g.pid, Name: g.name, Spans: g.table.Spans, Rows: g.table.Tracks, Table: jsonRows(g.table)}
		if g.key > 0 && s.Processes[g.key-1].IsLabel {
			jp.Label = &s.Processes[g.key-1].Label
		}
		out.Processes = append(out.Processes, jp)
	}
	for _, c := range deviceCounters(s) {
		out.DeviceCounters = append(out.DeviceCounters, jsonCounter{c.device, c.deviceName, c.name, c.unit, c.n, c.min, c.mean, c.max})
	}
	if g, ok := gotrace.Summarize(s); ok {
		out.GoRuntime = &jsonGoRuntime{GCs: g.GCs, Pauses: g.Pauses, PauseTotalNS: g.PauseTotal, PauseMaxNS: g.PauseMax,
			Goroutines: g.Goroutines, PeakGoroutines: g.PeakGoroutines, Regions: []jsonRegion{}}
		for _, r := range g.Regions {
			out.GoRuntime.Regions = append(out.GoRuntime.Regions, jsonRegion{r.Name, r.Count, r.Total})
		}
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

// deviceCounters returns each device's counter series (utilization,
// memory, power...) with min, mean and max, devices in order and series in
// the order they first appear.
func deviceCounters(s *event.Snapshot) []counterStat {
	l := s.Layout()
	var out []counterStat
	for _, d := range l.Devices {
		index := map[string]int{} // name → index in out
		for _, r := range l.DeviceCounters[d.Device] {
			unit, v := s.Counter(r)
			name := s.Name(r)
			i, ok := index[name]
			if !ok {
				i = len(out)
				index[name] = i
				out = append(out, counterStat{device: int(d.Device), deviceName: d.DeviceName, name: name, unit: unit, min: math.Inf(1), max: math.Inf(-1)})
			}
			st := &out[i]
			st.n++
			st.min, st.max = min(st.min, v), max(st.max, v)
			st.mean += (v - st.mean) / float64(st.n) // running mean: no overflow on large byte counts
		}
	}
	return out
}

// writeDeviceCounters prints each device's counter series as min, mean
// and max over the trace.
func writeDeviceCounters(w io.Writer, s *event.Snapshot) error {
	stats := deviceCounters(s)
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

// spansOf flattens the layout of s for spanstats: a span's track is its
// row, and its parent the span directly above it on that row, so self time
// subtracts only nested work, not work running beside it. With group
// other than -1, only the rows of that group (rowGroup's key, devices
// split out or not) count.
func spansOf(s *event.Snapshot, group int, devices bool) []spanstats.Span {
	l := s.Layout()
	runtime := gotrace.RuntimeTracks(s) // the Go runtime's rows have a section of their own
	var out []spanstats.Span
	for ri := range l.Rows {
		if group != -1 && rowGroup(s, &l.Rows[ri], devices) != group || runtime[l.Rows[ri].Track] {
			continue
		}
		var stack []int // indexes into out
		for _, p := range l.Rows[ri].Spans {
			if t, ok := s.TrackOf(p.Record); ok && t.Kind == event.TrackMemory {
				break // a memory track's allocations and frees are instants, not work (memory timeline reads them)
			}
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
