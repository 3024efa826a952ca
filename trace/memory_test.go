package trace_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/trace"
)

func TestSaveDeviceMemoryProfileNeedsTracking(t *testing.T) {
	if err := trace.SaveDeviceMemoryProfile(filepath.Join(t.TempDir(), "m.pb.gz")); !errors.Is(err, devmem.ErrNotTracking) {
		t.Errorf("SaveDeviceMemoryProfile with tracking off: %v, want ErrNotTracking", err)
	}
}

func TestSessionTracksDeviceMemory(t *testing.T) {
	logdir := t.TempDir()
	s, err := trace.StartSession(logdir, trace.Options{
		DeviceMemory:      &devmem.Options{CUDA: devmem.ModeOff},
		DeviceTracerLevel: trace.Off,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !devmem.Tracking() {
		t.Fatal("the session did not turn tracking on")
	}
	ctx := devmem.WithTags(context.Background(), "weights")
	devmem.Alloc(ctx, 0x10, 1<<20, devmem.Attrs{Device: 0})
	devmem.Alloc(ctx, 0x20, 2<<20, devmem.Attrs{Device: 1})
	devmem.Free(0x10)
	devmem.Free(0x10) // a double free: the session's trace says so
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if devmem.Tracking() {
		t.Error("tracking still on after the session that started it stopped")
	}
	out := s.Outputs()
	if out.Memory != filepath.Join(out.RunDir, "testhost.memory.pb.gz") && filepath.Dir(out.Memory) != out.RunDir {
		t.Fatalf("memory profile at %q, want in %q", out.Memory, out.RunDir)
	}
	m, err := pprof.ReadFile(out.Memory)
	if err != nil {
		t.Fatal(err)
	}
	if bytes, n := m.Live(); bytes != 2<<20 || n != 1 || m.Buffers[0].Device != 1 {
		t.Errorf("profile holds %d bytes in %d buffers (%+v), want 2 MiB in 1 on device 1", bytes, n, m.Buffers)
	}
	found := false
	for _, w := range s.Snapshot().Meta.Warnings {
		found = found || w.Code == "double_free"
	}
	if !found {
		t.Errorf("the trace's warnings %v lack the double free", s.Snapshot().Meta.Warnings)
	}
}

func TestSessionLeavesProgramsTrackingOn(t *testing.T) {
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off, NoXPlane: true})
	if err != nil {
		t.Fatal(err)
	}
	devmem.Alloc(context.Background(), 1, 64, devmem.Attrs{})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !devmem.Tracking() {
		t.Error("the session stopped tracking it did not start")
	}
	if s.Outputs().Memory == "" {
		t.Error("no memory profile written while tracking was on")
	}
}

func TestAdvancedDeviceMemoryKeys(t *testing.T) {
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off, NoPerfetto: true, NoXPlane: true,
		AdvancedConfig: map[string]any{"device_memory": true, "device_memory_max_buffers": 1}})
	if err != nil {
		t.Fatal(err)
	}
	devmem.Alloc(context.Background(), 1, 64, devmem.Attrs{})
	devmem.Alloc(context.Background(), 2, 64, devmem.Attrs{}) // past the bound of 1
	c := devmem.Counts()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if c.Untracked != 1 || c.UntrackedBytes != 64 {
		t.Errorf("counts %+v: device_memory_max_buffers=1 did not bound the table", c)
	}
}

// leakyStep keeps one buffer per call: the leak the profile must find.
//
//go:noinline
func leakyStep(ctx context.Context, i int) {
	devmem.Alloc(ctx, uint64(0x100000+i), 3<<20, devmem.Attrs{Tags: []string{"cache"}})
}

// steadyStep allocates and frees: it must not show in the diff.
//
//go:noinline
func steadyStep(ctx context.Context, i int) {
	devmem.Alloc(ctx, uint64(0x200000+i), 5<<20, devmem.Attrs{})
	devmem.Free(uint64(0x200000 + i))
}

// TestLeakTopsDiffBase is the leak hunt of docs/device-memory.md: profiles before and after
// nine more steps, and `go tool pprof -top -diff_base` must name the
// leaking function first, with exactly the bytes it kept.
func TestLeakTopsDiffBase(t *testing.T) {
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.pb.gz"), filepath.Join(dir, "after.pb.gz")
	ctx := context.Background()
	devmem.Alloc(ctx, 1, 64<<20, devmem.Attrs{}) // weights, alive in both
	for i := range 10 {
		steadyStep(ctx, i)
		leakyStep(ctx, i)
		if i == 0 {
			if err := trace.SaveDeviceMemoryProfile(before); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := trace.SaveDeviceMemoryProfile(after); err != nil {
		t.Fatal(err)
	}
	out := goPprof(t, "-top", "-unit=B", "-diff_base="+before, after)
	rows := topRows(out)
	if len(rows) == 0 {
		t.Fatalf("no rows in pprof's output:\n%s", out)
	}
	if !strings.HasSuffix(rows[0].fn, "trace_test.leakyStep") || rows[0].flat != 9*(3<<20) {
		t.Errorf("first row %+v, want trace_test.leakyStep with %d bytes\n%s", rows[0], 9*(3<<20), out)
	}
	for _, r := range rows[1:] {
		if r.flat != 0 {
			t.Errorf("row %+v: only the leak may differ between the profiles\n%s", r, out)
		}
	}
}

func goPprof(t *testing.T, args ...string) string {
	t.Helper()
	// go test runs test binaries with GOROOT set to the toolchain's.
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); os.Getenv("GOROOT") == "" || err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to run go tool pprof: %v", err)
		}
	}
	cmd := exec.Command(gobin, append([]string{"tool", "pprof"}, args...)...)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

type topRow struct {
	flat int64
	fn   string
}

// topRows parses `pprof -top -unit=B`'s table: flat, flat%, sum%, cum,
// cum%, function.
func topRows(out string) []topRow {
	var rows []topRow
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" {
			inTable = true
			continue
		}
		if !inTable || len(f) < 6 {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(f[0], "B"), 10, 64)
		if err != nil {
			continue
		}
		rows = append(rows, topRow{flat: n, fn: f[5]})
	}
	return rows
}
