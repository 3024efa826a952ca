package pprof

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// The H200 leak run (testdata/real-gpu/h200, see testdata/README.md):
// a program that allocated through a cgo binding of CUDA's allocator
// (internal/gpucheck/cudabind) from three call sites, main.loadCache
// leaking 4 MiB a step. Its profiles were written before the glue label.
const (
	h200Dir     = "../../testdata/real-gpu/h200"
	h200Binding = "github.com/devprof/devprof/internal/gpucheck/cudabind."
)

func readH200(t *testing.T, name string) *event.DeviceMemory {
	t.Helper()
	m, err := ReadFile(filepath.Join(h200Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestH200ProfilesNameTheBindingsCallers: read back, the profiles that
// predate the glue label name the binding's callers as call sites, with
// the binding's frames kept above them.
func TestH200ProfilesNameTheBindingsCallers(t *testing.T) {
	m := readH200(t, "leak.after.memory.pb.gz")
	sites := map[string]uint64{}
	for _, b := range m.Buffers {
		sites[b.SiteFrame().Function] += b.Total()
		if b.Glue != 2 || !strings.HasPrefix(b.Stack[0].Function, h200Binding) || !strings.HasPrefix(b.Stack[1].Function, h200Binding) {
			t.Errorf("buffer at %s: Glue %d, stack %v; want cudabind's two frames as glue", b.Site(), b.Glue, b.Stack)
		}
	}
	want := map[string]uint64{"main.loadWeights": 128 << 20, "main.loadCache": 48 << 20}
	if len(sites) != len(want) || sites["main.loadWeights"] != want["main.loadWeights"] || sites["main.loadCache"] != want["main.loadCache"] {
		t.Errorf("bytes by call site %v, want %v", sites, want)
	}
}

// TestH200LeakTopsPprofDiff: the H200 profiles written again by this
// writer show the leak as go tool pprof's users look for one: -diff_base
// puts main.loadCache on top with the 40 MiB it grew and nothing else
// changed; -top names no binding frame; -traces and -tags show the glue
// frames; and Read gives back the whole stack.
func TestH200LeakTopsPprofDiff(t *testing.T) {
	before, after := readH200(t, "leak.base.memory.pb.gz"), readH200(t, "leak.after.memory.pb.gz")
	basePath, afterPath := writeProfile(t, before, "base.pb.gz"), writeProfile(t, after, "after.pb.gz")

	rows, _ := parseTop(t, pprofTool(t, "-top", "-unit=B", "-diff_base", basePath, afterPath))
	if len(rows) == 0 || rows[0].name != "main.loadCache" || rows[0].flat != 40<<20 {
		t.Fatalf("-diff_base -top rows %v: want main.loadCache +%d bytes on top", rows, 40<<20)
	}
	for _, r := range rows[1:] {
		if r.flat != 0 {
			t.Errorf("-diff_base: %s changed by %d bytes flat; only main.loadCache grew", r.name, r.flat)
		}
	}

	out := pprofTool(t, "-top", "-unit=B", "-nodefraction=0", afterPath)
	rows, _ = parseTop(t, out)
	flat, cum, _ := want(after, nil, false)
	checkTop(t, "-top", rows, flat, cum)
	if strings.Contains(out, "cudabind") {
		t.Errorf("-top shows the binding:\n%s", out)
	}
	if rows[0].name != "main.loadWeights" || rows[1].name != "main.loadCache" {
		t.Errorf("-top rows %v: want main.loadWeights, then main.loadCache", rows)
	}

	traces := pprofTool(t, "-traces", afterPath)
	tags := pprofTool(t, "-tags", afterPath)
	for what, out := range map[string]string{"-traces": traces, "-tags": tags} {
		if !strings.Contains(out, "glue") || !strings.Contains(out, "cudabind.(*Lib).Malloc.func1 (") {
			t.Errorf("%s does not show the glue frames:\n%s", what, out)
		}
	}

	back, err := ReadFile(afterPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Buffers) != len(after.Buffers) {
		t.Fatalf("read back %d buffers, want %d", len(back.Buffers), len(after.Buffers))
	}
	for i := range back.Buffers {
		b, w := &back.Buffers[i], &after.Buffers[i]
		if b.Glue != w.Glue || !slices.Equal(b.Stack, w.Stack) || b.Total() != w.Total() {
			t.Errorf("buffer %d read back: Glue %d, %d bytes, stack %v\nwant Glue %d, %d bytes, stack %v", i, b.Glue, b.Total(), b.Stack, w.Glue, w.Total(), w.Stack)
		}
	}
}
