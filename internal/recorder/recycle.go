package recorder

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Full-size chunks' records are recycled between buffers: when nothing
// refers to a chunk's records any more (its buffer, the snapshots made of
// it and every *event.Record of them all unreachable), a finalizer hands
// the array to recycledRecords instead of letting the heap free it, and
// the next buffer's prefetcher takes it from there. A recycled array needs
// no zeroing and no page faults: the two costs that made fresh chunks
// (the prefetcher's work, ~35 ns of CPU per span on the 2-core VM, on the
// CPU the writers need when every P records).
//
// Soundness rests on the finalizer: the runtime runs it only once no
// pointer into the array is left anywhere (interior pointers count, so a
// program holding one event of an old snapshot holds its whole chunk), and
// records hold no pointers, so an array can neither keep itself alive nor
// others. A sync.Pool bounds what waits: an array not taken within two
// garbage collections is freed, its finalizer spent. Span contexts are
// never recycled: a program may hold one long after its span ended, and
// they point to each other (a finalizer on them would never run).

// recycledRecords holds *[chunkRecords]Record arrays nothing refers to.
var recycledRecords sync.Pool

// recordsReused counts the arrays newRecords took from recycledRecords.
var recordsReused atomic.Int64

// recycleRecords is the finalizer of a full-size chunk's records.
func recycleRecords(a *[chunkRecords]Record) { recycledRecords.Put(a) }

// newRecords returns n records whose state and end words are zero, every
// page of them faulted in: for a full-size chunk, an array recycled from a
// chunk nothing refers to any more when there is one.
func newRecords(n int64) []Record {
	if n != chunkRecords {
		return faultIn(make([]Record, n))
	}
	if a, _ := recycledRecords.Get().(*[chunkRecords]Record); a != nil {
		recordsReused.Add(1)
		return reuse(a)
	}
	a := new([chunkRecords]Record)
	runtime.SetFinalizer(a, recycleRecords)
	return faultIn(a[:])
}

// reuse readies a recycled array: the other words of a record are
// rewritten before it is published; state and end are read before
// (committed, an End's check), so they are cleared. The finalizer is armed
// again for the array's next turn.
func reuse(a *[chunkRecords]Record) []Record {
	for i := range a {
		a[i].unpublish()
	}
	runtime.SetFinalizer(a, recycleRecords)
	return a[:]
}

// faultIn writes one word of every page of fresh records: memory new from
// the OS is mapped on its first write, and that fault (microseconds under
// a hypervisor) would otherwise land on whichever Begin touches each page
// first. make has already zeroed memory the heap reused, so clearing the
// whole chunk again (as this did before) would only double the
// prefetcher's work on the second core.
func faultIn(recs []Record) []Record {
	for i := 0; i < len(recs); i += int(pageRecords) {
		recs[i].state.Store(0)
	}
	recs[len(recs)-1].state.Store(0)
	return recs
}
