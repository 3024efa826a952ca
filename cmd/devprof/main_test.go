package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/mlpdemo"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDemoOutputs(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	o, snap, err := demo(context.Background(), dir, mlpdemo.Config{Steps: 12, Workers: 3, Out: &out}, true, &out)
	if err != nil {
		t.Fatal(err)
	}
	if o.Perfetto == "" || o.Chrome == "" || o.XPlane == "" || o.Dropped != 0 || o.Events < 12*3*10 {
		t.Fatalf("outputs %+v", o)
	}
	for _, p := range []string{o.Perfetto, o.Chrome} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	steps := 0
	for _, r := range snap.Events {
		if r.Name == "train" {
			steps++
		}
	}
	if steps != 12 {
		t.Fatalf("%d train steps recorded, want 12", steps)
	}
	conformance.Export(t, "demo", o.Perfetto, snap)
	conformance.ExportXPlane(t, "demo", o.XPlane, snap)
}

func TestDemoCommandPrintsWhereAndHow(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI("demo", "-logdir", dir, "-steps", "3", "-workers", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "plugins", "profile", "*", "*.pftrace"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	for _, want := range []string{files[0], "devprof serve " + files[0], "devprof summary " + files[0], "step   3/3", "tensorboard --logdir " + dir, "xprof --logdir " + dir, ".xplane.pb"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestHelpAndUsageErrors(t *testing.T) {
	if code, _, e := runCLI(); code != 2 || !strings.Contains(e, "Usage") {
		t.Errorf("no args: %d %q", code, e)
	}
	if code, _, e := runCLI("frobnicate"); code != 2 || !strings.Contains(e, `unknown command "frobnicate"`) {
		t.Errorf("unknown: %d %q", code, e)
	}
	for _, c := range []string{"demo", "serve", "summary"} {
		code, _, e := runCLI(c, "-h")
		if code != 0 || !strings.Contains(e, "Usage: devprof "+c) {
			t.Errorf("%s -h: %d %q", c, code, e)
		}
	}
	if code, _, e := runCLI("summary"); code != 2 || !strings.Contains(e, "exactly one FILE") {
		t.Errorf("summary without file: %d %q", code, e)
	}
	if code, _, e := runCLI("demo", "-steps", "x"); code != 2 || !strings.Contains(e, "invalid value") {
		t.Errorf("bad flag: %d %q", code, e)
	}
}

func TestBadFilesGetOneLineErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.pftrace")
	corrupt := filepath.Join(dir, "corrupt.pftrace")
	os.WriteFile(corrupt, []byte{0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3}, 0o644)
	for _, args := range [][]string{{"summary", missing}, {"summary", corrupt}, {"serve", "-timeout", "1ms", missing}} {
		code, _, e := runCLI(args...)
		if code != 1 || strings.Count(strings.TrimSpace(e), "\n") != 0 || !strings.HasPrefix(e, "devprof "+args[0]+": ") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line", args, code, e)
		}
	}
}
