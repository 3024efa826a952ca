package perfetto

import (
	"strconv"

	"github.com/devprof/devprof/event"
)

// A memory tracker's allocations and frees (TrackMemory tracks, see
// event/memory.go) are written as:
//
//   - a thread of the device's process ("GPU <n>"; the program's for host
//     memory) named after the track, holding each allocation and free as
//     an instant with its arguments (the address in hex), its descriptor
//     described as MemoryEventsDescription;
//   - beside it, counter tracks of the same process, in bytes and sharing
//     one y axis: the bytes in use ("<track> in use", from the events'
//     ArgInUse), and the bytes of each of the MemoryTopTags tag sets that
//     peaked highest, of the other tags together and of what the trace
//     does not account for ("<track>: <tags>", event.MemoryTimelines),
//     described as MemoryCounterDescription.
//
// Read makes the instants memory events again and leaves the counters out:
// a snapshot derives them from the events.

// MemoryTopTags is how many tag sets of a memory track get counter tracks
// of their own; the rest share one (event.MemoryOtherTags).
const MemoryTopTags = 8

// Descriptions of the tracks the writer derives from memory events, by
// which Read recognises them.
const (
	MemoryEventsDescription  = "devprof memory events: allocations and frees"
	MemoryCounterDescription = "devprof memory counter: derived from the allocations and frees"
)

// memoryTrackName names a memory track's counters.
func (w *writer) memoryTrackName(tl *event.MemoryTimeline) string {
	if n := w.s.Tracks[tl.Track-1].Name; n != "" {
		return n
	}
	if tl.Device < 0 {
		return "host memory"
	}
	return "GPU " + strconv.Itoa(tl.Device) + " memory"
}

// memoryCounterTracks declares the counter tracks of every memory track.
func (w *writer) memoryCounterTracks() {
	w.memUUID = make([][]uint64, len(w.memory))
	for i := range w.memory {
		tl := &w.memory[i]
		name := w.memoryTrackName(tl)
		parent := w.deviceUUID[tl.Device]
		if tl.Device < 0 {
			parent = w.procUUID
		}
		ids := make([]uint64, 0, 1+len(tl.Series))
		ids = append(ids, w.memoryCounterTrack(parent, name+" in use", name))
		for _, sr := range tl.Series {
			ids = append(ids, w.memoryCounterTrack(parent, name+": "+sr.Key, name))
		}
		w.memUUID[i] = ids
	}
}

func (w *writer) memoryCounterTrack(parent uint64, name, share string) uint64 {
	u := w.uuid()
	w.startPacket(w.start, true)
	p := w.pkt.Begin(pktTrackDescriptor)
	w.pkt.Uint(tdUUID, u)
	w.pkt.Uint(tdParentUUID, parent)
	w.pkt.String(tdName, name)
	w.pkt.String(tdDescription, MemoryCounterDescription)
	q := w.pkt.Begin(tdCounter)
	w.pkt.Uint(cdUnit, unitSizeBytes)
	w.pkt.String(cdUnitName, "bytes")
	w.pkt.String(cdYAxisShareKey, share)
	w.pkt.End(q)
	w.pkt.End(p)
	w.finishPacket()
	return u
}

// memorySamples writes the memory counters: the bytes in use at every
// event, and each series where it changes (all of them at the first).
func (w *writer) memorySamples() {
	for i := range w.memory {
		tl := &w.memory[i]
		ids := w.memUUID[i]
		for j, t := range tl.Times {
			w.memorySample(ids[0], t, tl.InUse[j])
			for k := range tl.Series {
				b := tl.Series[k].Bytes
				if j == 0 || b[j] != b[j-1] {
					w.memorySample(ids[k+1], t, b[j])
				}
			}
		}
	}
}

func (w *writer) memorySample(track uint64, t int64, v uint64) {
	w.startPacket(w.boot(t), true)
	p := w.pkt.Begin(pktTrackEvent)
	w.pkt.Uint(teType, typeCounter)
	w.pkt.Uint(teTrackUUID, track)
	w.pkt.Int(teCounterValue, int64(min(v, 1<<63-1)))
	w.pkt.End(p)
	w.finishPacket()
}

// memoryRow writes the row of a memory track: its allocations and frees
// (and any other instant activity) as instants; activity with a duration,
// which a memory tracker does not write, as slices.
func (w *writer) memoryRow(row *event.Row) {
	row.Walk(func(typ event.RowEventType, sp *event.Placed, inst *event.Record) {
		switch {
		case typ == event.RowBegin && sp.End == sp.Start() && sp.Finished:
			w.memoryInstant(sp.Record)
		case typ == event.RowBegin:
			w.slice(typeSliceBegin, sp.Start(), 0, sp.Record, sp.Finished, nil, false)
		case typ == event.RowEnd && (sp.End != sp.Start() || !sp.Finished):
			w.startPacket(w.boot(sp.End), true)
			p := w.pkt.Begin(pktTrackEvent)
			w.pkt.Uint(teType, typeSliceEnd)
			w.pkt.End(p)
			w.finishPacket()
		case typ == event.RowInstant:
			w.slice(typeInstant, inst.Start(), 0, inst, true, nil, false)
		}
	})
}

// memoryInstant writes an allocation or free with its arguments, the
// address in hex as people read pointers.
func (w *writer) memoryInstant(r *event.Record) {
	w.startPacket(w.boot(r.Start()), true)
	p := w.pkt.Begin(pktTrackEvent)
	w.pkt.Uint(teType, typeInstant)
	w.pkt.Uint(teNameIID, w.iid(&w.seq.names, idEventNames, w.s.Name(r)))
	w.argBuf = w.s.AppendArgs(w.argBuf[:0], r)
	for _, a := range event.UniqueKeys(w.argBuf) {
		switch {
		case a.Kind == event.ArgFlow:
		case a.Key == event.ArgAddress && a.Kind == event.ArgUint:
			w.arg(event.Arg{Key: a.Key, Kind: event.ArgString, Str: hexAddress(a.Num)})
		default:
			w.arg(a)
		}
	}
	w.pkt.End(p)
	w.finishPacket()
}

// hexAddress writes an address as "0x7f3a00000000".
func hexAddress(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }
