package event

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DeviceMemory is who holds device memory at one moment: the live buffers
// a memory tracker knows of and what it could not account for. It is the
// model memory profiles are written from (exporters/pprof) and read back
// into, as a Snapshot is for traces.
type DeviceMemory struct {
	// Time is when the buffers were listed.
	Time time.Time
	// Buffers are the live allocations, largest total first (see Sort).
	Buffers []Buffer
	// Counts are the tracker's running totals since tracking started.
	Counts MemoryCounts
	// Warnings say what the totals above may be missing (a full tracking
	// table, frees of unknown pointers), worded as in traces.
	Warnings []Warning
	// Devices is what NVML said of each device's memory when the buffers
	// were listed; empty when it could not be asked.
	Devices []DeviceUsage
}

// Arguments of the allocations and frees a memory tracker records in a
// trace: KindActivity instants (start = end) of ActivityAlloc or
// ActivityFree on a TrackMemory track, named after their kind ("alloc",
// "free"). A free carries what its allocation did (bytes, kind, tags,
// span, API, step), so the running totals of any tag can be rebuilt from
// the events alone (Snapshot.MemoryTimelines does). The events of one
// tracker have strictly increasing times in the order the tracker saw
// them, so sorting by time replays them exactly; an allocation at an
// address the tracker still held (the old buffer's free was missed) comes
// after a free of the old buffer. Exporters turn them into their formats'
// vocabulary (xprof's MemoryAllocation stats, Perfetto counter tracks).
const (
	ArgAddress = "address" // uint: the pointer or handle
	// ArgBytes (uint) is the size allocated or freed; ArgMemoryKind
	// (string) the memory's kind, as for device activity.
	ArgTags = "tags" // string: the allocation's tags joined with ","
	ArgSpan = "span" // string: the annotate span path at the allocation ("train/step/forward")
	ArgAPI  = "api"  // string: the allocating entry point ("cudaMalloc"); absent for the explicit API
	// ArgInUse (uint) is the bytes the tracker holds on the track's device
	// just after the event; ArgPeakInUse (uint) the most it held there
	// since tracking started. Recorded by the tracker, they are exact even
	// where the trace lost events.
	ArgInUse     = "bytes_in_use"
	ArgPeakInUse = "peak_bytes_in_use"
	// ArgStep (int) is the number of the annotate.Step the allocation was
	// made in, when its context had one (on a free too: a free has no
	// context of its own).
	ArgStep = "step"
	// ArgCarried (uint 1) marks the allocation of a buffer that was live
	// before the trace began: a tracker writes one at its first event in
	// a trace for each buffer it held then (with its tags, span and
	// step, at that time, not when it was allocated), so that memory over
	// time is split by tags from the start and their frees are matched.
	ArgCarried = "carried"
)

// DeviceUsage is what the device itself (NVML) says of its memory when a
// profile was taken: what a tracker cannot see (the CUDA context, library
// workspaces, a caching allocator's slack) is the difference.
type DeviceUsage struct {
	Device int    // CUDA ordinal
	Total  uint64 // device memory size
	Used   uint64 // in use on the device, by every process
	// Process is what this process holds there, when the driver says
	// (0: unknown).
	Process uint64
}

// MemoryCounts are a memory tracker's running totals. Only Untracked and
// the anomalies make a profile incomplete; they are counted, never fatal.
type MemoryCounts struct {
	Allocs, Frees uint64 // allocations and frees recorded
	// Untracked counts allocations the tracking table had no room for;
	// their bytes are not in any profile (UntrackedBytes).
	Untracked, UntrackedBytes uint64
	// UnknownFrees are frees of a pointer the table never held (allocated
	// before tracking started, or one of the Untracked); DoubleFrees those
	// of a pointer freed before; ZeroSize allocations of zero bytes (kept
	// out of the table: they hold no memory).
	UnknownFrees, DoubleFrees, ZeroSize uint64
	// Replaced counts allocations at an address the table still held as
	// live: the old buffer's free was missed (made where the tracker does
	// not see), so it was dropped from the table for the new one.
	Replaced uint64
}

// A Buffer is one live allocation, or, in a profile read back from a file,
// a group of Count equal ones (same size, stack, device, kind, tags and
// span: pprof keeps groups, not addresses).
type Buffer struct {
	Address uint64 // device pointer or handle; 0 when read from a profile
	Bytes   uint64 // size of one buffer
	Count   int    // how many buffers the entry stands for (1 when live)
	Device  int    // device ordinal; -1 for host memory or when unknown
	// DeviceName names the device when it is not a GPU Device numbers:
	// another backend's device as a JAX profile names it ("cpu:0",
	// "TFRT_CPU_0", "tpu:0"). Device is -1 then, yet the memory is that
	// device's, not host memory: JAX's CPU backend holds its arrays there.
	DeviceName string
	// Kind says what memory it is: "device", "pinned", "managed", … for
	// CUDA allocations (the names of event.ArgMemoryKind), or what the
	// caller of an explicit API said.
	Kind string
	// Source says what saw the allocation: "cuda" (CUPTI's callbacks on
	// the CUDA allocation entry points) or "api" (the explicit API).
	Source string
	// API is the allocating entry point ("cudaMalloc", "cuMemAllocAsync");
	// empty for the explicit API.
	API string
	// Stream is the CUDA stream of a stream-ordered allocation
	// (cudaMallocAsync); Correlation is CUPTI's correlation id of the
	// allocating call, the id the trace's API record and MEMORY2 record of
	// it carry. Both are 0 when unknown, and in profiles read back.
	Stream      uint64
	Correlation uint32
	// Time is when it was allocated; zero in profiles read back (pprof
	// keeps groups, not times).
	Time time.Time
	// Tags are the labels the allocation was made with; Span is the path
	// of the annotate spans open in its context, outermost first, joined
	// with "/" ("train/step/forward").
	Tags []string
	Span string
	// Stack is the Go call stack that made the allocation, innermost call
	// first, devprof's and the runtime's own frames removed.
	Stack []Frame
	// Glue is how many of Stack's innermost frames lie between the call
	// site and CUDA: the Go CUDA binding's functions and cgo's wrappers of
	// its C calls (see MarkGlue). The call site, what profiles and
	// reports name, is Stack[Glue].
	Glue int
}

// Total is the bytes the entry stands for: Bytes × Count.
func (b *Buffer) Total() uint64 { return b.Bytes * uint64(max(b.Count, 1)) }

// OnDevice reports whether the buffer holds device memory, the memory
// NVML counts as in use on its device (or a named device's, DeviceName):
// it has a device and its kind is not host memory ("pinned", "pageable",
// "host"). Device, array, managed, pool and kinds an explicit API named
// are device memory.
func (b *Buffer) OnDevice() bool {
	switch b.Kind {
	case "pinned", "pageable", "host":
		return false
	}
	return b.Device >= 0 || b.DeviceName != ""
}

// Age is how long the buffer had been alive at t.
func (b *Buffer) Age(t time.Time) time.Duration {
	if b.Time.IsZero() || t.Before(b.Time) {
		return 0
	}
	return t.Sub(b.Time)
}

// Site is the call site (SiteFrame: the innermost frame past the Glue
// ones) as "function (file:line)", or "" when the stack is empty.
func (b *Buffer) Site() string {
	if len(b.Stack) == 0 {
		return ""
	}
	return b.SiteFrame().String()
}

// A Frame is one call in an allocation's stack.
type Frame struct {
	Function string // package-qualified ("main.(*Model).Load")
	File     string
	Line     int
}

// String formats the frame as "function (file:line)".
func (f Frame) String() string {
	var sb strings.Builder
	sb.WriteString(f.Function)
	if f.File != "" {
		sb.WriteString(" (")
		sb.WriteString(f.File)
		if f.Line > 0 {
			sb.WriteByte(':')
			sb.WriteString(strconv.Itoa(f.Line))
		}
		sb.WriteByte(')')
	}
	return sb.String()
}

// Live returns the bytes and buffers the entries stand for.
func (m *DeviceMemory) Live() (bytes uint64, buffers int) {
	for i := range m.Buffers {
		bytes += m.Buffers[i].Total()
		buffers += max(m.Buffers[i].Count, 1)
	}
	return bytes, buffers
}

// Sort orders Buffers largest total first; ties by site, then address, so
// that listings are stable (and buffers equal in all three keep their
// order).
//
// A million buffers are sorted by small keys, not moved around as the
// sort compares them, and each call site is worded once per stack slice
// (buffers of one site share theirs), not at every comparison.
func (m *DeviceMemory) Sort() {
	type stackOf struct {
		first *Frame
		n     int
		glue  int
	}
	type key struct {
		total, address uint64
		site, index    int32
	}
	siteIDs := map[stackOf]int32{}
	var sites []string // by site number; "" (no stack) is number -1
	keys := make([]key, len(m.Buffers))
	for i := range m.Buffers {
		b := &m.Buffers[i]
		site := int32(-1)
		if len(b.Stack) > 0 {
			id := stackOf{&b.Stack[0], len(b.Stack), b.Glue}
			var ok bool
			if site, ok = siteIDs[id]; !ok {
				site = int32(len(sites))
				sites = append(sites, b.Site())
				siteIDs[id] = site
			}
		}
		keys[i] = key{total: b.Total(), address: b.Address, site: site, index: int32(i)}
	}
	// Sites in the order of their words; the empty one first.
	order := make([]int32, len(sites))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(sites[x], sites[y]) })
	rank := make([]int32, len(sites))
	for r, i := range order {
		if r > 0 && sites[i] == sites[order[r-1]] {
			rank[i] = rank[order[r-1]]
		} else {
			rank[i] = int32(r)
		}
	}
	siteRank := func(s int32) int32 {
		if s < 0 {
			if len(sites) > 0 && sites[order[0]] == "" {
				return rank[order[0]]
			}
			return -1
		}
		return rank[s]
	}
	for i := range keys {
		keys[i].site = siteRank(keys[i].site)
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.total != b.total:
			return cmp.Compare(b.total, a.total)
		case a.site != b.site:
			return cmp.Compare(a.site, b.site)
		case a.address != b.address:
			return cmp.Compare(a.address, b.address)
		}
		return cmp.Compare(a.index, b.index)
	})
	// Move each buffer to its place, cycle by cycle: buffer keys[j].index
	// goes to j.
	for start := range keys {
		if keys[start].index < 0 || int(keys[start].index) == start {
			continue
		}
		held := m.Buffers[start]
		j := start
		for {
			from := int(keys[j].index)
			keys[j].index = -1
			if from == start {
				m.Buffers[j] = held
				break
			}
			m.Buffers[j] = m.Buffers[from]
			j = from
		}
	}
}
