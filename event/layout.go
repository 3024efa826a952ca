package event

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
)

// Layout places spans, instants and device activity on rows on which every
// span nests properly, as Perfetto, the trace viewer and XPlane lines
// require (DESIGN.md §2). Host spans of the program share the pool of lane
// rows; spans pinned to a registered track (FlagOnTrack: a thread read
// from a file) and device activity (KindActivity) get rows of their track.
// A span goes on the row of its parent, directly beneath it, whenever it
// fits there; a root, or a child that overlaps a sibling or outlives its
// parent, goes on the first row of its group that is free at its start.
// Such a child is Displaced: exporters link it to its parent explicitly.
type Layout struct {
	Rows []Row
	// Loose holds instants that belong to no span and no thread, in time
	// order: the program's (on no track) and each process's (on its
	// TrackProcess track); Snapshot.Owner says whose.
	Loose []*Record
	// Counters holds the host's counter samples in time order: the
	// program's (on no track), a process's (on its TrackProcess track)
	// and a thread's (on its TrackHostThread track); Snapshot.Owner says
	// whose. A thread with counter samples has a row, if only an empty
	// one, so that every writer declares it.
	Counters []*Record
	// Devices lists every device that has stream rows or counter samples,
	// by index, each with its identity merged from all its tracks (name,
	// vendor, UUID, capabilities; Kind TrackDevice).
	Devices []Track
	// DeviceCounters holds each device's counter samples in time order,
	// keyed by device index.
	DeviceCounters map[int][]*Record

	// withSpans is this compact layout with every row's Spans filled in
	// (Snapshot.Layout), made on first use.
	withSpansOnce sync.Once
	withSpans     *Layout
}

// Row is one properly nested timeline.
type Row struct {
	// Name is what the row is called in the outputs: for lanes, the name of
	// the first root span and the lane number ("train (lane 1)"); for a
	// track, the track's name, with " (2)", " (3)"... on overflow rows.
	Name string
	// Track is the registered track the row belongs to (index into
	// Snapshot.Tracks plus one), 0 for the program's lanes.
	Track uint32
	// Sub is 0 for a track's first row and counts its overflow rows.
	Sub int
	// Spans in pre-order: sorted by start, enclosing spans first. It is
	// nil in a compact layout (Snapshot.CompactLayout), whose rows give
	// their spans one at a time: Len and Span, or Walk, read both kinds.
	Spans []Placed
	// Instants in time order.
	Instants []*Record

	// snap and refs are a compact row's spans: in the order of Spans,
	// each an index into snap.Events with displacedRef set if it is
	// displaced. Four bytes a span where a Placed takes 24: ten million
	// spans laid out take 38 MiB instead of 229.
	snap *Snapshot
	refs []uint32
}

// displacedRef marks a displaced span in Row.refs; the bits below it are
// the span's index in Snapshot.Events.
const displacedRef = 1 << 31

// Len returns how many spans the row has.
func (r *Row) Len() int {
	if r.Spans != nil {
		return len(r.Spans)
	}
	return len(r.refs)
}

// Span returns the row's i-th span, in the order of Spans.
func (r *Row) Span(i int) Placed {
	if r.Spans != nil {
		return r.Spans[i]
	}
	ref := r.refs[i]
	rec := r.snap.Events[ref&^displacedRef]
	end, fin := r.snap.EndOf(rec)
	return Placed{Record: rec, End: end, Finished: fin, Displaced: ref&displacedRef != 0}
}

// Placed is a span with where it landed.
type Placed struct {
	*Record
	End       int64 // end in ticks (stop time if the span never ended)
	Finished  bool  // false if the span was still open at stop
	Displaced bool  // it has a parent in the snapshot that is not directly above it on this row
}

type rowState struct {
	stack []openSpan // open spans of the row, innermost last
	lane  uint32     // lane of the row's first span
	name  uint32     // name id of the row's first span
}

// openSpan is a span placed on a row that may still enclose the next.
type openSpan struct {
	id  uint64
	end int64
}

// maxLaneRows is how many lane rows the layout opens before it reuses any
// free row, whatever lane or name was there before.
const maxLaneRows = 64

// group returns the row group of a span, instant or activity record: 0 for
// the program's lanes, else the track id.
func group(r *Record) uint32 {
	if r.kind == KindActivity || r.flags&FlagOnTrack != 0 {
		return r.lane
	}
	return 0
}

// Layout returns the rows of s with their Spans, computed on first use and
// shared by every exporter that writes the snapshot (they only read it).
// It is deterministic for a given snapshot, and the rows are those of
// CompactLayout.
func (s *Snapshot) Layout() *Layout {
	c := s.CompactLayout()
	c.withSpansOnce.Do(func() { c.withSpans = c.placeAll() })
	return c.withSpans
}

// CompactLayout returns the rows of s as Layout does, but each row holds
// its spans as references into the snapshot rather than Placed values
// (Row.Spans is nil; Row.Len, Row.Span and Row.Walk read them): the
// writers use it, so that laying out a large snapshot adds 4 bytes a
// span to the model's 96 where Layout adds 28. It is computed on first
// use and shared.
func (s *Snapshot) CompactLayout() *Layout {
	s.layoutOnce.Do(func() { s.layout = s.computeLayout() })
	return s.layout
}

// placeAll returns the compact layout l with every row's Spans filled in,
// all in one array.
func (l *Layout) placeAll() *Layout {
	full := &Layout{Rows: slices.Clone(l.Rows), Loose: l.Loose, Counters: l.Counters, Devices: l.Devices, DeviceCounters: l.DeviceCounters}
	n := 0
	for i := range l.Rows {
		n += l.Rows[i].Len()
	}
	spans := make([]Placed, n)
	for i := range full.Rows {
		row := &full.Rows[i]
		k := row.Len()
		for j := range k {
			spans[j] = row.Span(j)
		}
		if k > 0 { // a row of instants alone has no Spans
			row.Spans, spans = spans[:k:k], spans[k:]
		}
		row.snap, row.refs = nil, nil
	}
	return full
}

func (s *Snapshot) computeLayout() *Layout {
	l := &Layout{}
	// IDs are dense (segment base + index), so per-ID facts live in slices.
	maxID := uint64(0)
	if n := len(s.segs); n > 0 {
		maxID = s.segs[n-1].base + uint64(len(s.segs[n-1].recs))
	}
	// One pass over the records counts the spans and sorts out counters
	// and instants: a session's records fill more memory than any cache,
	// and each pass over them cost ~10 ms per million.
	nspans := 0
	var instants []*Record // in Events order, placed once spans are
	l.DeviceCounters = map[int][]*Record{}
	for _, r := range s.Events {
		switch r.kind {
		case KindSpan, KindActivity:
			nspans++
		case KindInstant:
			instants = append(instants, r)
		case KindCounter:
			if t, ok := s.TrackOf(r); ok && (t.Kind == TrackDevice || t.Kind == TrackDeviceStream) {
				l.DeviceCounters[t.Device] = append(l.DeviceCounters[t.Device], r)
				continue
			}
			l.Counters = append(l.Counters, r)
		}
	}
	depths := map[uint64]int{} // memo: only spans tied on start and end need a depth
	order := func(a, b spanKey) int {
		if c := cmp.Compare(a.r.start, b.r.start); c != 0 {
			return c
		}
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		if c := cmp.Compare(s.depth(a.r, depths), s.depth(b.r, depths)); c != 0 {
			return c
		}
		return cmp.Compare(a.r.id, b.r.id)
	}
	// The two largest arrays are fresh memory, whose first touch costs the
	// kernel a page fault per 4 KiB (2.4 us each on a 2-core VM); their
	// pages are touched on another goroutine while sortedSpans looks for
	// runs.
	if len(s.Events) >= displacedRef {
		panic("event: a layout holds at most 2^31 events")
	}
	where := make([]int32, maxID+1) // span ID -> its row + 1 (0: not placed)
	refs := make([]uint32, 0, nspans)
	refs = s.sortedSpans(refs, order, prefault(refs[:nspans], where))
	byStart := func(a, b *Record) int { return cmp.Compare(a.start, b.start) }
	slices.SortFunc(l.Counters, byStart)
	for _, c := range l.DeviceCounters {
		slices.SortFunc(c, byStart)
	}

	var states []rowState
	groups := map[uint32][]int{} // group -> its rows, in creation order
	lanes := 0
	// Spans are first assigned rows (where), with the open spans of each
	// row on its stack; each row's refs are then grouped in place.
	var rowLen []int
	popTo := func(ri int, t int64) {
		st := &states[ri]
		for len(st.stack) > 0 && st.stack[len(st.stack)-1].end <= t {
			st.stack = st.stack[:len(st.stack)-1]
		}
	}
	place := func(ri int, r *Record, end int64) {
		rowLen[ri]++
		states[ri].stack = append(states[ri].stack, openSpan{id: r.id, end: end})
		where[r.id] = int32(ri) + 1
	}
	newRow := func(g uint32, first string) int {
		ri := len(l.Rows)
		row := Row{Track: g, Sub: len(groups[g]), snap: s}
		switch {
		case g == 0:
			lanes++
			row.Name = first + " (lane " + strconv.Itoa(lanes) + ")"
		default:
			row.Name = s.trackName(g)
			if row.Sub > 0 {
				row.Name += " (" + strconv.Itoa(row.Sub+1) + ")"
			}
		}
		l.Rows = append(l.Rows, row)
		states = append(states, rowState{})
		rowLen = append(rowLen, 0)
		groups[g] = append(groups[g], ri)
		return ri
	}
	for i := range refs {
		r := s.Events[refs[i]]
		end, _ := s.EndOf(r)
		g := group(r)
		if r.kind == KindSpan && r.parent != 0 {
			at, ok := rowOfID(where, r.parent)
			if ok && l.Rows[at].Track == g {
				// It goes beneath its parent if the parent is the innermost
				// open span of its row and the child ends in time.
				popTo(at, r.start)
				st := states[at].stack
				if len(st) > 0 && st[len(st)-1].id == r.parent && end <= st[len(st)-1].end {
					place(at, r, end)
					continue
				}
				refs[i] |= displacedRef
			} else if ok || s.Lookup(r.parent) != nil {
				refs[i] |= displacedRef
			}
		}
		// A free row of the group; on the program's lanes, one that the same
		// lane or a root of the same name used before, so that a worker
		// never lands on the row of an unrelated pipeline that finished.
		ri := -1
		crowded := g == 0 && len(groups[0]) >= maxLaneRows
		for _, j := range groups[g] {
			popTo(j, r.start)
			if len(states[j].stack) == 0 && (g != 0 || crowded || states[j].lane == r.lane || states[j].name == r.nameID) {
				ri = j
				break
			}
		}
		if ri < 0 {
			ri = newRow(g, s.Name(r))
			states[ri].lane, states[ri].name = r.lane, r.nameID
		}
		place(ri, r, end)
	}
	if len(l.Rows) == 1 {
		l.Rows[0].refs = refs // one row: it is refs, in order
	} else {
		// Group the spans by row in place, each row's in the order they
		// are (a copy per row would hold every span twice at the peak):
		// dest is where each goes, and the permutation is applied cycle
		// by cycle.
		off := make([]int, len(l.Rows)+1)
		for ri, n := range rowLen {
			off[ri+1] = off[ri] + n
		}
		next := slices.Clone(off[:len(l.Rows)])
		dest := make([]int32, len(refs))
		for i := range refs {
			ri := where[s.Events[refs[i]&^displacedRef].id] - 1 // every span was placed, IDs are unique
			dest[i] = int32(next[ri])
			next[ri]++
		}
		for i := range refs {
			for int(dest[i]) != i {
				j := dest[i]
				refs[i], refs[j] = refs[j], refs[i]
				dest[i], dest[j] = dest[j], dest[i]
			}
		}
		for ri := range l.Rows {
			l.Rows[ri].refs = refs[off[ri]:off[ri+1]:off[ri+1]]
		}
	}
	// Instants go on the row of their enclosing span, else on their track.
	for _, r := range instants {
		if at, ok := rowOfID(where, r.parent); ok {
			l.Rows[at].Instants = append(l.Rows[at].Instants, r)
			continue
		}
		if t, ok := s.TrackOf(r); ok && t.Kind == TrackProcess {
			l.Loose = append(l.Loose, r)
			continue
		}
		if g := group(r); g != 0 {
			rows := groups[g]
			if len(rows) == 0 {
				rows = []int{newRow(g, "")}
			}
			l.Rows[rows[0]].Instants = append(l.Rows[rows[0]].Instants, r)
			continue
		}
		l.Loose = append(l.Loose, r)
	}
	// A thread whose only events are counter samples still has a row.
	for _, r := range l.Counters {
		if t, ok := s.TrackOf(r); ok && t.Kind == TrackHostThread && len(groups[r.lane]) == 0 {
			newRow(r.lane, "")
		}
	}
	for i := range l.Rows {
		slices.SortFunc(l.Rows[i].Instants, byStart)
	}
	slices.SortFunc(l.Loose, byStart)
	l.Devices = s.devices(l)
	return l
}

// spanKey is a span with its end, as the layout orders spans.
type spanKey struct {
	r   *Record
	end int64
}

// sortedSpans appends the indexes in Events of the snapshot's spans and
// activity records to refs (empty, with room for them all), in order; it
// calls ready before it writes into refs. Buffer order is mostly sorted
// already: each chunk fills in the order its spans began, and a goroutine
// that moves between Ps leaves a few long runs. So the records are merged
// run by run (a heap of runs, taking from the smallest while it stays
// smallest) instead of sorted: close to one comparison per span for such
// traces, and never worse than sorting.
func (s *Snapshot) sortedSpans(refs []uint32, order func(a, b spanKey) int, ready func()) []uint32 {
	key := func(i int) spanKey {
		r := s.Events[i]
		end, _ := s.EndOf(r)
		return spanKey{r, end}
	}
	isSpan := func(i int) bool { k := s.Events[i].kind; return k == KindSpan || k == KindActivity }
	type run struct {
		head spanKey
		at   int // index in Events of head
		end  int // end of the run in Events
	}
	// Cut Events into runs that are in order.
	var runs []run
	var prev spanKey
	for i := range s.Events {
		if !isSpan(i) {
			continue
		}
		k := key(i)
		if len(runs) == 0 || order(prev, k) > 0 {
			if len(runs) > 0 {
				runs[len(runs)-1].end = i
			}
			runs = append(runs, run{head: k, at: i})
		}
		prev = k
	}
	if len(runs) > 0 {
		runs[len(runs)-1].end = len(s.Events)
	}
	ready()
	if len(runs) == 1 { // sorted already
		for i := runs[0].at; i < len(s.Events); i++ {
			if isSpan(i) {
				refs = append(refs, uint32(i))
			}
		}
		return refs
	}
	// A min-heap of runs by head.
	less := func(i, j int) bool { return order(runs[i].head, runs[j].head) < 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(runs) {
				return
			}
			if c+1 < len(runs) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			runs[i], runs[c] = runs[c], runs[i]
			i = c
		}
	}
	for i := len(runs)/2 - 1; i >= 0; i-- {
		down(i)
	}
	// advance moves run 0 to its next span; false when it is used up.
	advance := func() bool {
		r := &runs[0]
		for r.at++; r.at < r.end; r.at++ {
			if isSpan(r.at) {
				r.head = key(r.at)
				return true
			}
		}
		return false
	}
	for len(runs) > 0 {
		refs = append(refs, uint32(runs[0].at))
		if !advance() {
			last := len(runs) - 1
			runs[0] = runs[last]
			runs = runs[:last]
			down(0)
			continue
		}
		// Stay on this run while it is still the smallest: one comparison
		// with each child when runs do not interleave.
		if (len(runs) > 1 && less(1, 0)) || (len(runs) > 2 && less(2, 0)) {
			down(0)
		}
	}
	return refs
}

// rowOfID returns the row a span was placed on.
func rowOfID(where []int32, id uint64) (int, bool) {
	if id >= uint64(len(where)) || where[id] == 0 {
		return 0, false
	}
	return int(where[id] - 1), true
}

// trackName names a registered track for its rows.
func (s *Snapshot) trackName(id uint32) string {
	if id == 0 || int(id) > len(s.Tracks) {
		return "track " + strconv.Itoa(int(id))
	}
	t := s.Tracks[id-1]
	if t.Name != "" {
		return t.Name
	}
	switch t.Kind {
	case TrackDeviceStream:
		return "Stream #" + strconv.FormatInt(t.ID, 10)
	case TrackHostThread:
		return "Thread " + strconv.FormatInt(t.ID, 10)
	}
	return "track " + strconv.Itoa(int(id))
}

// Track returns the registered track of a row, and false for lane rows.
func (s *Snapshot) Track(row *Row) (Track, bool) {
	if row.Track == 0 || int(row.Track) > len(s.Tracks) {
		return Track{}, false
	}
	return s.Tracks[row.Track-1], true
}

// depth returns how many ancestors r has in the snapshot, memoised in
// memo. It is only used to break ties between spans with equal start and
// end.
func (s *Snapshot) depth(r *Record, memo map[uint64]int) int {
	if d, ok := memo[r.id]; ok {
		return d
	}
	var chain []*Record
	d := 0
	for p := r; ; {
		chain = append(chain, p)
		q := s.Lookup(p.parent)
		if q == nil || len(chain) > 1<<16 {
			break
		}
		if m, ok := memo[q.id]; ok {
			d = m + 1
			break
		}
		p = q
	}
	for i := len(chain) - 1; i >= 0; i-- {
		memo[chain[i].id] = d
		d++
	}
	return memo[r.id]
}

// RowEventType tells begin, end and instant apart in Row.Walk.
type RowEventType uint8

const (
	RowBegin RowEventType = iota + 1
	RowEnd
	RowInstant
)

// Walk calls fn for the row's events in an order that keeps begin/end
// properly nested and timestamps non-decreasing: a span's begin, its
// children, its end. Ends at time t come before begins at t (slices are
// closed on the left, open on the right). Instants are merged in by time.
// p is valid only during the call: a compact row has no Placed values to
// point into, so p is the walk's own copy.
func (r *Row) Walk(fn func(typ RowEventType, p *Placed, inst *Record)) {
	var stack []Placed
	ii := 0
	flushInstants := func(t int64, inclusive bool) {
		for ii < len(r.Instants) && (r.Instants[ii].start < t || inclusive && r.Instants[ii].start == t) {
			fn(RowInstant, nil, r.Instants[ii])
			ii++
		}
	}
	closeTo := func(t int64) {
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.End > t {
				return
			}
			flushInstants(top.End, false)
			fn(RowEnd, top, nil)
			stack = stack[:len(stack)-1]
		}
	}
	for i := range r.Len() {
		p := r.Span(i)
		closeTo(p.start)
		flushInstants(p.start, false)
		stack = append(stack, p)
		fn(RowBegin, &stack[len(stack)-1], nil)
	}
	closeTo(1<<63 - 1)
	flushInstants(1<<63-1, true)
}

// TrackOf returns the registered track of an activity record or of a
// record pinned to a track (FlagOnTrack), and false for the rest.
func (s *Snapshot) TrackOf(r *Record) (Track, bool) {
	if r.kind != KindActivity && r.flags&FlagOnTrack == 0 || r.lane == 0 || int(r.lane) > len(s.Tracks) {
		return Track{}, false
	}
	return s.Tracks[r.lane-1], true
}

// devices lists the devices that have stream tracks in use or counter
// samples, with identity merged from every track of each.
func (s *Snapshot) devices(l *Layout) []Track {
	used := map[int]bool{}
	for i := range l.Rows {
		if t, ok := s.Track(&l.Rows[i]); ok && t.Kind == TrackDeviceStream {
			used[t.Device] = true
		}
	}
	for d := range l.DeviceCounters {
		used[d] = true
	}
	byIndex := map[int]*Track{}
	var out []Track
	for d := range used {
		out = append(out, Track{Kind: TrackDevice, Device: d})
	}
	slices.SortFunc(out, func(a, b Track) int { return cmp.Compare(a.Device, b.Device) })
	for i := range out {
		byIndex[out[i].Device] = &out[i]
	}
	for _, t := range s.Tracks {
		d := byIndex[t.Device]
		if d == nil || t.Kind != TrackDevice && t.Kind != TrackDeviceStream {
			continue
		}
		d.DeviceName = cmp.Or(d.DeviceName, t.DeviceName)
		d.Vendor = cmp.Or(d.Vendor, t.Vendor)
		d.UUID = cmp.Or(d.UUID, t.UUID)
		d.PCIBusID = cmp.Or(d.PCIBusID, t.PCIBusID)
		if d.Caps == (DeviceCaps{}) {
			d.Caps = t.Caps
		}
		if d.Name == "" && t.Kind == TrackDevice {
			d.Name = t.Name
		}
	}
	return out
}

// prefaultMin is the size from which prefault touches an array's pages on
// a goroutine of its own: below it, a page fault or two is cheaper than
// starting one.
const prefaultMin = 1 << 20

// prefault writes a zero into every 4 KiB page of a and b on another
// goroutine, so that the kernel maps fresh memory there while the caller
// does other work, and returns the function that waits for it: neither
// array may be read or written before that returns. Memory the runtime
// reused is mapped already, and touching it again is cheap.
func prefault(a []uint32, b []int32) (wait func()) {
	if 4*len(a)+4*len(b) < prefaultMin {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		const page = 4096
		for i := 0; i < len(a); i += page / 4 {
			a[i] = 0
		}
		for i := 0; i < len(b); i += page / 4 {
			b[i] = 0
		}
	}()
	return func() { <-done }
}
