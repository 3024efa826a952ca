package protoenc

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestNestedLengthsAreBackPatched(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 20000, 3 << 20} {
		var e Enc
		e.Uint(1, 7)
		p := e.Begin(2)
		e.String(3, strings.Repeat("x", n))
		e.End(p)
		e.Int(4, -1)

		var want []byte
		want = protowire.AppendTag(want, 1, protowire.VarintType)
		want = protowire.AppendVarint(want, 7)
		var inner []byte
		inner = protowire.AppendTag(inner, 3, protowire.BytesType)
		inner = protowire.AppendString(inner, strings.Repeat("x", n))
		want = protowire.AppendTag(want, 2, protowire.BytesType)
		want = protowire.AppendBytes(want, inner)
		want = protowire.AppendTag(want, 4, protowire.VarintType)
		want = protowire.AppendVarint(want, uint64(1<<64-1))
		if !bytes.Equal(e.B, want) {
			t.Fatalf("n=%d: encodings differ", n)
		}
	}
}

func TestScalars(t *testing.T) {
	var e Enc
	e.Bool(1, true)
	e.Fixed64(2, 5)
	e.Double(3, 1.5)
	e.Bytes(4, []byte{1, 2})
	b := e.B
	for _, want := range []protowire.Type{protowire.VarintType, protowire.Fixed64Type, protowire.Fixed64Type, protowire.BytesType} {
		_, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != want {
			t.Fatalf("type %v, want %v", typ, want)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(0, typ, b)
		if m < 0 {
			t.Fatal("bad value")
		}
		b = b[m:]
	}
}

func TestVarintLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<35 - 1, 1 << 35, 1<<56 - 1, 1 << 56, 1 << 63, math.MaxUint64} {
		if got, want := VarintLen(v), protowire.SizeVarint(v); got != want {
			t.Errorf("VarintLen(%d) = %d, want %d", v, got, want)
		}
	}
}
