package perfetto

import (
	"fmt"
	"github.com/devprof/devprof/internal/metatext"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// ReadSnapshot reads a Perfetto trace file into an event snapshot, so that
// any devprof exporter can convert it.
func ReadSnapshot(path string) (*event.Snapshot, error) {
	t, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return t.Snapshot(), nil
}

var (
	gpuProcess  = regexp.MustCompile(`^GPU (\d+)(?: \((.*)\))?$`)
	streamTrack = regexp.MustCompile(`^Stream #(-?\d+)`)
)

// Snapshot converts a decoded trace to the event model. Times stay on the
// trace clock (ns). Threads become host-thread tracks; the threads of a
// process named "GPU <n>" (as devprof writes device activity) become
// device streams again; flows become flow arguments, and the slice
// nesting the parents.
func (t *Trace) Snapshot() *event.Snapshot {
	lo, hi := int64(1<<62), int64(-1<<62)
	see := func(a, b int64) {
		lo, hi = min(lo, a), max(hi, b)
	}
	for _, s := range t.Slices {
		see(s.Start, s.Start+max(s.Dur, 0))
	}
	for _, i := range t.Instants {
		see(i.TS, i.TS)
	}
	for _, c := range t.Counters {
		see(c.TS, c.TS)
	}
	if lo > hi {
		lo, hi = 0, 0
	}
	meta := event.Meta{Host: "", Program: "perfetto",
		Start: event.ClockAnchor{Mono: lo, Boot: lo}, Stop: event.ClockAnchor{Mono: hi, Boot: hi}}
	if t.WallStart != 0 {
		meta.Start.Wall = t.WallStart + lo - t.WallStartTS
		meta.Stop.Wall = t.WallStart + hi - t.WallStartTS
	}
	byUUID := map[uint64]*Track{}
	procName := map[int64]string{}
	for i := range t.Tracks {
		tr := &t.Tracks[i]
		byUUID[tr.UUID] = tr
		if tr.Kind == TrackProcess {
			procName[tr.PID] = tr.Name
			if meta.Program == "perfetto" || meta.PID == 0 {
				if !gpuProcess.MatchString(tr.Name) {
					meta.Program, meta.PID = tr.Name, int(tr.PID)
				}
			}
		}
	}

	b := event.NewBuilder(meta)
	tracks := map[uint64]uint32{} // track uuid -> builder track (0: the process level)
	trackOf := func(uuid uint64) uint32 {
		if id, ok := tracks[uuid]; ok {
			return id
		}
		tr := byUUID[uuid]
		var id uint32
		switch {
		case tr == nil:
			id = b.Track(event.Track{Kind: event.TrackHostThread, Name: fmt.Sprintf("track %d", uuid)})
		case tr.Kind == TrackProcess:
			id = 0
		default:
			if m := gpuProcess.FindStringSubmatch(procName[tr.PID]); m != nil && tr.PID != int64(meta.PID) {
				dev, _ := strconv.Atoi(m[1])
				stream := tr.TID
				if sm := streamTrack.FindStringSubmatch(tr.Name); sm != nil {
					stream, _ = strconv.ParseInt(sm[1], 10, 64)
				}
				id = b.Track(event.Track{Kind: event.TrackDeviceStream, Device: dev, DeviceName: m[2], ID: stream, Name: trimOverflow(tr.Name)})
			} else {
				id = b.Track(event.Track{Kind: event.TrackHostThread, ID: tr.TID, Name: trimOverflow(tr.Name)})
			}
		}
		tracks[uuid] = id
		return id
	}

	ids := make([]uint64, len(t.Slices))
	var add func(i int)
	add = func(i int) {
		if ids[i] != 0 {
			return
		}
		s := &t.Slices[i]
		var parent uint64
		if s.Parent >= 0 && s.Parent < len(t.Slices) && s.Parent != i {
			add(s.Parent)
			parent = ids[s.Parent]
		}
		sp := event.Span{Name: s.Name, Start: s.Start, End: s.Start + s.Dur, Parent: parent, Unfinished: s.Dur < 0}
		sp.Args, sp.Step, sp.StepNum = convertArgs(s.Args, &sp.Unfinished)
		for _, f := range append(append([]uint64(nil), s.FlowIDs...), s.TerminatingFlowIDs...) {
			if f&ParentFlowBit == 0 {
				sp.Args = append(sp.Args, event.Arg{Kind: event.ArgFlow, Num: f})
			}
		}
		sp.Track = trackOf(s.Track)
		if sp.Track != 0 && isDevice(b, sp.Track) {
			ids[i] = b.Activity(sp.Track, s.Name, s.Start, s.Start+max(s.Dur, 0), sp.Args)
			return
		}
		ids[i] = b.Span(sp)
	}
	for i := range t.Slices {
		add(i)
	}
	byTrack := map[uint64][]int{}
	for i := range t.Slices {
		byTrack[t.Slices[i].Track] = append(byTrack[t.Slices[i].Track], i)
	}
	// enclosing finds the innermost slice on the instant's track that
	// contains it: the span it was recorded in.
	enclosing := func(in *Instant) uint64 {
		best, depth := -1, -1
		for _, i := range byTrack[in.Track] {
			s := &t.Slices[i]
			if s.Start > in.TS {
				break
			}
			if (s.Dur < 0 || in.TS < s.Start+s.Dur) && s.Depth > depth {
				best, depth = i, s.Depth
			}
		}
		if best < 0 {
			return 0
		}
		return ids[best]
	}
	// Instants devprof wrote to show the metadata become metadata again.
	var marks metatext.Collector
	for k := range t.Instants {
		in := &t.Instants[k]
		var unfinished bool
		args, _, _ := convertArgs(in.Args, &unfinished)
		if marks.Take(in.Name, args) {
			continue
		}
		for _, f := range in.FlowIDs {
			if f&ParentFlowBit == 0 {
				args = append(args, event.Arg{Kind: event.ArgFlow, Num: f})
			}
		}
		b.Instant(in.Name, in.TS, trackOf(in.Track), enclosing(in), args)
	}
	for _, c := range t.Counters {
		tr := byUUID[c.Track]
		name, unit := "counter", ""
		if tr != nil {
			name, unit = tr.Name, tr.Unit
		}
		b.Counter(name, unit, c.TS, c.Value)
	}
	marks.Apply(b)
	return b.Snapshot()
}

// isDevice reports whether a builder track is a device stream.
func isDevice(b *event.Builder, id uint32) bool {
	t, ok := b.TrackInfo(id)
	return ok && t.Kind == event.TrackDeviceStream
}

// trimOverflow turns the name of an overflow row ("python (2)") back into
// its track's name, so converting merges the rows again.
func trimOverflow(name string) string {
	if i := strings.LastIndex(name, " ("); i > 0 && strings.HasSuffix(name, ")") {
		if _, err := strconv.Atoi(name[i+2 : len(name)-1]); err == nil {
			return name[:i]
		}
	}
	return name
}

// convertArgs maps debug annotations to event arguments; devprof's own
// step_num and unfinished annotations become span properties again.
func convertArgs(in []Arg, unfinished *bool) (args []event.Arg, step bool, stepNum int64) {
	for _, a := range in {
		switch a.Name {
		case "step_num":
			if v, ok := a.Value.(int64); ok {
				step, stepNum = true, v
				continue
			}
		case "unfinished":
			if v, ok := a.Value.(bool); ok && v {
				*unfinished = true
				continue
			}
		}
		switch v := a.Value.(type) {
		case int64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgInt, Num: uint64(v)})
		case uint64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgUint, Num: v})
		case float64:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgFloat, Num: math.Float64bits(v)})
		case bool:
			x := uint64(0)
			if v {
				x = 1
			}
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgBool, Num: x})
		case string:
			args = append(args, event.Arg{Key: a.Name, Kind: event.ArgString, Str: v})
		}
	}
	return args, step, stepNum
}
