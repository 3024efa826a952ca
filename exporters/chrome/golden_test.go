package chrome

import (
	"bytes"
	"flag"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// update rewrites the golden files instead of comparing with them:
// go test ./exporters/... -update.
var update = flag.Bool("update", false, "rewrite the golden files under ../../testdata/golden")

const golden = "../../testdata/golden/session.trace.json"

// TestGolden writes eventtest.GoldenSnapshot and compares the bytes with
// the golden file, so that any change to the output is seen (and, if
// intended, recorded with -update); then it reads the golden file back,
// metadata included.
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePlain(&buf, eventtest.GoldenSnapshot()); err != nil {
		t.Fatal(err)
	}
	eventtest.CompareGolden(t, golden, buf.Bytes(), *update)

	s, err := ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	steps, kernels := 0, 0
	for _, r := range s.Events {
		switch {
		case r.Kind == event.KindSpan && s.Name(r) == "train":
			steps++
		case s.Name(r) == "saxpy": // an activity, or a span where the format has no devices
			kernels++
		}
	}
	if steps != 2 || kernels != 2 {
		t.Errorf("read back %d train spans and %d saxpy kernels, want 2 and 2", steps, kernels)
	}
	// The warning, the note and the drops of both sources come back as
	// the structure they were.
	eventtest.CheckMeta(t, "chrome", s, eventtest.GoldenSnapshot())
}
