package event

import (
	"cmp"
	"slices"
)

// Keys of the MemorySeries of a MemoryTimeline that are not one tag set.
const (
	// MemoryUntagged is the key of the allocations made without tags.
	MemoryUntagged = "(untagged)"
	// MemoryOtherTags is the series that sums the tag sets past the top N.
	MemoryOtherTags = "other tags"
	// MemoryUnseen is the series of the bytes in use (ArgInUse) that no
	// allocation of the trace accounts for: memory allocated before the
	// trace began, or whose allocation event the trace lost.
	MemoryUnseen = "(not in trace)"
)

// MemoryTimeline is the memory a tracker held on one device over a trace,
// rebuilt from the allocations and frees of one TrackMemory track (see
// event/memory.go): the bytes in use after each event, and the same bytes
// split by the tag sets of the allocations that hold them — what a
// "memory over time, stacked by category" plot draws, and what the
// Perfetto writer turns into counter tracks.
type MemoryTimeline struct {
	// Track is the TrackMemory track (Snapshot.Tracks[Track-1]); Device
	// its device (-1: host memory).
	Track  uint32
	Device int
	// Times are the events' times, ascending, in nanoseconds on the
	// snapshot's timeline (as Record.Start: subtract Meta.Start.Mono for
	// the time since the trace began). Every other slice of the timeline
	// has one value per time.
	Times []int64
	// InUse is the bytes in use on the device just after each event: the
	// tracker's own count (ArgInUse), which includes memory allocated
	// before the trace; the sum of the series where an event lacks it.
	InUse []uint64
	// Peak is the largest InUse, first reached at PeakTime.
	Peak     uint64
	PeakTime int64
	// LifetimePeak is the most the tracker ever held on the device, as
	// its last event says (ArgPeakInUse); 0 when the events do not say.
	LifetimePeak uint64
	// Series split InUse by the tags the live allocations were made with
	// (ArgTags as the key; MemoryUntagged for none): the topN tag sets by
	// their peak, largest first (ties by key), then MemoryOtherTags
	// summing the rest when there are more, then MemoryUnseen when
	// InUse is ever more than the allocations of the trace explain. At
	// each time the series add up to InUse (unless the trace lost a free:
	// then the freed bytes stay in their series).
	Series []MemorySeries
}

// MemorySeries is the bytes held by the allocations of one tag set (or
// one of the other keys above) over a MemoryTimeline's times.
type MemorySeries struct {
	Key   string
	Bytes []uint64 // at each of the timeline's Times
	Peak  uint64   // the largest of Bytes
}

// MemoryTimelines rebuilds the memory timeline of every TrackMemory track
// that has allocations or frees, ordered by device, then track. topN
// bounds the tag sets with a series of their own (topN <= 0: no bound).
//
// Each event is one time point. An allocation adds its bytes (ArgBytes) to
// the series of its tags; a free takes away what the allocation it frees
// (same ArgAddress, same presence of ArgAPI: CUDA's pointers and the
// explicit API's handles are apart) added, and a free of an allocation the
// trace does not hold changes no series (its bytes were MemoryUnseen).
// Events at the same time keep the snapshot's order. It reads the
// snapshot only and is deterministic; it costs one pass over the events
// and memory for (topN+2) series per device, so call it once per use.
func (s *Snapshot) MemoryTimelines(topN int) []MemoryTimeline {
	// Only records on a memory track count: a trace without one (a session
	// that tracked no memory) is not swept, which for a million spans was
	// a pass over 88 MB of records before the Perfetto writer's first row.
	if !slices.ContainsFunc(s.Tracks, func(t Track) bool { return t.Kind == TrackMemory }) {
		return []MemoryTimeline{}
	}
	byTrack := map[uint32][]*Record{}
	var tracks []uint32
	for _, r := range s.Events {
		k := r.Activity()
		if k != ActivityAlloc && k != ActivityFree {
			continue
		}
		if t, ok := s.TrackOf(r); !ok || t.Kind != TrackMemory {
			continue
		}
		if _, seen := byTrack[r.lane]; !seen {
			tracks = append(tracks, r.lane)
		}
		byTrack[r.lane] = append(byTrack[r.lane], r)
	}
	slices.SortFunc(tracks, func(a, b uint32) int {
		if c := cmp.Compare(s.Tracks[a-1].Device, s.Tracks[b-1].Device); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]MemoryTimeline, 0, len(tracks))
	var args []Arg
	for _, id := range tracks {
		evs := byTrack[id]
		slices.SortStableFunc(evs, func(a, b *Record) int { return cmp.Compare(a.start, b.start) })
		var tl MemoryTimeline
		tl, args = s.memoryTimeline(id, evs, topN, args)
		out = append(out, tl)
	}
	return out
}

// memStep is what one event did: the series it changed (at most two: an
// allocation that replaces a live one at its address) and the bytes in
// use after it.
type memStep struct {
	inUse   uint64
	haveUse bool
	keys    [2]int // indexes into the tag sets; -1: none
	deltas  [2]int64
}

// liveKey is an allocation the trace holds, found by its free.
type liveKey struct {
	addr uint64
	api  bool
}

type liveAlloc struct {
	key   int // tag set index
	bytes uint64
}

func (s *Snapshot) memoryTimeline(track uint32, evs []*Record, topN int, args []Arg) (MemoryTimeline, []Arg) {
	tl := MemoryTimeline{Track: track, Device: s.Tracks[track-1].Device, Times: make([]int64, len(evs)), InUse: make([]uint64, len(evs))}
	keyIndex := map[string]int{}
	var keys []string
	var sums []int64
	var peaks []uint64
	live := map[liveKey]liveAlloc{}
	steps := make([]memStep, len(evs))
	change := func(st *memStep, k int, d int64) {
		i := 0
		if st.keys[0] >= 0 {
			i = 1
		}
		st.keys[i], st.deltas[i] = k, d
		sums[k] += d
		if sums[k] > 0 && uint64(sums[k]) > peaks[k] {
			peaks[k] = uint64(sums[k])
		}
	}
	// Pass 1: what each event changes, and each tag set's peak.
	for i, r := range evs {
		tl.Times[i] = r.start
		st := &steps[i]
		st.keys = [2]int{-1, -1}
		args = s.AppendArgs(args[:0], r)
		var addr, bytes uint64
		var tags string
		var api bool
		for _, a := range args {
			switch a.Key {
			case ArgAddress:
				addr = a.Num
			case ArgBytes:
				bytes = a.Num
			case ArgTags:
				tags = a.Str
			case ArgAPI:
				api = a.Str != ""
			case ArgInUse:
				st.inUse, st.haveUse = a.Num, true
			case ArgPeakInUse:
				tl.LifetimePeak = max(tl.LifetimePeak, a.Num)
			}
		}
		lk := liveKey{addr, api}
		old, held := live[lk]
		if held {
			delete(live, lk)
			change(st, old.key, -int64(old.bytes))
		}
		if r.Activity() == ActivityFree {
			continue
		}
		if tags == "" {
			tags = MemoryUntagged
		}
		k, ok := keyIndex[tags]
		if !ok {
			k = len(keys)
			keyIndex[tags] = k
			keys = append(keys, tags)
			sums = append(sums, 0)
			peaks = append(peaks, 0)
		}
		live[lk] = liveAlloc{key: k, bytes: bytes}
		change(st, k, int64(min(bytes, 1<<62)))
	}
	// The top tag sets by peak get series of their own; the rest share
	// one.
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(peaks[b], peaks[a]); c != 0 {
			return c
		}
		return cmp.Compare(keys[a], keys[b])
	})
	shown := len(keys)
	if topN > 0 && shown > topN {
		shown = topN
	}
	column := make([]int, len(keys)) // tag set -> its series
	for rank, k := range order {
		column[k] = min(rank, shown)
	}
	nseries := shown
	if shown < len(keys) {
		nseries++ // MemoryOtherTags
	}
	tl.Series = make([]MemorySeries, nseries, nseries+1)
	for rank := range shown {
		tl.Series[rank].Key = keys[order[rank]]
	}
	if shown < len(keys) {
		tl.Series[shown].Key = MemoryOtherTags
	}
	for i := range tl.Series {
		tl.Series[i].Bytes = make([]uint64, len(evs))
	}
	// Pass 2: the series' values at every point, and what InUse holds
	// beyond them.
	cur := make([]int64, nseries)
	unseen := make([]uint64, len(evs))
	anyUnseen := false
	for i := range steps {
		st := &steps[i]
		for j, k := range st.keys {
			if k >= 0 {
				cur[column[k]] += st.deltas[j]
			}
		}
		var total uint64
		for c := range cur {
			v := uint64(max(cur[c], 0))
			tl.Series[c].Bytes[i] = v
			tl.Series[c].Peak = max(tl.Series[c].Peak, v)
			total += v
		}
		if st.haveUse {
			tl.InUse[i] = st.inUse
			if st.inUse > total {
				unseen[i] = st.inUse - total
				anyUnseen = true
			}
		} else {
			tl.InUse[i] = total
		}
		if tl.InUse[i] > tl.Peak || i == 0 {
			tl.Peak, tl.PeakTime = tl.InUse[i], tl.Times[i]
		}
	}
	if anyUnseen {
		u := MemorySeries{Key: MemoryUnseen, Bytes: unseen}
		for _, v := range unseen {
			u.Peak = max(u.Peak, v)
		}
		tl.Series = append(tl.Series, u)
	}
	return tl, args
}
