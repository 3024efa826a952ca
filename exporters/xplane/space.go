package xplane

import (
	"cmp"
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
type spaceBuf struct {
	protoenc.Enc
	holes []hole // every large message, in the order they were ended
}

// hole is the length prefix of a large message.
type hole struct {
	pos int // where the message's bytes begin; its placeholder is at pos-1
	n   int // its length as written: its bytes and the longer prefixes of the holes in it
}

// holeMin is the size from which a message's prefix is a hole rather than
// moved into place. Moving a message of 64 KiB costs less than a
// microsecond; tests lower it to make every message a hole.
var holeMin = 64 << 10

// end closes the message begun at pos (protoenc.Enc.Begin).
func (s *spaceBuf) end(pos int) {
	n := len(s.B) - pos
	if n < holeMin {
		// Nothing in it is a hole (a hole's message is at least as long).
		s.Enc.End(pos)
		return
	}
	// The bytes counted so far hold one placeholder byte for each hole in
	// the message, at any depth: each adds its prefix's length beyond that
	// byte. The holes in it are the ones ended since it began, the last
	// ones of holes (which are in the order they ended).
	for i := len(s.holes) - 1; i >= 0 && s.holes[i].pos > pos; i-- {
		n += protoenc.VarintLen(uint64(s.holes[i].n)) - 1
	}
	s.holes = append(s.holes, hole{pos: pos, n: n})
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
