package devmem

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// While a session records, every allocation and free the table records is
// also an event of the session's trace (event/memory.go): an ActivityAlloc
// or ActivityFree instant on the TrackMemory track of its device, with the
// buffer's address, size, kind, tags, span, API and step, and the bytes
// the device holds after it and the most it held.
//
// Ordering. The table takes each event's time under its lock, later than
// the time of the event before it (recorder.Mono, raised by a nanosecond
// where the clock has not moved), and writes the record after the lock is
// released. Records of one address can then reach the buffer out of order
// (a goroutine preempted between the two steps), but never out of time
// order: the trace's order is its times, and those follow the table's.
// Writing under the lock would not order the buffer either (each P fills
// its own chunk), and would hold every allocating thread for the cost of
// the record.
//
// Costs. A session's events take the string ids of strings the table
// already interned (kinds, spans, joined tags) and the API's constant
// names, so the recorder's string cache answers them without its lock;
// the track of a device is registered once per session. With no session
// the table counts the device's bytes and nothing more.

// traceEvent is one event to write, taken under the table's lock.
type traceEvent struct {
	buf   *recorder.Buffer
	track uint32
	kind  event.ActivityKind
	t     int64 // monotonic nanoseconds
	addr  uint64
	bytes uint64
	inUse uint64
	peak  uint64
	step  int64 // -1: none
	// carried marks the allocation of a buffer live before the session
	// (carryLive).
	carried bool
	mkind   string
	tags    string
	span    string
	api     string
}

// traceEvents are the events of one call: at most an allocation and the
// free of the buffer it replaced, after, for a session's first event, the
// buffers live before it (carryLive).
type traceEvents struct {
	carried []traceEvent
	n       int
	ev      [2]traceEvent
}

func (o *traceEvents) add(e traceEvent) {
	if o.n < len(o.ev) {
		o.ev[o.n] = e
		o.n++
	}
}

// write writes the events into their session's buffer, outside the
// table's lock. A full buffer drops them, counted by the recorder.
func (o *traceEvents) write() {
	for i := range o.carried {
		o.carried[i].write()
	}
	for i := range o.n {
		o.ev[i].write()
	}
}

// traceEvent makes the event of an allocation or free of e at addr on a
// device whose usage is now u, timed after every event before it. Called
// with mu held.
func (t *table) traceEvent(buf *recorder.Buffer, kind event.ActivityKind, addr uint64, e *entry, u *deviceUsage) traceEvent {
	now := recorder.Mono()
	if now <= t.lastEvent {
		now = t.lastEvent + 1
	}
	t.lastEvent = now
	return traceEvent{
		buf:   buf,
		track: t.trackOf(buf, e.device),
		kind:  kind,
		t:     now,
		addr:  addr,
		bytes: e.bytes,
		inUse: u.inUse,
		peak:  u.peak,
		step:  e.step,
		mkind: e.kind,
		tags:  e.joined,
		span:  e.span,
		api:   e.api,
	}
}

// maxCarried bounds the buffers carryLive writes into a session: the
// largest, when more are live. The others' bytes stay the timeline's
// MemoryUnseen, as the events a full trace buffer drops do.
const maxCarried = 1 << 16

// carryLive adds to out, at the first event of buf's session, an
// allocation event (event.ArgCarried) for each buffer live before it, so
// that the session's memory timelines split the memory allocated before
// the trace by its tags like the rest, rather than as one MemoryUnseen
// series, and its later frees take it away. Their ArgInUse rise from what
// no carried buffer explains to what the device holds, as if allocated
// then. Called with mu held.
func (t *table) carryLive(buf *recorder.Buffer, out *traceEvents) {
	if t.carried && t.carriedEpoch == buf.Epoch() {
		return
	}
	t.carried, t.carriedEpoch = true, buf.Epoch()
	if t.nlive == 0 {
		return
	}
	type live struct {
		src  source
		addr uint64
		e    entry
	}
	var all []live
	for i := range t.entries {
		if e := &t.entries[i]; e.bytes != 0 {
			all = append(all, live{e.src, e.addr, *e})
		}
	}
	// Largest first, then by address: a deterministic choice past the
	// bound, and the order their events replay in.
	slices.SortFunc(all, func(a, b live) int {
		return cmp.Or(cmp.Compare(b.e.bytes, a.e.bytes), cmp.Compare(a.src, b.src), cmp.Compare(a.addr, b.addr))
	})
	all = all[:min(len(all), maxCarried)]
	carriedOn := map[int32]uint64{}
	for _, l := range all {
		carriedOn[l.e.device] += l.e.bytes
	}
	inUse := map[int32]uint64{}
	for d, n := range carriedOn {
		u := t.usageOf(d)
		inUse[d] = u.inUse - min(n, u.inUse)
	}
	out.carried = make([]traceEvent, 0, len(all))
	for i := range all {
		l := &all[i]
		u := t.usageOf(l.e.device)
		inUse[l.e.device] += l.e.bytes
		at := deviceUsage{inUse: min(inUse[l.e.device], u.inUse), peak: u.peak}
		ev := t.traceEvent(buf, event.ActivityAlloc, l.addr, &l.e, &at)
		ev.carried = true
		out.carried = append(out.carried, ev)
	}
}

// trackOf returns the memory track of device in buf's session, registering
// it on first use. Called with mu held; the cache is keyed by the
// session's epoch, so that it does not keep a stopped session's buffer
// alive.
func (t *table) trackOf(buf *recorder.Buffer, device int32) uint32 {
	if t.traceEpoch != buf.Epoch() || t.traceTracks == nil {
		t.traceEpoch, t.traceTracks = buf.Epoch(), map[int32]uint32{}
	}
	if id, ok := t.traceTracks[device]; ok {
		return id
	}
	id := buf.FindTrack(event.TrackMemory, int(device), 0)
	if id == 0 {
		id = buf.AddTrack(event.Track{Kind: event.TrackMemory, Device: int(device), Name: trackName(int(device))})
	}
	t.traceTracks[device] = id
	return id
}

// trackName is the name of the trace track that holds a device's
// allocations and frees: "GPU 0 memory (devmem)", or for device -1 "host
// memory (devmem)".
func trackName(device int) string {
	if device < 0 {
		return "host memory (devmem)"
	}
	return "GPU " + strconv.Itoa(device) + " memory (devmem)"
}

// write records the event with the arguments of event/memory.go.
func (e *traceEvent) write() {
	var args [10]event.Arg
	args[0] = event.Arg{Key: event.ArgAddress, Kind: event.ArgUint, Num: e.addr}
	args[1] = event.Arg{Key: event.ArgBytes, Kind: event.ArgUint, Num: e.bytes}
	args[2] = event.Arg{Key: event.ArgMemoryKind, Kind: event.ArgString, Str: e.mkind}
	n := 3
	if e.tags != "" {
		args[n] = event.Arg{Key: event.ArgTags, Kind: event.ArgString, Str: e.tags}
		n++
	}
	if e.span != "" {
		args[n] = event.Arg{Key: event.ArgSpan, Kind: event.ArgString, Str: e.span}
		n++
	}
	if e.api != "" {
		args[n] = event.Arg{Key: event.ArgAPI, Kind: event.ArgString, Str: e.api}
		n++
	}
	args[n] = event.Arg{Key: event.ArgInUse, Kind: event.ArgUint, Num: e.inUse}
	args[n+1] = event.Arg{Key: event.ArgPeakInUse, Kind: event.ArgUint, Num: e.peak}
	n += 2
	if e.step >= 0 {
		args[n] = event.Arg{Key: event.ArgStep, Kind: event.ArgInt, Num: uint64(e.step)}
		n++
	}
	if e.carried {
		args[n] = event.Arg{Key: event.ArgCarried, Kind: event.ArgUint, Num: 1}
		n++
	}
	e.buf.ActivityMono(e.track, e.kind, e.kind.String(), e.t, e.t, args[:n])
}
