package xplane

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devprof/devprof/internal/protoenc"
)

// The reader decodes each message it needs with a small function that
// walks its fields with protoenc's decoder (the Perfetto reader's too)
// and switches on their keys. It decodes into the plain structs below
// rather than xplanepb's generated types, and in two passes, so that no
// decoded copy of every event is ever held: decodeSpace reads the space,
// its planes, their metadata and stats and each line's header, keeping a
// line's events as the bytes they are; the reader then decodes the events
// of one line at a time (eachEvent) straight into the sink.
//
// Everything proto.Unmarshal would check is checked, so that the same
// files are rejected: every field of every message is parsed (events by
// the second pass, including those of lines the reader skips), packed
// child ids included, and every string field is checked for UTF-8 (where
// Unmarshal fails, the reader repairs the string and counts it). As with
// Unmarshal, a known field with an unexpected wire type is skipped, of
// scalars and oneofs the last wins, and a map entry's later key replaces
// an earlier one.

// Field numbers the reader needs besides the writer's (writer.go).
const (
	spaceErrors = 2

	lineDisplayName = 11

	eventNumOccurrences = 5

	statBytes = 6

	eventMDDisplayName = 4
	eventMDStats       = 5
	eventMDChildID     = 6

	statMDDescription = 3
)

// Wire types.
const (
	wireVarint = protoenc.WireVarint
	wireI64    = protoenc.WireI64
	wireBytes  = protoenc.WireBytes
)

func key(num, wt int) uint64 { return protoenc.Key(num, wt) }

// xspace is what the reader uses of an XSpace.
type xspace struct {
	src                         *source
	planes                      []xplane
	errors, warnings, hostnames []string

	// event and stats are the event eachEvent is at and its stats.
	event xevent
	stats []xstat

	invalidUTF8 int               // strings that were not valid UTF-8
	strs        map[string]string // interned strings, see str
}

type xplane struct {
	id      int64
	name    string
	lines   []xline
	stats   []xstat // the plane's own stats
	eventMD map[int64]xeventMeta
	statMD  map[int64]string // stat metadata names
}

type xline struct {
	id, timestampNS   int64
	name, displayName string
	// The line is bytes [off, end) of the source; events is how many
	// events it has (decoded by eachEvent); plane and index place it for
	// errors.
	off, end     int64
	events       int
	plane, index int
}

type xevent struct {
	metadataID, offsetPS, durationPS int64
	aggregated                       bool // num_occurrences, not offset_ps
}

type xeventMeta struct {
	name, displayName []byte
	stats             []xstat
}

// statKind says which value of an XStat is set.
type statKind uint8

const (
	statNone statKind = iota
	statKindDouble
	statKindUint64
	statKindInt64
	statKindStr
	statKindBytes
	statKindRef
)

type xstat struct {
	metadataID int64
	kind       statKind
	num        uint64 // int64, uint64 and ref values; a double's bits
	b          []byte // str (UTF-8 repaired) and bytes values
}

// decodeSpace decodes the XSpace in src, but for its events (eachEvent).
func decodeSpace(src *source) (*xspace, error) {
	s := &xspace{src: src, strs: map[string]string{}}
	w := src.walk(0, src.size)
	for w.Next() {
		f := &w.field
		var err error
		switch f.Key() {
		case key(spacePlanes, wireBytes):
			p := xplane{}
			if err := s.plane(&p, w.body, w.next, len(s.planes)); err != nil {
				return s, fmt.Errorf("plane %d: %w", len(s.planes), err)
			}
			s.planes = append(s.planes, p)
		case key(spaceErrors, wireBytes):
			s.errors, err = s.appendStr(s.errors, &w)
		case key(spaceWarnings, wireBytes):
			s.warnings, err = s.appendStr(s.warnings, &w)
		case key(spaceHostnames, wireBytes):
			s.hostnames, err = s.appendStr(s.hostnames, &w)
		}
		if err != nil {
			return s, err
		}
	}
	return s, w.err
}

// appendStr appends the string field w is at to dst.
func (s *xspace) appendStr(dst []string, w *walk) ([]string, error) {
	b, err := w.bytes()
	if err != nil {
		return dst, err
	}
	return append(dst, s.str(s.text(b))), nil
}

// text returns the bytes of a string field, valid UTF-8: invalid bytes are
// replaced with U+FFFD and the string counted in invalidUTF8.
func (s *xspace) text(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	s.invalidUTF8++
	return []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// str returns b as a string, one copy per distinct string: names and
// values repeat across events, and the input must not be kept alive by
// the snapshot.
func (s *xspace) str(b []byte) string {
	if v, ok := s.strs[string(b)]; ok {
		return v
	}
	v := string(b)
	s.strs[v] = v
	return v
}

// plane decodes the plane at [off, end) of the source.
func (s *xspace) plane(p *xplane, off, end int64, index int) error {
	w := s.src.walk(off, end)
	for w.Next() {
		f := &w.field
		if f.Key() == key(planeLines, wireBytes) {
			l := xline{off: w.body, end: w.next, plane: index, index: len(p.lines)}
			if err := s.line(&l); err != nil {
				return fmt.Errorf("line %d: %w", len(p.lines), err)
			}
			p.lines = append(p.lines, l)
			continue
		}
		if f.Wire != wireBytes {
			if f.Key() == key(planeID, wireVarint) {
				p.id = int64(f.Varint)
			}
			continue
		}
		b, err := w.bytes()
		if err != nil {
			return err
		}
		switch f.Key() {
		case key(planeName, wireBytes):
			p.name = s.str(s.text(b))
		case key(planeEventMetadata, wireBytes):
			if err := s.eventMetaEntry(p, b); err != nil {
				return err
			}
		case key(planeStatMetadata, wireBytes):
			if err := s.statMetaEntry(p, b); err != nil {
				return err
			}
		case key(planeStats, wireBytes):
			st, err := s.stat(b)
			if err != nil {
				return fmt.Errorf("plane stat: %w", err)
			}
			p.stats = append(p.stats, st.own())
		}
	}
	return w.err
}

// line decodes a line's header and counts its events, which eachEvent
// decodes.
func (s *xspace) line(l *xline) error {
	w := s.src.walk(l.off, l.end)
	for w.Next() {
		f := &w.field
		switch f.Key() {
		case key(lineID, wireVarint):
			l.id = int64(f.Varint)
		case key(lineName, wireBytes), key(lineDisplayName, wireBytes):
			b, err := w.bytes()
			if err != nil {
				return err
			}
			if f.Num == lineName {
				l.name = s.str(s.text(b))
			} else {
				l.displayName = s.str(s.text(b))
			}
		case key(lineTimestampNS, wireVarint):
			l.timestampNS = int64(f.Varint)
		case key(lineEvents, wireBytes):
			l.events++
		}
	}
	return w.err
}

// eachEvent decodes the events of line l in order and calls fn with each;
// the event and its stats (in s.stats) are valid until the next call.
func (s *xspace) eachEvent(l *xline, fn func(e *xevent) error) error {
	w := s.src.walk(l.off, l.end)
	n := 0
	for w.Next() {
		if w.field.Key() != key(lineEvents, wireBytes) {
			continue
		}
		b, err := w.bytes()
		if err != nil {
			return err
		}
		e := &s.event
		*e, s.stats = xevent{}, s.stats[:0]
		if err := s.decodeEvent(e, b, true); err != nil {
			return s.eventError(l, n, err)
		}
		if err := fn(e); err != nil {
			return err
		}
		n++
	}
	// The header was read whole: the line holds no malformed field.
	return w.err
}

func (s *xspace) eventError(l *xline, n int, err error) error {
	return fmt.Errorf("plane %d: line %d: event %d: %w", l.plane, l.index, n, err)
}

// scanEvents is eachEvent without the stats, which it skips without
// checking them: a look at a line before it is read. It returns false if
// an event is malformed (eachEvent will say how).
func (s *xspace) scanEvents(l *xline, fn func(e *xevent)) bool {
	w := s.src.walk(l.off, l.end)
	for w.Next() {
		if w.field.Key() != key(lineEvents, wireBytes) {
			continue
		}
		b, err := w.bytes()
		if err != nil {
			return false
		}
		e := &s.event
		*e = xevent{}
		if s.decodeEvent(e, b, false) != nil {
			return false
		}
		fn(e)
	}
	return w.err == nil
}

// decodeEvent decodes an event into e, its stats (with stats set) into
// s.stats.
func (s *xspace) decodeEvent(e *xevent, b []byte, stats bool) error {
	for len(b) > 0 {
		// A varint field with a one-byte tag, most of an event's and a
		// stat's, is decoded here, where Next would be a call (Fast
		// takes one-byte values only; offsets in picoseconds take five).
		var f protoenc.Field
		n := 0
		if t := b[0]; t-8 < 0x78 && t&7 == wireVarint {
			if v, m := protoenc.Varint(b[1:]); m > 0 {
				f, n = protoenc.Field{Num: int32(t >> 3), Varint: v}, 1+m
			}
		}
		if n == 0 {
			var err error
			if f, n, err = protoenc.Next(b); err != nil {
				return err
			}
		}
		b = b[n:]
		switch f.Key() {
		case key(eventMetadataID, wireVarint):
			e.metadataID = int64(f.Varint)
		case key(eventOffsetPS, wireVarint):
			e.offsetPS, e.aggregated = int64(f.Varint), false
		case key(eventNumOccurrences, wireVarint):
			e.offsetPS, e.aggregated = 0, true
		case key(eventDurationPS, wireVarint):
			e.durationPS = int64(f.Varint)
		case key(eventStats, wireBytes):
			if !stats {
				continue
			}
			st, err := s.stat(f.Bytes)
			if err != nil {
				return err
			}
			s.stats = append(s.stats, st)
		}
	}
	return nil
}

// own returns st with its bytes its own, not the source's.
func (st xstat) own() xstat {
	st.b = bytes.Clone(st.b)
	return st
}

func (s *xspace) stat(b []byte) (xstat, error) {
	var st xstat
	for len(b) > 0 {
		// As in decodeEvent.
		var f protoenc.Field
		n := 0
		if t := b[0]; t-8 < 0x78 && t&7 == wireVarint {
			if v, m := protoenc.Varint(b[1:]); m > 0 {
				f, n = protoenc.Field{Num: int32(t >> 3), Varint: v}, 1+m
			}
		}
		if n == 0 {
			var err error
			if f, n, err = protoenc.Next(b); err != nil {
				return st, err
			}
		}
		b = b[n:]
		switch f.Key() {
		case key(statMetadataID, wireVarint):
			st.metadataID = int64(f.Varint)
		case key(statDouble, wireI64):
			st.kind, st.num, st.b = statKindDouble, f.Varint, nil
		case key(statUint64, wireVarint):
			st.kind, st.num, st.b = statKindUint64, f.Varint, nil
		case key(statInt64, wireVarint):
			st.kind, st.num, st.b = statKindInt64, f.Varint, nil
		case key(statStr, wireBytes):
			st.kind, st.num, st.b = statKindStr, 0, s.text(f.Bytes)
		case key(statBytes, wireBytes):
			st.kind, st.num, st.b = statKindBytes, 0, f.Bytes
		case key(statRef, wireVarint):
			st.kind, st.num, st.b = statKindRef, f.Varint, nil
		}
	}
	return st, nil
}

// eventMetaEntry decodes an entry of a plane's event metadata map. Its
// value may come in parts, which merge (as proto.Unmarshal merges them).
func (s *xspace) eventMetaEntry(p *xplane, b []byte) error {
	var id int64
	var md xeventMeta
	it := protoenc.Iter{B: b}
	for it.Next() {
		f := &it.Field
		switch f.Key() {
		case key(mapKey, wireVarint):
			id = int64(f.Varint)
		case key(mapValue, wireBytes):
			if err := s.eventMeta(&md, f.Bytes); err != nil {
				return fmt.Errorf("event metadata: %w", err)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("event metadata: %w", err)
	}
	if p.eventMD == nil {
		p.eventMD = map[int64]xeventMeta{}
	}
	md.name, md.displayName = bytes.Clone(md.name), bytes.Clone(md.displayName)
	for i := range md.stats {
		md.stats[i] = md.stats[i].own()
	}
	p.eventMD[id] = md
	return nil
}

func (s *xspace) eventMeta(md *xeventMeta, b []byte) error {
	it := protoenc.Iter{B: b}
	for it.Next() {
		f := &it.Field
		switch f.Key() {
		case key(mdName, wireBytes):
			md.name = s.text(f.Bytes)
		case key(eventMDDisplayName, wireBytes):
			md.displayName = s.text(f.Bytes)
		case key(eventMDStats, wireBytes):
			st, err := s.stat(f.Bytes)
			if err != nil {
				return err
			}
			md.stats = append(md.stats, st)
		case key(eventMDChildID, wireBytes):
			// Unused, but a malformed packed list fails Unmarshal.
			if err := protoenc.CheckPackedVarints(f.Bytes); err != nil {
				return fmt.Errorf("child_id: %w", err)
			}
		}
	}
	return it.Err()
}

// statMetaEntry decodes an entry of a plane's stat metadata map: the name,
// merged over the parts of the value as for event metadata.
func (s *xspace) statMetaEntry(p *xplane, b []byte) error {
	var id int64
	var name []byte
	it := protoenc.Iter{B: b}
	for it.Next() {
		f := &it.Field
		switch f.Key() {
		case key(mapKey, wireVarint):
			id = int64(f.Varint)
		case key(mapValue, wireBytes):
			v := protoenc.Iter{B: f.Bytes}
			for v.Next() {
				switch v.Field.Key() {
				case key(mdName, wireBytes):
					name = s.text(v.Field.Bytes)
				case key(statMDDescription, wireBytes):
					s.text(v.Field.Bytes) // unused, but checked and counted as a string
				}
			}
			if err := v.Err(); err != nil {
				return fmt.Errorf("stat metadata: %w", err)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("stat metadata: %w", err)
	}
	if p.statMD == nil {
		p.statMD = map[int64]string{}
	}
	p.statMD[id] = s.str(name)
	return nil
}
