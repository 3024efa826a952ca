package perfetto

import (
	"fmt"
	"math"

	"github.com/devprof/devprof/internal/protoenc"
)

// This file holds the protobuf wire format, over internal/protoenc's decoder.

// The reader decodes each message it needs with a small function that
// walks its fields with eachField and switches on key(number, wire type);
// the bytes themselves are read by internal/protoenc's decoder, beside
// the encoder the writer uses and shared with the XSpace reader, which
// names the malformed field and where in its message it is.

// field is one decoded protobuf field. For wireBytes, b aliases the input.
type field struct {
	num int
	wt  int
	u   uint64 // varint, fixed64 or fixed32 value
	b   []byte
}

func key(num, wt int) uint64    { return protoenc.Key(num, wt) }
func (f *field) key() uint64    { return key(f.num, f.wt) }
func (f *field) int64() int64   { return int64(f.u) }
func (f *field) float() float64 { return math.Float64frombits(f.u) }

// readField decodes the field at the start of b and returns it with its
// size: protoenc's decoder (the XSpace reader's too), with lengths checked
// against the bytes left before anything is sliced. Groups, which no
// Perfetto message has, are an error here, as trace_processor's decoder
// has them.
func readField(b []byte) (field, int, error) {
	// The commonest field, decoded where the compiler inlines it.
	if f, n := protoenc.Fast(b); n > 0 {
		return field{num: int(f.Num), wt: int(f.Wire), u: f.Varint, b: f.Bytes}, n, nil
	}
	return readFieldSlow(b)
}

func readFieldSlow(b []byte) (field, int, error) {
	f, n, err := protoenc.Next(b)
	if err != nil {
		return field{}, 0, err
	}
	if f.Wire == protoenc.WireStartGroup {
		return field{}, 0, fmt.Errorf("field %d has unsupported wire type %d", f.Num, f.Wire)
	}
	return field{num: int(f.Num), wt: int(f.Wire), u: f.Varint, b: f.Bytes}, n, nil
}

// eachField calls fn for every field of the message b. fn takes the
// field by value: a pointer would move every field to the heap (most of
// the reader's allocations).
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

// appendVarints appends a repeated varint field, accepting the packed form
// too.
func appendVarints(dst []uint64, f *field) ([]uint64, error) {
	if f.wt == wireVarint {
		return append(dst, f.u), nil
	}
	out, err := protoenc.PackedVarints(dst, f.b)
	if err != nil {
		return nil, fmt.Errorf("field %d: %w", f.num, err)
	}
	return out, nil
}

// appendFixed64s appends a repeated fixed64 field, accepting the packed form
// too.
func appendFixed64s(dst []uint64, f *field) ([]uint64, error) {
	if f.wt == wireI64 {
		return append(dst, f.u), nil
	}
	out, err := protoenc.PackedFixed64(dst, f.b)
	if err != nil {
		return nil, fmt.Errorf("field %d: %w", f.num, err)
	}
	return out, nil
}
