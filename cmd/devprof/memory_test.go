package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
)

var (
	loadStack = []event.Frame{{Function: "main.load", File: "/src/main.go", Line: 40}, {Function: "main.main", File: "/src/main.go", Line: 10}}
	stepStack = []event.Frame{{Function: "main.step", File: "/src/train.go", Line: 71}, {Function: "main.train", File: "/src/train.go", Line: 20}, {Function: "main.main", File: "/src/main.go", Line: 12}}
	leakStack = []event.Frame{{Function: "main.(*Cache).put", File: "/src/cache.go", Line: 58}, {Function: "main.step", File: "/src/train.go", Line: 75}}
)

// liveMemory is a tracker's listing: groups of equal buffers of different
// totals on two devices and the host, one without a stack, and counts
// that say some allocations were not tracked.
func liveMemory() *event.DeviceMemory {
	m := &event.DeviceMemory{
		Time:     time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Counts:   event.MemoryCounts{Allocs: 20, Frees: 9, Untracked: 2, UntrackedBytes: 5 << 20, UnknownFrees: 3},
		Warnings: []event.Warning{{Source: "memory", Code: "untracked", Text: "memory: 2 allocations (5.0 MiB) were not tracked: the table was full"}},
	}
	add := func(n int, b event.Buffer) {
		for range n {
			b.Count = 1
			b.Address = uint64(0x7000 + len(m.Buffers)*0x100)
			m.Buffers = append(m.Buffers, b)
		}
	}
	add(3, event.Buffer{Bytes: 6 << 20, Device: 0, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights", "fp16"}, Stack: loadStack})
	add(1, event.Buffer{Bytes: 6 << 20, Device: 1, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights", "fp16"}, Stack: loadStack})
	add(4, event.Buffer{Bytes: 1 << 20, Device: 1, Kind: "device", Source: "cuda", API: "cuMemAllocAsync", Span: "train/step", Stack: stepStack})
	add(1, event.Buffer{Bytes: 300 << 10, Device: -1, Kind: "pinned", Source: "api", Stack: stepStack})
	add(1, event.Buffer{Bytes: 5000, Device: 0, Kind: "managed", Source: "cuda", API: "cudaMallocManaged"})
	return m
}

func writeMemProfile(t *testing.T, m *event.DeviceMemory, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := pprof.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// memGroup is a row devprof memory should print: buffers equal in all
// but address.
type memGroup struct {
	bytes            uint64
	device           int
	kind, tags, site string
	stack            []event.Frame
	count            int
}

// groupsOf groups m's buffers as a row does, largest total first.
func groupsOf(m *event.DeviceMemory) []*memGroup {
	var out []*memGroup
	for i := range m.Buffers {
		b := &m.Buffers[i]
		g := &memGroup{bytes: b.Bytes, device: b.Device, kind: b.Kind, tags: tagsSpan(b), site: b.Site(), stack: b.Stack}
		if g.site == "" {
			g.site = "(no stack)"
		}
		j := slices.IndexFunc(out, func(o *memGroup) bool {
			return o.bytes == g.bytes && o.device == g.device && o.kind == g.kind && o.tags == g.tags && slices.Equal(o.stack, g.stack)
		})
		if j < 0 {
			out = append(out, g)
			j = len(out) - 1
		}
		out[j].count += max(b.Count, 1)
	}
	slices.SortStableFunc(out, func(a, b *memGroup) int {
		return cmp.Compare(b.bytes*uint64(b.count), a.bytes*uint64(a.count))
	})
	return out
}

// rowsOf splits the table devprof memory printed into its header's
// column names, its rows' cells (columns are two or more spaces apart;
// no cell holds two spaces) and the lines under each row.
func rowsOf(t *testing.T, out, firstColumn string) (head []string, rows [][]string, under [][]string) {
	t.Helper()
	gap := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), firstColumn+" ") })
	if i < 0 {
		t.Fatalf("no table in\n%s", out)
	}
	head = gap.Split(strings.TrimSpace(lines[i]), -1)
	for _, l := range lines[i+1:] {
		switch {
		case strings.HasPrefix(l, "    ") && len(rows) > 0 && !strings.HasPrefix(strings.TrimSpace(l), "+") && !strings.HasPrefix(strings.TrimSpace(l), "-") && !isNumberStart(l):
			under[len(under)-1] = append(under[len(under)-1], strings.TrimSpace(l))
		case l == "" || strings.HasPrefix(l, "…") || strings.Contains(l, "unchanged"):
			return head, rows, under
		default:
			rows = append(rows, gap.Split(strings.TrimSpace(l), -1))
			under = append(under, nil)
		}
	}
	return head, rows, under
}

// isNumberStart reports whether a line starts, after its padding, with a
// digit: a right-aligned row, not a stack line.
func isNumberStart(l string) bool {
	t := strings.TrimSpace(l)
	return t != "" && t[0] >= '0' && t[0] <= '9'
}

// TestMemoryTable: every row of devprof memory -bytes is one group of the
// buffers written, in order of total size, with its count, size, device,
// kind, tags, span and site; the header counts what is live and shows the
// tracker's warning and counts; -stack prints each row's stack.
func TestMemoryTable(t *testing.T) {
	m := liveMemory()
	path := writeMemProfile(t, m, "m.pb.gz")
	code, out, errOut := runCLI("memory", "-bytes", "-stack", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	live, bufs := m.Live()
	for _, want := range []string{
		fmt.Sprintf("%s: device memory at %s: %d bytes in %d live buffers\n", path, m.Time.Local().Format("2006-01-02 15:04:05 MST"), live, bufs),
		"warning: " + m.Warnings[0].Text + "\n",
		"tracker: 20 allocations and 9 frees seen; 2 allocations (5.0 MiB) untracked, so not below; 3 frees of unknown pointers\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	head, rows, under := rowsOf(t, out, "TOTAL")
	if want := []string{"TOTAL", "COUNT", "SIZE", "DEVICE", "KIND", "TAGS/SPAN", "ALLOCATED AT"}; !slices.Equal(head, want) {
		t.Fatalf("columns %q, want %q", head, want)
	}
	groups := groupsOf(m)
	if len(rows) != len(groups) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(groups), out)
	}
	for i, g := range groups {
		want := []string{strconv.FormatUint(g.bytes*uint64(g.count), 10), strconv.Itoa(g.count), strconv.FormatUint(g.bytes, 10),
			pprof.DeviceLabel(g.device), g.kind, g.tags, g.site}
		if !slices.Equal(rows[i], want) {
			t.Errorf("row %d: %q\nwant   %q", i, rows[i], want)
		}
		var stack []string
		for _, f := range g.stack {
			stack = append(stack, f.String())
		}
		if len(stack) == 0 {
			stack = []string{"(no stack)"}
		}
		if !slices.Equal(under[i], stack) {
			t.Errorf("row %d stack %q, want %q", i, under[i], stack)
		}
	}
}

// TestMemoryRowsAndUnits: -n keeps the largest rows and says how much the
// rest hold; sizes are in binary units without -bytes.
func TestMemoryRowsAndUnits(t *testing.T) {
	m := liveMemory()
	path := writeMemProfile(t, m, "m.pb.gz")
	groups := groupsOf(m)
	var rest uint64
	for _, g := range groups[2:] {
		rest += g.bytes * uint64(g.count)
	}
	code, out, _ := runCLI("memory", path, "-n", "2", "-bytes")
	_, rows, _ := rowsOf(t, out, "TOTAL")
	if code != 0 || len(rows) != 2 || !strings.Contains(out, fmt.Sprintf("… %d more rows (%d bytes); -n 0 shows all\n", len(groups)-2, rest)) {
		t.Errorf("-n 2: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("memory", path)
	_, rows, _ = rowsOf(t, out, "TOTAL")
	if code != 0 || len(rows) != len(groups) || strings.Contains(out, "more row") {
		t.Errorf("default -n: exit %d, %d rows\n%s", code, len(rows), out)
	}
	for i, g := range groups {
		if rows[i][0] != size(g.bytes*uint64(g.count), false) || rows[i][2] != size(g.bytes, false) {
			t.Errorf("row %d sizes %q %q, want %s and %s", i, rows[i][0], rows[i][2], size(g.bytes*uint64(g.count), false), size(g.bytes, false))
		}
	}
	if code, _, stderr := runCLI("memory", path, "-n", "-1"); code != 2 || !strings.Contains(stderr, "-n -1: want 0 (all) or more") {
		t.Errorf("-n -1: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("memory", path, path); code != 2 || !strings.Contains(stderr, "got 2") {
		t.Errorf("two files: exit %d, %q", code, stderr)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 300 << 10: "300.0 KiB", 1<<20 - 1: "1.0 MiB",
		6 << 20: "6.0 MiB", 18 << 20: "18.0 MiB", 80 << 30: "80.0 GiB", 1 << 62: "4.0 EiB"} {
		if got := size(n, false); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
		if got := size(n, true); got != strconv.FormatUint(n, 10) {
			t.Errorf("size(%d, exact) = %q", n, got)
		}
	}
	if signedSize(-2048, false) != "-2.0 KiB" || signedSize(2048, true) != "+2048" || signedSize(0, false) != "0 B" {
		t.Error("signedSize")
	}
}

// TestMemoryJSON: -json holds every buffer group with its stack, the
// counts and warnings, whatever -n says.
func TestMemoryJSON(t *testing.T) {
	m := liveMemory()
	path := writeMemProfile(t, m, "m.pb.gz")
	code, out, errOut := runCLI("memory", "-json", "-n", "1", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got jsonMemory
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	live, bufs := m.Live()
	if got.File != path || got.Time != "2026-03-04T05:06:07Z" || got.LiveBytes != live || got.LiveBuffers != bufs ||
		got.Counts != jsonCountsOf(m.Counts) || len(got.Warnings) != 1 || got.Warnings[0].Code != "untracked" {
		t.Errorf("-json header: %+v", got)
	}
	groups := groupsOf(m)
	if len(got.Buffers) != len(groups) {
		t.Fatalf("%d buffers in the JSON, want %d", len(got.Buffers), len(groups))
	}
	for i, g := range groups {
		b := got.Buffers[i]
		var stack []event.Frame
		for _, f := range b.Stack {
			stack = append(stack, event.Frame{Function: f.Function, File: f.File, Line: f.Line})
		}
		if b.TotalBytes != g.bytes*uint64(g.count) || b.Count != g.count || b.Bytes != g.bytes || b.Device != g.device || b.Kind != g.kind ||
			!slices.Equal(stack, g.stack) || b.Tags == nil || b.Stack == nil {
			t.Errorf("buffer %d: %+v, want %+v", i, b, *g)
		}
	}
}

// TestMemoryBase is the leak hunt: the later profile holds a leaking
// site's extra buffers and one buffer fewer elsewhere; -base puts the
// leaking line first with exactly the bytes it added, the shrunk site
// last, warns that more went untracked, and leaves the rest out.
func TestMemoryBase(t *testing.T) {
	before, after := liveMemory(), liveMemory()
	var leaked uint64
	for range 7 {
		b := event.Buffer{Bytes: 3 << 20, Count: 1, Device: 1, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"cache"}, Stack: leakStack}
		after.Buffers = append(after.Buffers, b)
		leaked += b.Bytes
	}
	freed := slices.IndexFunc(after.Buffers, func(b event.Buffer) bool { return b.Span == "train/step" })
	freedBytes := after.Buffers[freed].Bytes
	after.Buffers = slices.Delete(after.Buffers, freed, freed+1)
	after.Counts.Untracked += 4
	after.Counts.UntrackedBytes += 1 << 20
	after.Time = before.Time.Add(time.Minute)
	bp, ap := writeMemProfile(t, before, "before.pb.gz"), writeMemProfile(t, after, "after.pb.gz")

	code, out, errOut := runCLI("memory", "-bytes", "-stack", "-base", bp, ap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// What each site (innermost frame) holds in each profile.
	type hold struct{ before, after, bufsBefore, bufsAfter int64 }
	sites := map[string]*hold{}
	for _, p := range []*event.DeviceMemory{before, after} {
		for i := range p.Buffers {
			b := &p.Buffers[i]
			k := "(no stack)"
			if len(b.Stack) > 0 {
				k = b.Stack[0].String()
			}
			if sites[k] == nil {
				sites[k] = &hold{}
			}
			if p == before {
				sites[k].before += int64(b.Total())
				sites[k].bufsBefore++
			} else {
				sites[k].after += int64(b.Total())
				sites[k].bufsAfter++
			}
		}
	}
	step := sites[stepStack[0].String()]
	unchanged := 0
	for _, h := range sites {
		if *h == (hold{h.before, h.before, h.bufsBefore, h.bufsBefore}) {
			unchanged++
		}
	}
	b0, n0 := before.Live()
	b1, n1 := after.Live()
	for _, want := range []string{
		fmt.Sprintf(": +%d bytes (%d bytes → %d bytes), +%d buffers (%d → %d)\n", b1-b0, b0, b1, n1-n0, n0, n1),
		fmt.Sprintf("warning: 4 more allocations (+1048576 bytes) went untracked after %s: the growth below does not include them\n", bp),
		fmt.Sprintf("\n%d sites unchanged\n", unchanged),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-base output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, after.Warnings[0].Text) != 1 {
		t.Errorf("the warning both profiles carry is not shown once:\n%s", out)
	}
	_, rows, under := rowsOf(t, out, "GROWTH")
	want := [][]string{
		{fmt.Sprintf("+%d", leaked), "0", strconv.FormatUint(leaked, 10), "+7", leakStack[0].String()},
		{fmt.Sprintf("-%d", freedBytes), strconv.FormatInt(step.before, 10), strconv.FormatInt(step.after, 10), "-1", stepStack[0].String()},
	}
	if step.before-step.after != int64(freedBytes) || !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("-base rows %q\nwant %q\n%s", rows, want, out)
	}
	if len(under) == 2 && !slices.Equal(under[0], []string{leakStack[0].String(), leakStack[1].String()}) {
		t.Errorf("leak stack %q", under[0])
	}

	code, out, _ = runCLI("memory", "-json", "-base", bp, ap)
	var g jsonGrowth
	if err := json.Unmarshal([]byte(out), &g); code != 0 || err != nil {
		t.Fatalf("-base -json: exit %d, %v\n%s", code, err, out)
	}
	if g.Base != bp || g.File != ap || g.GrowthBytes != int64(b1)-int64(b0) || g.GrowthBuffers != n1-n0 || g.Unchanged != unchanged || len(g.Sites) != 2 ||
		g.Sites[0].Site != leakStack[0].String() || g.Sites[0].GrowthBytes != int64(leaked) || g.Sites[0].Buffers != 7 ||
		g.Sites[1].GrowthBytes != -int64(freedBytes) || g.Counts.Untracked != 6 || g.BaseCounts.Untracked != 2 {
		t.Errorf("-base -json: %+v", g)
	}

	// Equal profiles: nothing changed.
	code, out, _ = runCLI("memory", "-base", bp, bp)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("(no allocation site changed; %d sites the same)", len(sites)-1)) {
		t.Errorf("-base of a profile with itself: exit %d\n%s", code, out)
	}
}

// TestMemoryOfJAXProfile: a profile JAX wrote (no counts, no time,
// devices by their own names) reads without tracker line or warnings.
func TestMemoryOfJAXProfile(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: 4096, Count: 2, Device: -1, Kind: "buffer", Tags: []string{"device=TFRT_CPU_0"},
		Stack: []event.Frame{{Function: "init", File: "model.py", Line: 3}}}}}
	path := writeMemProfile(t, m, "jax.prof")
	code, out, _ := runCLI("memory", path)
	if code != 0 || !strings.Contains(out, "device memory at an unknown time: 8.0 KiB in 2 live buffers\n\n") || strings.Contains(out, "tracker:") ||
		!strings.Contains(out, "[device=TFRT_CPU_0]") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// TestMemoryOfTrace: a trace given to devprof memory is named as one.
func TestMemoryOfTrace(t *testing.T) {
	for _, f := range []string{"../../testdata/golden/session.pftrace", "../../testdata/golden/session.xplane.pb", "../../testdata/golden/session.trace.json"} {
		code, stdout, stderr := runCLI("memory", f)
		if code != 1 || stdout != "" || !strings.Contains(stderr, f+" is a trace (") || !strings.Contains(stderr, "not a memory profile: devprof summary") {
			t.Errorf("memory %s: exit %d, %q", f, code, stderr)
		}
	}
}

// TestMemoryBaseOfH200Leak: on the profiles a real H200 recorded of a
// program allocating through a cgo binding (testdata/real-gpu/h200,
// written before the glue label), -base names the leaking call site,
// main.loadCache, with the 40 MiB it grew, and the weights' site as
// unchanged: not the binding, which every allocation went through.
func TestMemoryBaseOfH200Leak(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "real-gpu", "h200")
	base, after := filepath.Join(dir, "leak.base.memory.pb.gz"), filepath.Join(dir, "leak.after.memory.pb.gz")
	code, stdout, stderr := runCLI("memory", "-base", base, after)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "GROWTH") })
	if i < 0 || i+1 >= len(lines) {
		t.Fatalf("no growth table:\n%s", stdout)
	}
	row := strings.Fields(lines[i+1])
	if len(row) < 5 || row[0] != "+40.0" || row[1] != "MiB" || !strings.HasPrefix(row[len(row)-2], "main.loadCache") {
		t.Errorf("top growth row %q: want +40.0 MiB at main.loadCache\n%s", lines[i+1], stdout)
	}
	if strings.Contains(stdout, "cudabind") || !strings.Contains(stdout, "1 site unchanged") {
		t.Errorf("want the binding named nowhere and the weights' site unchanged:\n%s", stdout)
	}

	// With -stack, the binding's frames are shown above the site, said to
	// be the binding's.
	_, stdout, _ = runCLI("memory", "-stack", "-base", base, after)
	if !strings.Contains(stdout, "cudabind.(*Lib).Malloc (") || !strings.Contains(stdout, "[binding]") {
		t.Errorf("-stack lacks the binding's frames:\n%s", stdout)
	}
}

// TestMemoryOfDirectory: a run directory stands for its memory profile,
// named on stderr, as for memory breakdown and timeline; -base takes one
// too.
func TestMemoryOfDirectory(t *testing.T) {
	run := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "real-gpu", "h200", "leak.after.memory.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(run, "h.memory.pb.gz")
	if err := os.WriteFile(profile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("memory", run)
	if code != 0 || !strings.Contains(stdout, "main.loadCache") || !strings.Contains(stderr, "reading its newest memory profile, "+profile) {
		t.Errorf("memory DIR: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("memory", "-base", run, profile)
	if code != 0 || !strings.Contains(stdout, "no allocation site changed") {
		t.Errorf("memory -base DIR: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestMemoryOfJAXCPUDevice: the buffers of a JAX profile on its CPU
// backend's device ("cpu:0") are that device's memory: the table names
// the device, and the breakdown counts them rather than leaving them out
// as host memory.
func TestMemoryOfJAXCPUDevice(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 4 << 20, Count: 2, Device: -1, DeviceName: "cpu:0", Kind: "buffer", Stack: []event.Frame{{Function: "init_params", File: "model.py", Line: 3}}},
		{Bytes: 1 << 20, Count: 1, Device: -1, Kind: "pinned", Stack: []event.Frame{{Function: "stage", File: "input.py", Line: 9}}},
	}}
	path := writeMemProfile(t, m, "jax.prof")
	code, out, stderr := runCLI("memory", path)
	if code != 0 || !regexp.MustCompile(`8\.0 MiB +2 +4\.0 MiB +cpu:0 +buffer`).MatchString(out) || !regexp.MustCompile(`1\.0 MiB +1 +1\.0 MiB +host +pinned`).MatchString(out) {
		t.Errorf("memory: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI("memory", "breakdown", path)
	if code != 0 || strings.Contains(out, "no device memory") || !strings.Contains(out, "8.0 MiB tracked in 2 buffers on cpu:0") || !strings.Contains(out, "(cpu:0 8.0 MiB)") {
		t.Errorf("memory breakdown: exit %d\n%s%s", code, out, stderr)
	}
}

// TestBreakdownPlotOfJAXCPUDevice: the plot of a profile whose only
// device memory is a named device's (JAX's CPU backend) draws it, where
// it once exited 1 with no device memory to draw.
func TestBreakdownPlotOfJAXCPUDevice(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 4 << 20, Count: 2, Device: -1, DeviceName: "cpu:0", Kind: "buffer", Tags: []string{"weights"}},
		{Bytes: 1 << 20, Count: 1, Device: -1, Kind: "pinned"},
	}}
	path := writeMemProfile(t, m, "jax.prof")
	svg := filepath.Join(t.TempDir(), "b.svg")
	code, _, stderr := runCLI("memory", "breakdown", "-plot", svg, path)
	data, err := os.ReadFile(svg)
	if code != 0 || err != nil || !strings.Contains(string(data), ">cpu:0<") {
		t.Errorf("exit %d, %v: %s", code, err, stderr)
	}
}
