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
	end   atomic.Int64 // end tick + 1; 0 while the span is open

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
// The model reads the same value.
const openAtStop = -1 << 63

// End returns the end time in ticks, or 0 if the span has not ended.
func (r *Record) End() int64 {
	if e := r.end.Load(); e != 0 && e != openAtStop {
		return e - 1
	}
	return 0
}

// Ended reports whether SetEnd was called (before the snapshot).
func (r *Record) Ended() bool {
	e := r.end.Load()
	return e != 0 && e != openAtStop
}

// SetEnd records the end time; only the first call has an effect, so a
// span ended twice keeps its first end.
func (r *Record) SetEnd(t int64) { r.end.CompareAndSwap(0, t+1) }

// Commit publishes a fully written record to the snapshot.
func (r *Record) Commit() { r.state.Store(1) }

// committed reports whether Commit was called.
func (r *Record) committed() bool { return r.state.Load() == 1 }

// SetName sets the record's name, interned in b's string table.
func (r *Record) SetName(b *Buffer, name string) { r.NameID = b.strs.id(name) }

// SetArgs copies args into the record and its reserved continuation
// records (reserved by Buffer.Reserve with SlotsFor(len(args))), interning
// keys and string values in b's string table.
func (r *Record) SetArgs(b *Buffer, args []event.Arg) {
	n := len(args)
	if n > 255 {
		n = 255
	}
	r.NArgs = uint8(n)
	k := min(n, InlineArgs)
	for i := 0; i < k; i++ {
		r.args[i] = b.strs.arg(&args[i])
	}
	if k == n {
		return
	}
	rest := args[k:n]
	for c := r; len(rest) > 0; {
		c = c.next() // only while arguments are left: the last record may end its chunk
		c.Kind = kindArgs
		k = min(len(rest), InlineArgs)
		for i := 0; i < k; i++ {
			c.args[i] = b.strs.arg(&rest[i])
		}
		c.NArgs = uint8(k)
		rest = rest[k:]
		c.Commit()
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
