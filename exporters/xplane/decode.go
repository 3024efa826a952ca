package xplane

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/internal/protoenc"
)

// The reader decodes each message it needs with a small function that
// walks its fields with eachField and switches on key(number, wire type),
// as the Perfetto reader does; the bytes themselves are read by protowire.
// It decodes into the plain structs below rather than xplanepb's generated
// types: events and stats go to two slices shared by the whole space, so
// that a file costs a few growing slices instead of an object per message,
// and strings stay bytes of the input until the reader uses them.
//
// Everything proto.Unmarshal would check is checked, so that the same
// files are rejected: every field of every message is parsed, packed
// child ids included, and every string field is checked for UTF-8 (where
// Unmarshal fails, the reader repairs the string and counts it). As with
// Unmarshal, a known field with an unexpected wire type is skipped, of
// scalars and oneofs the last wins, and a map entry's later key replaces an
// earlier one.

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

// field is one decoded protobuf field. For wireBytes, b aliases the input.
type field struct {
	num int
	wt  protowire.Type
	u   uint64 // varint or fixed64 value
	b   []byte
}

func key(num int, wt protowire.Type) uint64 { return uint64(num)<<3 | uint64(wt) }

func (f *field) key() uint64  { return key(f.num, f.wt) }
func (f *field) int64() int64 { return int64(f.u) }

// readField decodes the field at the start of b and returns it with its
// size. Fixed32 fields and groups, which XSpace does not use, are skipped
// over as proto.Unmarshal skips unknown fields.
func readField(b []byte) (field, int, error) {
	num, wt, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, 0, fmt.Errorf("field tag: %w", protowire.ParseError(n))
	}
	if num > protowire.MaxValidNumber {
		return field{}, 0, fmt.Errorf("invalid field number %d", num)
	}
	f := field{num: int(num), wt: wt}
	var m int
	switch wt {
	case protowire.VarintType:
		f.u, m = protowire.ConsumeVarint(b[n:])
	case protowire.Fixed64Type:
		f.u, m = protowire.ConsumeFixed64(b[n:])
	case protowire.BytesType:
		f.b, m = protowire.ConsumeBytes(b[n:])
	default:
		m = protowire.ConsumeFieldValue(num, wt, b[n:])
	}
	if m < 0 {
		return field{}, 0, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
	}
	return f, n + m, nil
}

// eachField calls fn for every field of the message b. The field is
// passed by value: a pointer would escape through fn, one allocation per
// field.
func eachField(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		f, n, err := readField(b)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// xspace is what the reader uses of an XSpace.
type xspace struct {
	planes                      []xplane
	errors, warnings, hostnames []string

	// events holds the events of all lines and stats the stats of all
	// events and event metadata; lines and metadata refer to runs of them.
	events []xevent
	stats  []xstat

	invalidUTF8 int               // strings that were not valid UTF-8
	strs        map[string]string // interned strings, see str
}

// extent is a run [start, end) of xspace.events or xspace.stats.
type extent struct{ start, end int }

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
	events            extent
}

type xevent struct {
	metadataID, offsetPS, durationPS int64
	aggregated                       bool // num_occurrences, not offset_ps
	stats                            extent
}

type xeventMeta struct {
	name, displayName []byte
	stats             extent
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

// decodeSpace decodes the XSpace b.
func decodeSpace(b []byte) (*xspace, error) {
	s := &xspace{strs: map[string]string{}}
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(spacePlanes, wireBytes):
			var p xplane
			if err := s.plane(&p, f.b); err != nil {
				return fmt.Errorf("plane %d: %w", len(s.planes), err)
			}
			s.planes = append(s.planes, p)
		case key(spaceErrors, wireBytes):
			s.errors = append(s.errors, s.str(s.text(f.b)))
		case key(spaceWarnings, wireBytes):
			s.warnings = append(s.warnings, s.str(s.text(f.b)))
		case key(spaceHostnames, wireBytes):
			s.hostnames = append(s.hostnames, s.str(s.text(f.b)))
		}
		return nil
	})
	return s, err
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

func (s *xspace) plane(p *xplane, b []byte) error {
	return eachField(b, func(f field) error {
		switch f.key() {
		case key(planeID, wireVarint):
			p.id = f.int64()
		case key(planeName, wireBytes):
			p.name = s.str(s.text(f.b))
		case key(planeLines, wireBytes):
			var l xline
			if err := s.line(&l, f.b); err != nil {
				return fmt.Errorf("line %d: %w", len(p.lines), err)
			}
			p.lines = append(p.lines, l)
		case key(planeEventMetadata, wireBytes):
			return s.eventMetaEntry(p, f.b)
		case key(planeStatMetadata, wireBytes):
			return s.statMetaEntry(p, f.b)
		case key(planeStats, wireBytes):
			st, err := s.stat(f.b)
			if err != nil {
				return fmt.Errorf("plane stat: %w", err)
			}
			p.stats = append(p.stats, st)
		}
		return nil
	})
}

// line decodes a line; its events are appended to s.events, nothing else
// is meanwhile, so they are one run.
func (s *xspace) line(l *xline, b []byte) error {
	l.events.start = len(s.events)
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(lineID, wireVarint):
			l.id = f.int64()
		case key(lineName, wireBytes):
			l.name = s.str(s.text(f.b))
		case key(lineDisplayName, wireBytes):
			l.displayName = s.str(s.text(f.b))
		case key(lineTimestampNS, wireVarint):
			l.timestampNS = f.int64()
		case key(lineEvents, wireBytes):
			if err := s.event(f.b); err != nil {
				return fmt.Errorf("event %d: %w", len(s.events)-l.events.start, err)
			}
		}
		return nil
	})
	l.events.end = len(s.events)
	return err
}

// event decodes an event into s.events, its stats into s.stats.
func (s *xspace) event(b []byte) error {
	e := xevent{stats: extent{start: len(s.stats)}}
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(eventMetadataID, wireVarint):
			e.metadataID = f.int64()
		case key(eventOffsetPS, wireVarint):
			e.offsetPS, e.aggregated = f.int64(), false
		case key(eventNumOccurrences, wireVarint):
			e.offsetPS, e.aggregated = 0, true
		case key(eventDurationPS, wireVarint):
			e.durationPS = f.int64()
		case key(eventStats, wireBytes):
			st, err := s.stat(f.b)
			if err != nil {
				return err
			}
			s.stats = append(grow(s.stats), st)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.stats.end = len(s.stats)
	s.events = append(grow(s.events), e)
	return nil
}

func (s *xspace) stat(b []byte) (xstat, error) {
	var st xstat
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(statMetadataID, wireVarint):
			st.metadataID = f.int64()
		case key(statDouble, wireI64):
			st.kind, st.num, st.b = statKindDouble, f.u, nil
		case key(statUint64, wireVarint):
			st.kind, st.num, st.b = statKindUint64, f.u, nil
		case key(statInt64, wireVarint):
			st.kind, st.num, st.b = statKindInt64, f.u, nil
		case key(statStr, wireBytes):
			st.kind, st.num, st.b = statKindStr, 0, s.text(f.b)
		case key(statBytes, wireBytes):
			st.kind, st.num, st.b = statKindBytes, 0, f.b
		case key(statRef, wireVarint):
			st.kind, st.num, st.b = statKindRef, f.u, nil
		}
		return nil
	})
	return st, err
}

// eventMetaEntry decodes an entry of a plane's event metadata map. Its
// value may come in parts, which merge (as proto.Unmarshal merges them);
// their stats are one run of s.stats.
func (s *xspace) eventMetaEntry(p *xplane, b []byte) error {
	var id int64
	md := xeventMeta{stats: extent{start: len(s.stats)}}
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(mapKey, wireVarint):
			id = f.int64()
		case key(mapValue, wireBytes):
			return s.eventMeta(&md, f.b)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("event metadata: %w", err)
	}
	md.stats.end = len(s.stats)
	if p.eventMD == nil {
		p.eventMD = map[int64]xeventMeta{}
	}
	p.eventMD[id] = md
	return nil
}

func (s *xspace) eventMeta(md *xeventMeta, b []byte) error {
	return eachField(b, func(f field) error {
		switch f.key() {
		case key(mdName, wireBytes):
			md.name = s.text(f.b)
		case key(eventMDDisplayName, wireBytes):
			md.displayName = s.text(f.b)
		case key(eventMDStats, wireBytes):
			st, err := s.stat(f.b)
			if err != nil {
				return err
			}
			s.stats = append(grow(s.stats), st)
		case key(eventMDChildID, wireBytes):
			// Unused, but a malformed packed list fails Unmarshal.
			for v := f.b; len(v) > 0; {
				_, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return fmt.Errorf("child_id: %w", protowire.ParseError(n))
				}
				v = v[n:]
			}
		}
		return nil
	})
}

// statMetaEntry decodes an entry of a plane's stat metadata map: the name,
// merged over the parts of the value as for event metadata.
func (s *xspace) statMetaEntry(p *xplane, b []byte) error {
	var id int64
	var name []byte
	err := eachField(b, func(f field) error {
		switch f.key() {
		case key(mapKey, wireVarint):
			id = f.int64()
		case key(mapValue, wireBytes):
			return eachField(f.b, func(f field) error {
				switch f.key() {
				case key(mdName, wireBytes):
					name = s.text(f.b)
				case key(statMDDescription, wireBytes):
					s.text(f.b) // unused, but checked and counted as a string
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("stat metadata: %w", err)
	}
	if p.statMD == nil {
		p.statMD = map[int64]string{}
	}
	p.statMD[id] = s.str(name)
	return nil
}

// grow returns s with room for one more element, doubling its capacity
// when full: append grows large slices by a quarter, which for the events
// and stats of a whole file allocates and copies five times their size.
func grow[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(len(s), 64))
}

// eventsOf returns a line's events.
func (s *xspace) eventsOf(l *xline) []xevent { return s.events[l.events.start:l.events.end] }

// statsIn returns a run of stats.
func (s *xspace) statsIn(e extent) []xstat { return s.stats[e.start:e.end] }
