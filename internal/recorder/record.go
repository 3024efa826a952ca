package recorder

import (
	"sync/atomic"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// FlagMonoTime marks a record whose times are monotonic nanoseconds
// already, not ticks: a device source that converts its own clock writes
// them, and Snapshot leaves their times as they are (and clears the bit).
const FlagMonoTime uint8 = 1 << 7

// InlineArgs is how many arguments a Record holds itself. Further arguments
// take continuation records right after it in the same chunk.
const InlineArgs = 2

// slotArg is an Arg as the buffer stores it: the key, and a string value,
// as ids of the buffer's string table, so that a Record holds no pointers.
// It has the layout of the model's stored argument.
type slotArg struct {
	num  uint64 // the value; for ArgString, the string's id
	key  uint32 // string id of the key
	kind event.ArgKind
}

// Record is one slot of the buffer, as the recorder writes it. It has
// exactly the layout of event.Record (TestRecordLayoutMatchesModel holds
// the two together), so that a snapshot hands the chunks to the event
// model as they are: the model reads what the recorder wrote, without a
// copy, and its API has no way to write.
type Record struct {
	state atomic.Uint32 // 0 = being written, 1 = committed
	Kind  event.Kind
	NArgs uint8 // total number of arguments, inline and overflow
	Flags uint8
	Level uint8 // annotation level the span was recorded at (1..3)

	// Lane is the lane (tree of spans under one root) for host events, or
	// the Track id for KindActivity.
	Lane uint32
	// NameID is the string id of the record's name.
	NameID uint32

	// Start is the begin time (or the only time) in ticks.
	Start int64
	end   atomic.Int64 // end tick + 1; -ID while the span is open (see EndSpan)

	ID     uint64 // unique, non-zero within the session
	Parent uint64 // ID of the enclosing span, 0 for a root
	ID2    int64  // the step number of a FlagStep span, the event.ActivityKind of an activity

	args [InlineArgs]slotArg
}

// kindArgs is the model's kind for a record that only carries overflow
// arguments of the record just before it in the same chunk.
const kindArgs = event.KindActivity + 1

// openAtStop marks a span that was still open when its buffer was
// snapshotted, so that a late End cannot write into an exported record.
// The model reads the same value. (While recording, an open span's end
// word holds -ID instead: see EndSpan.)
const openAtStop = -1 << 63

// closeAtStop marks r open at stop if it is an open span, whatever an End
// racing with it does: it is the snapshot's side of EndSpan.
func (r *Record) closeAtStop() {
	for {
		e := r.end.Load()
		if e > 0 || e == openAtStop || r.end.CompareAndSwap(e, openAtStop) {
			return
		}
	}
}

// End returns the end time in ticks, or 0 if the span has not ended.
func (r *Record) End() int64 {
	if e := r.end.Load(); e > 0 {
		return e - 1
	}
	return 0
}

// Ended reports whether the span has ended (before the snapshot).
func (r *Record) Ended() bool { return r.end.Load() > 0 }

// EndSpan records the end time of the span whose end token is tok
// (SpanContext.EndToken); only the first call has an effect, so a span
// ended twice keeps its first end.
//
// A span's end word holds -ID while the span is open (setOpen), and End
// writes the end only over exactly that. In a flight recorder (the token's
// top bit), chunks are recycled: the record may by now hold a later event,
// which an End of the old span must leave alone, so there the check and
// the store are one compare-and-swap. In a plain buffer nothing is
// recycled, and End is a load and a plain store, made inside a pinned
// section: Snapshot waits for every P to leave its pinned section after
// it closes open spans (quiesce), so an End racing with Stop is either
// seen whole or not at all. (endPlain is in publish_*.go.)
func (r *Record) EndSpan(tok uint64, t int64) {
	if tok&ringToken != 0 {
		r.end.CompareAndSwap(-int64(tok&^ringToken), t+1)
		return
	}
	r.endPlain(-int64(tok), t+1)
}

// ringToken marks the end token of a span in a flight recorder.
const ringToken = 1 << 63

// committed reports whether the record was published.
func (r *Record) committed() bool { return r.state.Load() == 1 }

// setMore stores args (all of the event's, as slotArgs) in r and the
// continuation records after it, which pin reserved with it
// (SlotsFor(len(args)) in all), and publishes the continuation records.
// id is r's ID.
func (r *Record) setMore(id uint64, args []slotArg) {
	r.args = [InlineArgs]slotArg{args[0], args[1]}
	rest := args[InlineArgs:]
	for c := r; len(rest) > 0; {
		c = c.next() // only while arguments are left: the last record may end its chunk
		id++
		c.setID(id)
		c.Kind = kindArgs
		c.Flags, c.Level, c.Lane, c.NameID, c.Parent, c.ID2, c.Start = 0, 0, 0, 0, 0, 0, 0
		k := min(len(rest), InlineArgs)
		c.args = [InlineArgs]slotArg{}
		copy(c.args[:], rest[:k])
		c.NArgs = uint8(k)
		rest = rest[k:]
		c.publish()
	}
}

// next returns the record that follows r in its chunk. Only valid for
// records reserved together by one Buffer.Reserve call.
func (r *Record) next() *Record {
	return (*Record)(unsafe.Add(unsafe.Pointer(r), unsafe.Sizeof(Record{})))
}

// model returns r as the event model sees it.
func (r *Record) model() *event.Record { return (*event.Record)(unsafe.Pointer(r)) }

// SlotsFor returns how many records an event with n arguments occupies.
func SlotsFor(n int) int {
	if n > 255 {
		n = 255
	}
	if n <= InlineArgs {
		return 1
	}
	return 1 + (n-InlineArgs+InlineArgs-1)/InlineArgs
}
