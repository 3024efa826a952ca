package recorder

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	_ "unsafe" // for go:linkname

	"github.com/devprof/devprof/event"
)

// adopt is event.adopt: it wraps the chunks, written in place, in a
// Snapshot of the model without copying them.
//
//go:linkname adopt github.com/devprof/devprof/event.adopt
func adopt(meta event.Meta, bases []uint64, chunks [][]event.Record, events []*event.Record, tracks []event.Track, strs []string) *event.Snapshot

// Snapshot collects the committed records of b, converting their times to
// monotonic nanoseconds, and hands them to the event model. Call it once,
// after Deactivate; records committed later are not seen, and spans still
// open are closed at the stop time. meta.MaxEvents is filled in, and the
// events the buffer had no room for are added to meta.Drops as the
// recorder's; strings the full string table replaced are a warning.
func (b *Buffer) Snapshot(meta event.Meta) *event.Snapshot {
	if b.ring != nil {
		return b.ring.snapshot(b, meta, 0)
	}
	meta.Drops = slices.Clone(meta.Drops) // the caller's slice stays as it was
	meta.AddDrops(event.DropsRecorder, b.Dropped())
	if n := b.StringsOverflowed(); n > 0 {
		meta.Warnings = append(slices.Clone(meta.Warnings), event.Warning{Source: event.DropsRecorder, Code: "strings_overflow",
			Text: fmt.Sprintf("%d new names, argument keys or string values found the string table full and read as %q", n, StringsFullPlaceholder)})
	}
	meta.MaxEvents = b.maxRecords
	var chunks []*chunk
	for c := b.chunks.Load(); c != nil; c = c.prev {
		chunks = append(chunks, c)
	}
	slices.SortFunc(chunks, func(a, b *chunk) int { return cmp.Compare(a.base, b.base) })
	var conv, conv2 func(int64) int64 // the second for a second goroutine
	if b.cal != nil {
		b.cal.add()
		cs := b.cal.converters(2)
		conv, conv2 = cs[0], cs[1]
	}
	// Close open spans for good, then wait until no End can be half done
	// (see Record.EndSpan), then turn ticks into nanoseconds. A record
	// published after the first pass (a late writer) is not in the
	// snapshot: an End racing with it could land after the second.
	used := make([]int64, len(chunks))
	shown := make([]int, len(chunks)+1) // events before chunk k
	var late map[*Record]bool
	for k, c := range chunks {
		used[k] = min(atomic.LoadInt64(&c.next), int64(len(c.recs)))
		shown[k+1] = shown[k]
		for i := range used[k] {
			switch r := &c.recs[i]; {
			case !r.committed():
				if late == nil {
					late = map[*Record]bool{}
				}
				late[r] = true
			case r.Kind != kindArgs:
				r.closeAtStop()
				shown[k+1]++
			}
		}
	}
	quiesce()
	events := make([]*event.Record, shown[len(chunks)])
	bases := make([]uint64, len(chunks))
	recs := make([][]event.Record, len(chunks))
	for k, c := range chunks {
		bases[k] = c.base
		recs[k] = c.model()
	}
	// Each chunk's events have their place in events (shown), so the chunks
	// are converted on two goroutines when there are many records: the
	// pass reads and writes every record, more memory than any cache, and
	// was a fifth of Stop's serial work for a million spans.
	convert := func(from, to int, conv func(int64) int64) {
		for k := from; k < to; k++ {
			c, at := chunks[k], shown[k]
			for i := range used[k] {
				r := &c.recs[i]
				if late[r] || r.Kind == kindArgs {
					continue
				}
				if r.Flags&FlagMonoTime != 0 {
					r.Flags &^= FlagMonoTime
				} else if conv != nil {
					r.Start = conv(r.Start)
					if e := r.end.Load(); e != openAtStop {
						r.end.Store(conv(e-1) + 1)
					}
				}
				events[at] = r.model()
				at++
			}
		}
	}
	half := 0 // the first chunk of the second goroutine's half
	for half < len(chunks) && shown[half] < len(events)/2 {
		half++
	}
	if len(events) < parallelConvertMin || half == 0 || half == len(chunks) {
		convert(0, len(chunks), conv)
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			convert(half, len(chunks), conv2)
		}()
		convert(0, half, conv)
		<-done
	}
	b.mu.Lock()
	tracks := slices.Clone(b.tracks)
	b.mu.Unlock()
	return adopt(meta, bases, recs, events, tracks, b.strs.snapshot())
}

// parallelConvertMin is the number of records from which Snapshot converts
// them on two goroutines: below it, starting one costs more than it saves.
const parallelConvertMin = 1 << 16

// quiesce returns once every P has left the pinned section it was in, if
// any: runtime.ReadMemStats stops the world, and the world stops only
// when every goroutine is at a safe point, which a goroutine between
// procPin and procUnpin never is (it cannot be preempted). It costs tens
// of microseconds, once per snapshot.
func quiesce() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
}
