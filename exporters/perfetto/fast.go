package perfetto

import (
	"fmt"
	"math"
)

// fastPacket applies the commonest packet of a large trace without the
// general path's bookkeeping: a packet of timestamp, sequence id and one
// TrackEvent of type, name iid, track uuid and a few debug annotations
// with an interned name and a scalar or interned string value, on a
// sequence whose incremental state is valid (what devprof's writer and
// the Perfetto SDK write for nearly every slice). It reports false,
// having changed nothing, for any packet with another field or form, and
// then the general path (packet) applies it: the two must agree on every
// packet fastPacket takes (TestFastPacketMatchesGeneral).
func (r *reader) fastPacket(b []byte) (bool, error) {
	var ts uint64
	var seqID uint32
	var te []byte
	hasTS := false
	for len(b) > 0 {
		switch b[0] {
		case pktTimestamp<<3 | wireVarint:
			v, n := consumeVarint(b[1:])
			if n == 0 {
				return false, nil
			}
			ts, hasTS, b = v, true, b[1+n:]
		case pktSeqID<<3 | wireVarint:
			v, n := consumeVarint(b[1:])
			if n == 0 || v > math.MaxUint32 {
				return false, nil
			}
			seqID, b = uint32(v), b[1+n:]
		case pktTrackEvent<<3 | wireBytes:
			l, n := consumeVarint(b[1:])
			if n == 0 || te != nil || l > uint64(len(b)-1-n) {
				return false, nil // a second TrackEvent merges into the first: the general path
			}
			te, b = b[1+n:1+n+int(l)], b[1+n+int(l):]
		default:
			return false, nil
		}
	}
	if !hasTS || te == nil || seqID == 0 {
		return false, nil
	}
	seq := r.lastSeq
	if seq == nil || r.lastSeqID != seqID {
		if seq = r.seqs[seqID]; seq == nil {
			return false, nil
		}
		r.lastSeq, r.lastSeqID = seq, seqID
	}
	if !seq.valid {
		return false, nil
	}
	g := seq.gen

	// The TrackEvent: everything is checked before the clock is read (an
	// incremental clock advances when read).
	var typ, nameIID, track uint64
	hasTrack := false
	var annots [4][]byte
	nannots := 0
	for len(te) > 0 {
		switch te[0] {
		case teType<<3 | wireVarint:
			v, n := consumeVarint(te[1:])
			if n == 0 {
				return false, nil
			}
			typ, te = v, te[1+n:]
		case teNameIID<<3 | wireVarint:
			v, n := consumeVarint(te[1:])
			if n == 0 {
				return false, nil
			}
			nameIID, te = v, te[1+n:]
		case teTrackUUID<<3 | wireVarint:
			v, n := consumeVarint(te[1:])
			if n == 0 {
				return false, nil
			}
			track, hasTrack, te = v, true, te[1+n:]
		case teDebugAnnotations<<3 | wireBytes:
			l, n := consumeVarint(te[1:])
			if n == 0 || nannots == len(annots) || l > uint64(len(te)-1-n) {
				return false, nil
			}
			annots[nannots] = te[1+n : 1+n+int(l)]
			nannots++
			te = te[1+n+int(l):]
		default:
			return false, nil
		}
	}
	if typ != typeSliceBegin && typ != typeSliceEnd && typ != typeInstant {
		return false, nil
	}
	var name string
	hasName := false
	if nameIID != 0 {
		// A trace has few names, used over and over: a small cache of
		// the generation's saves a map lookup an event.
		c := &g.nameCache[nameIID%uint64(len(g.nameCache))]
		if c.iid != nameIID {
			s, ok := g.names[nameIID]
			if !ok {
				return false, nil
			}
			c.iid, c.name = nameIID, s
		}
		name, hasName = c.name, true
	}
	if !hasTrack {
		if !g.hasTrack {
			return false, nil
		}
		track = g.track
	}
	if track == 0 {
		return false, nil
	}
	for i := range nannots {
		if !fastAnnotation(g, annots[i]) {
			return false, nil
		}
	}

	at, err := r.clocks.resolve(ts, g.clockID, seqID)
	if err != nil {
		return true, asDrop("clock_sync_failure_unknown_source_clock", err)
	}
	var args []Arg
	if nannots > 0 {
		// Arguments are carved out of blocks, not made an event at a
		// time; a block lives as long as an event that uses it.
		if cap(r.argBlock)-len(r.argBlock) < nannots {
			r.argBlock = make([]Arg, 0, 1024)
		}
		start := len(r.argBlock)
		for i := range nannots {
			r.argBlock = appendFastAnnotation(g, annots[i], r.argBlock)
		}
		if len(r.argBlock) > start {
			args = r.argBlock[start:len(r.argBlock):len(r.argBlock)]
		}
	}
	if r.fastHook != nil {
		r.fastHook()
	}
	if err := r.queueSlice(typ, hasName, track, name, args, at); err != nil {
		return true, asDrop("track_event_parser_errors", fmt.Errorf("track_event: %w", err))
	}
	return true, nil
}

// queueSlice is sliceEvent for an event of fastPacket's form: a type, a
// name and arguments, and none of the fields (flows, a duration, a bind
// id) that only the general path reads, so that no trackEvent is made.
func (r *reader) queueSlice(typ uint64, hasName bool, track uint64, name string, args []Arg, at timestamp) error {
	// A run of events is on one track: sliceTrack's last, which it would
	// return unchanged, is not looked up again.
	if typ != typeSliceEnd && (r.lastSliced == nil || r.lastSlicedUUID != track) {
		if _, err := r.sliceTrack(track, name); err != nil {
			return err
		}
	}
	r.events = append(r.events, pendingEvent{
		kind: uint8(typ), track: track, at: at, order: r.nextOrder(),
		name: name, hasName: hasName && name != "", args: args, pkt: r.pkt, off: r.off,
	})
	return nil
}

// fastAnnotation reports whether a debug annotation is one fastPacket
// takes: an interned name the sequence defines and at most scalar or
// interned string values it defines.
func fastAnnotation(g *generation, b []byte) bool {
	hasName := false
	for len(b) > 0 {
		tag := b[0]
		switch tag {
		case daNameIID<<3 | wireVarint, daBoolValue<<3 | wireVarint, daUintValue<<3 | wireVarint,
			daIntValue<<3 | wireVarint, daStringValueIID<<3 | wireVarint:
			v, n := consumeVarint(b[1:])
			if n == 0 {
				return false
			}
			switch tag {
			case daNameIID<<3 | wireVarint:
				if _, ok := g.argNames[v]; !ok {
					return false
				}
				hasName = true
			case daStringValueIID<<3 | wireVarint:
				if _, ok := g.strs[v]; !ok {
					return false
				}
			}
			b = b[1+n:]
		case daDoubleValue<<3 | wireI64:
			if len(b) < 9 {
				return false
			}
			b = b[9:]
		default:
			return false
		}
	}
	return hasName
}

// appendFastAnnotation appends the argument of a debug annotation
// fastAnnotation took, as annotation would.
func appendFastAnnotation(g *generation, b []byte, out []Arg) []Arg {
	var a Arg
	for len(b) > 0 {
		tag := b[0]
		if tag == daDoubleValue<<3|wireI64 {
			a.Value = math.Float64frombits(uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16 | uint64(b[4])<<24 |
				uint64(b[5])<<32 | uint64(b[6])<<40 | uint64(b[7])<<48 | uint64(b[8])<<56)
			b = b[9:]
			continue
		}
		v, n := consumeVarint(b[1:])
		b = b[1+n:]
		switch tag {
		case daNameIID<<3 | wireVarint:
			a.Name = g.argNames[v]
		case daBoolValue<<3 | wireVarint:
			a.Value = v != 0
		case daUintValue<<3 | wireVarint:
			a.Value = v
		case daIntValue<<3 | wireVarint:
			a.Value = int64(v)
		case daStringValueIID<<3 | wireVarint:
			a.Value = g.strs[v]
		}
	}
	if a.Value != nil {
		out = append(out, a)
	}
	return out
}
