// Package protoenc appends protobuf wire format to a byte slice, and
// decodes it (Next, Iter; decode.go). devprof's
// exporters use it to stream Perfetto packets and XPlane messages without
// building message objects: nested messages are opened with Begin and
// closed with End, which back-patches the length (moving the body only when
// the length needs more than one byte). Repeated scalars are written one
// tag per element (unpacked), as proto2 schemas such as Perfetto's require.
package protoenc

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Wire types.
const (
	WireVarint = 0
	WireI64    = 1
	WireBytes  = 2
)

// Enc is an append-only protobuf encoder. The zero value is ready to use.
type Enc struct {
	B []byte
}

// Reset empties the buffer, keeping its capacity.
func (e *Enc) Reset() { e.B = e.B[:0] }

// Tag appends a field key.
func (e *Enc) Tag(field, wire int) { e.Varint(uint64(field)<<3 | uint64(wire)) }

// Varint appends v as a base-128 varint.
func (e *Enc) Varint(v uint64) { e.B = AppendVarint(e.B, v) }

// AppendVarint appends v to b as a base-128 varint.
func AppendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// VarintLen returns the length of v as a base-128 varint: what a message
// whose length is known before it is written needs for its prefix.
func VarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// Uint appends a uint32/uint64/enum field.
func (e *Enc) Uint(field int, v uint64) {
	e.Tag(field, WireVarint)
	e.Varint(v)
}

// Int appends an int32/int64 field: negative values are 10-byte
// sign-extended varints, not zigzag.
func (e *Enc) Int(field int, v int64) { e.Uint(field, uint64(v)) }

// Bool appends a bool field.
func (e *Enc) Bool(field int, v bool) {
	var x uint64
	if v {
		x = 1
	}
	e.Uint(field, x)
}

// Fixed64 appends a fixed64 field.
func (e *Enc) Fixed64(field int, v uint64) {
	e.Tag(field, WireI64)
	e.B = binary.LittleEndian.AppendUint64(e.B, v)
}

// Double appends a double field.
func (e *Enc) Double(field int, v float64) { e.Fixed64(field, math.Float64bits(v)) }

// String appends a string field.
func (e *Enc) String(field int, s string) {
	e.Tag(field, WireBytes)
	e.Varint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Bytes appends a bytes field, or an already encoded nested message.
func (e *Enc) Bytes(field int, b []byte) {
	e.Tag(field, WireBytes)
	e.Varint(uint64(len(b)))
	e.B = append(e.B, b...)
}

// Begin opens a nested message and returns the position to pass to End.
func (e *Enc) Begin(field int) int {
	e.Tag(field, WireBytes)
	e.B = append(e.B, 0)
	return len(e.B)
}

// End closes the nested message opened at pos.
func (e *Enc) End(pos int) {
	n := len(e.B) - pos
	if n < 0x80 {
		e.B[pos-1] = byte(n)
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(tmp[:], uint64(n))
	e.B = append(e.B, tmp[:k-1]...) // grow by k-1
	copy(e.B[pos+k-1:], e.B[pos:pos+n])
	copy(e.B[pos-1:], tmp[:k])
}
