package perfetto

import (
	"encoding/binary"
	"math"
)

// enc appends protobuf wire format to a byte slice. Nested messages are
// opened with begin and closed with end, which back-patches the length
// (moving the body when the length needs more than one byte). Repeated
// scalars are always written unpacked, as the Perfetto schema (proto2)
// requires.
type enc struct {
	b []byte
}

const (
	wireVarint = 0
	wireI64    = 1
	wireBytes  = 2
	wireI32    = 5
)

func (e *enc) reset() { e.b = e.b[:0] }

func (e *enc) tag(field, wire int) { e.varint(uint64(field)<<3 | uint64(wire)) }

func (e *enc) varint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *enc) uint(field int, v uint64) {
	e.tag(field, wireVarint)
	e.varint(v)
}

// int writes an int32/int64 field: negative values are 10-byte
// sign-extended varints, not zigzag.
func (e *enc) int(field int, v int64) { e.uint(field, uint64(v)) }

func (e *enc) bool(field int, v bool) {
	var x uint64
	if v {
		x = 1
	}
	e.uint(field, x)
}

func (e *enc) fixed64(field int, v uint64) {
	e.tag(field, wireI64)
	e.b = binary.LittleEndian.AppendUint64(e.b, v)
}

func (e *enc) double(field int, v float64) { e.fixed64(field, math.Float64bits(v)) }

func (e *enc) string(field int, s string) {
	e.tag(field, wireBytes)
	e.varint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// begin opens a nested message and returns the position to pass to end.
func (e *enc) begin(field int) int {
	e.tag(field, wireBytes)
	e.b = append(e.b, 0)
	return len(e.b)
}

// end closes the nested message opened at pos.
func (e *enc) end(pos int) {
	n := len(e.b) - pos
	if n < 0x80 {
		e.b[pos-1] = byte(n)
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(tmp[:], uint64(n))
	e.b = append(e.b, tmp[:k-1]...) // grow by k-1
	copy(e.b[pos+k-1:], e.b[pos:pos+n])
	copy(e.b[pos-1:], tmp[:k])
}
