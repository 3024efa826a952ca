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
	// KindCounter is one sample of a named numeric series; Snapshot.Counter
	// returns its unit and value.
	KindCounter
	// KindActivity is a complete event on a registered Track (device
	// activity such as a kernel or a copy). Its Lane field holds the Track
	// id.
	KindActivity
	// kindArgs marks a stored record that only carries overflow arguments
	// of the record just before it. Snapshots never list one.
	kindArgs
)

// String returns the kind's name ("span", "instant", ...).
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
	FlagStep uint8 = 1 << 0
	// FlagOnTrack marks a span or instant that belongs to a registered
	// Track (its Lane holds the track id) rather than to a lane of its
	// own: spans read from a file keep the thread they were recorded on.
	FlagOnTrack uint8 = 1 << 1
)

// ArgKind is the type of an Arg's value.
type ArgKind uint8

// The kinds of argument values.
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

// inlineArgs is how many arguments a Record holds itself; further
// arguments take continuation records right after it in the same segment.
const inlineArgs = 2

// storedArg is an Arg as a Record stores it: the key, and a string value,
// as ids of the snapshot's string table, so that a Record holds no
// pointers.
type storedArg struct {
	num  uint64 // the value; for ArgString, the string's id
	key  uint32 // string id of the key
	kind ArgKind
}

// Record is one event of a Snapshot. Its exported fields are facts to
// read; a Snapshot resolves its name (Snapshot.Name), arguments
// (Snapshot.Args) and end (Snapshot.EndOf), which the record holds as
// string ids and an atomic word.
//
// A Record contains no pointers: the garbage collector never scans a
// session's records. The recorder writes them in place (its own record
// type has this exact layout, a test holds the two together), so a
// session's snapshot costs no copy.
type Record struct {
	state atomic.Uint32 // 0 = being written, 1 = committed
	// Kind says what the record is.
	Kind Kind
	// NArgs is the number of arguments, inline and overflow.
	NArgs uint8
	// Flags holds FlagStep and FlagOnTrack.
	Flags uint8
	// Level is the annotation level a span was recorded at (1..3).
	Level uint8

	// Lane is the lane (tree of spans under one root) of host events, or
	// the Track id of KindActivity records and FlagOnTrack events.
	Lane uint32
	// NameID is the string id of the record's name; Snapshot.Name
	// resolves it.
	NameID uint32

	// Start is the begin time (or the only time) in nanoseconds on the
	// snapshot's monotonic timeline (Meta.Start.Mono is the session start).
	Start int64
	end   atomic.Int64 // end time + 1; 0 while the span is open

	// ID identifies the record within its snapshot (unique, non-zero).
	ID uint64
	// Parent is the ID of the enclosing span, 0 for a root.
	Parent uint64
	// ID2 is kind-specific: the step number of a FlagStep span, the
	// ActivityKind of a KindActivity record (see Record.Activity).
	ID2 int64

	args [inlineArgs]storedArg
}

// openAtStop marks a span that was still open when its session stopped.
const openAtStop = math.MinInt64

// End returns the end time, or 0 if the span did not end before the
// snapshot was taken (see Ended: a span may also end at time 0).
func (r *Record) End() int64 {
	if e := r.end.Load(); e != 0 && e != openAtStop {
		return e - 1
	}
	return 0
}

// Ended reports whether the span ended before the snapshot was taken.
func (r *Record) Ended() bool {
	e := r.end.Load()
	return e != 0 && e != openAtStop
}

// setEnd records the end time; only the first call has an effect.
func (r *Record) setEnd(t int64) { r.end.CompareAndSwap(0, t+1) }

// committed reports whether the record was fully written.
func (r *Record) committed() bool { return r.state.Load() == 1 }

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
