package event

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Kind says what a Record describes.
type Kind uint8

const (
	// KindSpan is a host annotation span: it begins and ends on the host
	// timeline, belongs to a lane and may have a parent span.
	KindSpan Kind = iota + 1
	// KindInstant is a point in time on the lane of its enclosing span, or on
	// the process track when it has none.
	KindInstant
	// KindCounter is one sample of a named numeric series. Name is the series,
	// Args[0] holds the sample (Key = unit, Kind = ArgFloat).
	KindCounter
	// KindActivity is a complete event on a registered Track (device
	// activity such as a kernel or a copy): start and end are known when it
	// is written. Its Lane field holds the Track id.
	KindActivity
	// kindArgs marks a record that only carries overflow arguments of the
	// record just before it in the same chunk.
	kindArgs
)

func (k Kind) String() string {
	switch k {
	case KindSpan:
		return "span"
	case KindInstant:
		return "instant"
	case KindCounter:
		return "counter"
	case KindActivity:
		return "activity"
	case kindArgs:
		return "args"
	}
	return "unknown"
}

// Flag bits carried by a Record.
const (
	// FlagStep marks a span as a training-loop step (a root marker that
	// exporters turn into step information; its step number is in ID2).
	FlagStep uint8 = 1 << iota
)

// ArgKind is the type of an Arg's value.
type ArgKind uint8

const (
	ArgInt      ArgKind = iota + 1 // Num holds an int64
	ArgUint                        // Num holds a uint64
	ArgFloat                       // Num holds float64 bits
	ArgBool                        // Num is 0 or 1
	ArgString                      // Str holds the value
	ArgDuration                    // Num holds a time.Duration (int64 ns)
	ArgFlow                        // Num holds a flow id linking events; not shown as an argument
)

// Arg is a typed key/value attached to an event. It is a small tagged union
// so that numbers never box and building one never allocates.
type Arg struct {
	Key  string
	Kind ArgKind
	Num  uint64
	Str  string
}

// Int returns the value of an ArgInt or ArgDuration.
func (a Arg) Int() int64 { return int64(a.Num) }

// Float returns the value of an ArgFloat.
func (a Arg) Float() float64 { return math.Float64frombits(a.Num) }

// Bool returns the value of an ArgBool.
func (a Arg) Bool() bool { return a.Num != 0 }

// Duration returns the value of an ArgDuration.
func (a Arg) Duration() time.Duration { return time.Duration(a.Num) }

// Value returns the argument's value as a Go value of its natural type
// (int64, uint64, float64, bool, string, time.Duration; a flow id is a uint64).
func (a Arg) Value() any {
	switch a.Kind {
	case ArgInt:
		return int64(a.Num)
	case ArgUint, ArgFlow:
		return a.Num
	case ArgFloat:
		return a.Float()
	case ArgBool:
		return a.Num != 0
	case ArgString:
		return a.Str
	case ArgDuration:
		return time.Duration(a.Num)
	}
	return nil
}

// InlineArgs is how many arguments a Record holds itself. Further arguments
// take continuation records right after it in the same chunk.
const InlineArgs = 2

// slotArg is an Arg as the buffer stores it: the key, and a string value,
// as ids of the buffer's string table, so that a Record holds no pointers.
type slotArg struct {
	num  uint64 // the value; for ArgString, the string's id
	key  uint32 // string id of the key
	kind ArgKind
}

// Record is one slot of the event buffer. Sources fill it through Buffer
// methods; exporters read it from a Snapshot once the session has stopped,
// asking the snapshot for its name (Snapshot.Name) and arguments
// (Snapshot.Args), which the record holds as string ids.
//
// A Record contains no pointers: the garbage collector never scans the
// buffer, and filling a record needs no write barriers. That is most of
// what makes a span cheap (see the README's Performance section).
type Record struct {
	state atomic.Uint32 // 0 = being written, 1 = committed
	Kind  Kind
	NArgs uint8 // total number of arguments, inline and overflow
	Flags uint8
	Level uint8 // annotation level the span was recorded at (1..3)

	// Lane is the lane (tree of spans under one root) for host events, or
	// the Track id for KindActivity.
	Lane uint32
	// NameID is the string id of the record's name; Snapshot.Name
	// resolves it.
	NameID uint32

	// Start is the begin time (or the only time) in session ticks; see
	// Meta.Nanos to convert.
	Start int64
	end   atomic.Int64 // end tick + 1; 0 while the span is open

	// ID identifies the record within its session (unique, non-zero).
	ID uint64
	// Parent is the ID of the enclosing span, 0 for a root.
	Parent uint64
	// ID2 is kind-specific: the step number of a FlagStep span.
	ID2 int64

	args [InlineArgs]slotArg
}

// openAtStop marks a span that was still open when its buffer was
// snapshotted, so that a late End cannot write into an exported record.
const openAtStop = math.MinInt64

// End returns the end time in ticks, or 0 if the span has not ended (see
// Ended: a span may also end at tick 0).
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

// Commit publishes a fully written record to exporters.
func (r *Record) Commit() { r.state.Store(1) }

// committed reports whether Commit was called.
func (r *Record) committed() bool { return r.state.Load() == 1 }

// SetName sets the record's name, interned in b's string table.
func (r *Record) SetName(b *Buffer, name string) { r.NameID = b.strs.id(name) }

// SetArgs copies args into the record and its reserved continuation
// records (reserved by Buffer.Reserve with SlotsFor(len(args))), interning
// keys and string values in b's string table.
func (r *Record) SetArgs(b *Buffer, args []Arg) {
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

// UniqueKeys returns args with repeated keys made unique: the second
// "k" becomes "k (2)", and so on. Formats that key arguments by name
// (Perfetto's arg sets, JSON objects) would otherwise lose or reject them;
// some files (JAX's) do repeat stats. It returns args itself, without
// allocating, when no key repeats.
func UniqueKeys(args []Arg) []Arg {
	dup := false
	for i := 1; i < len(args) && !dup; i++ {
		for j := 0; j < i; j++ {
			if args[i].Kind != ArgFlow && args[j].Kind != ArgFlow && args[i].Key == args[j].Key {
				dup = true
				break
			}
		}
	}
	if !dup {
		return args
	}
	out := make([]Arg, len(args))
	seen := map[string]int{}
	for i, a := range args {
		out[i] = a
		if a.Kind == ArgFlow {
			continue
		}
		seen[a.Key]++
		if n := seen[a.Key]; n > 1 {
			out[i].Key = a.Key + " (" + strconv.Itoa(n) + ")"
		}
	}
	return out
}
