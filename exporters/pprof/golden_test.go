package pprof

import (
	"bytes"
	"flag"
	"testing"

	"github.com/devprof/devprof/internal/eventtest"
)

// update rewrites the golden file instead of comparing with it:
// go test ./exporters/... -update.
var update = flag.Bool("update", false, "rewrite the golden files under ../../testdata/golden")

// goldenPath is the profile written from fixture(), for people to try
// `go tool pprof -top testdata/golden/memory.pb.gz` on.
const goldenPath = "../../testdata/golden/memory.pb.gz"

// TestGolden: the fixture encodes to the committed bytes, and the
// committed file reads back as the fixture's groups.
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	eventtest.CompareGolden(t, goldenPath, buf.Bytes(), *update)
	m, err := ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	want, got := groups(fixture()), groups(m)
	if len(got) != len(want) {
		t.Errorf("golden file holds %d groups, the fixture %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("golden file: group %+v has %d buffers, want %d", k, got[k], n)
		}
	}
}
