package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/memplot"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/membreakdown"
)

// runTimeline is `devprof memory timeline`: a device's memory over a
// trace, from the allocations and frees device-memory tracking recorded,
// stacked by category (or by tag set) — printed at each device's peak and
// drawn, with -plot, over the whole trace.
func runTimeline(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("memory timeline", stderr)
	kwPath := fs.String("keywords", "", "group tag sets into the categories of the keyword dictionary in `FILE` (JSON or YAML, as for memory breakdown; default: the default dictionary)")
	byTags := fs.Bool("tags", false, "stack by tag set (the largest -top, then the rest summed) instead of by category")
	top := fs.Int("top", 8, "with -tags, how many tag sets get a series of their own (`N`)")
	plotPath := fs.String("plot", "", "draw each device's memory over time, stacked, into `OUT`, an .svg or a .png")
	asJSON := fs.Bool("json", false, "print each device's peak and its split as one JSON object for scripts")
	maxRows := maxRowsFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "devprof memory timeline: want exactly one INPUT (a trace, or a run or log directory), got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	if *top < 1 {
		fmt.Fprintf(stderr, "devprof memory timeline: -top %d: want 1 or more\n", *top)
		return errUsage
	}
	if *plotPath != "" {
		if _, err := memplot.FormatOf(*plotPath); err != nil {
			fmt.Fprintf(stderr, "devprof memory timeline: -plot %v\n", err)
			return errUsage
		}
	}
	dict := membreakdown.DefaultDictionary()
	if *kwPath != "" {
		d, err := membreakdown.ReadDictionary(*kwPath)
		if err != nil {
			return err
		}
		dict = d
	}
	path, err := inputFile("memory timeline", fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	s, _, err := readTrace("memory timeline", path, stderr, 0)
	if err != nil {
		return err
	}
	n := 0 // every tag set, to be put in a category
	if *byTags {
		n = *top
	} else if *maxRows != 0 {
		if sets, events, values := categoryValues(s); values > maxTimelineValues {
			return fmt.Errorf("%s: splitting its %d memory events into categories takes a series per tag set, %d of them: %d values, more than %d; -tags stacks the -top largest tag sets instead, -max_rows 0 lifts the bound", path, events, sets, values, maxTimelineValues)
		}
	}
	var tls []memplot.Timeline
	for _, mt := range s.MemoryTimelines(n) {
		tl := memplot.Timeline{Device: mt.Device, Times: make([]int64, len(mt.Times))}
		for i, t := range mt.Times {
			tl.Times[i] = t - s.Meta.Start.Mono
		}
		if *byTags {
			for _, se := range mt.Series {
				tl.Series = append(tl.Series, memplot.Series{Name: se.Key, Bytes: se.Bytes})
			}
		} else {
			tl.Series = categorySeries(mt, dict)
		}
		tls = append(tls, tl)
	}
	// The GPUs first, host memory's panel (its own scale) after them.
	hostLast := func(tl memplot.Timeline) int {
		if tl.Device < 0 {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(tls, func(a, b memplot.Timeline) int { return cmp.Compare(hostLast(a), hostLast(b)) })
	if len(tls) == 0 {
		return fmt.Errorf("%s has no device-memory events: record the session with device-memory tracking on (trace.Options.DeviceMemory, advanced key device_memory, or devmem.Start)", path)
	}
	b := rowBudget{max: *maxRows, entries: eventsOf(tls)}
	if err := b.check(map[bool]string{false: "the table", true: "-json"}[*asJSON], "rows", timelineRows(tls)); err != nil {
		return err
	}
	defer removeTemporariesOnSignal()()
	if *plotPath != "" {
		what := "Device memory"
		if tls[len(tls)-1].Device < 0 {
			what = "Device and host memory"
		}
		title := what + " over time, by " + map[bool]string{false: "category", true: "tags"}[*byTags]
		if err := memplot.WriteTimeline(*plotPath, title, tls); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeTimelineJSON(stdout, path, tls)
	}
	writeTimeline(stdout, path, tls)
	if *plotPath != "" {
		fmt.Fprintf(stdout, "plot: %s\n", *plotPath)
	}
	return nil
}

// categorySeries sums a timeline's tag-set series into the dictionary's
// categories, in its order, then Others: a stacked plot must add up to
// what is in use, so a tag set several categories match goes to the first
// (memory breakdown counts it in each and says so). The bytes no
// allocation of the trace explains stay a series of their own.
func categorySeries(mt event.MemoryTimeline, dict membreakdown.Dictionary) []memplot.Series {
	sums := make([][]uint64, len(dict)+1) // the categories, then Others
	var unseen []uint64
	for _, se := range mt.Series {
		if se.Key == event.MemoryUnseen {
			unseen = se.Bytes
			continue
		}
		c := len(dict)
		if se.Key != event.MemoryUntagged {
			if m := dict.Match(se.Key); len(m) > 0 {
				c = m[0]
			}
		}
		if sums[c] == nil {
			sums[c] = make([]uint64, len(mt.Times))
		}
		for i, b := range se.Bytes {
			sums[c][i] += b
		}
	}
	var out []memplot.Series
	for c, b := range sums {
		if b == nil {
			continue
		}
		name := membreakdown.Others
		if c < len(dict) {
			name = dict[c].Category
		}
		out = append(out, memplot.Series{Name: name, Bytes: b})
	}
	if unseen != nil {
		out = append(out, memplot.Series{Name: "before the trace", Bytes: unseen})
	}
	return out
}

// maxTimelineValues bounds the values (a series per tag set, a value per
// event) that splitting a trace's memory into categories holds at once,
// 2 GiB of them: a trace whose every allocation has tags of its own would
// otherwise take memory as the square of its events.
var maxTimelineValues uint64 = 1 << 28 // a variable for tests

// categoryValues counts what MemoryTimelines(0) would hold: per memory
// track its distinct tag sets and its events; values is the sum over
// tracks of their product.
func categoryValues(s *event.Snapshot) (sets, events int, values uint64) {
	type track struct {
		sets   map[string]bool
		events int
	}
	tracks := map[uint32]*track{}
	var args []event.Arg
	for _, r := range s.Events {
		if k := r.Activity(); k != event.ActivityAlloc && k != event.ActivityFree {
			continue
		}
		if t, ok := s.TrackOf(r); !ok || t.Kind != event.TrackMemory {
			continue
		}
		tr := tracks[r.Lane()]
		if tr == nil {
			tr = &track{sets: map[string]bool{}}
			tracks[r.Lane()] = tr
		}
		tr.events++
		if r.Activity() == event.ActivityFree {
			continue
		}
		tags := event.MemoryUntagged
		args = s.AppendArgs(args[:0], r)
		for _, a := range args {
			if a.Key == event.ArgTags && a.Str != "" {
				tags = a.Str
			}
		}
		tr.sets[tags] = true
	}
	for _, tr := range tracks {
		sets += len(tr.sets)
		events += tr.events
		values = addRows(values, uint64(len(tr.sets)+2)*uint64(tr.events)) // and Unseen, InUse
	}
	return sets, events, values
}

// timelineRows is how many rows writeTimeline or writeTimelineJSON
// prints: a series per device, twice in JSON.
func timelineRows(tls []memplot.Timeline) uint64 {
	var n uint64
	for _, tl := range tls {
		n += 1 + 2*uint64(len(tl.Series))
	}
	return n
}

// peakOf returns the index of a timeline's first largest total.
func peakOf(tl memplot.Timeline) (int, uint64) {
	best, at := uint64(0), 0
	for i := range tl.Times {
		var sum uint64
		for _, se := range tl.Series {
			sum += se.Bytes[i]
		}
		if sum > best {
			best, at = sum, i
		}
	}
	return at, best
}

func writeTimeline(w io.Writer, path string, tls []memplot.Timeline) {
	fmt.Fprintf(w, "%s: device memory over the trace, from %d allocations and frees\n", path, eventsOf(tls))
	for _, tl := range tls {
		at, peak := peakOf(tl)
		last := len(tl.Times) - 1
		var end uint64
		for _, se := range tl.Series {
			end += se.Bytes[last]
		}
		fmt.Fprintf(w, "\n%s: peak %s at %v, %s at the end\n", pprof.DeviceLabel(tl.Device), metatext.Bytes(peak), time.Duration(tl.Times[at]).Round(time.Microsecond), metatext.Bytes(end))
		rows := [][]string{{"AT PEAK", "SERIES"}}
		for _, se := range tl.Series {
			if se.Bytes[at] > 0 {
				rows = append(rows, []string{metatext.Bytes(se.Bytes[at]), se.Name})
			}
		}
		for _, line := range alignRows(rows, map[int]bool{0: true}) {
			fmt.Fprintln(w, "  "+line)
		}
	}
}

func eventsOf(tls []memplot.Timeline) int {
	n := 0
	for _, tl := range tls {
		n += len(tl.Times)
	}
	return n
}

type jsonTimeline struct {
	Device   int              `json:"device"`
	Events   int              `json:"events"`
	PeakNs   int64            `json:"peak_ns"`
	Peak     uint64           `json:"peak_bytes"`
	End      uint64           `json:"end_bytes"`
	AtPeak   []jsonSeriesPeak `json:"at_peak"`
	Series   []string         `json:"series"`
	Duration int64            `json:"duration_ns"`
}

type jsonSeriesPeak struct {
	Name  string `json:"name"`
	Bytes uint64 `json:"bytes"`
}

func writeTimelineJSON(w io.Writer, path string, tls []memplot.Timeline) error {
	out := struct {
		File    string         `json:"file"`
		Devices []jsonTimeline `json:"devices"`
	}{File: path, Devices: []jsonTimeline{}}
	for _, tl := range tls {
		at, peak := peakOf(tl)
		last := len(tl.Times) - 1
		j := jsonTimeline{Device: tl.Device, Events: len(tl.Times), PeakNs: tl.Times[at], Peak: peak,
			AtPeak: []jsonSeriesPeak{}, Series: []string{}, Duration: tl.Times[last] - tl.Times[0]}
		for _, se := range tl.Series {
			j.End += se.Bytes[last]
			j.Series = append(j.Series, se.Name)
			j.AtPeak = append(j.AtPeak, jsonSeriesPeak{se.Name, se.Bytes[at]})
		}
		out.Devices = append(out.Devices, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
