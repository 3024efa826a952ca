package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/conformance"
)

// venvPython returns the conformance virtualenv's interpreter (.venv at
// the module root, made by scripts/pyenv). Without it the test skips,
// except under scripts/test (DEVPROF_CONFORMANCE_DIR set), where the
// virtualenv is always there and a skip would hide a failure.
func venvPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		if conformance.Dir() != "" {
			t.Fatalf("DEVPROF_CONFORMANCE_DIR is set but the conformance virtualenv is missing (%v): run scripts/pyenv", err)
		}
		t.Skipf("no conformance virtualenv (%v): run scripts/pyenv, or scripts/test", err)
	}
	return py
}

// jaxServer is the JAX program devprof collect captures: it serves
// jax.profiler's ProfilerService on the port given, says "ready", and
// runs a jitted step in a loop until its stdin closes or a minute passes.
const jaxServer = `
import sys, threading, time
import jax, jax.numpy as jnp, jax.profiler
jax.profiler.start_server(int(sys.argv[1]))
step = jax.jit(lambda x: jnp.tanh(x @ x) * 0.5)
x = jnp.ones((128, 128), jnp.float32)
step(x).block_until_ready()
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
print("ready", flush=True)
end = time.time() + 60
while not done.is_set() and time.time() < end:
    with jax.profiler.TraceAnnotation("devprof-jax-step"):
        x = step(x).block_until_ready()
`

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestCollectCapturesJAX is devprof capturing a JAX program: a real
// jax.profiler.start_server process (jax[cpu] from the conformance
// virtualenv) running a jitted loop, captured with `devprof collect
// 127.0.0.1:PORT 1000 --log_dir DIR --no_perfetto_link`. The run must
// hold JAX's xplane with its host plane's XLA and JAX events, readable by
// devprof, and the merged Perfetto trace must put them in the host's
// process.
func TestCollectCapturesJAX(t *testing.T) {
	py := venvPython(t)
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", jaxServer, fmt.Sprint(port))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "JAX_PLATFORMS=cpu")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		defer func(t0 time.Time) { t.Logf("the JAX program ended %v after its stdin closed", time.Since(t0)) }(time.Now())
		if err := cmd.Wait(); err != nil {
			t.Errorf("the JAX program: %v\n%s", err, stderr.String())
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the JAX program did not start (%q, %v):\n%s", line, err, stderr.String())
	}

	t.Logf("the JAX program was ready after %v", time.Since(started))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	capture := time.Now()
	logdir := t.TempDir()
	code, stdout, errOut := runCLI("collect", addr, "1000", "--log_dir", logdir, "--no_perfetto_link")
	if code != 0 {
		t.Fatalf("devprof collect: exit %d:\n%s", code, errOut)
	}
	t.Logf("devprof collect took %v", time.Since(capture))
	runDir := strings.TrimSpace(stdout)
	xs, err := xplane.ReadFile(filepath.Join(runDir, fileHostName(addr)+".xplane.pb"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, r := range xs.Events {
		if r.Kind() == event.KindSpan {
			names[s(xs, r)]++
		}
	}
	if names["devprof-jax-step"] < 5 {
		t.Errorf("%d devprof-jax-step annotations in a 1s capture of a loop of them; spans: %v", names["devprof-jax-step"], top(names))
	}
	xla := 0
	for n, c := range names {
		if strings.Contains(n, "Pjit") || strings.Contains(n, "Execute") || strings.Contains(n, "jit_") || strings.Contains(n, "Thunk") {
			xla += c
		}
	}
	if xla == 0 {
		t.Errorf("no XLA or JAX runtime event on JAX's host plane; spans: %v", top(names))
	}
	t.Logf("JAX's xplane: %d events, %d devprof-jax-step, %d XLA/JAX runtime spans", len(xs.Events), names["devprof-jax-step"], xla)

	// The merged trace reads back with the spans and instants merging the
	// xplane gives (the checker compares every event: scripts/test).
	merged := filepath.Join(runDir, collectMergedName)
	if st, err := os.Stat(merged); err != nil || st.Size() == 0 {
		t.Fatalf("no merged trace: %v", err)
	}
	want := mergeHosts([]collectedHost{{name: addr, snap: xs}})
	read := time.Now()
	back, err := perfetto.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading the merged trace back took %v", time.Since(read))
	kinds := func(s *event.Snapshot) map[event.Kind]int {
		m := map[event.Kind]int{}
		for _, r := range s.Events {
			m[r.Kind()]++
		}
		return m
	}
	if g, w := kinds(back), kinds(want); g[event.KindSpan]+g[event.KindActivity] != w[event.KindSpan]+w[event.KindActivity] || g[event.KindInstant] != w[event.KindInstant] {
		t.Errorf("the merged trace reads back as %v records by kind, want %v", g, w)
	}
	if back.Meta.Dropped() != want.Meta.Dropped() {
		t.Errorf("the merged trace reads back with %d dropped, want %d: %+v", back.Meta.Dropped(), want.Meta.Dropped(), back.Meta.Warnings)
	}
	conformance.Export(t, "collect_jax", merged, want)
}

// s is the record's name.
func s(snap *event.Snapshot, r *event.Record) string { return snap.Name(r) }

// top lists up to 15 span names with their counts, for failure messages.
func top(names map[string]int) string {
	var b strings.Builder
	i := 0
	for n, c := range names {
		if i == 15 {
			b.WriteString("…")
			break
		}
		fmt.Fprintf(&b, "%q×%d ", n, c)
		i++
	}
	return b.String()
}
