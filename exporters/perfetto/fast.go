package perfetto

import (
	"fmt"
	"math"
)

// fastPacket applies the commonest packet of a large trace without the
// general path's bookkeeping: a packet of timestamp, sequence id and one
// TrackEvent of type, name iid, track uuid, a few debug annotations with
// an interned name and a scalar or interned string value, and flow ids
// (fixed64, unpacked), or a counter event of a track and a value, on a
// sequence whose incremental state is valid (what devprof's writer and
// the Perfetto SDK write for nearly every slice, launch, kernel and
// counter sample). It reports false, having changed nothing, for any
// packet with another field or form, and then the general path (packet)
// applies it: the two must agree on every packet fastPacket takes
// (TestFastPacketMatchesGeneral).
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
	var annots [4]Arg
	nannots := 0
	// Flow ids are few an event (a launch's and its kernel's one): more
	// than fit here take the general path.
	var flows, terms [4]uint64
	nflows, nterms := 0, 0
	var value float64
	hasValue := false
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
			a, ok := fastAnnotation(g, te[1+n:1+n+int(l)])
			if !ok {
				return false, nil
			}
			annots[nannots] = a
			nannots++
			te = te[1+n+int(l):]
		default:
			// The fields numbered past 15 have two-byte tags.
			tag, n := consumeVarint(te)
			if n == 0 {
				return false, nil
			}
			switch tag {
			case teFlowIDs<<3 | wireI64, teTerminatingFlowIDs<<3 | wireI64:
				if len(te) < n+8 {
					return false, nil
				}
				v := le64(te[n:])
				if tag == teFlowIDs<<3|wireI64 {
					if nflows == len(flows) {
						return false, nil
					}
					flows[nflows] = v
					nflows++
				} else {
					if nterms == len(terms) {
						return false, nil
					}
					terms[nterms] = v
					nterms++
				}
				te = te[n+8:]
			case teDoubleCounterValue<<3 | wireI64:
				if len(te) < n+8 {
					return false, nil
				}
				value, hasValue, te = math.Float64frombits(le64(te[n:])), true, te[n+8:]
			case teCounterValue<<3 | wireVarint:
				v, m := consumeVarint(te[n:])
				if m == 0 {
					return false, nil
				}
				value, hasValue, te = float64(int64(v)), true, te[n+m:]
			default:
				return false, nil
			}
		}
	}
	switch typ {
	case typeSliceBegin, typeSliceEnd, typeInstant:
		if hasValue {
			return false, nil
		}
	case typeCounter:
		// A counter's name, arguments and flows are read (and checked)
		// by the general path alone.
		if !hasValue || nameIID != 0 || nannots > 0 || nflows > 0 || nterms > 0 {
			return false, nil
		}
		return r.fastCounter(g, seqID, ts, track, hasTrack, value)
	default:
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

	at, err := r.clocks.resolve(ts, g.clockID, seqID)
	if err != nil {
		return true, asDrop("clock_sync_failure_unknown_source_clock", err)
	}
	var args []Arg
	if nannots > 0 {
		// Arguments are carved out of blocks, not made an event at a
		// time.
		block := r.argBlocks.room(nannots)
		start := len(block)
		for _, a := range annots[:nannots] {
			if a.Value != nil { // an annotation with no value makes no argument
				block = append(block, a)
			}
		}
		args = r.argBlocks.keep(block, start)
	}
	fl, tm := r.keepFlows(flows[:nflows], terms[:nterms])
	if r.fastHook != nil {
		r.fastHook()
	}
	if err := r.queueSlice(typ, hasName, track, name, args, fl, tm, at); err != nil {
		return true, asDrop("track_event_parser_errors", fmt.Errorf("track_event: %w", err))
	}
	return true, nil
}

// queueSlice is sliceEvent for an event of fastPacket's form: a type, a
// name, arguments and flows, and none of the fields (a duration, a bind
// id) that only the general path reads, so that no trackEvent is made.
func (r *reader) queueSlice(typ uint64, hasName bool, track uint64, name string, args []Arg, flows, terms []uint64, at timestamp) error {
	// A run of events is on one track: sliceTrack's last, which it would
	// return unchanged, is not looked up again.
	if typ != typeSliceEnd && (r.lastSliced == nil || r.lastSlicedUUID != track) {
		if _, err := r.sliceTrack(track, name); err != nil {
			return err
		}
	}
	r.events = append(r.events, pendingEvent{
		kind: uint8(typ), track: track, at: at, order: r.nextOrder(),
		name: name, hasName: hasName && name != "", args: args, flows: flows, terms: terms, pkt: r.pkt, off: r.off,
	})
	return nil
}

// fastCounter applies a counter event of fastPacket's form (a track and
// a value) as the general path's trackEvent does, for a track that an
// earlier descriptor describes as a counter track; any other is left to
// the general path, which drops it.
func (r *reader) fastCounter(g *generation, seqID uint32, ts, track uint64, hasTrack bool, value float64) (bool, error) {
	if !hasTrack {
		if !g.hasTrack {
			return false, nil
		}
		track = g.track
	}
	if track == 0 {
		return false, nil
	}
	ti, err := r.counterTrack(track)
	if err != nil {
		return false, nil
	}
	at, err := r.clocks.resolve(ts, g.clockID, seqID)
	if err != nil {
		return true, asDrop("clock_sync_failure_unknown_source_clock", err)
	}
	if r.fastHook != nil {
		r.fastHook()
	}
	r.queueCounter(track, at, r.counterValue(g, ti, track, value))
	return true, nil
}

// le64 decodes a fixed64 field's 8 little-endian bytes.
func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// boxedStr returns interned debug annotation string iid as an argument's
// value, boxed once through the sequence's cache, and whether the
// sequence defines it.
func (g *generation) boxedStr(iid uint64) (any, bool) {
	if iid == 0 { // never defined: the cache's empty entries hold iid 0
		return nil, false
	}
	c := &g.strCache[iid%uint64(len(g.strCache))]
	if c.iid != iid {
		s, ok := g.strs[iid]
		if !ok {
			return nil, false
		}
		c.iid, c.v = iid, s
	}
	return c.v, true
}

// daStringValueIIDTag is the tag of DebugAnnotation.string_value_iid,
// the one field fastAnnotation reads whose tag takes two bytes.
const daStringValueIIDTag = daStringValueIID<<3 | wireVarint

// fastAnnotation decodes a debug annotation of fastPacket's form, an
// interned name the sequence defines with at most scalar or interned
// string values it defines, into the argument annotation would make of
// it; it reports false for any other. An interned string's value is
// boxed once for its sequence, not once an event.
func fastAnnotation(g *generation, b []byte) (Arg, bool) {
	var a Arg
	hasName := false
	for len(b) > 0 {
		tag := b[0]
		if tag == daDoubleValue<<3|wireI64 {
			if len(b) < 9 {
				return a, false
			}
			a.Value, b = math.Float64frombits(le64(b[1:])), b[9:]
			continue
		}
		if tag == daStringValueIIDTag&0x7f|0x80 && len(b) > 1 && b[1] == daStringValueIIDTag>>7 {
			v, n := consumeVarint(b[2:])
			if n == 0 || v == 0 {
				return a, false
			}
			s, ok := g.boxedStr(v)
			if !ok {
				return a, false
			}
			a.Value, b = s, b[2+n:]
			continue
		}
		v, n := consumeVarint(b[1:])
		if n == 0 {
			return a, false
		}
		switch tag {
		case daNameIID<<3 | wireVarint:
			if v == 0 {
				return a, false
			}
			c := &g.argNameCache[v%uint64(len(g.argNameCache))]
			if c.iid != v {
				s, ok := g.argNames[v]
				if !ok {
					return a, false
				}
				c.iid, c.name = v, s
			}
			a.Name, hasName = c.name, true
		case daBoolValue<<3 | wireVarint:
			a.Value = v != 0
		case daUintValue<<3 | wireVarint:
			a.Value = v
		case daIntValue<<3 | wireVarint:
			a.Value = int64(v)
		default:
			return a, false
		}
		b = b[1+n:]
	}
	return a, hasName
}
