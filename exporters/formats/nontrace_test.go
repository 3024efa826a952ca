package formats

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file of a known other kind is named for what it is, whatever its name
// says, and no trace in the repository is taken for one.
func TestKnownNonTraces(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"image.pftrace", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a trace (a PNG image)"},
		{"photo.xplane.pb", "\xff\xd8\xff\xe0\x00\x10JFIF", "not a trace (a JPEG image)"},
		{"report.json", "%PDF-1.7\n", "not a trace (a PDF document)"},
		{"run.trace", "\x7fELF\x02\x01\x01", "not a trace (an ELF executable)"},
		{"x.pftrace", "\x28\xb5\x2f\xfd\x00", "not a trace (a zstd file (devprof reads gzip))"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Detect(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Detect(%s): %v, want %q", c.name, err, c.want)
		}
	}
	var traces []string
	for _, pattern := range []string{"../../testdata/golden/*", "../../testdata/real-gpu/*.*", "../../testdata/real-gpu/h200/*.p*", "../../testdata/real-gpu/h200/*.xplane.pb", "../../testdata/*.xplane.pb"} {
		m, _ := filepath.Glob(pattern)
		traces = append(traces, m...)
	}
	if len(traces) < 10 {
		t.Fatalf("found only %d traces", len(traces))
	}
	for _, p := range traces {
		head, err := readHead(p)
		if err != nil {
			continue // not every file there is a trace (manifests, READMEs)
		}
		if what := knownNonTrace(head); what != "" {
			t.Errorf("%s taken for %s", p, what)
		}
	}
}
