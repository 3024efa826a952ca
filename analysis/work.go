package analysis

import (
	"cmp"
	"math"
	"slices"
)

// The analysis keeps one entry per piece of device work and per launch
// call: at ten million events they are most of its memory, so each is
// kept in columns of the narrowest type that holds the common case, with
// the rare value that does not fit kept aside.

// stream is one device stream's work in start order (a reader's order
// contract; sorted is false when it broke it, and Report sorts), one
// column per field: 21 bytes a piece of work.
type stream struct {
	track  uint32
	sorted bool

	start []int64
	// dur is the work's duration; durLong marks one that does not fit,
	// whose end is in long.
	dur  []uint32
	name []uint32
	// flags holds the category and whether the work may be a range
	// annotated on the stream rather than work (see dropAnnotations).
	flags []uint8
	// slot is the launch slot of the work's link plus one (0: none).
	slot []uint32
	// long holds the ends of work whose duration does not fit in dur, by
	// index: work over 4.29s, or still open (math.MaxInt64).
	long map[int32]int64
}

// durLong marks a duration kept in stream.long.
const durLong = math.MaxUint32

const (
	flagCat        = 3 // the category, in the low bits
	flagMayEnclose = 4
)

func (s *stream) len() int { return len(s.start) }

func (s *stream) add(start, end int64, name uint32, c category, mayEnclose bool, slot uint32) {
	f := uint8(c)
	if mayEnclose {
		f |= flagMayEnclose
	}
	s.start = append(s.start, start)
	s.dur = append(s.dur, 0)
	s.name = append(s.name, name)
	s.flags = append(s.flags, f)
	s.slot = append(s.slot, slot)
	s.setEnd(s.len()-1, end)
}

// end returns the end of work i.
func (s *stream) end(i int) int64 {
	if d := s.dur[i]; d != durLong {
		return s.start[i] + int64(d)
	}
	return s.long[int32(i)]
}

// setEnd sets the end of work i (not before its start).
func (s *stream) setEnd(i int, end int64) {
	// The duration as the unsigned difference: it wraps exactly as
	// end-start does, so that start+dur is end again.
	if d := uint64(end) - uint64(s.start[i]); d < durLong {
		s.dur[i] = uint32(d)
		if s.long != nil {
			delete(s.long, int32(i))
		}
		return
	}
	if s.long == nil {
		s.long = map[int32]int64{}
	}
	s.dur[i] = durLong
	s.long[int32(i)] = end
}

func (s *stream) cat(i int) category { return category(s.flags[i] & flagCat) }

// sortByStart puts the work in start order, keeping the order of work
// that starts at once.
func (s *stream) sortByStart() {
	perm := make([]int32, s.len())
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(s.start[x], s.start[y]) })
	ends := make(map[int32]int64, len(s.long))
	for i, p := range perm {
		if s.dur[p] == durLong {
			ends[int32(i)] = s.long[p]
		}
	}
	s.start = permute(s.start, perm)
	s.dur = permute(s.dur, perm)
	s.name = permute(s.name, perm)
	s.flags = permute(s.flags, perm)
	s.slot = permute(s.slot, perm)
	s.long = ends
	s.sorted = true
}

func permute[T any](v []T, perm []int32) []T {
	out := make([]T, len(v))
	for i, p := range perm {
		out[i] = v[p]
	}
	return out
}

// keep moves work i to position j (j <= i), for a pass that drops work
// in place.
func (s *stream) keep(i, j int) {
	if i == j {
		return
	}
	s.start[j], s.dur[j], s.name[j], s.flags[j], s.slot[j] = s.start[i], s.dur[i], s.name[i], s.flags[i], s.slot[i]
	switch {
	case s.dur[i] == durLong:
		s.long[int32(j)] = s.long[int32(i)]
		delete(s.long, int32(i))
	case s.long != nil:
		delete(s.long, int32(j))
	}
}

// truncate keeps the first n pieces of work.
func (s *stream) truncate(n int) {
	for i := n; i < s.len(); i++ {
		if s.dur[i] == durLong {
			delete(s.long, int32(i))
		}
	}
	s.start, s.dur, s.name, s.flags, s.slot = s.start[:n], s.dur[:n], s.name[:n], s.flags[:n], s.slot[:n]
}

// launch is a host call that launched device work.
type launch struct {
	start  int64
	name   uint32
	node   int32  // the host span around the call, in nodes; -1 for none
	thread uint32 // the track of the thread that made the call
}

// launchSlots holds, per link (flow or correlation id) the trace named,
// the launch call it names, in columns: 20 bytes a link. A slot is made
// when its link is first seen, on the launch or on the work: in an
// XSpace the device's work comes before the host's launches.
type launchSlots struct {
	start  []int64
	name   []uint32
	node   []int32 // noLaunch while no launch call named the link
	thread []uint32
	// of finds a link's slot.
	of linkTable
}

// noLaunch marks a slot whose link no launch call named (yet).
const noLaunch = -2

// slot returns link's slot, making it if it is new.
func (l *launchSlots) slot(link uint64) int32 {
	if i, ok := l.of.get(link); ok {
		return i
	}
	i := int32(len(l.start))
	l.of.add(link, i)
	l.start = append(l.start, 0)
	l.name = append(l.name, 0)
	l.node = append(l.node, noLaunch)
	l.thread = append(l.thread, 0)
	return i
}

// add records the launch call of link, unless one named it already:
// the first call a link names is the one that launched (a correlation
// id is the launch's own).
func (l *launchSlots) add(link uint64, c launch) {
	i := l.slot(link)
	if l.node[i] != noLaunch {
		return
	}
	l.start[i], l.name[i], l.node[i], l.thread[i] = c.start, c.name, c.node, c.thread
}

// get returns the launch call of a work's slot (stream.slot), if any.
func (l *launchSlots) get(slot uint32) (launch, bool) {
	if slot == 0 || l.node[slot-1] == noLaunch {
		return launch{}, false
	}
	i := slot - 1
	return launch{start: l.start[i], name: l.name[i], node: l.node[i], thread: l.thread[i]}, true
}

// int64s collects values for a Distribution in 4 bytes each where they
// fit in an int32 (kernel durations under 2.1s, launch latencies), the
// rest in 8.
type int64s struct {
	short []int32
	long  []int64
	sum   int64
}

func (v *int64s) add(x int64) {
	v.sum += x
	if x >= math.MinInt32 && x <= math.MaxInt32 {
		v.short = append(v.short, int32(x))
		return
	}
	v.long = append(v.long, x)
}

func (v *int64s) len() int { return len(v.short) + len(v.long) }

// distribution summarizes the values, as distribution does.
func (v *int64s) distribution() Distribution {
	n := v.len()
	if n == 0 {
		return Distribution{}
	}
	slices.Sort(v.short)
	slices.Sort(v.long)
	// In order: the long values below the int32 range, the short ones,
	// the long values above.
	below, _ := slices.BinarySearch(v.long, 0)
	at := func(i int) int64 {
		switch {
		case i < below:
			return v.long[i]
		case i-below < len(v.short):
			return int64(v.short[i-below])
		}
		return v.long[i-len(v.short)]
	}
	rank := func(p int) int64 { return at(max((p*n+99)/100, 1) - 1) }
	return Distribution{Count: n, Mean: v.sum / int64(n), Min: at(0), P50: rank(50), P90: rank(90), P99: rank(99), Max: at(n - 1)}
}
