package tables

import (
	"cmp"
	"slices"

	"github.com/devprof/devprof/event"
)

// The tables read device work as devprof analyze does, so that the named
// queries over them reproduce its figures: which tracks are a device's
// streams is event.StreamOf; what an event on a stream is, and which
// events there are not work at all, is event.WorkKind and the annotation rule
// below. A Chrome file keeps a stream's work as a thread's slices with
// no kind (Kineto's and JAX's category is not in the model): those
// become rows of kernels, of the kind their name and arguments say, but
// for a profiler's annotated ranges, which stay rows of spans.

// correlationOf returns what ties device work to the host call that
// launched it: its first flow id, else a numeric "correlation" or
// "correlation_id" argument (Kineto's, TSL's); linked is false when
// there is neither.
func correlationOf(args []event.Arg) (id int64, linked bool) {
	for i := range args {
		a := &args[i]
		switch {
		case a.Kind == event.ArgFlow:
			return int64(a.Num), true
		case !linked && (a.Key == "correlation" || a.Key == "correlation_id") && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			id, linked = int64(a.Num), true
		}
	}
	return id, linked
}

// mayAnnotate reports whether a span on a device's stream may be a range
// a profiler annotated there rather than work: Kineto's
// gpu_user_annotation (record_function ranges) sits on the stream beside
// the kernels, and the Chrome format keeps no category to tell them
// apart. Such a range has no launch and reads as a kernel (not a
// collective); it is one when it encloses the next work on its stream
// (by start), since a stream runs its work one piece after another and a
// kernel always has its launch's correlation.
func mayAnnotate(name string, args []event.Arg) bool {
	if k, _ := event.WorkKind(event.ActivityUnknown, name, args); k != event.ActivityKernel {
		return false
	}
	if _, linked := correlationOf(args); linked {
		return false
	}
	return !event.IsCollective(name)
}

// encloses reports whether work that began at start and ended at end
// encloses the next work on its stream: the annotation rule.
func encloses(end int64, nextStart, nextEnd int64) bool {
	return nextStart < end && nextEnd <= end
}

// streamOp is one piece of work on a stream, for the annotation rule
// over a stream whose events did not come in start order.
type streamOp struct {
	id         uint64
	start, end int64
	candidate  bool // a span that mayAnnotate
}

// annotations adds to set the ids of the ops (one stream's work, in the
// order it came) that are annotated ranges: in start order (ties in the
// order they came), each candidate that encloses the next.
func annotations(ops []streamOp, set map[uint64]bool) {
	slices.SortStableFunc(ops, func(x, y streamOp) int { return cmp.Compare(x.start, y.start) })
	for i := 0; i+1 < len(ops); i++ {
		if ops[i].candidate && encloses(ops[i].end, ops[i+1].start, ops[i+1].end) {
			set[ops[i].id] = true
		}
	}
}
