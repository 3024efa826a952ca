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
	// activity such as a kernel or a copy). Its Lane is the Track's id.
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

// Flag bits a Record stores, as devprof's recorder writes them in place;
// readers ask Record.IsStep and Record.OnTrack.
const (
	// FlagStep marks a training-loop step span.
	FlagStep uint8 = 1 << 0
	// FlagOnTrack marks a span or instant on a registered Track.
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

// Record is one event of a Snapshot: a span, an instant, a counter sample
// or a piece of device activity. Its methods are the facts to read, as
// golang.org/x/exp/trace's Event offers them; a Snapshot resolves its name
// (Snapshot.Name), arguments (Snapshot.Args) and end (Snapshot.EndOf),
// which the record holds as string ids and an atomic word.
//
// A Record contains no pointers: the garbage collector never scans a
// session's records. The recorder writes them in place (its own record
// type has this exact layout, a test holds the two together), so a
// session's snapshot costs no copy.
type Record struct {
	state atomic.Uint32 // 0 = being written, 1 = committed
	kind  Kind
	nargs uint8 // arguments, inline and in continuation records
	flags uint8 // FlagStep, FlagOnTrack
	level uint8 // annotation level a span was recorded at (1..3)

	// lane is the lane (tree of spans under one root) of host events, or
	// the Track id of KindActivity records and FlagOnTrack events.
	lane   uint32
	nameID uint32 // string id of the name

	start int64        // begin time, ns on the snapshot's monotonic timeline
	end   atomic.Int64 // end time + 1; 0 while the span is open

	id     uint64 // unique, non-zero within its snapshot
	parent uint64 // ID of the enclosing span, 0 for a root
	// id2 is kind-specific: the step number of a FlagStep span, the
	// ActivityKind of a KindActivity record (see Record.Activity).
	id2 int64

	args [inlineArgs]storedArg
}

// Kind says what the record is.
func (r *Record) Kind() Kind { return r.kind }

// Start returns the begin time (or the only time, for an instant or a
// counter sample) in nanoseconds on the snapshot's monotonic timeline
// (Meta.Start.Mono is the session's start).
func (r *Record) Start() int64 { return r.start }

// ID identifies the record within its snapshot: unique and non-zero.
func (r *Record) ID() uint64 { return r.id }

// Parent returns the ID of the enclosing span, or 0 for a root.
func (r *Record) Parent() uint64 { return r.parent }

// Level returns the annotation level a span was recorded at (1..3; see
// annotate.Level), or 0 where the source has no levels.
func (r *Record) Level() uint8 { return r.level }

// Lane returns the lane of a host span or instant (the tree of spans under
// one root, which the exporters lay out as one thread), or, for device
// activity (KindActivity) and events on a track (OnTrack), the id of its
// Track in Snapshot.Tracks.
func (r *Record) Lane() uint32 { return r.lane }

// OnTrack reports whether a span or instant belongs to a registered Track
// (Lane is its id) rather than to a lane of its own: spans read from a
// file keep the thread they were recorded on.
func (r *Record) OnTrack() bool { return r.flags&FlagOnTrack != 0 }

// IsStep reports whether the span marks a training-loop step
// (annotate.Step, a TensorFlow/JAX step marker, PyTorch's ProfilerStep#N).
func (r *Record) IsStep() bool { return r.flags&FlagStep != 0 }

// StepNum returns a step span's step number, or 0 for any other record.
func (r *Record) StepNum() int64 {
	if r.flags&FlagStep == 0 {
		return 0
	}
	return r.id2
}

// NameID returns the string id of the record's name, for writers that
// intern names themselves; Snapshot.Name resolves it.
func (r *Record) NameID() uint32 { return r.nameID }

// NArgs returns how many arguments the record has (Snapshot.Args lists
// them).
func (r *Record) NArgs() int { return int(r.nargs) }

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
