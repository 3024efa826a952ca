package protoenc

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// A message of every wire type, written by the encoder, decodes to what
// was written.
func TestNextReadsWhatEncWrites(t *testing.T) {
	var e Enc
	e.Uint(1, 7)
	e.Int(2, -1)
	e.Double(3, math.Pi)
	e.String(4, strings.Repeat("x", 300))
	e.Uint(MaxFieldNumber, 1<<63)
	p := e.Begin(6)
	e.Uint(1, 2)
	e.End(p)
	e.B = protowire.AppendTag(e.B, 7, protowire.Fixed32Type)
	e.B = protowire.AppendFixed32(e.B, 0xdeadbeef)
	e.B = protowire.AppendTag(e.B, 8, protowire.StartGroupType)
	e.B = protowire.AppendTag(e.B, 1, protowire.VarintType)
	e.B = protowire.AppendVarint(e.B, 5)
	e.B = protowire.AppendTag(e.B, 8, protowire.EndGroupType)
	e.Uint(9, 0)

	want := []Field{
		{Num: 1, Wire: WireVarint, Varint: 7},
		{Num: 2, Wire: WireVarint, Varint: math.MaxUint64},
		{Num: 3, Wire: WireI64, Varint: math.Float64bits(math.Pi)},
		{Num: 4, Wire: WireBytes, Bytes: []byte(strings.Repeat("x", 300))},
		{Num: MaxFieldNumber, Wire: WireVarint, Varint: 1 << 63},
		{Num: 6, Wire: WireBytes, Bytes: []byte{0x08, 0x02}},
		{Num: 7, Wire: WireI32, Varint: 0xdeadbeef},
		{Num: 8, Wire: WireStartGroup, Bytes: []byte{0x08, 0x05}},
		{Num: 9, Wire: WireVarint, Varint: 0},
	}
	it := Iter{B: e.B}
	var got []Field
	for it.Next() {
		got = append(got, it.Field)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if it.Offset() != len(e.B) {
		t.Errorf("walked %d of %d bytes", it.Offset(), len(e.B))
	}
	if len(got) != len(want) {
		t.Fatalf("%d fields, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Num != w.Num || g.Wire != w.Wire || g.Varint != w.Varint || !bytes.Equal(g.Bytes, w.Bytes) {
			t.Errorf("field %d: got %+v, want %+v", i, g, w)
		}
	}
	if got[2].Double() != math.Pi {
		t.Errorf("Double %v", got[2].Double())
	}
	if got[0].Key() != Key(1, WireVarint) || got[3].Key() != 4<<3|WireBytes {
		t.Errorf("keys %#x %#x", got[0].Key(), got[3].Key())
	}
}

// Malformed messages fail with an Error that names the fault and where
// it is.
func TestNextRejectsMalformed(t *testing.T) {
	ok := []byte{0x08, 0x01} // field 1 = 1, before each fault
	for _, c := range []struct {
		name string
		msg  []byte
		num  int32
		at   int
		what string
	}{
		{"truncated tag", []byte{0x80}, 0, 0, "tag: varint truncated"},
		{"overlong tag", bytes.Repeat([]byte{0x80}, 11), 0, 0, "tag: varint overflows 64 bits"},
		{"field number 0", []byte{0x00, 0x01}, 0, 0, "invalid field number 0"},
		{"field number 0 with bytes", []byte{0x02, 0x00}, 0, 0, "invalid field number 0"},
		{"field number past 2^29-1", protowire.AppendTag(nil, MaxFieldNumber+1, protowire.VarintType), 0, 0, "invalid field number 536870912"},
		{"truncated varint", []byte{0x10, 0xff, 0xff}, 2, 0, "varint truncated"},
		{"varint of 11 bytes", append([]byte{0x10}, append(bytes.Repeat([]byte{0xff}, 10), 0x01)...), 2, 0, "varint overflows 64 bits"},
		{"varint past 64 bits", append([]byte{0x10}, append(bytes.Repeat([]byte{0xff}, 9), 0x02)...), 2, 0, "varint overflows 64 bits"},
		{"length past the end", []byte{0x1a, 0x05, 'a', 'b'}, 3, 0, "length 5 overruns the 2 bytes left"},
		{"huge length", append([]byte{0x1a}, protowire.AppendVarint(nil, math.MaxUint64)...), 3, 0, "length 18446744073709551615 overruns the 0 bytes left"},
		{"truncated length", []byte{0x1a, 0x80}, 3, 0, "length: varint truncated"},
		{"truncated fixed64", []byte{0x21, 1, 2, 3}, 4, 0, "fixed64 truncated: 3 of 8 bytes"},
		{"truncated fixed32", []byte{0x2d, 1}, 5, 0, "fixed32 truncated: 1 of 4 bytes"},
		{"end group alone", []byte{0x0c}, 1, 0, "end of a group that was not begun"},
		{"group not closed", []byte{0x0b, 0x08, 0x01}, 1, 0, "group not closed"},
		{"group closed by another field", []byte{0x0b, 0x14}, 1, 0, "group closed by the end of field 2"},
		{"malformed field in a group", []byte{0x0b, 0x08, 0x01, 0x10, 0x80}, 2, 3, "varint truncated"},
		{"wire type 6", []byte{0x0e}, 1, 0, "invalid wire type 6"},
		{"wire type 7", []byte{0x0f, 0x00}, 1, 0, "invalid wire type 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			it := Iter{B: append(append([]byte(nil), ok...), c.msg...)}
			if !it.Next() || it.Field.Num != 1 {
				t.Fatalf("the good field before the fault: %v", it.Err())
			}
			if it.Next() {
				t.Fatalf("decoded %+v", it.Field)
			}
			var e *Error
			if !errors.As(it.Err(), &e) {
				t.Fatalf("error %v, want an *Error", it.Err())
			}
			if e.Num != c.num || e.Offset != len(ok)+c.at || e.What != c.what {
				t.Errorf("got field %d at %d: %q; want field %d at %d: %q", e.Num, e.Offset, e.What, c.num, len(ok)+c.at, c.what)
			}
			if !strings.HasPrefix(e.Error(), "protobuf: ") || !strings.Contains(e.Error(), c.what) {
				t.Errorf("message %q", e.Error())
			}
			if _, n, err := Next(c.msg); err == nil || n != 0 {
				t.Errorf("Next: n %d, err %v", n, err)
			}
		})
	}
}

// Groups nested past the recursion limit fail instead of exhausting the
// stack.
func TestNextBoundsGroupNesting(t *testing.T) {
	deep := bytes.Repeat([]byte{0x0b}, maxGroupDepth+1)
	deep = append(deep, bytes.Repeat([]byte{0x0c}, maxGroupDepth+1)...)
	if _, _, err := Next(deep); err == nil || !strings.Contains(err.Error(), "groups nested too deep") {
		t.Fatalf("err %v", err)
	}
}

func TestFastTakesOnlyTheShortForm(t *testing.T) {
	for _, c := range []struct {
		msg []byte
		n   int
	}{
		{[]byte{0x08, 0x7f}, 2},
		{[]byte{0x12, 0x01, 'a'}, 3},
		{[]byte{0x12, 0x00}, 2},
		{[]byte{0x78, 0x00}, 2},       // field 15, the last one-byte tag
		{[]byte{0x00, 0x00}, 0},       // field 0
		{[]byte{0x08, 0x80, 0x01}, 0}, // two-byte value
		{[]byte{0x80, 0x01, 0x00}, 0}, // two-byte tag
		{[]byte{0x12, 0x02, 'a'}, 0},  // length past the end
		{[]byte{0x09, 1}, 0},          // fixed64
		{[]byte{0x08}, 0},
	} {
		f, n := Fast(c.msg)
		if n != c.n {
			t.Errorf("% x: n %d, want %d", c.msg, n, c.n)
			continue
		}
		if n == 0 {
			continue
		}
		g, m, err := next(c.msg, 0)
		if err != nil || m != n || g.Num != f.Num || g.Wire != f.Wire || g.Varint != f.Varint || !bytes.Equal(g.Bytes, f.Bytes) {
			t.Errorf("% x: Fast %+v %d, general path %+v %d %v", c.msg, f, n, g, m, err)
		}
	}
}

func TestPacked(t *testing.T) {
	var b []byte
	for _, v := range []uint64{0, 1, 300, math.MaxUint64} {
		b = protowire.AppendVarint(b, v)
	}
	got, err := PackedVarints(nil, b)
	if err != nil || len(got) != 4 || got[2] != 300 || got[3] != math.MaxUint64 {
		t.Fatalf("%v %v", got, err)
	}
	if err := CheckPackedVarints(b); err != nil {
		t.Fatal(err)
	}
	bad := append(b[:len(b):len(b)], 0x80)
	if _, err := PackedVarints(nil, bad); err == nil || !strings.Contains(err.Error(), "packed varint truncated") {
		t.Errorf("truncated: %v", err)
	}
	if err := CheckPackedVarints(bad); err == nil {
		t.Error("CheckPackedVarints took a truncated list")
	}
	f64 := protowire.AppendFixed64(protowire.AppendFixed64(nil, 1), math.Float64bits(2.5))
	vs, err := PackedFixed64(nil, f64)
	if err != nil || len(vs) != 2 || vs[0] != 1 || math.Float64frombits(vs[1]) != 2.5 {
		t.Fatalf("%v %v", vs, err)
	}
	if _, err := PackedFixed64(nil, f64[:9]); err == nil {
		t.Error("PackedFixed64 took 9 bytes")
	}
}

// checkAgainstProtowire decodes b field by field with Next and with
// protowire and fails where they disagree on a field or on whether the
// message is well formed.
func checkAgainstProtowire(t *testing.T, b []byte) {
	t.Helper()
	for at := 0; at < len(b); {
		f, n, err := Next(b[at:])
		num, wt, tn := protowire.ConsumeTag(b[at:])
		m := -1
		if tn > 0 && num <= protowire.MaxValidNumber {
			m = protowire.ConsumeFieldValue(num, wt, b[at+tn:])
		}
		if (err != nil) != (m < 0) {
			t.Fatalf("at %d: Next %v, protowire %d", at, err, m)
		}
		if err != nil {
			return
		}
		if n != tn+m || int(f.Num) != int(num) || f.Wire != uint8(wt) {
			t.Fatalf("at %d: Next %+v (%d bytes), protowire %d/%d (%d bytes)", at, f, n, num, wt, tn+m)
		}
		v := b[at+tn:]
		switch wt {
		case protowire.VarintType:
			x, _ := protowire.ConsumeVarint(v)
			if x != f.Varint {
				t.Fatalf("at %d: varint %d, protowire %d", at, f.Varint, x)
			}
		case protowire.BytesType:
			x, _ := protowire.ConsumeBytes(v)
			if !bytes.Equal(x, f.Bytes) {
				t.Fatalf("at %d: bytes differ", at)
			}
		case protowire.Fixed64Type:
			if x, _ := protowire.ConsumeFixed64(v); x != f.Varint {
				t.Fatalf("at %d: fixed64 %d, protowire %d", at, f.Varint, x)
			}
		case protowire.Fixed32Type:
			if x, _ := protowire.ConsumeFixed32(v); uint64(x) != f.Varint {
				t.Fatalf("at %d: fixed32 %d, protowire %d", at, f.Varint, x)
			}
		}
		at += n
	}
}

// FuzzNext holds the decoder to protowire's reading of any bytes: the
// same fields, and the same verdict on what is malformed.
func FuzzNext(f *testing.F) {
	var e Enc
	e.Uint(1, 150)
	e.String(2, "name")
	e.Double(3, 1.5)
	p := e.Begin(4)
	e.Int(1, -2)
	e.End(p)
	f.Add(e.B)
	f.Add([]byte{0x0b, 0x08, 0x01, 0x0c, 0x15, 1, 2, 3, 4})
	f.Add([]byte{0x00})
	f.Add([]byte{0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstProtowire(t, b)
		if len(b) > 0 {
			if _, err := PackedVarints(nil, b); (err == nil) != (CheckPackedVarints(b) == nil) {
				t.Fatal("PackedVarints and CheckPackedVarints disagree")
			}
		}
	})
}

// eventLike is a message of the shape the readers' hot loops walk: an
// XPlane event (metadata id, offset and duration in picoseconds, one stat).
func eventLike(n int) []byte {
	var e Enc
	for i := range n {
		p := e.Begin(4)
		e.Uint(1, uint64(i%8+1))
		e.Uint(2, uint64(i)*1_000_000)
		e.Uint(3, 800_000)
		s := e.Begin(4)
		e.Uint(1, 3)
		e.Int(4, int64(i%49))
		e.End(s)
		e.End(p)
	}
	return e.B
}

// sumNext walks msg's fields and those of the messages in its field 4
// (two levels, as an event's stats) with Next, summing the varints.
func sumNext(msg []byte, depth int) uint64 {
	var sum uint64
	for b := msg; len(b) > 0; {
		f, n, err := Next(b)
		if err != nil {
			return 0
		}
		b = b[n:]
		switch {
		case f.Wire == WireVarint:
			sum += f.Varint
		case f.Wire == WireBytes && f.Num == 4 && depth < 2:
			sum += sumNext(f.Bytes, depth+1)
		}
	}
	return sum
}

// sumFast is sumNext with Fast inlined into the loop, Next taking the
// rest.
func sumFast(msg []byte, depth int) uint64 {
	var sum uint64
	for b := msg; len(b) > 0; {
		f, n := Fast(b)
		if n == 0 {
			var err error
			if f, n, err = Next(b); err != nil {
				return 0
			}
		}
		b = b[n:]
		switch {
		case f.Wire == WireVarint:
			sum += f.Varint
		case f.Wire == WireBytes && f.Num == 4 && depth < 2:
			sum += sumFast(f.Bytes, depth+1)
		}
	}
	return sum
}

// sumProtowire is sumNext written out over protowire's functions, which
// inline: the hand-inlined loop the decoder must keep up with.
func sumProtowire(msg []byte, depth int) uint64 {
	var sum uint64
	for b := msg; len(b) > 0; {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		switch wt {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0
			}
			sum += v
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return 0
			}
			if num == 4 && depth < 2 {
				sum += sumProtowire(v, depth+1)
			}
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return 0
			}
			b = b[m:]
		}
	}
	return sum
}

// BenchmarkWalk compares a walk of 100,000 event-like messages with Next,
// with Fast in the loop and Next for the rest, and over protowire's
// (inlined) functions.
func BenchmarkWalk(b *testing.B) {
	msg := eventLike(100_000)
	want := sumProtowire(msg, 0)
	for _, c := range []struct {
		name string
		sum  func([]byte, int) uint64
	}{{"Next", sumNext}, {"Fast+Next", sumFast}, {"protowire", sumProtowire}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if c.sum(msg, 0) != want {
					b.Fatal("wrong sum")
				}
			}
		})
	}
}
