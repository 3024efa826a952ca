package analysis

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// Report returns the analysis of everything the sink was given. Call it
// once the reader is done; the Analyzer must not be used after.
func (a *Analyzer) Report() *Report {
	r := &Report{Events: a.events, Devices: []Device{}}
	if a.first <= a.last {
		r.StartNS, r.EndNS, r.WallNS = a.first, a.last, a.last-a.first
	}
	for _, th := range a.threads {
		a.closeStep(th)
	}
	// Work still open when the trace ended ran to its end.
	for _, ref := range a.openOps {
		ref.s.setEnd(ref.i, max(ref.s.start[ref.i], a.last))
	}
	for _, id := range a.order {
		st := a.streams[id]
		if !st.sorted {
			st.sortByStart()
		}
		dropAnnotations(st)
	}
	r.Steps = a.steps0()
	a.devices(r)
	a.stepDevices(r.Steps)
	a.kernels(r)
	if a.outOfOrder > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d host spans began before an earlier span of their thread: the spans around launch calls and the steps' host busy time may be off", a.outOfOrder))
	}
	if r.Kernels.Count > 0 && r.Kernels.Launch.Linked == 0 {
		r.Notes = append(r.Notes, "the trace links no kernel to the host call that launched it (no flows or correlation ids): idle gaps cannot be host waits, and launch latency is unknown")
	}
	return r
}

// devices fills in the temporal breakdown and the idle gaps.
func (a *Analyzer) devices(r *Report) {
	byDevice := map[int][]*stream{}
	for _, id := range a.order {
		d := a.device(id)
		byDevice[d] = append(byDevice[d], a.streams[id])
	}
	ords := make([]int, 0, len(byDevice))
	for d := range byDevice {
		ords = append(ords, d)
	}
	slices.Sort(ords)
	top := a.opt.top()
	for _, d := range ords {
		streams := byDevice[d]
		slices.SortFunc(streams, func(x, y *stream) int { return cmp.Compare(x.track, y.track) })
		dev := Device{Ordinal: d, Streams: []Stream{}}
		var busy []interval
		if len(streams) > 1 {
			eachOfUnion(streams, func(iv interval) { busy = append(busy, iv) })
		}
		for _, s := range streams {
			t := a.tracks[s.track-1].t
			if dev.Name == "" {
				dev.Name = t.DeviceName
			}
			st := Stream{ID: streamID(t), Name: t.Name, Breakdown: breakdown([]*stream{s}, r.StartNS)}
			a.gaps(r, d, s, busy, &st.Idle, top)
			r.Idle.HostWaitNS += st.Idle.HostWaitNS
			r.Idle.KernelWaitNS += st.Idle.KernelWaitNS
			r.Idle.SyncNS += st.Idle.SyncNS
			r.Idle.OtherNS += st.Idle.OtherNS
			r.Idle.Gaps += st.Idle.Gaps
			dev.Streams = append(dev.Streams, st)
		}
		dev.Breakdown = breakdown(streams, r.StartNS)
		r.Devices = append(r.Devices, dev)
	}
	slices.SortFunc(r.Idle.Largest, func(x, y Gap) int { return cmp.Compare(y.DurNS, x.DurNS) })
	if r.Idle.Largest == nil {
		r.Idle.Largest = []Gap{}
	}
}

// streamID returns the id of the stream t is: its ID on a device track,
// else the number a name such as "Stream #7(Compute)" gives (Chrome JSON
// keeps the thread's id, not the stream's), else the thread's id.
func streamID(t event.Track) int64 {
	if t.Kind != event.TrackDeviceStream {
		if rest, ok := strings.CutPrefix(t.Name, "Stream #"); ok {
			end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(rest)
			}
			if n, err := strconv.ParseInt(rest[:end], 10, 64); err == nil {
				return n
			}
		}
	}
	return t.ID
}

// inStartOrder calls f with the work of streams (each in start order)
// in start order over all of them: stream s's work i.
func inStartOrder(streams []*stream, f func(s *stream, i int)) {
	kway(len(streams), func(i int) int { return streams[i].len() },
		func(i, j int) int64 { return streams[i].start[j] },
		func(i, j int) { f(streams[i], j) })
}

// eachOfUnion calls f with the intervals of the union of the work of
// streams, in order, without making the union.
func eachOfUnion(streams []*stream, f func(interval)) {
	var cur interval
	have := false
	inStartOrder(streams, func(s *stream, i int) {
		iv := interval{s.start[i], s.end(i)}
		switch {
		case !have:
			cur, have = iv, true
		case iv.start <= cur.end:
			cur.end = max(cur.end, iv.end)
		default:
			f(cur)
			cur = iv
		}
	})
	if have {
		f(cur)
	}
}

// kway visits the items of n sorted sequences in order of their keys:
// sequence i has size(i) items, item j of it the key key(i, j). A heap
// of the sequences' next items keeps a trace of many streams (a hostile
// file's thousands) to n log n.
func kway(n int, size func(i int) int, key func(i, j int) int64, visit func(i, j int)) {
	h := kwayHeap{key: key}
	for i := range n {
		if size(i) > 0 {
			h.items = append(h.items, kwayItem{i, 0, key(i, 0)})
		}
	}
	heap.Init(&h)
	for len(h.items) > 0 {
		top := &h.items[0]
		visit(top.seq, top.at)
		if top.at++; top.at < size(top.seq) {
			top.key = key(top.seq, top.at)
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
}

type kwayItem struct {
	seq, at int
	key     int64
}

// kwayHeap orders the sequences by the key of their next item (ties by
// sequence, so that the order is the same on every run).
type kwayHeap struct {
	items []kwayItem
	key   func(i, j int) int64
}

func (h *kwayHeap) Len() int { return len(h.items) }
func (h *kwayHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	return x.key < y.key || x.key == y.key && x.seq < y.seq
}
func (h *kwayHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *kwayHeap) Push(x any)    { h.items = append(h.items, x.(kwayItem)) }
func (h *kwayHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// dropAnnotations removes from a stream's work (in start order) the
// ranges a profiler annotated on the stream: Kineto's gpu_user_annotation
// events (record_function ranges) sit on the stream beside its kernels,
// and the Chrome format keeps no category to tell them apart. A span of
// unknown kind, linked to no launch, that encloses later work on its
// stream is such a range: a stream runs its kernels one after another,
// and a kernel always has its launch's correlation id.
func dropAnnotations(s *stream) {
	n := 0
	for i := range s.len() {
		// Work i+1 is read before anything is moved onto it: n <= i.
		if s.flags[i]&flagMayEnclose != 0 && i+1 < s.len() {
			if end := s.end(i); s.start[i+1] < end && s.end(i+1) <= end {
				continue
			}
		}
		s.keep(i, n)
		n++
	}
	s.truncate(n)
}

// breakdown is the temporal breakdown of the work of streams, its
// window relative to origin.
func breakdown(streams []*stream, origin int64) Breakdown {
	var compute, comm, busy, computeOrComm runningUnion
	first, end := int64(math.MaxInt64), int64(math.MinInt64)
	inStartOrder(streams, func(s *stream, i int) {
		start, stop := s.start[i], s.end(i)
		first, end = min(first, start), max(end, stop)
		busy.add(start, stop)
		switch s.cat(i) {
		case catCompute:
			compute.add(start, stop)
			computeOrComm.add(start, stop)
		case catComm:
			comm.add(start, stop)
			computeOrComm.add(start, stop)
		}
	})
	if !busy.any {
		return Breakdown{}
	}
	b := Breakdown{StartNS: first - origin, WallNS: end - first}
	b.ComputeNS = compute.total()
	b.CommunicationNS = computeOrComm.total() - b.ComputeNS
	b.MemoryNS = busy.total() - computeOrComm.total()
	b.IdleNS = b.WallNS - busy.total()
	b.OverlapNS = comm.total() - b.CommunicationNS
	return b
}

// runningUnion is the length of a union of intervals added in start
// order.
type runningUnion struct {
	sum        int64
	start, end int64
	any        bool
}

func (u *runningUnion) add(start, end int64) {
	switch {
	case !u.any:
		u.start, u.end, u.any = start, end, true
	case start > u.end:
		u.sum += u.end - u.start
		u.start, u.end = start, end
	default:
		u.end = max(u.end, end)
	}
}

func (u *runningUnion) total() int64 {
	if !u.any {
		return 0
	}
	return u.sum + u.end - u.start
}

// unionWithin returns the length of the union of ivs (in any order, ends
// unknown as math.MaxInt64) clipped to [lo, hi).
func unionWithin(ivs []interval, lo, hi int64) int64 {
	slices.SortFunc(ivs, func(x, y interval) int { return cmp.Compare(x.start, y.start) })
	var u runningUnion
	for _, iv := range ivs {
		s, e := max(iv.start, lo), min(iv.end, hi)
		if s < e {
			u.add(s, e)
		}
	}
	return u.total()
}

// overlap returns how much of [lo, hi) the sorted, disjoint intervals
// ivs cover.
func overlap(ivs []interval, lo, hi int64) int64 {
	i := sort.Search(len(ivs), func(i int) bool { return ivs[i].end > lo })
	var n int64
	for ; i < len(ivs) && ivs[i].start < hi; i++ {
		n += min(ivs[i].end, hi) - max(ivs[i].start, lo)
	}
	return n
}

// gaps finds the idle gaps of stream s of device d, with their causes,
// into by and the report's largest.
//
// deviceBusy is the union of the device's work: within a gap of s, any
// of it is another stream's.
func (a *Analyzer) gaps(r *Report, d int, s *stream, deviceBusy []interval, by *IdleByCause, top int) {
	kernelWait := a.opt.kernelWait()
	end := s.end(0)
	for i := 1; i < s.len(); i++ {
		start, stop := s.start[i], s.end(i)
		if start <= end {
			end = max(end, stop)
			continue
		}
		gapStart, dur := end, start-end
		end = stop
		l, linked := a.launches.get(s.slot[i])
		var cause string
		switch {
		case linked && l.start > gapStart:
			cause = CauseHostWait
		case dur < kernelWait:
			cause = CauseKernelWait
		case linked && overlap(deviceBusy, gapStart, start) > 0:
			cause = CauseSync
		default:
			cause = CauseOther
		}
		by.add(cause, dur)
		if len(r.Idle.Largest) >= top && dur <= r.Idle.Largest[len(r.Idle.Largest)-1].DurNS {
			continue
		}
		g := Gap{Device: d, Stream: a.tracks[s.track-1].t.Name, StartNS: gapStart - r.StartNS, DurNS: dur, Cause: cause,
			Next: a.names[s.name[i]], Step: -1}
		if linked {
			g.Launch = a.names[l.name]
			if cause == CauseHostWait {
				g.HostSpan = a.spanAt(l, gapStart)
			}
		}
		if r.Steps != nil {
			g.Step = stepAt(r.Steps.All, gapStart-r.StartNS)
		}
		i, _ := slices.BinarySearchFunc(r.Idle.Largest, dur, func(x Gap, d int64) int { return cmp.Compare(d, x.DurNS) })
		r.Idle.Largest = slices.Insert(r.Idle.Largest, i, g)
		if len(r.Idle.Largest) > top {
			r.Idle.Largest = r.Idle.Largest[:top]
		}
	}
}

// spanAt names what the thread that made launch l was in when a gap
// began at t: the innermost span around the call that had begun by then,
// else the root span of the thread that ran across t; "" when none did.
func (a *Analyzer) spanAt(l launch, t int64) string {
	for node := l.node; node >= 0; node = a.nodes[node].parent {
		if n := &a.nodes[node]; n.start <= t && n.end > t {
			return a.names[n.name]
		}
	}
	th := a.threads[l.thread]
	if th == nil {
		return ""
	}
	i := sort.Search(len(th.roots), func(i int) bool { return a.nodes[th.roots[i]].start > t }) - 1
	if i >= 0 {
		if n := &a.nodes[th.roots[i]]; n.end > t {
			return a.names[n.name]
		}
	}
	return ""
}

// stepAt returns the number of the step (steps sorted by start) whose
// time holds t, -1 for none.
func stepAt(steps []Step, t int64) int64 {
	i := sort.Search(len(steps), func(i int) bool { return steps[i].StartNS > t }) - 1
	if i >= 0 && t < steps[i].StartNS+steps[i].WallNS {
		return steps[i].Number
	}
	return -1
}

// steps0 is the step section without device time and distributions
// (stepDevices, once the work is merged).
func (a *Analyzer) steps0() *Steps {
	if len(a.steps) == 0 {
		return nil
	}
	st := &Steps{Source: "step markers"}
	if a.markerSteps == 0 {
		st.Source = "ProfilerStep#N"
	}
	recs := slices.Clone(a.steps)
	if a.markerSteps > 0 && a.profilerSteps > 0 {
		// Markers win: PyTorch's step spans inside a marked step are
		// the same steps again.
		recs = recs[:0]
		for _, s := range a.steps {
			if !s.profiler {
				recs = append(recs, s)
			}
		}
	}
	slices.SortStableFunc(recs, func(x, y stepRec) int { return cmp.Compare(x.start, y.start) })
	for _, s := range recs {
		end := s.end
		if end == math.MaxInt64 {
			end = a.last
		}
		st.All = append(st.All, Step{Number: s.num, StartNS: s.start - a.first, WallNS: end - s.start, HostBusyNS: s.hostBusy})
	}
	st.Warmup = warmup(st.All, a.opt.Warmup)
	return st
}

// stepDevices fills in each step's device time (the union of every
// device's work within it) and the distributions. The union is swept
// once: at each step's start and end, how much of it came before.
func (a *Analyzer) stepDevices(st *Steps) {
	if st == nil {
		return
	}
	streams := make([]*stream, 0, len(a.order))
	for _, id := range a.order {
		streams = append(streams, a.streams[id])
	}
	times := make([]int64, 0, 2*len(st.All))
	for _, s := range st.All {
		times = append(times, s.StartNS+a.first, s.StartNS+a.first+s.WallNS)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	before := make([]int64, len(times)) // union time before times[i]
	var acc int64
	q := 0
	eachOfUnion(streams, func(iv interval) {
		for ; q < len(times) && times[q] <= iv.start; q++ {
			before[q] = acc
		}
		for ; q < len(times) && times[q] < iv.end; q++ {
			before[q] = acc + times[q] - iv.start
		}
		acc += iv.end - iv.start
	})
	for ; q < len(times); q++ {
		before[q] = acc
	}
	at := func(t int64) int64 {
		i, _ := slices.BinarySearch(times, t)
		return before[i]
	}
	for i := range st.All {
		s := &st.All[i]
		start := s.StartNS + a.first
		s.DeviceBusyNS = at(start+s.WallNS) - at(start)
		s.DeviceIdleNS = s.WallNS - s.DeviceBusyNS
	}
	steady := st.All[st.Warmup:]
	pick := func(f func(Step) int64) Distribution {
		v := make([]int64, len(steady))
		for i, s := range steady {
			v[i] = f(s)
		}
		return distribution(v)
	}
	st.Wall = pick(func(s Step) int64 { return s.WallNS })
	st.HostBusy = pick(func(s Step) int64 { return s.HostBusyNS })
	st.DeviceBusy = pick(func(s Step) int64 { return s.DeviceBusyNS })
	st.DeviceIdle = pick(func(s Step) int64 { return s.DeviceIdleNS })
	st.Slowest = slices.Clone(steady)
	slices.SortStableFunc(st.Slowest, func(x, y Step) int { return cmp.Compare(y.WallNS, x.WallNS) })
	st.Slowest = st.Slowest[:min(len(st.Slowest), a.opt.top())]
}

// warmup returns how many first steps are warm-up: n when the caller
// said (negative: none), else the first step and those after it, up to
// a quarter of all, while each takes more than 1.5 times the median of
// the steps after that quarter. Fewer than three steps have no warm-up
// to set apart.
func warmup(steps []Step, n int) int {
	switch {
	case n < 0:
		return 0
	case n > 0:
		return min(n, len(steps))
	case len(steps) < 3:
		return 0
	}
	limit := max(1, len(steps)/4)
	rest := make([]int64, 0, len(steps)-limit)
	for _, s := range steps[limit:] {
		rest = append(rest, s.WallNS)
	}
	med := distribution(rest).P50
	w := 1
	for w < limit && float64(steps[w].WallNS) > 1.5*float64(med) {
		w++
	}
	return w
}

// distribution summarizes v (reordered).
func distribution(v []int64) Distribution {
	if len(v) == 0 {
		return Distribution{}
	}
	slices.Sort(v)
	var sum int64
	for _, x := range v {
		sum += x
	}
	return Distribution{Count: len(v), Mean: sum / int64(len(v)), Min: v[0], P50: rank(v, 50), P90: rank(v, 90), P99: rank(v, 99), Max: v[len(v)-1]}
}

// rank is the p-th percentile of sorted v by nearest rank.
func rank(v []int64, p int) int64 {
	i := (p*len(v) + 99) / 100 // ceil(p/100 * n)
	return v[max(i, 1)-1]
}

// kernels fills in the kernel section and the launch statistics.
func (a *Analyzer) kernels(r *Report) {
	names := map[uint32]*kernelsByName{}
	k := &r.Kernels
	k.Launch.TinyNS = a.opt.tiny()
	var latency int64s
	launchers := map[uint32]*Launcher{}
	for _, id := range a.order {
		s := a.streams[id]
		for i := range s.len() {
			a.kernel(s, i, k, names, &latency, launchers)
		}
	}
	k.Launch.Latency = latency.distribution()
	k.Top = []Kernel{}
	for id, n := range names {
		dist := n.durs.distribution()
		kn := Kernel{Name: a.names[id], Category: n.cat.String(), Count: int64(dist.Count), TotalNS: n.total,
			MeanNS: n.total / int64(dist.Count), P50NS: dist.P50, P99NS: dist.P99, Occupancy: -1}
		if o := a.occupancy[id]; o != nil && o.n > 0 {
			kn.Occupancy = o.sum / float64(o.n)
		}
		k.Top = append(k.Top, kn)
	}
	slices.SortFunc(k.Top, func(x, y Kernel) int { return cmp.Or(cmp.Compare(y.TotalNS, x.TotalNS), cmp.Compare(x.Name, y.Name)) })
	k.Top = k.Top[:min(len(k.Top), a.opt.top())]
	k.Launch.TinyLaunchers = []Launcher{}
	for _, w := range launchers {
		k.Launch.TinyLaunchers = append(k.Launch.TinyLaunchers, *w)
	}
	slices.SortFunc(k.Launch.TinyLaunchers, func(x, y Launcher) int {
		return cmp.Or(cmp.Compare(y.Kernels, x.Kernels), cmp.Compare(x.Name, y.Name))
	})
	k.Launch.TinyLaunchers = k.Launch.TinyLaunchers[:min(len(k.Launch.TinyLaunchers), a.opt.top())]
}

// kernelsByName is one kernel name's instances, for the kernel section.
type kernelsByName struct {
	cat   category
	durs  int64s
	total int64
}

// kernel adds one piece of work to the kernel section if it is a kernel.
func (a *Analyzer) kernel(s *stream, i int, k *Kernels, names map[uint32]*kernelsByName, latency *int64s, launchers map[uint32]*Launcher) {
	c := s.cat(i)
	if c != catCompute && c != catComm {
		return
	}
	start := s.start[i]
	d := s.end(i) - start
	k.Count++
	k.TotalNS += d
	n := names[s.name[i]]
	if n == nil {
		n = &kernelsByName{cat: c}
		names[s.name[i]] = n
	}
	n.durs.add(d)
	n.total += d
	l, linked := a.launches.get(s.slot[i])
	if linked {
		k.Launch.Linked++
		latency.add(start - l.start)
	}
	if d >= k.Launch.TinyNS {
		return
	}
	k.Launch.Tiny++
	k.Launch.TinyTotalNS += d
	if !linked {
		return
	}
	who := l.name
	if l.node >= 0 {
		who = a.nodes[l.node].name
	}
	w := launchers[who]
	if w == nil {
		w = &Launcher{Name: a.names[who]}
		launchers[who] = w
	}
	w.Kernels++
	w.TotalNS += d
}
