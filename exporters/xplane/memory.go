package xplane

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// A memory tracker's allocations and frees (ActivityAlloc and ActivityFree
// on TrackMemory tracks, event/memory.go) are written as xprof's
// memory_profile tool reads TSL's allocators' events: on the /host:CPU
// plane, one line per memory track named after it (every line's
// timestamp_ns is the profile start, so the raw offset_ps the tool uses
// is consistent across lines), events named MemoryAllocation and
// MemoryDeallocation with these stats:
//
//	allocator_name     the memory id the tool lists: GPU_<n>_devmem, host_devmem
//	bytes_reserved     0 (int64, as every number below)
//	bytes_allocated    the device's bytes in use after the event (ArgInUse)
//	bytes_available    the device's memory size less that, when the trace
//	                   knows the size (a device track's Caps.MemoryBytes)
//	peak_bytes_in_use  ArgPeakInUse
//	requested_bytes,
//	allocation_bytes   the buffer's size (ArgBytes)
//	addr               its address (ArgAddress)
//	tf_op              the innermost annotate span (ArgSpan), else the API
//	region_type        the tags (ArgTags), else the memory kind
//	_c, _ct            a consumer context linking it to its step (below)
//
// followed by the model's own memory_kind, tags, span and api, from which
// Read gives the events back as they were. Events read from another
// tool's file (TSL's, with its own allocator_name, tf_op, fragmentation,
// …) keep their stats as they were.
//
// Steps. The tool takes an event's step from its group_id stat, which
// xprof's own event grouping sets. A file must not carry group_id itself:
// one group_id stat anywhere on the plane makes xprof skip its grouping,
// and the overview page then finds no step at all (measured with xprof
// 2.24.2). So an event with a step (ArgStep) is linked to the span of
// that step the way TSL links work across threads: the step span is a
// producer (_p = its record ID, _pt = 0, the generic context type) and
// the event a consumer of it (_c, _ct), and xprof's grouping gives the
// event its step's group id. The step span is the one with that number
// that began last before the event (a free carries its allocation's
// step). Read drops these stats again.
const (
	MemoryAllocationName   = "MemoryAllocation"
	MemoryDeallocationName = "MemoryDeallocation"
)

// Stat names of xprof's memory_profile tool.
const (
	statAllocator      = "allocator_name"
	statBytesReserved  = "bytes_reserved"
	statBytesAllocated = "bytes_allocated"
	statBytesAvailable = "bytes_available"
	statPeakInUse      = "peak_bytes_in_use"
	statRequested      = "requested_bytes"
	statAllocation     = "allocation_bytes"
	statAddr           = "addr"
	statGroupID        = "group_id"
	statTFOp           = "tf_op"
	statRegionType     = "region_type"

	// TSL's context stats, which link events across threads for xprof's
	// grouping.
	statProducer     = "_p"
	statProducerType = "_pt"
	statConsumer     = "_c"
	statConsumerType = "_ct"
	contextGeneric   = 0 // TSL's ContextType kGeneric
)

// defaultAllocator is the memory id of a device's memory track: one per
// device, named as TSL names its allocators (GPU_0_bfc).
func defaultAllocator(device int) string {
	if device < 0 {
		return "host_devmem"
	}
	return "GPU_" + strconv.Itoa(device) + "_devmem"
}

// allocatorDevice is the device an allocator's memory is on: n for
// "GPU_<n>_…", else -1 (host memory: TSL's gpu_host_bfc, devprof's
// host_devmem).
func allocatorDevice(name string) int {
	rest, ok := strings.CutPrefix(name, "GPU_")
	if !ok {
		return -1
	}
	digits, _, _ := strings.Cut(rest, "_")
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || digits == "" || digits[0] == '+' {
		return -1
	}
	return n
}

// isMemoryEvent reports whether r is an allocation or free on a memory
// track.
func (x *writer) isMemoryEvent(r *event.Record) bool {
	if k := r.Activity(); k != event.ActivityAlloc && k != event.ActivityFree {
		return false
	}
	t, ok := x.s.TrackOf(r)
	return ok && t.Kind == event.TrackMemory
}

// memoryEvent writes an allocation or free as xprof's memory_profile reads
// it.
func (x *writer) memoryEvent(p *plane, r *event.Record) {
	name := MemoryAllocationName
	if r.Activity() == event.ActivityFree {
		name = MemoryDeallocationName
	}
	p.event(name, x.rel(r.Start()), 0, func(p *plane) { x.memoryStats(p, r) })
}

// memoryStats writes the stats of a memory event: xprof's, derived from
// the model's arguments unless the event carries an xprof stat of that
// name itself (read from another tool's file), then the model's, then any
// other argument.
func (x *writer) memoryStats(p *plane, r *event.Record) {
	x.argBuf = x.s.AppendArgs(x.argBuf[:0], r)
	var addr, bytes, inUse, peak uint64
	var mkind, tags, span, api string
	var given [len(givenStats)]event.Arg // xprof's stats the event carries itself
	extra := x.extraBuf[:0]
	for _, a := range x.argBuf {
		switch a.Key {
		case event.ArgAddress:
			addr = a.Num
		case event.ArgBytes:
			bytes = a.Num
		case event.ArgInUse:
			inUse = a.Num
		case event.ArgPeakInUse:
			peak = a.Num
		case event.ArgStep:
			// A context link to its step's span instead (linkSteps).
		case event.ArgMemoryKind:
			mkind = a.Str
		case event.ArgTags:
			tags = a.Str
		case event.ArgSpan:
			span = a.Str
		case event.ArgAPI:
			api = a.Str
		default:
			if i := givenStat(a.Key); i >= 0 {
				given[i] = a
			} else if a.Kind != event.ArgFlow {
				extra = append(extra, a)
			}
		}
	}
	x.extraBuf = extra
	track := x.s.Tracks[r.Lane()-1]
	str := func(name, v string) {
		if i := givenStat(name); i >= 0 && given[i].Key != "" {
			x.stat(p, given[i])
		} else if v != "" {
			p.statString(name, v)
		}
	}
	num := func(name string, v uint64, ok bool) {
		if i := givenStat(name); i >= 0 && given[i].Key != "" {
			x.stat(p, given[i])
		} else if ok {
			p.statInt(name, int64(min(v, 1<<63-1)))
		}
	}
	str(statAllocator, defaultAllocator(track.Device))
	num(statBytesReserved, 0, true)
	num(statBytesAllocated, inUse, true)
	size := x.memorySize[track.Device]
	num(statBytesAvailable, size-min(inUse, size), size > 0)
	num(statPeakInUse, peak, true)
	num(statRequested, bytes, true)
	num(statAllocation, bytes, true)
	num(statAddr, addr, true)
	if id := x.memStep[r.ID()]; id != 0 {
		p.statUint(statConsumer, id)
		p.statInt(statConsumerType, contextGeneric)
	}
	op := api
	if span != "" {
		op = span[strings.LastIndexByte(span, '/')+1:]
	}
	str(statTFOp, op)
	str(statRegionType, cmpOr(tags, mkind))
	for _, kv := range [][2]string{{event.ArgMemoryKind, mkind}, {event.ArgTags, tags}, {event.ArgSpan, span}, {event.ArgAPI, api}} {
		if kv[1] != "" {
			p.statString(kv[0], kv[1])
		}
	}
	for _, a := range extra {
		x.stat(p, a)
	}
}

// givenStats are xprof's memory stats that are not the model's arguments
// under another name: an event read from another tool's file keeps its
// own.
var givenStats = [...]string{statAllocator, statBytesReserved, statBytesAvailable, statRequested, statTFOp, statRegionType}

// givenStat returns the index of name in givenStats, or -1.
func givenStat(name string) int {
	for i, n := range givenStats {
		if n == name {
			return i
		}
	}
	return -1
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stat writes one argument as a stat of its own kind.
func (x *writer) stat(p *plane, a event.Arg) {
	switch a.Kind {
	case event.ArgInt, event.ArgBool:
		p.statInt(a.Key, int64(a.Num))
	case event.ArgUint:
		p.statUint(a.Key, a.Num)
	case event.ArgFloat:
		p.statDouble(a.Key, a.Float())
	case event.ArgString:
		p.statString(a.Key, a.Str)
	case event.ArgDuration:
		p.statString(a.Key, a.Duration().String())
	}
}

// linkSteps finds, for every memory event with a step, the span of that
// step (see Steps above): memStep maps the event's ID to the span's, and
// producers holds the spans so linked.
//
// memory holds the snapshot's memory events in Events order. Those with
// a step are found first: a trace without any (a session that tracked no
// memory) builds no index of its steps, which for a training loop of 1 M
// spans was 100 k small slices, a quarter of the writer's time.
func (x *writer) linkSteps(memory []*event.Record) {
	type stepOf struct {
		r    *event.Record
		step int64
	}
	var want []stepOf // memory events with a step, in Events order
	for _, r := range memory {
		x.argBuf = x.s.AppendArgs(x.argBuf[:0], r)
		for _, a := range x.argBuf {
			if a.Key == event.ArgStep && (a.Kind == event.ArgInt || a.Kind == event.ArgUint) {
				want = append(want, stepOf{r, int64(a.Num)})
				break
			}
		}
	}
	if len(want) == 0 {
		return
	}
	steps := map[int64][]*event.Record{} // step number -> its spans, by start
	for _, r := range x.s.Events {
		if r.Kind() == event.KindSpan && r.IsStep() {
			steps[r.StepNum()] = append(steps[r.StepNum()], r)
		}
	}
	for _, spans := range steps {
		slices.SortStableFunc(spans, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	}
	for _, w := range want {
		spans := steps[w.step]
		if len(spans) == 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(spans, w.r.Start()+1, func(s *event.Record, t int64) int { return cmp.Compare(s.Start(), t) })
		sp := spans[max(i-1, 0)]
		if x.memStep == nil {
			x.memStep, x.producers = map[uint64]uint64{}, map[uint64]bool{}
		}
		x.memStep[w.r.ID()] = sp.ID()
		x.producers[sp.ID()] = true
	}
}

// memorySizes returns each device's memory size, from the capabilities of
// its tracks.
func memorySizes(s *event.Snapshot) map[int]uint64 {
	sizes := map[int]uint64{}
	for _, t := range s.Tracks {
		if (t.Kind == event.TrackDevice || t.Kind == event.TrackDeviceStream) && t.Caps.MemoryBytes > 0 && sizes[t.Device] == 0 {
			sizes[t.Device] = t.Caps.MemoryBytes
		}
	}
	return sizes
}

// memoryEvent takes a MemoryAllocation or MemoryDeallocation event of host
// track from into the memory track of its allocator, as an allocation or
// free with the model's arguments.
func (r *reader) memoryEvent(from *trackData, name string, t int64, args []event.Arg) {
	allocator := ""
	for _, a := range args {
		if a.Key == statAllocator && a.Kind == event.ArgString {
			allocator = a.Str
		}
	}
	td := r.memory[allocator]
	if td == nil {
		td = &trackData{memory: true, allocator: allocator,
			track: event.Track{Kind: event.TrackMemory, Device: allocatorDevice(allocator)}}
		r.memory[allocator] = td
		r.tracks = append(r.tracks, td)
	}
	if !slices.Contains(td.from, from) {
		td.from = append(td.from, from)
	}
	from.diverted++
	ev := pending{name: event.ActivityAlloc.String(), kind: event.ActivityAlloc, start: t, end: t}
	if name == MemoryDeallocationName {
		ev.name, ev.kind = event.ActivityFree.String(), event.ActivityFree
	}
	ev.args.start = len(td.args)
	td.args = memoryArgs(td.args, args, td.track.Device)
	ev.args.end = len(td.args)
	if !slices.ContainsFunc(td.argsOf(&ev), func(a event.Arg) bool { return a.Key == statConsumer }) {
		ev.consumer = consumerOf(args) // devprof's link to its step, dropped from the arguments
	}
	td.events = append(td.events, ev)
}

// consumerOf returns the consumer id (_c) of generic context in args, or 0.
func consumerOf(args []event.Arg) uint64 {
	var id uint64
	generic := false
	for _, a := range args {
		switch {
		case a.Key == statConsumer && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			id = a.Num
		case a.Key == statConsumerType && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			generic = a.Num == contextGeneric
		}
	}
	if !generic {
		return 0
	}
	return id
}

// noteProducer notes the producer id (_p, generic context) of a step
// event with number step.
func (r *reader) noteProducer(args []event.Arg, step int64) {
	var id uint64
	generic := false
	for _, a := range args {
		switch {
		case a.Key == statProducer && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			id = a.Num
		case a.Key == statProducerType && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			generic = a.Num == contextGeneric
		}
	}
	if id != 0 && generic {
		if r.producers == nil {
			r.producers = map[uint64]int64{}
		}
		r.producers[id] = step
	}
}

// dropProducer returns a step span's arguments without the producer
// stats a memory event's link added (into scratch space).
func (r *reader) dropProducer(args []event.Arg) []event.Arg {
	linked := false
	for _, a := range args {
		if a.Key == statProducer && r.consumed[a.Num] {
			linked = true
		}
	}
	if !linked {
		return args
	}
	out := r.devArgs[:0]
	for _, a := range args {
		if a.Key != statProducer && a.Key != statProducerType {
			out = append(out, a)
		}
	}
	r.devArgs = out
	return out
}

// nameMemoryTracks names each memory track after the line it came from
// when that line held its events alone (as devprof writes them), else
// after its allocator (TSL's events share their thread's line).
func (r *reader) nameMemoryTracks() {
	for _, td := range r.tracks {
		if !td.memory {
			continue
		}
		for i := range td.events {
			if c := td.events[i].consumer; c != 0 {
				if _, ok := r.producers[c]; ok {
					if r.consumed == nil {
						r.consumed = map[uint64]bool{}
					}
					r.consumed[c] = true
				}
			}
		}
		switch {
		case len(td.from) == 1 && len(td.from[0].events) == 0:
			td.track.Name = td.from[0].track.Name
		case td.allocator != "":
			td.track.Name = td.allocator
		default:
			td.track.Name = "memory"
		}
	}
}

// memoryArgs appends to dst the model's arguments of a memory event
// (event/memory.go) made from xprof's stats, in the order a tracker writes
// them, then the event's other stats. devprof's own events (those with a
// memory_kind stat) leave out the stats the writer derives.
func memoryArgs(dst, args []event.Arg, device int) []event.Arg {
	find := func(key string) (event.Arg, bool) {
		for _, a := range args {
			if a.Key == key {
				return a, true
			}
		}
		return event.Arg{}, false
	}
	_, neutral := find(event.ArgMemoryKind)
	var used [16]string // keys turned into the model's arguments
	nused := 0
	out := dst
	number := func(stat, key string, kind event.ArgKind) uint64 {
		a, ok := find(stat)
		if !ok || (a.Kind != event.ArgInt && a.Kind != event.ArgUint) {
			return 0
		}
		out = append(out, event.Arg{Key: key, Kind: kind, Num: a.Num})
		used[nused] = stat
		nused++
		return a.Num
	}
	text := func(key string) {
		if a, ok := find(key); ok && a.Kind == event.ArgString {
			out = append(out, a)
			used[nused] = key
			nused++
		}
	}
	number(statAddr, event.ArgAddress, event.ArgUint)
	bytes := number(statAllocation, event.ArgBytes, event.ArgUint)
	text(event.ArgMemoryKind)
	text(event.ArgTags)
	text(event.ArgSpan)
	text(event.ArgAPI)
	number(statBytesAllocated, event.ArgInUse, event.ArgUint)
	number(statPeakInUse, event.ArgPeakInUse, event.ArgUint)
	number(statGroupID, event.ArgStep, event.ArgInt)
	for _, a := range args {
		if slices.Contains(used[:nused], a.Key) {
			continue
		}
		if neutral {
			switch {
			case a.Key == statTFOp, a.Key == statRegionType, a.Key == statBytesAvailable,
				a.Key == statConsumer, a.Key == statConsumerType,
				a.Key == statBytesReserved && a.Num == 0,
				a.Key == statRequested && a.Num == bytes,
				a.Key == statAllocator && a.Str == defaultAllocator(device):
				continue
			}
		}
		out = append(out, a)
	}
	return out
}
