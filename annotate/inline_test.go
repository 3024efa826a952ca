package annotate

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// With tracing off a span must cost the caller one atomic load and a
// branch: that holds only while Begin, BeginInt, BeginLeaf, BeginLevel, Span.End, Instant and
// Counter.Set inline into their callers and the load inside them
// (recorder.On) inlines too. The compiler's own report (-gcflags=-m) is
// the judge; this fails the day an edit pushes one over the inlining
// budget.
func TestDisabledPathInlines(t *testing.T) {
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	report := string(out)
	for _, fn := range []string{"Begin", "BeginInt", "BeginLeaf", "BeginLevel", "Span.End", "Instant", "Counter.Set", "Enabled"} {
		if !regexp.MustCompile(`(?m): can inline ` + regexp.QuoteMeta(fn) + `( |$)`).MatchString(report) {
			t.Errorf("%s no longer inlines: the disabled path costs a call", fn)
		}
	}
	// Each of Begin, BeginInt, BeginLeaf, BeginLevel, Instant,
	// Counter.Set and Enabled inlines the load itself.
	if n := strings.Count(report, "inlining call to recorder.On"); n < 7 {
		t.Errorf("recorder.On inlined %d times in annotate, want at least 7:\n%s", n, report)
	}
}
