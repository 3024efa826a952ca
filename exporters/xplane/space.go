package xplane

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/devprof/devprof/internal/protoenc"
)

// spaceBuf is the XSpace being written: its bytes, and the length
// prefixes of its large messages, which go in when it is written out.
//
// A message's length precedes its bytes, so an encoder that writes in
// one pass reserves a byte for it and, when the message turns out longer
// than 127 bytes, moves the message up to fit the longer prefix
// (protoenc.End). For the host plane of a million spans that moved the
// whole 22 MB space twice (the plane, its one line). A message of
// holeMin bytes or more is left where it is instead and its prefix
// recorded as a hole; WriteTo writes the bytes around the holes and the
// prefixes in them, which gives the same bytes.
//
// A space too large to hold (Write's streamMin) is encoded twice through
// a spaceBuf each: one measuring, which keeps only the messages still
// open and small, and learns every hole's length; then one streaming,
// which writes each hole's length in front of its message as it begins
// (the messages begun are the same, in the same order) and hands w every
// byte no open small message can still move.
type spaceBuf struct {
	protoenc.Enc
	holes []hole // every large message, in the order they were ended

	// measuring and w (streaming) are the two passes over a large space;
	// neither is set for a space built in memory.
	measuring bool
	w         io.Writer
	err       error  // the first error writing to w
	known     []hole // streaming: the holes measuring found, in the order they began
	// base counts the bytes gone from the front of B (discarded when
	// measuring, written when streaming): positions are from the start
	// of the space, B holds the bytes from base on.
	base  int
	begun int       // messages begun through Begin so far
	open  []openMsg // messages begun through Begin and not yet ended
}

// hole is the length prefix of a large message.
type hole struct {
	pos   int // where the message's bytes begin; its placeholder is at pos-1
	n     int // its length as written: its bytes and the longer prefixes of the holes in it
	begun int // which message it is: the count of Begin calls that began it
}

// openMsg is a message begun through spaceBuf.Begin.
type openMsg struct {
	pos   int  // where its bytes begin
	begun int  // which message it is (hole.begun)
	hole  bool // streaming: its length, n, was written in front of it
	n     int
}

// holeMin is the size from which a message's prefix is a hole rather than
// moved into place. Moving a message of 64 KiB costs less than a
// microsecond; tests lower it to make every message a hole.
var holeMin = 64 << 10

// flushMin is how many bytes a measuring or streaming space gathers
// before it lets go of the ones it can.
const flushMin = 256 << 10

// Begin opens a nested message under field and returns its position, to
// be passed to end. (Stats and metadata open theirs with the Enc's own
// Begin and End: they are small and closed before anything else is
// written.)
func (s *spaceBuf) Begin(field int) int {
	if !s.measuring && s.w == nil {
		return s.Enc.Begin(field)
	}
	s.begun++
	if s.w != nil && len(s.known) > 0 && s.known[0].begun == s.begun {
		// A large message: its length is known, and goes in front of it.
		n := s.known[0].n
		s.known = s.known[1:]
		s.Tag(field, protoenc.WireBytes)
		s.B = protoenc.AppendVarint(s.B, uint64(n))
		s.open = append(s.open, openMsg{pos: s.base + len(s.B), begun: s.begun, hole: true, n: n})
		return s.base + len(s.B)
	}
	pos := s.base + s.Enc.Begin(field)
	s.open = append(s.open, openMsg{pos: pos, begun: s.begun})
	return pos
}

// end closes the message begun at pos (Begin).
func (s *spaceBuf) end(pos int) {
	var m openMsg
	if s.measuring || s.w != nil {
		m = s.open[len(s.open)-1]
		s.open = s.open[:len(s.open)-1]
	}
	n := s.base + len(s.B) - pos
	switch {
	case m.hole:
		// Its length went in front of it; the two passes must agree.
		if n != m.n {
			s.fail(fmt.Errorf("xplane: internal error: a message of %d bytes was measured at %d", n, m.n))
		}
	case n < holeMin:
		// Nothing in it is a hole (a hole's message is at least as long).
		s.Enc.End(pos - s.base)
	case s.w != nil:
		s.fail(fmt.Errorf("xplane: internal error: a message of %d bytes was not measured", n))
	default:
		// The bytes counted so far hold one placeholder byte for each
		// hole in the message, at any depth: each adds its prefix's
		// length beyond that byte. The holes in it are the ones ended
		// since it began, the last ones of holes (which are in the order
		// they ended).
		for i := len(s.holes) - 1; i >= 0 && s.holes[i].pos > pos; i-- {
			n += protoenc.VarintLen(uint64(s.holes[i].n)) - 1
		}
		s.holes = append(s.holes, hole{pos: pos, n: n, begun: m.begun})
	}
	s.spill()
}

// spill flushes a measuring or streaming space that holds flushMin bytes
// or more. It is called where a message ends, so that what its bytes
// take is let go of as the space is encoded.
func (s *spaceBuf) spill() {
	if len(s.B) >= flushMin && (s.measuring || s.w != nil) {
		s.flush()
	}
}

// flush lets go of the bytes before the first open message that may still
// be moved into place (one that is, or may end, under holeMin): written to
// w when streaming, dropped when measuring.
func (s *spaceBuf) flush() {
	cut := len(s.B)
	for _, m := range s.open {
		if !m.hole && (s.w != nil || s.base+len(s.B)-m.pos < holeMin) {
			cut = m.pos - 1 - s.base // its placeholder, which End rewrites
			break
		}
	}
	if cut <= 0 {
		return
	}
	if s.w != nil && s.err == nil {
		_, s.err = s.w.Write(s.B[:cut])
	}
	s.B = s.B[:copy(s.B, s.B[cut:])]
	s.base += cut
}

// fail records err as the space's error, unless it has one.
func (s *spaceBuf) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// holesByBegin returns the holes a measuring space found, in the order
// their messages began.
func (s *spaceBuf) holesByBegin() []hole {
	return slices.SortedFunc(slices.Values(s.holes), func(a, b hole) int { return cmp.Compare(a.begun, b.begun) })
}

// close writes what a streaming space still holds and returns the first
// error.
func (s *spaceBuf) close() error {
	if len(s.open) > 0 || len(s.known) > 0 {
		s.fail(fmt.Errorf("xplane: internal error: %d messages open and %d measured ones not begun at the end of the space", len(s.open), len(s.known)))
	}
	s.flush()
	return s.err
}

// WriteTo writes the space: its bytes, with each hole's placeholder byte
// replaced by the message's length.
func (s *spaceBuf) WriteTo(w io.Writer) (int64, error) {
	holes := slices.SortedFunc(slices.Values(s.holes), func(a, b hole) int { return cmp.Compare(a.pos, b.pos) })
	var total int64
	put := func(b []byte) error {
		n, err := w.Write(b)
		total += int64(n)
		return err
	}
	from := 0
	var prefix []byte
	for _, h := range holes {
		if err := put(s.B[from : h.pos-1]); err != nil {
			return total, err
		}
		prefix = protoenc.AppendVarint(prefix[:0], uint64(h.n))
		if err := put(prefix); err != nil {
			return total, err
		}
		from = h.pos
	}
	return total, put(s.B[from:])
}
