package cuptisource

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/internal/recorder"
)

// VendorNVIDIA is the vendor of the devices CUPTI traces (event.Track).
const VendorNVIDIA = "NVIDIA"

// FlowBase is added to CUPTI correlation ids to make the flow ids of
// launch→device links, so that they never meet the flow ids a program takes
// from annotate.NewFlowID (which count up from 1).
const FlowBase = 1 << 62

// writer turns the records of one collection into events.
type writer struct {
	s    *Source
	buf  *recorder.Buffer
	recs []*cuptiwrap.Record // every record, in delivery order

	corrDevice *corrTable        // correlation id -> device of the work it launched
	corrAPI    *corrTable        // correlation ids of runtime and driver API calls
	ctxDevice  map[uint32]uint32 // CUDA context id -> device
	corrSpan   map[uint32]uint64 // correlation id -> external id (span ID)
	demangled  map[string]string // kernel symbol -> readable name

	streams map[streamKey]*stream
	threads map[uint32]uint32 // OS thread id -> track
	devices map[uint32]uint32 // device -> its TrackDevice track, for its counters
	memory  map[uint32]int64  // device -> bytes allocated

	args []event.Arg // scratch: the recorder copies arguments as it writes them

	events  int
	untimed int // records without timestamps, left out
	lost    int // events the buffer had no room for
}

type streamKey struct{ device, stream uint32 }

// noStream is the stream id CUPTI gives work that belongs to a whole
// context rather than a stream (a cuCtxSynchronize).
const noStream = 1<<32 - 1

type stream struct {
	track uint32
	id    uint32
	kinds []string // what ran on it, in xprof's words, first seen first
}

// newWriter returns a writer of the records in batches (kept in place: a
// collection can hold hundreds of megabytes of records).
func newWriter(s *Source, batches [][]cuptiwrap.Record) *writer {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	recs := make([]*cuptiwrap.Record, 0, n)
	lo, hi := ^uint32(0), uint32(0)
	for _, b := range batches {
		for i := range b {
			recs = append(recs, &b[i])
			if c := b[i].CorrelationID; c != 0 {
				lo, hi = min(lo, c), max(hi, c)
			}
		}
	}
	return &writer{
		s: s, buf: s.buf, recs: recs,
		corrDevice: newCorrTable(lo, hi, len(recs)),
		corrAPI:    newCorrTable(lo, hi, len(recs)),
		demangled:  map[string]string{},
		ctxDevice:  map[uint32]uint32{},
		corrSpan:   map[uint32]uint64{},
		streams:    map[streamKey]*stream{},
		threads:    map[uint32]uint32{},
		devices:    map[uint32]uint32{},
		memory:     map[uint32]int64{},
	}
}

// write writes every record and returns how many events it wrote.
func (w *writer) write() int {
	// First pass: what the records say about each other.
	for _, r := range w.recs {
		switch r.Kind {
		case cuptiwrap.KindKernel, cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer, cuptiwrap.KindMemset:
			w.corrDevice.set(r.CorrelationID, r.DeviceID)
			w.ctxDevice[r.ContextID] = r.DeviceID
		case cuptiwrap.KindMemory:
			w.ctxDevice[r.ContextID] = r.DeviceID
			if r.CorrelationID != 0 {
				w.corrDevice.set(r.CorrelationID, r.DeviceID)
			}
		case cuptiwrap.KindExternalCorrelation:
			w.corrSpan[r.CorrelationID] = r.ExternalID
		case cuptiwrap.KindRuntime, cuptiwrap.KindDriver:
			w.corrAPI.set(r.CorrelationID, 1)
		}
	}
	// A synchronization names its context only (device 0 when the
	// context did nothing else); its call links to it like a launch.
	for _, r := range w.recs {
		if r.Kind == cuptiwrap.KindSync && r.CorrelationID != 0 {
			w.corrDevice.set(r.CorrelationID, w.ctxDevice[r.ContextID])
		}
	}
	// Records in time order (ties in delivery order), so that the memory
	// counter adds up allocations and frees as they happened. Keys are
	// sorted, not the 192-byte records, and hold what they compare.
	type key struct {
		start uint64
		at    int
	}
	order := make([]key, len(w.recs))
	for i, r := range w.recs {
		order[i] = key{r.Start, i}
	}
	slices.SortFunc(order, func(a, b key) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.at, b.at)
	})
	for _, k := range order {
		r := w.recs[k.at]
		switch r.Kind {
		case cuptiwrap.KindKernel:
			w.kernel(r)
		case cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer:
			w.memcpy(r)
		case cuptiwrap.KindMemset:
			w.memset(r)
		case cuptiwrap.KindMemory:
			w.memoryOp(r)
		case cuptiwrap.KindSync:
			w.sync(r)
		case cuptiwrap.KindRuntime, cuptiwrap.KindDriver:
			w.api(r)
		case cuptiwrap.KindOverhead:
			w.overhead(r)
		}
	}
	for _, st := range w.streams {
		name := "Stream #" + strconv.FormatUint(uint64(st.id), 10)
		if st.id == noStream {
			name = "Context"
		}
		if len(st.kinds) > 0 {
			name += "(" + strings.Join(st.kinds, ",") + ")"
		}
		w.buf.SetTrackName(st.track, name)
	}
	return w.events
}

// streamTrack returns the track of a device's stream, noting that work of
// kind (xprof's name: Compute, MemcpyH2D, …) ran on it.
func (w *writer) streamTrack(device, streamID uint32, kind string) uint32 {
	k := streamKey{device, streamID}
	st := w.streams[k]
	if st == nil {
		st = &stream{id: streamID}
		st.track = w.buf.FindTrack(event.TrackDeviceStream, int(device), int64(streamID))
		if st.track == 0 {
			st.track = w.buf.AddTrack(event.Track{Kind: event.TrackDeviceStream, Device: int(device), Vendor: VendorNVIDIA, ID: int64(streamID)})
		}
		w.streams[k] = st
	}
	if !slices.Contains(st.kinds, kind) {
		st.kinds = append(st.kinds, kind)
	}
	return st.track
}

// deviceTrack returns the track of a whole device, which its counters
// belong to.
func (w *writer) deviceTrack(device uint32) uint32 {
	if t, ok := w.devices[device]; ok {
		return t
	}
	t := w.buf.FindTrack(event.TrackDevice, int(device), 0)
	if t == 0 {
		t = w.buf.AddTrack(event.Track{Kind: event.TrackDevice, Device: int(device), Vendor: VendorNVIDIA})
	}
	w.devices[device] = t
	return t
}

// threadTrack returns the track of the host thread tid.
func (w *writer) threadTrack(tid uint32) uint32 {
	if t, ok := w.threads[tid]; ok {
		return t
	}
	t := w.buf.AddTrack(event.Track{Kind: event.TrackHostThread, ID: int64(tid), Name: "CUDA API (thread " + strconv.FormatUint(uint64(tid), 10) + ")"})
	w.threads[tid] = t
	return t
}

// emit writes one activity event; records without timestamps are counted
// and left out.
func (w *writer) emit(track uint32, kind event.ActivityKind, name string, start, end uint64, args []event.Arg) {
	if start == 0 || end == 0 {
		w.untimed++
		return
	}
	w.args = args[:0] // keep the grown scratch
	if w.buf.ActivityMono(track, kind, name, w.s.mono(start), w.s.mono(max(end, start)), args) == 0 {
		w.lost++
		return
	}
	w.events++
}

func flow(corr uint32) event.Arg { return event.Arg{Kind: event.ArgFlow, Num: FlowBase + uint64(corr)} }

// deviceFlow appends the flow from the API call with correlation id corr
// to the device work being written, when that call was recorded: a flow
// with one end is a dangling arrow in every viewer.
func (w *writer) deviceFlow(args []event.Arg, corr uint32) []event.Arg {
	if _, ok := w.corrAPI.get(corr); ok && corr != 0 {
		return append(args, flow(corr))
	}
	return args
}

// kernelName returns a kernel's readable name, as Kineto and TSL show it
// ("saxpy(int, float, float const*, float*)"), and whether it differs from
// the symbol.
func (w *writer) kernelName(sym string) (string, bool) {
	name, ok := w.demangled[sym]
	if !ok {
		name = demangle.Filter(sym)
		w.demangled[sym] = name
	}
	return name, name != sym
}

func intArg(key string, v int64) event.Arg {
	return event.Arg{Key: key, Kind: event.ArgInt, Num: uint64(v)}
}

func uintArg(key string, v uint64) event.Arg { return event.Arg{Key: key, Kind: event.ArgUint, Num: v} }

func strArg(key, v string) event.Arg { return event.Arg{Key: key, Kind: event.ArgString, Str: v} }

func dims(d [3]int32) string {
	var b [36]byte
	out := strconv.AppendInt(b[:0], int64(d[0]), 10)
	out = append(out, ',')
	out = strconv.AppendInt(out, int64(d[1]), 10)
	out = append(out, ',')
	return string(strconv.AppendInt(out, int64(d[2]), 10))
}

// span returns the annotate.Device span whose scope made the call with
// correlation id corr.
func (w *writer) span(corr uint32) (id uint64, sp spanInfo, ok bool) {
	id, ok = w.corrSpan[corr]
	if !ok {
		return 0, spanInfo{}, false
	}
	w.s.mu.Lock()
	sp, ok = w.s.spans[id]
	w.s.mu.Unlock()
	return id, sp, ok
}

// spanArg names the annotate.Device span that launched the work.
func (w *writer) spanArg(args []event.Arg, corr uint32) []event.Arg {
	if _, sp, ok := w.span(corr); ok {
		return append(args, strArg(event.ArgAnnotation, sp.name))
	}
	return args
}

func (w *writer) kernel(r *cuptiwrap.Record) {
	args := w.deviceFlow(w.args[:0], r.CorrelationID)
	args = append(args,
		strArg(event.ArgGrid, dims(r.Grid)),
		strArg(event.ArgBlock, dims(r.Block)),
		intArg(event.ArgRegistersPerThread, int64(r.Registers)),
		intArg(event.ArgStaticSharedMemory, int64(r.StaticShared)),
		intArg(event.ArgDynamicSharedMemory, int64(r.DynamicShared)),
	)
	name, demangled := w.kernelName(r.Name)
	if demangled {
		args = append(args, strArg(event.ArgMangledName, r.Name))
	}
	if r.GraphID != 0 {
		args = append(args, uintArg("graph_id", uint64(r.GraphID)))
	}
	args = w.spanArg(args, r.CorrelationID)
	w.emit(w.streamTrack(r.DeviceID, r.StreamID, "Compute"), event.ActivityKernel, name, r.Start, r.End, args)
}

// copyStreamKinds are xprof's stream-line names for copy kinds.
var copyStreamKinds = map[string]string{"HtoD": "MemcpyH2D", "DtoH": "MemcpyD2H", "DtoD": "MemcpyD2D", "PtoP": "MemcpyP2P"}

// memoryKind is a CUPTI memory kind as the model names it
// (event.ArgMemoryKind).
func memoryKind(k uint8) string {
	switch n := cuptiwrap.MemoryKindName(k); n {
	case "Pageable", "Pinned", "Device", "Array", "Managed", "Unknown":
		return strings.ToLower(n)
	case "DeviceStatic":
		return "device_static"
	case "ManagedStatic":
		return "managed_static"
	}
	return "unknown"
}

func (w *writer) memcpy(r *cuptiwrap.Record) {
	kind := cuptiwrap.CopyKindName(r.CopyKind)
	if r.Kind == cuptiwrap.KindMemcpyPeer {
		kind = "PtoP"
	}
	args := w.deviceFlow(w.args[:0], r.CorrelationID)
	args = append(args,
		strArg(event.ArgCopyKind, kind),
		uintArg(event.ArgBytes, r.Bytes),
		strArg(event.ArgSrcMemoryKind, memoryKind(r.SrcKind)),
		strArg(event.ArgDstMemoryKind, memoryKind(r.DstKind)),
	)
	if r.Kind == cuptiwrap.KindMemcpyPeer {
		args = append(args, uintArg(event.ArgSrcDevice, uint64(r.SrcDevice)), uintArg(event.ArgDstDevice, uint64(r.DstDevice)))
	}
	args = w.spanArg(args, r.CorrelationID)
	streamKind, ok := copyStreamKinds[kind]
	if !ok {
		streamKind = "MemcpyOther"
	}
	// Named as Kineto names copies: "Memcpy HtoD (Pinned -> Device)".
	name := "Memcpy " + kind + " (" + cuptiwrap.MemoryKindName(r.SrcKind) + " -> " + cuptiwrap.MemoryKindName(r.DstKind) + ")"
	w.emit(w.streamTrack(r.DeviceID, r.StreamID, streamKind), event.ActivityMemcpy, name, r.Start, r.End, args)
}

func (w *writer) memset(r *cuptiwrap.Record) {
	args := w.deviceFlow(w.args[:0], r.CorrelationID)
	args = append(args,
		uintArg(event.ArgBytes, r.Bytes),
		uintArg("value", uint64(r.MemsetValue)),
		strArg(event.ArgMemoryKind, memoryKind(r.MemoryKind)),
	)
	args = w.spanArg(args, r.CorrelationID)
	name := "Memset (" + cuptiwrap.MemoryKindName(r.MemoryKind) + ")" // as Kineto names it
	w.emit(w.streamTrack(r.DeviceID, r.StreamID, "Memset"), event.ActivityMemset, name, r.Start, r.End, args)
}

// memoryOp writes an allocation or a free as an instant-like event on its
// stream and moves the device's allocated-bytes counter.
func (w *writer) memoryOp(r *cuptiwrap.Record) {
	op := cuptiwrap.MemoryOpName(r.MemoryOp)
	streamKind, name, kind := "MemoryAlloc", "MemoryAlloc", event.ActivityAlloc
	delta := int64(r.Bytes)
	if op == "free" {
		streamKind, name, kind, delta = "MemoryFree", "MemoryFree", event.ActivityFree, -delta
	}
	args := []event.Arg{
		uintArg(event.ArgBytes, r.Bytes),
		strArg("address", "0x"+strconv.FormatUint(r.Address, 16)),
		strArg(event.ArgMemoryKind, memoryKind(r.MemoryKind)),
	}
	args = w.deviceFlow(args, r.CorrelationID)
	w.emit(w.streamTrack(r.DeviceID, r.StreamID, streamKind), kind, name, r.Start, r.Start, args)
	if r.Start != 0 {
		w.memory[r.DeviceID] += delta
		w.buf.TrackCounterMono(w.deviceTrack(r.DeviceID), "memory allocated", "bytes",
			w.s.mono(r.Start), float64(w.memory[r.DeviceID]))
	}
}

// sync writes a host wait on the device; CUPTI gives its context, not its
// device, which the other records of the context tell.
func (w *writer) sync(r *cuptiwrap.Record) {
	dev := w.ctxDevice[r.ContextID] // device 0 when the context did nothing else
	args := w.deviceFlow([]event.Arg{strArg("sync_type", cuptiwrap.SyncTypeName(r.SyncType))}, r.CorrelationID)
	name := r.Name
	if name == "" {
		name = cuptiwrap.SyncTypeName(r.SyncType)
	}
	w.emit(w.streamTrack(dev, r.StreamID, "Synchronize"), event.ActivitySync, name, r.Start, r.End, args)
}

// api writes a runtime or driver API call. A call made inside an
// annotate.Device span goes beneath that span, on its row, as the program
// made it; others go on a track of their OS thread. A call that launched
// device work names the device, as xprof's launch statistics need.
func (w *writer) api(r *cuptiwrap.Record) {
	args := []event.Arg{uintArg("cbid", uint64(r.CBID))}
	if dev, ok := w.corrDevice.get(r.CorrelationID); ok && r.CorrelationID != 0 {
		// Only a call that launched recorded device work starts a flow.
		args = append(args, flow(r.CorrelationID), uintArg(event.ArgDeviceID, uint64(dev)))
	}
	if r.ReturnValue != 0 {
		args = append(args, intArg("return_value", int64(r.ReturnValue)))
	}
	if id, sp, ok := w.span(r.CorrelationID); ok {
		if r.Start == 0 || r.End == 0 {
			w.untimed++
			return
		}
		args = append(args, uintArg("thread_id", uint64(r.ThreadID)))
		if w.buf.ChildSpanMono(id, sp.lane, r.Name, w.s.mono(r.Start), w.s.mono(max(r.End, r.Start)), args) == 0 {
			w.lost++
			return
		}
		w.events++
		return
	}
	w.emit(w.threadTrack(r.ThreadID), event.ActivityAPI, r.Name, r.Start, r.End, args)
}

func (w *writer) overhead(r *cuptiwrap.Record) {
	name := cuptiwrap.OverheadKindName(r.OverheadKind)
	if r.ThreadID != 0 {
		w.emit(w.threadTrack(r.ThreadID), event.ActivityOverhead, name, r.Start, r.End, nil)
		return
	}
	w.emit(w.streamTrack(r.DeviceID, r.StreamID, "Generic"), event.ActivityOverhead, name, r.Start, r.End, nil)
}
