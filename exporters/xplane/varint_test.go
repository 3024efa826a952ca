package xplane

import (
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestUvarintLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<35 - 1, 1 << 35, 1<<56 - 1, 1 << 56, 1 << 63, math.MaxUint64} {
		if got, want := uvarintLen(v), protowire.SizeVarint(v); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
}
