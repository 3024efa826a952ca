package xplane

import (
	"cmp"
	"slices"

	"github.com/devprof/devprof/event"
)

// Flows between host events.
//
// An XSpace links a launch to its kernel with a shared correlation_id,
// which xprof also counts as a kernel launch (and groups into steps). A
// flow between two host events — a request handed from one goroutine to
// another, a producer and its consumer, a Chrome or Perfetto trace's
// arrows between threads — is no launch, so it must not be written that
// way. xprof's trace viewer draws an arrow from the "flow" stat (TSL's
// StatType kFlow): a uint64 packing an XFlow, with the direction in bits
// 0–1 (1 in, 2 out, 3 in and out), the flow's id in bits 2–57 and its
// category (a ContextType) in bits 58–63. Its converter turns each event
// that carries one into a complete event with bind_id = the id and
// flow_out / flow_in by direction, and the category, unless generic, as
// "cat". Nothing else in xprof reads the stat: grouping, steps and
// launch statistics follow correlation_id and _p/_c only.
//
// So Write gives each end of a flow that no device activity carries a
// flow stat: ids are renumbered 1, 2, … (the model's may use all 64 bits;
// an XFlow id has 56), the category is generic, the first end in time
// flows out, the last in, and any between both. xprof keeps one flow per
// event (the last flow stat); devprof's reader reads them all, so an event
// on several flows keeps them through an XSpace even where xprof draws
// one. A flow with a single end is written without one (it has nothing to
// link). Read turns flow stats back into flows, except those of the
// gpu_launch category on an event that also carries a correlation_id
// (xprof derives those from it, and the correlation id is the flow).

// StatFlow is the name of xprof's flow stat.
const StatFlow = "flow"

// XFlow's packing (TSL's xplane_schema.h).
const (
	xflowIn          = 1
	xflowOut         = 2
	xflowInOut       = 3
	xflowIDBits      = 56
	xflowIDShift     = 2
	xflowCatShift    = 58
	contextGpuLaunch = 9 // ContextType kGpuLaunch: xprof's launch → kernel flows
)

// flowEnd is one record's end of one flow (by the model's flow id).
type flowEnd struct {
	r  *event.Record
	id uint64
}

// planHostFlows finds the flows between host events that Write puts out
// — on the rows of host threads (memory events aside) and the loose
// instants — and gives each end its flow stat (x.hostFlow).
func (x *writer) planHostFlows(l *event.Layout) {
	ends := map[uint64][]*event.Record{}
	// Every host record is visited for its flows alone: AppendFlows, not
	// AppendArgs, which resolved every argument of a million spans only
	// to find none (a tenth of the writer's time).
	note := func(r *event.Record) {
		x.flowBuf = x.s.AppendFlows(x.flowBuf[:0], r)
		for _, id := range x.flowBuf {
			if !x.correlated[id] && !slices.Contains(ends[id], r) {
				ends[id] = append(ends[id], r)
			}
		}
	}
	for i := range l.Rows {
		row := &l.Rows[i]
		if t, ok := x.s.Track(row); ok && t.Kind == event.TrackDeviceStream {
			continue
		}
		for k := range row.Len() {
			sp := row.Span(k)
			if sp.End == sp.Start() && x.isMemoryEvent(sp.Record) {
				continue
			}
			note(sp.Record)
		}
		for _, r := range row.Instants {
			note(r)
		}
	}
	for _, r := range l.Loose {
		note(r)
	}
	ids := make([]uint64, 0, len(ends))
	for id, rs := range ends {
		if len(rs) < 2 {
			continue
		}
		slices.SortStableFunc(rs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
		ids = append(ids, id)
	}
	// Numbered in time order, so the same snapshot gives the same file.
	slices.SortFunc(ids, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(ends[a][0].Start(), ends[b][0].Start()), cmp.Compare(a, b))
	})
	x.hostFlow = make(map[flowEnd]uint64, 2*len(ids))
	for n, id := range ids {
		rs := ends[id]
		for i, r := range rs {
			dir := uint64(xflowInOut)
			switch i {
			case 0:
				dir = xflowOut
			case len(rs) - 1:
				dir = xflowIn
			}
			x.hostFlow[flowEnd{r, id}] = uint64(n+1)<<xflowIDShift | dir
		}
	}
}

// xflowIDBase starts the model's ids of flows read from flow stats: above
// the correlation ids (CUPTI's are 32-bit) that are flows too, and below
// 2^53, so that a JSON viewer's float64 keeps them exact.
const xflowIDBase = 1 << 52

// xflow returns the model's flow id for a flow stat's value v, or false
// for one that is no flow of its own: no direction, or xprof's launch
// flow beside the correlation_id it came from.
func (r *reader) xflow(v uint64, correlated bool) (uint64, bool) {
	if v&xflowInOut == 0 || correlated && v>>xflowCatShift == contextGpuLaunch {
		return 0, false
	}
	id := v >> xflowIDShift & (1<<xflowIDBits - 1)
	n, ok := r.xflows[id]
	if !ok {
		if r.xflows == nil {
			r.xflows = map[uint64]uint64{}
		}
		n = xflowIDBase + uint64(len(r.xflows))
		r.xflows[id] = n
	}
	return n, true
}
