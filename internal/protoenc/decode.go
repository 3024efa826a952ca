package protoenc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decoding. The readers walk millions of small messages (an XPlane event
// is a dozen bytes, a Perfetto TrackEvent a few dozen), so the decoder is
// built for a loop that switches on each field as it comes: Next returns
// one field by value, allocates nothing, and handles the common field (a
// one-byte tag with a one-byte varint or length) in a body small enough
// for the compiler to inline into the loop; anything longer takes an
// out-of-line path. It checks what proto.Unmarshal checks of the wire
// format, so a reader built on it rejects the same files: field numbers
// 1 to 2^29-1, varints of at most 10 bytes that fit 64 bits, lengths
// within the message, groups closed by their own end.

// More wire types: fixed32 fields and the deprecated groups, which no
// devprof format uses but which a reader must step over as an unknown
// field.
const (
	WireStartGroup = 3
	WireEndGroup   = 4
	WireI32        = 5
)

// MaxFieldNumber is the largest valid field number.
const MaxFieldNumber = 1<<29 - 1

// maxGroupDepth bounds the nesting of groups, as protowire's default
// recursion limit does.
const maxGroupDepth = 10000

// Field is one field of a message as Next decodes it.
type Field struct {
	// Num is the field number, 1 to MaxFieldNumber.
	Num int32
	// Wire is the wire type: WireVarint, WireI64, WireBytes, WireI32 or
	// WireStartGroup.
	Wire uint8
	// Varint is the value of a varint, fixed64 or fixed32 field.
	Varint uint64
	// Bytes is the value of a length-delimited field and the content of
	// a group, aliasing the input.
	Bytes []byte
}

// Key returns the field's number and wire type as one value, the tag
// protobuf writes, for a switch over the fields a message expects.
func (f *Field) Key() uint64 { return Key(int(f.Num), int(f.Wire)) }

// Key returns the tag of field num with wire type wire.
func Key(num, wire int) uint64 { return uint64(num)<<3 | uint64(wire) }

// Error says what was malformed in a message and where.
type Error struct {
	// Offset is the position of the malformed field in the bytes given
	// to Next (an Iter adds where its message began).
	Offset int
	// Num is the field's number, 0 when the tag itself is malformed.
	Num int32
	// What describes the fault.
	What string
}

func (e *Error) Error() string {
	if e.Num == 0 {
		return fmt.Sprintf("protobuf: at byte %d: %s", e.Offset, e.What)
	}
	return fmt.Sprintf("protobuf: field %d at byte %d: %s", e.Num, e.Offset, e.What)
}

// Next decodes the field at the start of b and returns it with its size
// in bytes. b must not be empty.
func Next(b []byte) (Field, int, error) {
	// Fast's short form, written out: returning Fast's result through
	// a variable made the compiler copy it through memory.
	if len(b) >= 2 && b[0]-8 < 0x78 && b[1] < 0x80 {
		switch b[0] & 7 {
		case WireVarint:
			return Field{Num: int32(b[0] >> 3), Varint: uint64(b[1])}, 2, nil
		case WireBytes:
			if n := 2 + int(b[1]); n <= len(b) {
				return Field{Num: int32(b[0] >> 3), Wire: WireBytes, Bytes: b[2:n]}, n, nil
			}
		}
	}
	return next(b, 0)
}

// Fast decodes the field at the start of b when it has the short form of
// most fields in the formats devprof reads, a one-byte tag and a one-byte
// varint or length, and returns 0 for any other (call Next). It is small
// enough to be inlined into the caller's loop, where Next is a call:
//
//	f, n := protoenc.Fast(b)
//	if n == 0 {
//		if f, n, err = protoenc.Next(b); err != nil { ... }
//	}
func Fast(b []byte) (Field, int) {
	// b[0]-8 < 0x78: a one-byte tag (below 0x80) of a non-zero field
	// number (at least 8), in the one comparison the inliner's budget
	// leaves room for.
	if len(b) >= 2 && b[0]-8 < 0x78 && b[1] < 0x80 {
		switch b[0] & 7 {
		case WireVarint:
			return Field{Num: int32(b[0] >> 3), Varint: uint64(b[1])}, 2
		case WireBytes:
			if n := 2 + int(b[1]); n <= len(b) {
				return Field{Num: int32(b[0] >> 3), Wire: WireBytes, Bytes: b[2:n]}, n
			}
		}
	}
	return Field{}, 0
}

// next is Next's general path; depth counts the groups around b.
func next(b []byte, depth int) (Field, int, error) {
	tag, n := Varint(b)
	if n <= 0 {
		return fault(0, "tag: "+varintFault(n))
	}
	num := tag >> 3
	if num == 0 || num > MaxFieldNumber {
		return fault(0, fmt.Sprintf("invalid field number %d", num))
	}
	f := Field{Num: int32(num), Wire: uint8(tag & 7)}
	switch f.Wire {
	case WireVarint:
		v, m := Varint(b[n:])
		if m <= 0 {
			return fault(f.Num, varintFault(m))
		}
		f.Varint = v
		return f, n + m, nil
	case WireI64:
		if len(b)-n < 8 {
			return fault(f.Num, fmt.Sprintf("fixed64 truncated: %d of 8 bytes", len(b)-n))
		}
		f.Varint = binary.LittleEndian.Uint64(b[n:])
		return f, n + 8, nil
	case WireI32:
		if len(b)-n < 4 {
			return fault(f.Num, fmt.Sprintf("fixed32 truncated: %d of 4 bytes", len(b)-n))
		}
		f.Varint = uint64(binary.LittleEndian.Uint32(b[n:]))
		return f, n + 4, nil
	case WireBytes:
		l, m := Varint(b[n:])
		if m <= 0 {
			return fault(f.Num, "length: "+varintFault(m))
		}
		n += m
		if l > uint64(len(b)-n) {
			return fault(f.Num, fmt.Sprintf("length %d overruns the %d bytes left", l, len(b)-n))
		}
		f.Bytes = b[n : n+int(l)]
		return f, n + int(l), nil
	case WireStartGroup:
		return group(b, f, n, depth)
	case WireEndGroup:
		return fault(f.Num, "end of a group that was not begun")
	}
	return fault(f.Num, fmt.Sprintf("invalid wire type %d", f.Wire))
}

// group returns the group f whose content begins at b[n:]: it runs to
// the end-group tag of its own number.
func group(b []byte, f Field, n, depth int) (Field, int, error) {
	if depth >= maxGroupDepth {
		return fault(f.Num, "groups nested too deep")
	}
	for at := n; ; {
		if at == len(b) {
			return fault(f.Num, "group not closed")
		}
		end, k := Varint(b[at:])
		if k > 0 && end&7 == WireEndGroup {
			if end>>3 != uint64(f.Num) {
				return fault(f.Num, fmt.Sprintf("group closed by the end of field %d", end>>3))
			}
			f.Bytes = b[n:at]
			return f, at + k, nil
		}
		_, k, err := next(b[at:], depth+1)
		if err != nil {
			e := err.(*Error)
			e.Offset += at
			return Field{}, 0, e
		}
		at += k
	}
}

// fault returns the Error of a malformed field.
func fault(num int32, what string) (Field, int, error) {
	return Field{}, 0, &Error{Num: num, What: what}
}

// Varint decodes the base-128 varint at the start of b and returns it
// with its size: 0 when b ends inside it, -1 when it is longer than 10
// bytes or does not fit 64 bits.
func Varint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == binary.MaxVarintLen64 {
			return 0, -1
		}
		c := b[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func varintFault(n int) string {
	if n == 0 {
		return "varint truncated"
	}
	return "varint overflows 64 bits"
}

// Iter walks the fields of one message:
//
//	it := protoenc.Iter{B: msg}
//	for it.Next() {
//		switch it.Field.Key() { ... }
//	}
//	if err := it.Err(); err != nil { ... }
type Iter struct {
	// B is what remains of the message.
	B []byte
	// Field is the field Next decoded.
	Field Field
	// at is where B begins in the message; err is the walk's fault.
	at  int
	err error
}

// Next decodes the next field into it.Field and reports whether there
// was one; at the end of the message or at a malformed field it returns
// false, and Err tells which.
func (it *Iter) Next() bool {
	if len(it.B) == 0 {
		return false
	}
	f, n, err := Next(it.B)
	if err != nil {
		e := err.(*Error)
		e.Offset += it.at
		it.err, it.B = e, nil
		return false
	}
	it.Field, it.B, it.at = f, it.B[n:], it.at+n
	return true
}

// Err returns the fault that ended the walk, nil at the message's end.
func (it *Iter) Err() error { return it.err }

// Offset returns where the field Next decoded ends in the message.
func (it *Iter) Offset() int { return it.at }

// PackedVarints appends the varints of a packed repeated field to dst.
func PackedVarints(dst []uint64, b []byte) ([]uint64, error) {
	for at := 0; at < len(b); {
		v, n := Varint(b[at:])
		if n <= 0 {
			return dst, &Error{Offset: at, What: "packed " + varintFault(n)}
		}
		dst = append(dst, v)
		at += n
	}
	return dst, nil
}

// CheckPackedVarints reports whether b is a well-formed packed list of
// varints, for a field whose values a reader does not use but whose
// malformation proto.Unmarshal rejects.
func CheckPackedVarints(b []byte) error {
	for at := 0; at < len(b); {
		_, n := Varint(b[at:])
		if n <= 0 {
			return &Error{Offset: at, What: "packed " + varintFault(n)}
		}
		at += n
	}
	return nil
}

// PackedFixed64 appends the values of a packed repeated fixed64 (or
// double, through math.Float64frombits) field to dst.
func PackedFixed64(dst []uint64, b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return dst, &Error{Offset: len(b) - len(b)%8, What: fmt.Sprintf("packed fixed64 of %d bytes, not a multiple of 8", len(b))}
	}
	for at := 0; at < len(b); at += 8 {
		dst = append(dst, binary.LittleEndian.Uint64(b[at:]))
	}
	return dst, nil
}

// Double returns a fixed64 field's value as a double.
func (f *Field) Double() float64 { return math.Float64frombits(f.Varint) }
