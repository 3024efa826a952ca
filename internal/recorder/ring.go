package recorder

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devprof/devprof/event"
)

// DropsFlightRecorder names, in a flight recorder's snapshot, the events
// it no longer held or left out: overwritten when the ring came round, or
// older than the snapshot's window.
const DropsFlightRecorder = "flight_recorder"

// ring makes a Buffer a flight recorder: once the budget of MaxRecords is
// handed out, a P that needs a chunk takes the oldest retired one (the
// events in it are overwritten, and counted), so recording never stops
// and memory stays bounded; Snapshot copies the window out while
// recording goes on.
//
// Why recycling is safe: every write into a chunk but a span's End
// happens inside one pinned section of the P whose shard holds the chunk
// (Buffer.pin), and a chunk stops being a shard's current one only inside
// a pinned section of that same P, which marks it retired. So a retired
// chunk is written again only by End, which checks the record's ID first
// (Record.EndSpan). Span contexts live apart from the records and are
// never reused (context.go): a program may still hold an old span's
// context, and it must keep saying what it said. The string table is the
// buffer's one bounded table, shared by every turn of the ring.
type ring struct {
	window int64 // ns a snapshot reaches back; 0 = all the ring holds

	mu sync.Mutex // guards fifo and overwritten, and orders recycling against snapshots
	// fifo is every chunk of the ring in the order of its base: the oldest
	// events first. A recycled chunk moves to the end with a new base.
	fifo        []*chunk
	overwritten int64 // committed events lost to recycling
	// copying counts snapshots under way. While one copies, refills take
	// new chunks instead of recycling (else a busy ring would overwrite
	// what the snapshot is about to copy); extra is what the ring holds
	// over its bound because of that, given back oldest first as soon as
	// no snapshot copies.
	copying int
	extra   int64
}

// NewRing returns a flight recorder: a buffer that holds the newest
// maxRecords records (at least one chunk per P, so that recording never
// waits for a P that holds the oldest chunk), recording host annotations
// up to level, whose snapshots reach back window at most (0: all it
// holds).
func NewRing(maxRecords int64, level uint8, window time.Duration) *Buffer {
	n := max(runtime.GOMAXPROCS(0), runtime.NumCPU())
	maxRecords = max(maxRecords, int64(2*shardCount(n)+2)*ringChunkRecords)
	b := newClocked(maxRecords, level, ringChunkRecords)
	b.ring = &ring{window: int64(max(window, 0))}
	// The top bit of a ring's epoch marks its spans' end tokens
	// (SpanContext.EndToken): their End must compare-and-swap.
	b.epoch |= ringEpoch
	if b.cal != nil {
		b.cal.keep = maxCalPoints
	}
	return b
}

// ringEpoch is the bit of a flight recorder's epoch; plain buffers'
// epochs stay below it.
const ringEpoch = 1 << 31

// maxCalPoints bounds a flight recorder's calibration points (one a
// second): an hour and more of exact conversion, and older ticks
// extrapolated from the oldest points kept.
const maxCalPoints = 4096

// Ring reports whether b is a flight recorder (NewRing).
func (b *Buffer) Ring() bool { return b.ring != nil }

// refill prepares a chunk with room for n records: a new one while the
// budget lasts, then the oldest retired chunk, its events counted as
// overwritten. It returns nil when no chunk is retired (every chunk is
// some P's current one), and the event is dropped.
func (g *ring) refill(b *Buffer, n int) *chunk {
	if size := b.claim(n); size > 0 {
		c := b.fresh(size)
		g.mu.Lock()
		c.base = b.idBase.Add(uint64(size)) - uint64(size)
		g.fifo = append(g.fifo, c)
		g.mu.Unlock()
		return c
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.copying > 0 {
		c := newChunk(max(b.chunk, int64(n)))
		c.base = b.idBase.Add(uint64(len(c.recs))) - uint64(len(c.recs))
		g.fifo = append(g.fifo, c)
		g.extra += int64(len(c.recs))
		return c
	}
	g.trim()
	// An empty retired chunk (prepared by a refill that found its P
	// refilled meanwhile) costs nothing to reuse; else the oldest.
	k := slices.IndexFunc(g.fifo, func(c *chunk) bool {
		return c.retired.Load() && len(c.recs) >= n && atomic.LoadInt64(&c.next) == 0
	})
	if k < 0 {
		k = slices.IndexFunc(g.fifo, func(c *chunk) bool { return c.retired.Load() && len(c.recs) >= n })
	}
	if k < 0 {
		return nil
	}
	c := g.fifo[k]
	c.retired.Store(false)
	g.overwrite(c)
	atomic.StoreInt64(&c.next, 0)
	c.base = b.idBase.Add(uint64(len(c.recs))) - uint64(len(c.recs))
	g.fifo = append(slices.Delete(g.fifo, k, k+1), c)
	return c
}

// overwrite counts the events of c as overwritten and clears its records'
// state and end, the two words a writer does not rewrite before it
// publishes. g.mu is held.
func (g *ring) overwrite(c *chunk) {
	used := min(atomic.LoadInt64(&c.next), int64(len(c.recs)))
	for i := range used {
		r := &c.recs[i]
		if r.committed() && r.Kind != kindArgs {
			g.overwritten++
		}
		r.unpublish()
	}
}

// trim gives back the oldest retired chunks while the ring holds more
// than its bound (see extra). g.mu is held and no snapshot copies.
func (g *ring) trim() {
	for g.extra > 0 {
		k := slices.IndexFunc(g.fifo, func(c *chunk) bool { return c.retired.Load() })
		if k < 0 {
			return
		}
		c := g.fifo[k]
		g.overwrite(c)
		g.fifo = slices.Delete(g.fifo, k, k+1)
		g.extra -= int64(len(c.recs))
	}
	g.extra = 0
}

// SnapshotWindow copies what a flight recorder holds of the last window
// (0: the ring's own window) into a new event.Snapshot, without stopping
// recording or writing into the ring: meta.Stop is the snapshot's time
// (zero: read once recycling is held off for the copy), and spans still open then are open in the copy,
// shown ending at meta.Stop as for a session stopped while they ran.
// Events the ring overwrote or that ended before the window are counted
// under DropsFlightRecorder and said in a note. On a plain buffer it is
// Snapshot.
func (b *Buffer) SnapshotWindow(meta event.Meta, window time.Duration) *event.Snapshot {
	if b.ring == nil {
		return b.Snapshot(meta)
	}
	return b.ring.snapshot(b, meta, int64(max(window, 0)))
}

func (g *ring) snapshot(b *Buffer, meta event.Meta, window int64) *event.Snapshot {
	if window == 0 {
		window = g.window
	}
	meta.Drops = slices.Clone(meta.Drops)
	meta.Notes = slices.Clone(meta.Notes)
	meta.Warnings = slices.Clone(meta.Warnings)
	meta.AddDrops(event.DropsRecorder, b.Dropped())
	if n := b.StringsOverflowed(); n > 0 {
		meta.Warnings = append(meta.Warnings, event.Warning{Source: event.DropsRecorder, Code: "strings_overflow",
			Text: fmt.Sprintf("%d new names, argument keys or string values found the string table full and read as %q", n, StringsFullPlaceholder)})
	}
	meta.MaxEvents = b.maxRecords
	// Recycling stops first, then the snapshot's time is read: what the
	// ring holds at that time stays in it until copied, however long the
	// copy waits for a CPU.
	g.mu.Lock()
	list := slices.Clone(g.fifo)
	g.copying++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.copying--; g.copying == 0 {
			g.trim()
		}
		g.mu.Unlock()
	}()
	if meta.Stop.Mono == 0 {
		meta.Stop = ReadClocks()
	}
	stop := meta.Stop.Mono
	cutoff := int64(-1 << 63)
	if window > 0 {
		cutoff = stop - window
	}
	var conv func(int64) int64
	if b.cal != nil {
		b.cal.add()
		conv = b.cal.converter()
	}

	type seg struct {
		base uint64
		recs []Record
	}
	segs := make([]seg, 0, len(list))
	var events []*event.Record
	var outside int64
	earliest := int64(1<<63 - 1)
	for _, c := range list {
		g.mu.Lock() // orders the copy after the chunk's last recycling
		used := min(atomic.LoadInt64(&c.next), int64(len(c.recs)))
		if used == 0 {
			g.mu.Unlock()
			continue
		}
		dst := make([]Record, len(c.recs))
		base := c.base
		first := len(events)
		for i := range used {
			src := &c.recs[i]
			if !src.committed() {
				continue
			}
			d := &dst[i]
			d.Kind, d.NArgs, d.Flags, d.Level = src.Kind, src.NArgs, src.Flags&^FlagMonoTime, src.Level
			d.Lane, d.NameID, d.ID, d.Parent, d.ID2 = src.Lane, src.NameID, src.ID, src.Parent, src.ID2
			d.args = src.args
			d.state.Store(1)
			if src.Kind == kindArgs {
				continue
			}
			start, e := src.Start, max(src.end.Load(), 0) // -ID: open
			if src.Flags&FlagMonoTime == 0 && conv != nil {
				start = conv(start)
				if e != 0 {
					e = conv(e-1) + 1
				}
			}
			d.Start = start
			if e == 0 {
				d.end.Store(openAtStop)
			} else {
				d.end.Store(e)
			}
			if start > stop {
				d.state.Store(0) // recorded after the snapshot's time: not in it
				continue
			}
			if start < cutoff && (e != 0 && e-1 < cutoff) {
				d.state.Store(0)
				outside++
				continue
			}
			earliest = min(earliest, start)
			events = append(events, d.model())
		}
		g.mu.Unlock()
		if len(events) > first || used > 0 {
			segs = append(segs, seg{base, dst})
		}
	}
	g.mu.Lock()
	overwritten := g.overwritten
	g.mu.Unlock()
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(a.base, b.base) })
	bases := make([]uint64, len(segs))
	recs := make([][]event.Record, len(segs))
	for i, s := range segs {
		bases[i] = s.base
		recs[i] = (&chunk{recs: s.recs}).model()
	}
	slices.SortStableFunc(events, func(a, b *event.Record) int { return cmp.Compare(a.ID(), b.ID()) })
	if lost := overwritten + outside; lost > 0 {
		meta.AddDrops(DropsFlightRecorder, lost)
		// The trace begins where what it holds begins, not at the start
		// of the recording.
		from := min(earliest, max(cutoff, meta.Start.Mono))
		if d := from - meta.Start.Mono; d > 0 && len(events) > 0 {
			meta.Start.Mono += d
			meta.Start.Boot += d
			meta.Start.Wall += d
		}
	}
	what := "all it held"
	if window > 0 {
		what = "the last " + time.Duration(window).String()
	}
	meta.Notes = append(meta.Notes, event.Note{Source: DropsFlightRecorder, Text: fmt.Sprintf(
		"flight recorder snapshot of %s: a ring of %d events; %d older events overwritten, %d held but older than the window left out",
		what, b.maxRecords, overwritten, outside)})
	b.mu.Lock()
	tracks := slices.Clone(b.tracks)
	b.mu.Unlock()
	return adopt(meta, bases, recs, events, tracks, b.strs.snapshot())
}
