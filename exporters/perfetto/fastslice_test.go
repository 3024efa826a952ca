package perfetto

import (
	"bytes"
	"testing"

	"github.com/devprof/devprof/internal/eventtest"
)

// sliceFast writes exactly the bytes of slice's general path, and takes
// most of the events it can.
func TestSliceFastMatchesGeneralPath(t *testing.T) {
	for seed := range uint64(4) {
		s := eventtest.RandomArgsSnapshot(seed)
		write := func(fast bool) ([]byte, int) {
			t.Helper()
			noFastSlice = !fast
			defer func() { noFastSlice = false }()
			var buf bytes.Buffer
			w := &writer{w: &buf, s: s, m: &s.Meta}
			w.write()
			w.emit()
			if w.err != nil {
				t.Fatal(w.err)
			}
			return buf.Bytes(), w.fastSlices
		}
		general, none := write(false)
		fast, taken := write(true)
		if none != 0 {
			t.Fatalf("seed %d: %d fast slices with the fast path off", seed, none)
		}
		if !bytes.Equal(fast, general) {
			t.Fatalf("seed %d: the fast path's output differs at byte %d of %d (general %d bytes)", seed, eventtest.FirstDifference(fast, general), len(fast), len(general))
		}
		t.Logf("seed %d: %d of the events took the fast path", seed, taken)
		if taken < 300 {
			t.Errorf("seed %d: only %d events took the fast path", seed, taken)
		}
		if _, err := ReadTrace(bytes.NewReader(fast)); err != nil {
			t.Fatalf("seed %d: reading the output back: %v", seed, err)
		}
	}
}
