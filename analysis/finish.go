package analysis

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/devprof/devprof/event"
)

// Report returns the analysis of everything the sink was given. Call it
// once the reader is done; the Analyzer must not be used after. When the
// analysis spilled to a temporary file and reading it back failed, the
// report has nothing but a note saying so: Finish returns the error.
func (a *Analyzer) Report() *Report {
	r, err := a.Finish()
	if err != nil {
		return &Report{Events: a.events, Devices: []Device{}, Idle: Idle{Largest: []Gap{}},
			Kernels: Kernels{Top: []Kernel{}, Launch: Launch{TinyLaunchers: []Launcher{}}}, Notes: []string{err.Error()}}
	}
	return r
}

// Finish is Report with the error of the temporary file the analysis
// spilled to, if any (a full disk). The temporary file is gone when it
// returns.
func (a *Analyzer) Finish() (*Report, error) {
	defer a.spill.close()
	r := &Report{Events: a.events, Devices: []Device{}}
	if a.first <= a.last {
		r.StartNS, r.EndNS, r.WallNS = a.first, a.last, a.last-a.first
	}
	for _, th := range a.threads {
		a.closeStep(th)
	}
	// Work still open when the trace ended ran to its end.
	for _, ref := range a.openOps {
		ref.s.setEnd(ref.i, max(ref.start, a.last))
	}
	r.Steps = a.steps0()
	p := a.newPass(r)
	p.sweep()
	p.join()
	if err := a.spill.err; err != nil {
		return nil, err
	}
	p.finish()
	if a.outOfOrder > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d host spans began before an earlier span of their thread: the spans around launch calls and the steps' host busy time may be off", a.outOfOrder))
	}
	if r.Kernels.Count > 0 && r.Kernels.Launch.Linked == 0 {
		r.Notes = append(r.Notes, "the trace links no kernel to the host call that launched it (no flows or correlation ids): idle gaps cannot be host waits, and launch latency is unknown")
	}
	return r, nil
}

// pass is Report's reading of the work: one sweep over every stream's
// work in start order (breakdowns, gaps, the steps' device time, kernel
// counts), then a join of the linked work with its launch calls by link
// (gap causes, launch latency, launchers), both in about the budget.
type pass struct {
	a   *Analyzer
	r   *Report
	top int
	// chunk is how many records each reader of a spilled sequence holds.
	chunk int
	// devices in ordinal order, each with its streams in track order;
	// streams in that order (a probe's stream index).
	devices []*devicePass
	streams []*streamPass

	// probeMem is the bytes of probes (each stream's linked work, for
	// the join) in memory; past probeBudget they are spilled.
	probeMem, probeBudget int
	probeCount            int
	// kernelDurs are the kernels' durations, sorted by name for each
	// name's percentiles; names counts and sums them by name.
	kernelDurs *extSort[nameDur]
	names      map[uint32]*kernelName
	// latency is the launch latencies, sorted for their distribution.
	latency   *extSort[int64]
	launchers map[uint32]*Launcher

	// The steps' device time: the union of every device's work swept
	// against the steps' starts and ends (times): before[i] is the union's
	// time before times[i].
	times   []int64
	before  []int64
	q       int
	acc     int64
	union   interval
	inUnion bool

	// largest is the longest gaps, as the report lists them (their
	// causes and launches filled in by the join); want holds the links
	// whose launch calls they need, found holds those calls.
	largest []gapCand
	want    map[uint64]bool
	found   map[uint64]launchRec
}

// devicePass is a device's state in the sweep.
type devicePass struct {
	ordinal int
	streams []*streamPass
	acc     breakdownAcc
	// The union of the device's work swept so far: done is the time of
	// its intervals before cur.
	done    int64
	cur     interval
	started bool
	// pending holds the streams whose last end is not yet behind the
	// sweep, by that end: the union's time before it is final only once
	// no work can start before it.
	pending pendingHeap
}

// streamPass is a stream's state in the sweep.
type streamPass struct {
	s     *stream
	dev   *devicePass
	index uint32
	name  string
	acc   breakdownAcc
	// end is the end of the stream's work so far (where a gap begins),
	// before the device union's time before it, once final.
	end, before int64
	worked      bool
	heapAt      int // in dev.pending, -1 when not
	idle        IdleByCause
	// lastLink is the link of the stream's last probe.
	lastLink uint64
	// probes is the stream's linked work, for the join; probesSorted
	// says their links never went down (a stream runs its work in the
	// order it was launched, and readers number links in that order), so
	// that the join merges the streams' probes rather than sorting them.
	probes       spool[probe]
	probesSorted bool
	// largest is the stream's longest gaps as the report's list would
	// hold them were the stream alone (see largestOf).
	largest []gapCand
	gaps    int
}

// gapCand is an idle gap, a candidate for the report's largest.
type gapCand struct {
	stream     *streamPass
	seq        int // its order in its stream
	start, dur int64
	next       uint32
	link       uint64
	overlap    bool
}

// breakdownAcc sums work, in start order, into a Breakdown.
type breakdownAcc struct {
	compute, comm, busy, computeOrComm runningUnion
	first, end                         int64
}

func (b *breakdownAcc) add(w *workRec) {
	if !b.busy.any {
		b.first, b.end = w.start, w.end
	}
	b.first, b.end = min(b.first, w.start), max(b.end, w.end)
	b.busy.add(w.start, w.end)
	switch w.cat() {
	case catCompute:
		b.compute.add(w.start, w.end)
		b.computeOrComm.add(w.start, w.end)
	case catComm:
		b.comm.add(w.start, w.end)
		b.computeOrComm.add(w.start, w.end)
	}
}

// breakdown is the temporal breakdown of the work added, its window
// relative to origin.
func (b *breakdownAcc) breakdown(origin int64) Breakdown {
	if !b.busy.any {
		return Breakdown{}
	}
	out := Breakdown{StartNS: b.first - origin, WallNS: b.end - b.first}
	out.ComputeNS = b.compute.total()
	out.CommunicationNS = b.computeOrComm.total() - out.ComputeNS
	out.MemoryNS = b.busy.total() - b.computeOrComm.total()
	out.IdleNS = out.WallNS - b.busy.total()
	out.OverlapNS = b.comm.total() - out.CommunicationNS
	return out
}

// kernelName is one kernel name's count and total.
type kernelName struct {
	cat   category
	count int64
	total int64
}

func (a *Analyzer) newPass(r *Report) *pass {
	budget := a.opt.sortBudget()
	p := &pass{a: a, r: r, top: a.opt.top(), names: map[uint32]*kernelName{}, launchers: map[uint32]*Launcher{},
		want: map[uint64]bool{}, found: map[uint64]launchRec{}}
	// An eighth of the budget to each sort and to the probes, a
	// sixteenth to the latencies and to the readers of the spilled
	// sequences: with the work still in memory (half the budget at most),
	// about the budget in all.
	p.probeBudget = budget / 8
	p.kernelDurs = newExtSort(&a.spill, nameDurCodec, func(x, y nameDur) int {
		return cmp.Or(cmp.Compare(x.name, y.name), cmp.Compare(x.dur, y.dur))
	}, budget/8)
	p.latency = newExtSort(&a.spill, int64Codec, cmp.Compare[int64], budget/16)
	p.chunk = min(max(budget/16/(len(a.order)+2)/launchMem, 16), 8192)
	work := 0
	for _, id := range a.order {
		work += a.streams[id].work.len()
	}
	p.kernelDurs.reserve(work)

	byDevice := map[int]*devicePass{}
	for _, id := range a.order {
		d := a.device(id)
		dp := byDevice[d]
		if dp == nil {
			dp = &devicePass{ordinal: d}
			byDevice[d] = dp
			p.devices = append(p.devices, dp)
		}
		dp.streams = append(dp.streams, &streamPass{s: a.streams[id], dev: dp, heapAt: -1, name: a.tracks[id-1].t.Name, probesSorted: true})
	}
	slices.SortFunc(p.devices, func(x, y *devicePass) int { return cmp.Compare(x.ordinal, y.ordinal) })
	for _, dp := range p.devices {
		slices.SortFunc(dp.streams, func(x, y *streamPass) int { return cmp.Compare(x.s.track, y.s.track) })
		for _, sp := range dp.streams {
			sp.index = uint32(len(p.streams))
			p.streams = append(p.streams, sp)
		}
	}
	if st := r.Steps; st != nil {
		for _, s := range st.All {
			p.times = append(p.times, s.StartNS+a.first, s.StartNS+a.first+s.WallNS)
		}
		slices.Sort(p.times)
		p.times = slices.Compact(p.times)
		p.before = make([]int64, len(p.times))
	}
	return p
}

// workSource reads a stream's work back in start order, with the ends
// learned after it spilled, and without the ranges annotated on it.
type workSource struct {
	src source[workRec]
	// ahead is the record after the one next returns (have: there is
	// one).
	ahead workRec
	have  bool
}

func (a *Analyzer) workOf(s *stream, chunk int) source[workRec] {
	var src source[workRec] = s.work.reader(&a.spill, workCodec, chunk)
	if len(s.ends) > 0 {
		src = &endsSource{src: src, ends: s.ends}
	}
	if !s.sorted {
		sorter := newExtSort(&a.spill, workCodec, func(x, y workRec) int { return cmp.Compare(x.start, y.start) }, max(a.opt.memoryBudget()/4, 0))
		for w, ok := src.next(); ok; w, ok = src.next() {
			sorter.add(w)
		}
		if a.spill.f != nil && len(sorter.buf) > 0 {
			// Spilling already: the sorted work waits in the file, not
			// in memory, while the other streams are read.
			sorter.spill()
			sorter.buf = nil
		}
		src = sorter.sorted(chunk)
	}
	ws := &workSource{src: src}
	ws.ahead, ws.have = src.next()
	return ws
}

// endsSource puts the ends learned late into the work read back.
type endsSource struct {
	src   source[workRec]
	ends  map[int]int64
	index int
}

func (e *endsSource) next() (workRec, bool) {
	w, ok := e.src.next()
	if ok {
		if end, late := e.ends[e.index]; late {
			w.end = end
		}
		e.index++
	}
	return w, ok
}

// next implements source. It leaves out the ranges a profiler annotated
// on a stream: Kineto's gpu_user_annotation events (record_function
// ranges) sit on the stream beside its kernels, and the Chrome format
// keeps no category to tell them apart. A span of unknown kind, linked
// to no launch, that encloses the next work on its stream is such a
// range: a stream runs its kernels one after another, and a kernel
// always has its launch's correlation id.
func (w *workSource) next() (workRec, bool) {
	for w.have {
		cur := w.ahead
		w.ahead, w.have = w.src.next()
		if cur.flags&flagMayEnclose != 0 && w.have && w.ahead.start < cur.end && w.ahead.end <= cur.end {
			continue
		}
		return cur, true
	}
	return workRec{}, false
}

// sweep reads every stream's work in start order over all of them.
func (p *pass) sweep() {
	a := p.a
	kway := &mergeSource[workRec]{cmp: func(x, y workRec) int { return cmp.Compare(x.start, y.start) }}
	for _, sp := range p.streams {
		kway.add(&tagged{src: a.workOf(sp.s, p.chunk), sp: sp})
	}
	heap.Init(kway)
	for w, src, ok := kway.nextFrom(); ok; w, src, ok = kway.nextFrom() {
		p.work(src.(*tagged).sp, &w)
	}
	if p.inUnion {
		p.island(p.union)
	}
	for ; p.q < len(p.times); p.q++ {
		p.before[p.q] = p.acc
	}
}

// tagged is a stream's work source, with the stream.
type tagged struct {
	src source[workRec]
	sp  *streamPass
}

func (t *tagged) next() (workRec, bool) { return t.src.next() }

// work adds one piece of work, in start order over every stream.
func (p *pass) work(sp *streamPass, w *workRec) {
	d := sp.dev
	d.resolve(w.start)
	var gapStart, gapDur int64
	overlap, gap := false, false
	switch {
	case !sp.worked:
		sp.worked, sp.end = true, w.end
		d.pend(sp)
	case w.start <= sp.end:
		sp.end = max(sp.end, w.end)
		d.pend(sp)
	default:
		gap = true
		gapStart, gapDur = sp.end, w.start-sp.end
		// Any of the device's work in the gap is another stream's.
		overlap = d.unionBefore(w.start)-sp.before > 0
		sp.end = w.end
		d.pend(sp)
	}
	d.addUnion(w)
	sp.acc.add(w)
	d.acc.add(w)
	p.addUnion(w)

	kernel := w.cat() == catCompute || w.cat() == catComm
	dur := w.end - w.start
	if kernel {
		k := &p.r.Kernels
		k.Count++
		k.TotalNS += dur
		n := p.names[w.name]
		if n == nil {
			n = &kernelName{cat: w.cat()}
			p.names[w.name] = n
		}
		n.count++
		n.total += dur
		p.kernelDurs.add(nameDur{w.name, dur})
		if dur < p.a.opt.tiny() {
			k.Launch.Tiny++
			k.Launch.TinyTotalNS += dur
		}
	}
	if gap {
		c := gapCand{stream: sp, seq: sp.gaps, start: gapStart, dur: gapDur, next: w.name, link: w.link, overlap: overlap}
		sp.gaps++
		if w.link == 0 {
			sp.idle.add(p.cause(&c, nil), gapDur)
		}
		sp.largest = largestOf(sp.largest, c, p.top)
	}
	if w.link != 0 && (gap || kernel) {
		pr := probe{link: w.link, start: w.start, dur: dur, gapStart: gapStart, gapDur: gapDur, stream: sp.index}
		if gap {
			pr.flags |= probeGap
		}
		if overlap {
			pr.flags |= probeOverlap
		}
		if kernel {
			pr.flags |= probeKernel
		}
		p.probe(sp, pr)
	}
}

// probe keeps a stream's linked work for the join.
func (p *pass) probe(sp *streamPass, pr probe) {
	if sp.probes.len() > 0 && pr.link < sp.lastLink {
		sp.probesSorted = false
	}
	sp.lastLink = pr.link
	sp.probes.tail = append(sp.probes.tail, pr)
	p.probeCount++
	if p.probeMem += probeMem; p.probeMem > p.probeBudget {
		for _, sp := range p.streams {
			sp.probes.flush(&p.a.spill, probeCodec)
		}
		p.probeMem = 0
	}
}

// probeMem is the bytes a probe takes in memory.
const probeMem = 48

// probeSource returns the probes of every stream by link: each stream's
// as they came where their links never went down, else sorted.
func (p *pass) probeSource() source[probe] {
	byLink := func(x, y probe) int { return cmp.Compare(x.link, y.link) }
	m := &mergeSource[probe]{cmp: byLink}
	for _, sp := range p.streams {
		src := source[probe](sp.probes.reader(&p.a.spill, probeCodec, p.chunk))
		if !sp.probesSorted {
			sorter := newExtSort(&p.a.spill, probeCodec, byLink, p.probeBudget)
			for pr, ok := src.next(); ok; pr, ok = src.next() {
				sorter.add(pr)
			}
			if p.a.spill.f != nil && len(sorter.buf) > 0 {
				sorter.spill()
				sorter.buf = nil
			}
			src = sorter.sorted(p.chunk)
		}
		m.add(src)
	}
	heap.Init(m)
	return m
}

// largestOf adds a gap to a list of the longest gaps (longest first,
// at most top): a gap no longer than the last of a full list is left
// out, and one as long as others goes before them. The report's list is
// this over every stream's gaps in order (devices by ordinal, streams by
// track, each stream's gaps in time), which is this over each stream's
// own list in that order: a gap a stream's own list let go is one that
// many gaps at least as long came before, in the report's list too.
func largestOf(list []gapCand, g gapCand, top int) []gapCand {
	if len(list) >= top && g.dur <= list[len(list)-1].dur {
		return list
	}
	i, _ := slices.BinarySearchFunc(list, g.dur, func(x gapCand, d int64) int { return cmp.Compare(d, x.dur) })
	list = slices.Insert(list, i, g)
	return list[:min(len(list), top)]
}

// cause is the cause of a gap, given the launch call of the work that
// ended it (nil: none linked).
func (p *pass) cause(g *gapCand, l *launchRec) string {
	switch {
	case l != nil && l.start > g.start:
		return CauseHostWait
	case g.dur < p.a.opt.kernelWait():
		return CauseKernelWait
	case l != nil && g.overlap:
		return CauseSync
	}
	return CauseOther
}

// resolve makes final the union's time before the ends of the streams
// the sweep, now at t, has passed: no work to come starts before them.
func (d *devicePass) resolve(t int64) {
	for len(d.pending) > 0 && d.pending[0].end < t {
		sp := heap.Pop(&d.pending).(*streamPass)
		sp.before = d.unionBefore(sp.end)
	}
}

// pend puts a stream whose end changed in the pending heap (or moves it
// there).
func (d *devicePass) pend(sp *streamPass) {
	if sp.heapAt >= 0 {
		heap.Fix(&d.pending, sp.heapAt)
		return
	}
	heap.Push(&d.pending, sp)
}

// unionBefore returns the time of the device's union before t, when no
// work swept so far starts after t.
func (d *devicePass) unionBefore(t int64) int64 {
	if !d.started {
		return 0
	}
	return d.done + max(0, min(d.cur.end, t)-d.cur.start)
}

func (d *devicePass) addUnion(w *workRec) {
	switch {
	case !d.started:
		d.cur, d.started = interval{w.start, w.end}, true
	case w.start <= d.cur.end:
		d.cur.end = max(d.cur.end, w.end)
	default:
		d.done += d.cur.end - d.cur.start
		d.cur = interval{w.start, w.end}
	}
}

// pendingHeap orders streams by their end.
type pendingHeap []*streamPass

func (h pendingHeap) Len() int           { return len(h) }
func (h pendingHeap) Less(a, b int) bool { return h[a].end < h[b].end }
func (h pendingHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].heapAt, h[b].heapAt = a, b
}
func (h *pendingHeap) Push(x any) {
	sp := x.(*streamPass)
	sp.heapAt = len(*h)
	*h = append(*h, sp)
}
func (h *pendingHeap) Pop() any {
	old := *h
	sp := old[len(old)-1]
	*h = old[:len(old)-1]
	sp.heapAt = -1
	return sp
}

// addUnion adds work to the union over every device, which is swept
// against the steps' times.
func (p *pass) addUnion(w *workRec) {
	switch {
	case !p.inUnion:
		p.union, p.inUnion = interval{w.start, w.end}, true
	case w.start <= p.union.end:
		p.union.end = max(p.union.end, w.end)
	default:
		p.island(p.union)
		p.union = interval{w.start, w.end}
	}
}

// island sweeps one interval of the union over every device against
// the steps' times.
func (p *pass) island(iv interval) {
	for ; p.q < len(p.times) && p.times[p.q] <= iv.start; p.q++ {
		p.before[p.q] = p.acc
	}
	for ; p.q < len(p.times) && p.times[p.q] < iv.end; p.q++ {
		p.before[p.q] = p.acc + p.times[p.q] - iv.start
	}
	p.acc += iv.end - iv.start
}

// join reads the linked work and the launch calls, both sorted by link:
// each link's first launch call is the one that launched.
func (p *pass) join() {
	a := p.a
	// The report's longest gaps, from each stream's own list.
	for _, sp := range p.streams {
		// In the order the stream's gaps came.
		slices.SortFunc(sp.largest, func(x, y gapCand) int { return cmp.Compare(x.seq, y.seq) })
		for _, c := range sp.largest {
			p.largest = largestOf(p.largest, c, p.top)
		}
	}
	for _, c := range p.largest {
		if c.link != 0 {
			p.want[c.link] = true
		}
	}
	p.latency.reserve(p.probeCount)
	// The launch calls by link, the first of a link's first: as they
	// came where their links never went down.
	ls := source[launchRec](a.launches.reader(&a.spill, launchCodec, p.chunk))
	if !a.launchesSorted {
		launches := newExtSort(&a.spill, launchCodec, func(x, y launchRec) int {
			return cmp.Or(cmp.Compare(x.link, y.link), cmp.Compare(x.seq, y.seq))
		}, a.opt.sortBudget()/8)
		launches.reserve(a.launches.len())
		for l, ok := ls.next(); ok; l, ok = ls.next() {
			launches.add(l)
		}
		a.launches = spool[launchRec]{}
		ls = launches.sorted(p.chunk)
	}
	ps := p.probeSource()
	l, lok := ls.next()
	tiny := a.opt.tiny()
	k := &p.r.Kernels
	for pr, ok := ps.next(); ok; pr, ok = ps.next() {
		for lok && l.link < pr.link {
			if p.want[l.link] {
				if _, seen := p.found[l.link]; !seen {
					p.found[l.link] = l
				}
			}
			l, lok = ls.next()
		}
		var launch *launchRec
		if lok && l.link == pr.link {
			launch = &l
		}
		if pr.flags&probeGap != 0 {
			c := gapCand{start: pr.gapStart, dur: pr.gapDur, overlap: pr.flags&probeOverlap != 0}
			p.streams[pr.stream].idle.add(p.cause(&c, launch), pr.gapDur)
		}
		if pr.flags&probeKernel != 0 && launch != nil {
			k.Launch.Linked++
			p.latency.add(pr.start - launch.start)
			if pr.dur < tiny {
				w := p.launchers[launch.who]
				if w == nil {
					w = &Launcher{Name: a.names[launch.who]}
					p.launchers[launch.who] = w
				}
				w.Kernels++
				w.TotalNS += pr.dur
			}
		}
	}
	for ; lok; l, lok = ls.next() {
		if p.want[l.link] {
			if _, seen := p.found[l.link]; !seen {
				p.found[l.link] = l
			}
		}
	}
}

// finish assembles the report from the sweep and the join.
func (p *pass) finish() {
	a, r := p.a, p.r
	for _, dp := range p.devices {
		dev := Device{Ordinal: dp.ordinal, Streams: []Stream{}, Breakdown: dp.acc.breakdown(r.StartNS)}
		for _, sp := range dp.streams {
			t := a.tracks[sp.s.track-1].t
			if dev.Name == "" {
				dev.Name = t.DeviceName
			}
			dev.Streams = append(dev.Streams, Stream{ID: streamID(t, a.procs), Name: t.Name, Breakdown: sp.acc.breakdown(r.StartNS), Idle: sp.idle})
			r.Idle.HostWaitNS += sp.idle.HostWaitNS
			r.Idle.KernelWaitNS += sp.idle.KernelWaitNS
			r.Idle.SyncNS += sp.idle.SyncNS
			r.Idle.OtherNS += sp.idle.OtherNS
			r.Idle.Gaps += sp.idle.Gaps
		}
		r.Devices = append(r.Devices, dev)
	}
	r.Idle.Largest = []Gap{}
	for _, c := range p.largest {
		g := Gap{Device: c.stream.dev.ordinal, Stream: c.stream.name, StartNS: c.start - r.StartNS, DurNS: c.dur,
			Next: a.names[c.next], Step: -1}
		var launch *launchRec
		if l, ok := p.found[c.link]; ok && c.link != 0 {
			launch = &l
			g.Launch = a.names[l.name]
		}
		g.Cause = p.cause(&c, launch)
		if g.Cause == CauseHostWait {
			g.HostSpan = a.spanAt(launch, c.start)
		}
		if r.Steps != nil {
			g.Step = stepAt(r.Steps.All, c.start-r.StartNS)
		}
		r.Idle.Largest = append(r.Idle.Largest, g)
	}
	slices.SortFunc(r.Idle.Largest, func(x, y Gap) int { return cmp.Compare(y.DurNS, x.DurNS) })
	p.stepDevices()
	p.kernels()
}

// streamID returns the id of the stream t is, as event.StreamOf reads
// it (Chrome JSON keeps a thread's id, not its stream's), else the
// track's id.
func streamID(t event.Track, procs []event.Process) int64 {
	if _, s, ok := event.StreamOf(t, procs); ok {
		return s
	}
	return t.ID
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

// spanAt names what the thread that made launch l was in when a gap
// began at t: the innermost span around the call that had begun by then,
// else the root span of the thread that ran across t; "" when none did.
func (a *Analyzer) spanAt(l *launchRec, t int64) string {
	for node := l.node; node >= 0; {
		n := a.node(node)
		if n.start <= t && n.end > t {
			return a.names[n.name]
		}
		node = n.parent
	}
	th := a.threads[l.thread]
	if th == nil {
		return ""
	}
	root := func(i int) hostNode { return a.node(th.roots.get(&a.spill, int32Codec, i)) }
	i := sort.Search(th.roots.len(), func(i int) bool { return root(i).start > t }) - 1
	if i >= 0 {
		if n := root(i); n.end > t {
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
// device's work within it, swept once: at each step's start and end,
// how much of it came before) and the distributions.
func (p *pass) stepDevices() {
	st, a := p.r.Steps, p.a
	if st == nil {
		return
	}
	at := func(t int64) int64 {
		i, _ := slices.BinarySearch(p.times, t)
		return p.before[i]
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

// kernels fills in the kernel section and the launch statistics from
// the sweep's counts, the kernels' durations sorted by name and the
// latencies the join found.
func (p *pass) kernels() {
	a := p.a
	k := &p.r.Kernels
	k.Launch.TinyNS = a.opt.tiny()
	k.Launch.Latency = sortedDistribution(p.latency.sorted(p.chunk), int(k.Launch.Linked))
	k.Top = []Kernel{}
	durs := p.kernelDurs.sorted(p.chunk)
	var names []uint32
	for id := range p.names {
		names = append(names, id)
	}
	slices.Sort(names)
	for _, id := range names {
		n := p.names[id]
		// The name's durations, in order, are the next n.count.
		var p50, p99 int64
		i50, i99 := rankIndex(int(n.count), 50), rankIndex(int(n.count), 99)
		for i := range int(n.count) {
			d, _ := durs.next()
			if i == i50 {
				p50 = d.dur
			}
			if i == i99 {
				p99 = d.dur
			}
		}
		kn := Kernel{Name: a.names[id], Category: n.cat.String(), Count: n.count, TotalNS: n.total,
			MeanNS: n.total / n.count, P50NS: p50, P99NS: p99, Occupancy: -1}
		if o := a.occupancy[id]; o != nil && o.n > 0 {
			kn.Occupancy = o.sum / float64(o.n)
		}
		k.Top = append(k.Top, kn)
	}
	slices.SortFunc(k.Top, func(x, y Kernel) int { return cmp.Or(cmp.Compare(y.TotalNS, x.TotalNS), cmp.Compare(x.Name, y.Name)) })
	k.Top = k.Top[:min(len(k.Top), a.opt.top())]
	k.Launch.TinyLaunchers = []Launcher{}
	for _, w := range p.launchers {
		k.Launch.TinyLaunchers = append(k.Launch.TinyLaunchers, *w)
	}
	slices.SortFunc(k.Launch.TinyLaunchers, func(x, y Launcher) int {
		return cmp.Or(cmp.Compare(y.Kernels, x.Kernels), cmp.Compare(x.Name, y.Name))
	})
	k.Launch.TinyLaunchers = k.Launch.TinyLaunchers[:min(len(k.Launch.TinyLaunchers), a.opt.top())]
}

// rankIndex is the index of the p-th percentile by nearest rank in n
// sorted values.
func rankIndex(n, p int) int { return max((p*n+99)/100, 1) - 1 }

// sortedDistribution summarizes the n values src gives in order.
func sortedDistribution(src source[int64], n int) Distribution {
	if n == 0 {
		return Distribution{}
	}
	d := Distribution{Count: n}
	i50, i90, i99 := rankIndex(n, 50), rankIndex(n, 90), rankIndex(n, 99)
	var sum int64
	for i := range n {
		v, _ := src.next()
		sum += v
		switch {
		case i == 0:
			d.Min = v
		}
		if i == i50 {
			d.P50 = v
		}
		if i == i90 {
			d.P90 = v
		}
		if i == i99 {
			d.P99 = v
		}
		if i == n-1 {
			d.Max = v
		}
	}
	d.Mean = sum / int64(n)
	return d
}
