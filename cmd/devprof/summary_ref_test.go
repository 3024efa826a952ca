package main

// The summary as devprof computed it before it read traces as streams:
// from the whole Snapshot and its Layout. The aggregator's tables are
// held to it (TestSummaryAggregatorMatchesLayout).

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/spanstats"
)

// refSummary is what summary printed of s before it streamed.
func refSummary(s *event.Snapshot) *summaryData {
	d := &summaryData{meta: s.Meta, table: spanstats.Compute(refSpansOf(s, -1, false)), groups: refProcessGroups(s), devices: refDeviceCounters(s)}
	splitDevices := slices.ContainsFunc(d.groups, func(g procGroup) bool { return g.device >= 0 })
	for i := range d.groups {
		d.groups[i].table = spanstats.Compute(refSpansOf(s, d.groups[i].key, splitDevices))
		if k := d.groups[i].key; k > 0 && s.Processes[k-1].IsLabel {
			d.groups[i].pidLabel = &s.Processes[k-1].Label
		}
	}
	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindInstant:
			d.instants++
		case event.KindCounter:
			d.counters++
		}
	}
	d.events = int64(len(s.Events))
	d.goRuntime, d.hasGoRuntime = gotrace.Summarize(s)
	return d
}

// processGroups returns the processes whose rows hold spans, the
// program's first and then in Snapshot.Processes order, when there are
// several; a trace of one process gives one group or none. In a trace of
// several processes (devprof collect's merge of hosts) each device is a
// group of its own after them: its rows belong to no host process in
// the model, and counting them under the recording program's (the
// collector's) would say that process ran them.
func refProcessGroups(s *event.Snapshot) []procGroup {
	l := s.Layout()
	seen := map[int]bool{}
	for ri := range l.Rows {
		if len(l.Rows[ri].Spans) > 0 {
			seen[refRowGroup(s, &l.Rows[ri], false)] = true
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
		if t, ok := s.Track(row); ok && len(row.Spans) > 0 && refRowGroup(s, row, true) < -1 && devices[t.Device] == "" {
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
func refRowGroup(s *event.Snapshot, row *event.Row, devices bool) int {
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

// deviceCounters returns each device's counter series (utilization,
// memory, power...) with min, mean and max, devices in order and series in
// the order they first appear.
func refDeviceCounters(s *event.Snapshot) []counterStat {
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

// spansOf flattens the layout of s for spanstats: a span's track is its
// row, and its parent the span directly above it on that row, so self time
// subtracts only nested work, not work running beside it. With group
// other than -1, only the rows of that group (rowGroup's key, devices
// split out or not) count.
func refSpansOf(s *event.Snapshot, group int, devices bool) []spanstats.Span {
	l := s.Layout()
	runtime := gotrace.RuntimeTracks(s) // the Go runtime's rows have a section of their own
	var out []spanstats.Span
	for ri := range l.Rows {
		if group != -1 && refRowGroup(s, &l.Rows[ri], devices) != group || runtime[l.Rows[ri].Track] {
			continue
		}
		var stack []int // indexes into out
		for _, p := range l.Rows[ri].Spans {
			if t, ok := s.TrackOf(p.Record); ok && t.Kind == event.TrackMemory {
				break // a memory track's allocations and frees are instants, not work (memory timeline reads them)
			}
			for len(stack) > 0 && out[stack[len(stack)-1]].Start+out[stack[len(stack)-1]].Dur <= p.Start() {
				stack = stack[:len(stack)-1]
			}
			parent := -1
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			out = append(out, spanstats.Span{Name: s.Name(p.Record), Start: p.Start(), Dur: p.End - p.Start(), Track: uint64(ri), Parent: parent})
			stack = append(stack, len(out)-1)
		}
	}
	return out
}
