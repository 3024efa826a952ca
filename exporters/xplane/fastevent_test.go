package xplane

import (
	"bytes"
	"testing"

	"github.com/devprof/devprof/internal/eventtest"
)

// eventFast writes exactly the bytes of the general path, and takes most
// of the spans it can.
func TestEventFastMatchesGeneralPath(t *testing.T) {
	for seed := range uint64(4) {
		s := eventtest.RandomArgsSnapshot(seed)
		write := func(fast bool) ([]byte, int) {
			t.Helper()
			noFastEvent = !fast
			defer func() { noFastEvent = false }()
			var buf bytes.Buffer
			x, err := write(&buf, s)
			if err != nil {
				t.Fatal(err)
			}
			return buf.Bytes(), x.fastEvents
		}
		general, none := write(false)
		fast, taken := write(true)
		if none != 0 {
			t.Fatalf("seed %d: %d fast events with the fast path off", seed, none)
		}
		if !bytes.Equal(fast, general) {
			t.Fatalf("seed %d: the fast path's output differs at byte %d of %d (general %d bytes)", seed, eventtest.FirstDifference(fast, general), len(fast), len(general))
		}
		t.Logf("seed %d: %d of the spans took the fast path", seed, taken)
		if taken < 300 {
			t.Errorf("seed %d: only %d spans took the fast path", seed, taken)
		}
		if _, err := Read(bytes.NewReader(fast)); err != nil {
			t.Fatalf("seed %d: reading the output back: %v", seed, err)
		}
	}
}
