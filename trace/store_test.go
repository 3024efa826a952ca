package trace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/trace"
)

// TestSessionToBucketURL writes two sessions of one host and one session
// id to a file:// bucket URL (gocloud's fileblob, the same upload path as
// s3://; cmd/devprof's tests run it against a real S3 server): the first
// takes <host>.*, the second <host>_2.*, nothing is overwritten, and the
// objects hold what each session recorded.
func TestSessionToBucketURL(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where sessions stage a bucket's files
	logdir := "file://" + filepath.ToSlash(dir) + "/logs"
	for i, span := range []string{"first", "second"} {
		s, err := trace.StartSession(logdir, trace.Options{Hostname: "h", SessionID: "run"})
		if err != nil {
			t.Fatal(err)
		}
		_, sp := annotate.Begin(context.Background(), span)
		sp.End()
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		stem := []string{"h", "h_2"}[i]
		o := s.Outputs()
		if o.RunDir != logdir+"/plugins/profile/run" || s.RunDir() != o.RunDir ||
			o.Perfetto != o.RunDir+"/"+stem+".pftrace" || o.XPlane != o.RunDir+"/"+stem+".xplane.pb" {
			t.Fatalf("session %d outputs %+v", i, o)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "logs", "plugins", "profile", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "h.pftrace h.xplane.pb h_2.pftrace h_2.xplane.pb" {
		t.Fatalf("run holds %s", got)
	}
	for stem, span := range map[string]string{"h": "first", "h_2": "second"} {
		snap, _, err := formats.Read(filepath.Join(dir, "logs", "plugins", "profile", "run", stem+".xplane.pb"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range snap.Events {
			found = found || snap.Name(r) == span
		}
		if !found {
			t.Errorf("%s.xplane.pb lacks the span %q of its session", stem, span)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("staging left behind in TMPDIR: %v", left)
	}
}

// TestBucketWithoutDriver: a program that does not link a scheme's cloud
// driver (trace links none) fails at Start, naming the URL and the import
// that adds the driver, and records nothing.
func TestBucketWithoutDriver(t *testing.T) {
	s, err := trace.StartSession("gs://bucket/prof", trace.Options{})
	if err == nil {
		s.Stop()
		t.Fatal("a session to gs:// started without the driver")
	}
	if !strings.Contains(err.Error(), "gs://bucket/prof") || !strings.Contains(err.Error(), `import _ "gocloud.dev/blob/gcsblob"`) {
		t.Fatalf("error %q, want the URL and the driver's import", err)
	}
	if _, running := trace.Running(); running {
		t.Fatal("a session is running after Start failed")
	}
}
