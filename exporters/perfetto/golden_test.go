package perfetto

import (
	"flag"
	"io"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// update rewrites the golden file instead of comparing with it:
// go test ./exporters/... -update.
var update = flag.Bool("update", false, "rewrite the golden files under ../../testdata/golden")

func TestGolden(t *testing.T) {
	eventtest.Golden(t, "perfetto", "../../testdata/golden/session.pftrace", *update,
		func(w io.Writer, s *event.Snapshot) error { return Write(w, s, WriteOptions{}) },
		ReadFile)
}
