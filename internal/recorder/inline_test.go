package recorder

import (
	"os/exec"
	"strings"
	"testing"
)

// A span's Begin reaches the buffer through one call (StartSpan or
// StartSpanInt) and only the runtime's pin, the clock and the unpin are
// calls behind it: the string-cache lookups, the reservation, the header
// and the context are helpers small enough to inline. This fails the day
// an edit pushes one of them over the inlining budget (a nanosecond or more
// of every span each; the compiler's -m report is the judge).
func TestSpanPathInlines(t *testing.T) {
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	report := string(out)
	for _, helper := range []string{
		"(*strtab).cached", "(*Buffer).parentIDs", "(*Buffer).takeOn",
		"(*Record).openSpan", "(*SpanContext).set", "(*Record).publish", "(*Buffer).unpin",
	} {
		// Once into StartSpan and once into StartSpanInt at least.
		if n := strings.Count(report, "inlining call to "+helper+"\n"); n < 2 {
			t.Errorf("%s inlined %d times, want at least 2 (StartSpan and StartSpanInt): the span path gained a call", helper, n)
		}
	}
}
