package profileserver_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/profileserver"
)

// venvPython returns the conformance virtualenv's interpreter (.venv at
// the module root, made by scripts/pyenv). Without it the test skips,
// except under scripts/test (DEVPROF_CONFORMANCE_DIR set), where the
// virtualenv is always there and a skip would hide a failure.
func venvPython(t *testing.T) string {
	t.Helper()
	py := filepath.Join(moduleRoot(t), ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		if conformance.Dir() != "" {
			t.Fatalf("DEVPROF_CONFORMANCE_DIR is set but the conformance virtualenv is missing (%v): run scripts/pyenv", err)
		}
		t.Skipf("no conformance virtualenv (%v): run scripts/pyenv, or scripts/test", err)
	}
	return py
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestJaxCollectProfileCapturesAGoProgram is the real client's test: JAX's
// own `python -m jax.collect_profile PORT 2000 --log_dir DIR
// --no_perfetto_link` against this Go process serving on 127.0.0.1 while
// it annotates work. The client must write
// DIR/plugins/profile/<run>/127.0.0.1_<port>.xplane.pb (from the response's
// tool data: the server writes nothing), devprof's reader must find in it
// the spans of the window and none from before, and the client's own
// conversion of it with xprof's converters (remote.trace.json.gz) must
// show them too.
func TestJaxCollectProfileCapturesAGoProgram(t *testing.T) {
	py := venvPython(t)
	var log bytes.Buffer
	srv, err := profileserver.StartServer("", profileserver.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, port, _ := net.SplitHostPort(srv.Addr())

	_, sp := annotate.Begin(context.Background(), "before-window")
	sp.End()
	work(t, "go-served-work")

	logdir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "jax.collect_profile", port, "2000", "--log_dir", logdir, "--no_perfetto_link")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "JAX_PLATFORMS=cpu")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("jax.collect_profile (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("jax.collect_profile failed: %v", err)
	}

	runs, _ := filepath.Glob(filepath.Join(logdir, "plugins", "profile", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	xp := filepath.Join(runs[0], "127.0.0.1_"+port+".xplane.pb")
	snap, err := xplane.ReadFile(xp)
	if err != nil {
		t.Fatalf("the file the client wrote: %v", err)
	}
	n := map[string]int{}
	for _, r := range snap.Events {
		n[snap.Name(r)]++
	}
	// One span about every millisecond for the 2 s window.
	if n["go-served-work"] < 100 || n["before-window"] != 0 {
		t.Errorf("spans in %s: %d go-served-work (want ≥ 100), %d before-window (want 0)", xp, n["go-served-work"], n["before-window"])
	}
	if d := time.Duration(snap.Meta.Stop.Mono - snap.Meta.Start.Mono); d < 1900*time.Millisecond || d > 10*time.Second {
		t.Errorf("the capture lasted %v, want about 2s", d)
	}

	// The client converted the file with xprof's trace_viewer converter.
	f, err := os.Open(filepath.Join(runs[0], "remote.trace.json.gz"))
	if err != nil {
		t.Fatalf("the client's xprof conversion: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"go-served-work"`) {
		t.Errorf("xprof's trace_viewer output (remote.trace.json.gz, %d bytes) lacks the served spans", len(js))
	}
}
