package perfetto

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// This file holds clocks: snapshots and the conversion of every timestamp to the trace clock.

// clockKey identifies a clock domain: builtin and global clocks by id,
// sequence-scoped clocks (64..127) by sequence and id.
type clockKey uint64

func makeClockKey(id, seq uint32) clockKey {
	if id >= rFirstSeqClock && id < rFirstGlobalClock {
		return clockKey(uint64(seq)<<32 | uint64(id))
	}
	return clockKey(id)
}

func (k clockKey) String() string {
	if k>>32 != 0 {
		return fmt.Sprintf("%d of sequence %d", uint32(k), k>>32)
	}
	return strconv.FormatUint(uint64(k), 10)
}

type clockDomain struct {
	mult        int64
	incremental bool
	last        int64 // latest absolute value of an incremental clock, ns, as trace_processor's int64 sum wraps it
	wraps       int   // how many times that sum wrapped (up +1, down -1): last is the true time only at 0

	readings  []clockReading // from snapshots, in file order
	monotonic bool           // readings never go backwards, so it can be a conversion source
}

type clockReading struct {
	snap int
	ns   int64
}

type clockState struct {
	trace     clockKey
	converted bool
	domains   map[clockKey]*clockDomain
	snapshots [][]clockPoint
	edges     map[[2]clockKey]*clockEdge
	next      map[clockKey]clockKey // routes to the trace clock, made at the end

	lastEdge         *clockEdge // the edge edge returned last, between these clocks
	lastFrom, lastTo clockKey

	// The domain resolve found last: a run of packets is on one clock
	// (a domain, once made, is never replaced).
	lastDomain *clockDomain
	lastKey    clockKey
}

type clockPoint struct {
	clock clockKey
	ns    int64
}

func newClockState() *clockState {
	return &clockState{
		trace:   clockBoottime,
		domains: map[clockKey]*clockDomain{},
		edges:   map[[2]clockKey]*clockEdge{},
	}
}

// timestamp is a packet time: resolved to the trace clock when read, or,
// when no snapshot yet converts its clock, kept to be converted at the end
// (as trace_processor defers such packets to the end of the file).
type timestamp struct {
	ts       int64
	clock    clockKey
	ns       int64 // in the clock's domain (raw units when scaled is false)
	ok       bool
	unscaled bool
}

// rawClock is one ClockSnapshot.Clock as the file has it.
type rawClock struct {
	id          uint32
	ts          uint64
	mult        uint64
	incremental bool
}

// field stores one ClockSnapshot.Clock field.
func (k *rawClock) field(f field) error {
	switch f.key() {
	case key(clkID, wireVarint):
		k.id = uint32(f.u)
	case key(clkTimestamp, wireVarint):
		k.ts = f.u
	case key(rClkIncremental, wireVarint):
		k.incremental = f.u != 0
	case key(rClkUnitMult, wireVarint):
		k.mult = f.u
	}
	return nil
}

// decodeClockSnapshot returns a ClockSnapshot's clocks and primary clock.
func decodeClockSnapshot(b []byte) (clocks []rawClock, primary uint64, err error) {
	err = eachField(b, func(f field) error {
		switch f.key() {
		case key(rCsPrimaryClock, wireVarint):
			primary = f.u
		case key(csClocks, wireBytes):
			var k rawClock
			if err := eachField(f.b, k.field); err != nil {
				return err
			}
			if len(clocks) == maxSnapshotClocks {
				return fmt.Errorf("more than %d clocks", maxSnapshotClocks)
			}
			clocks = append(clocks, k)
		}
		return nil
	})
	return clocks, primary, err
}

// clockSnapshot applies a ClockSnapshot of the packet sequence seq.
func (r *reader) clockSnapshot(b []byte, seq uint32) error {
	c := r.clocks
	clocks, primary, err := decodeClockSnapshot(b)
	if err != nil {
		return err
	}
	snap := len(c.snapshots)
	var points []clockPoint
	for _, k := range clocks {
		if k.id == 0 {
			continue
		}
		if k.id >= rFirstSeqClock && k.id < rFirstGlobalClock && seq == 0 {
			return fmt.Errorf("sequence-scoped clock %d in a snapshot without trusted_packet_sequence_id", k.id)
		}
		ck := makeClockKey(k.id, seq)
		if slices.ContainsFunc(points, func(p clockPoint) bool { return p.clock == ck }) {
			continue
		}
		points = append(points, clockPoint{ck, c.read(ck, k, snap)})
	}
	c.snapshots = append(c.snapshots, points)
	if primary != 0 && !c.converted && primary < rFirstSeqClock {
		c.trace = clockKey(primary)
	}
	if !r.wallSet {
		r.wallAnchor(points)
	}
	return nil
}

// read records the reading k of clock ck in snapshot snap and returns it
// in ns.
func (c *clockState) read(ck clockKey, k rawClock, snap int) int64 {
	d := c.domains[ck]
	if d == nil {
		d = &clockDomain{monotonic: true}
		c.domains[ck] = d
	}
	d.mult = max(int64(k.mult), 1)
	d.incremental = k.incremental
	ns := int64(k.ts) * d.mult
	if d.incremental {
		d.last = ns
	}
	if n := len(d.readings); n > 0 && ns < d.readings[n-1].ns {
		d.monotonic = false
	}
	d.readings = append(d.readings, clockReading{snap: snap, ns: ns})
	return ns
}

// wallAnchor takes the trace's wall-clock start from the first snapshot
// that reads both a realtime clock and the trace clock.
func (r *reader) wallAnchor(points []clockPoint) {
	var wall, trace int64
	var hasWall, hasTrace bool
	for _, p := range points {
		switch {
		case p.clock == clockRealtime || (p.clock == rClockRealCoarse && !hasWall):
			wall, hasWall = p.ns, true
		}
		if p.clock == r.clocks.trace {
			trace, hasTrace = p.ns, true
		}
	}
	if hasWall && hasTrace {
		r.wallSet = true
		r.t.WallStart, r.t.WallStartTS = wall, trace
	}
}

// resolve interprets a packet timestamp on clock id (0: the trace clock) of
// sequence seq. A clock that shares a snapshot with the trace clock is
// converted now, by the snapshots read so far, as trace_processor does; any
// other waits for the end of the file (see finish).
func (c *clockState) resolve(raw uint64, id, seq uint32) (timestamp, error) {
	if id == 0 {
		return timestamp{ts: int64(raw), ok: true}, nil
	}
	if id >= rFirstSeqClock && id < rFirstGlobalClock && seq == 0 {
		return timestamp{}, dropf("clock_sync_failure_unknown_source_clock", "timestamp on sequence-scoped clock %d but no trusted_packet_sequence_id", id)
	}
	k := makeClockKey(id, seq)
	d := c.lastDomain
	if d == nil || c.lastKey != k {
		if d = c.domains[k]; d != nil {
			c.lastDomain, c.lastKey = d, k
		}
	}
	if d == nil && k == c.trace {
		c.converted = true
		return timestamp{ts: int64(raw), ok: true}, nil
	}
	if d == nil {
		if k>>32 != 0 {
			return timestamp{}, dropf("clock_sync_failure_unknown_source_clock", "timestamp on clock %s, which no clock snapshot of the sequence defines yet", k)
		}
		return timestamp{clock: k, ns: int64(raw), unscaled: true}, nil
	}
	// trace_processor's ClockDomain::ToNs scales and sums in plain int64
	// arithmetic: an incremental clock's running time moves by a delta
	// whose product or sum overflowed too, as it wraps, so the next
	// event lands where it does there. The event whose time overflowed
	// has no true time and alone is dropped.
	ns, exact := int64(raw), true
	if d.mult != 1 {
		ns, exact = mulOK(ns, d.mult)
	}
	if d.incremental {
		last, ok := addOK(d.last, ns)
		if !ok {
			if ns < 0 {
				d.wraps--
			} else {
				d.wraps++
			}
		}
		d.last, ns = last, last
		exact = exact && d.wraps == 0
	}
	if !exact {
		return timestamp{}, dropf("track_event_invalid_timestamp", "timestamp %d on clock %s overflows in ns", raw, k)
	}
	if k == c.trace {
		c.converted = true
		return timestamp{ts: ns, ok: true}, nil
	}
	if d.monotonic {
		if pairs := c.edgeFrom(d, k, c.trace); len(pairs) > 0 {
			c.converted = true
			ts, ok := hop(pairs, ns)
			if !ok {
				return timestamp{}, dropf("track_event_invalid_timestamp", "timestamp %d ns on clock %s overflows converted to the trace clock", ns, k)
			}
			return timestamp{ts: ts, ok: true}, nil
		}
	}
	return timestamp{clock: k, ns: ns}, nil
}

// hop converts ns by the pair whose source reading is the latest at or
// before ns, or by the earliest pair for a time before all of them, as
// trace_processor's ClockTracker does; false when the result overflows.
func hop(pairs []clockPair, ns int64) (int64, bool) {
	// Packets come after the snapshot that converts them, nearly always:
	// the latest pair first.
	p := pairs[len(pairs)-1]
	if p.src > ns {
		j, _ := slices.BinarySearchFunc(pairs, ns, func(p clockPair, ns int64) int {
			if p.src <= ns {
				return -1
			}
			return 1
		})
		p = pairs[max(j-1, 0)]
	}
	if p.src == math.MinInt64 {
		return 0, false
	}
	shift, ok := addOK(p.dst, -p.src)
	if !ok {
		return 0, false
	}
	return addOK(ns, shift)
}

// finish converts a timestamp deferred to the end of the file along a
// shortest chain of at most maxClockHops clocks that share snapshots.
func (c *clockState) finish(t *timestamp) error {
	if t.ok {
		return nil
	}
	ns := t.ns
	if t.unscaled {
		d := c.domains[t.clock]
		if d == nil && t.clock == c.trace {
			t.ts, t.ok = ns, true
			return nil
		}
		if d == nil {
			return dropf("clock_sync_failure_unknown_source_clock", "timestamp on clock %s, which no clock snapshot defines", t.clock)
		}
		var ok bool
		if ns, ok = mulOK(ns, d.mult); !ok {
			return dropf("track_event_invalid_timestamp", "timestamp %d on clock %s overflows in ns", t.ns, t.clock)
		}
	}
	if c.next == nil {
		c.next = c.routes()
	}
	for k := t.clock; k != c.trace; {
		next, ok := c.next[k]
		if !ok {
			return dropf("clock_sync_failure_no_path", "no clock snapshot path converts clock %s to the trace clock %s", t.clock, c.trace)
		}
		if ns, ok = hop(c.edge(k, next), ns); !ok {
			return dropf("track_event_invalid_timestamp", "timestamp on clock %s overflows converted to the trace clock", t.clock)
		}
		k = next
	}
	t.ts, t.ok = ns, true
	return nil
}

// routes returns, for every clock within maxClockHops of the trace clock,
// the next clock on a shortest chain to it: a breadth-first search out from
// the trace clock over clocks that share snapshots, in which a clock that
// went backwards between snapshots is never the source of a hop.
func (c *clockState) routes() map[clockKey]clockKey {
	next := map[clockKey]clockKey{}
	seen := map[clockKey]bool{c.trace: true}
	level := []clockKey{c.trace}
	for depth := 0; depth < maxClockHops && len(level) > 0; depth++ {
		var below []clockKey
		for _, to := range level {
			d := c.domains[to]
			if d == nil {
				continue
			}
			for _, r := range d.readings {
				for _, p := range c.snapshots[r.snap] {
					if !seen[p.clock] && c.domains[p.clock].monotonic {
						seen[p.clock] = true
						next[p.clock] = to
						below = append(below, p.clock)
					}
				}
			}
		}
		level = below
	}
	return next
}

// edge returns the readings of the clocks from and to in the snapshots that
// hold both, sorted by the reading of from (a monotonic clock). The list is
// kept per pair and extended with the snapshots added since it was last
// used, so each snapshot is looked at once per pair.
func (c *clockState) edge(from, to clockKey) []clockPair {
	return c.edgeFrom(c.domains[from], from, to)
}

// edgeFrom is edge for the caller that holds from's domain d.
func (c *clockState) edgeFrom(d *clockDomain, from, to clockKey) []clockPair {
	e := c.lastEdge // every event of a run converts the same clock
	if e == nil || c.lastFrom != from || c.lastTo != to {
		if e = c.edges[[2]clockKey{from, to}]; e == nil {
			e = &clockEdge{}
			c.edges[[2]clockKey{from, to}] = e
		}
		c.lastEdge, c.lastFrom, c.lastTo = e, from, to
	}
	rs := d.readings
	for ; e.scanned < len(rs); e.scanned++ {
		if dst, ok := c.reading(rs[e.scanned].snap, to); ok {
			e.pairs = append(e.pairs, clockPair{rs[e.scanned].ns, dst})
		}
	}
	return e.pairs
}

type clockEdge struct {
	scanned int // readings of the source clock looked at
	pairs   []clockPair
}

type clockPair struct{ src, dst int64 }

func (c *clockState) reading(snap int, k clockKey) (int64, bool) {
	for _, p := range c.snapshots[snap] {
		if p.clock == k {
			return p.ns, true
		}
	}
	return 0, false
}
