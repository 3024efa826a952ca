package xplane_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/xplanepb"
)

// The XSpace reader used to decode with the generated types of our own
// .proto subset (xplanepb); it now walks the wire with protoenc's decoder
// (decode.go). This measures the choice on JAX's real 309 KB XSpace.
//
// BenchmarkDecodeXSpace/generated is proto.Unmarshal into xplanepb types,
// everything the old reader decoded. /reader is the reader's first pass:
// planes, metadata, stats and line headers, every field parsed and checked
// as Unmarshal would, events left as bytes for the second pass to decode
// line by line into the sink (BenchmarkReadXSpace measures the whole).
// /protowire-walk only visits every field of every message and keeps
// nothing: the floor under any decoder of the same messages. Figures from
// before the two passes, on a 2-core VM: generated 19-22 ms, 3.5 MB and
// 98,000 allocations; reader (then every event decoded into slices) 9 ms,
// 6.4 MB and 125 allocations; walk 1.7 ms and none.
func BenchmarkDecodeXSpace(b *testing.B) {
	data := mustReadFile(b, realTSL)
	b.Run("generated", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var xs xplanepb.XSpace
			if err := proto.Unmarshal(data, &xs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reader", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if err := xplane.DecodeSpace(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protowire-walk", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if n := walk(data, 0); n == 0 {
				b.Fatal("nothing walked")
			}
		}
	})
}

// walk visits every field of a message and, to depth 6 (space, plane,
// line, event, stat), of the messages nested in it, and counts them.
// Bytes fields that are not messages (strings) fail to parse as fields and
// are counted as leaves.
func walk(b []byte, depth int) int {
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || num == 0 {
			return n
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return n
		}
		if typ == protowire.BytesType && depth < 6 {
			v, _ := protowire.ConsumeBytes(b)
			n += walk(v, depth+1)
		}
		b = b[l:]
		n++
	}
	return n
}
