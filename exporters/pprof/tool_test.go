package pprof

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// The tests in this file hand profiles to the real consumer, `go tool
// pprof` (the Go toolchain's copy of google/pprof), and check the numbers
// it prints against the buffers the test wrote. The go command is always
// there when tests run, so they never skip.

// goCommand returns the go command running the tests.
func goCommand(t *testing.T) string {
	t.Helper()
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to run go tool pprof: %v", err)
	}
	return p
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// pprofTool runs go tool pprof with args (no symbolization: the profiles
// carry their function names) and returns its standard output.
func pprofTool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(goCommand(t), append([]string{"tool", "pprof", "-symbolize=none"}, args...)...)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestPprofNeedsNoBinary: pprof run as a user runs it (symbolizing, the
// default) reports from the profile alone, without looking for the
// program's binary or complaining that it cannot.
func TestPprofNeedsNoBinary(t *testing.T) {
	cmd := exec.Command(goCommand(t), "tool", "pprof", "-top", writeProfile(t, fixture(), "m.pb.gz"))
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir(), "PPROF_BINARY_PATH="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, stderr.String())
	}
	if strings.TrimSpace(stderr.String()) != "" || !strings.Contains(stdout.String(), "Type: space") {
		t.Errorf("go tool pprof -top: stderr %q; stdout:\n%s", stderr.String(), stdout.String())
	}
}

func writeProfile(t *testing.T, m *event.DeviceMemory, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// topRow is one row of pprof's -top table.
type topRow struct {
	flat, cum int64
	name      string
}

// parseValue reads a value as pprof prints it with -unit=B ("1048576B",
// "-512B") or for counts ("4"); a zero is "0" either way.
func parseValue(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(s, "B"), 10, 64)
	if err != nil {
		t.Fatalf("pprof printed value %q: %v", s, err)
	}
	return n
}

// parseTop returns the rows of -top output, in order, and the total of
// the "Showing nodes accounting for X, P% of TOTAL total" line.
func parseTop(t *testing.T, out string) (rows []topRow, total int64) {
	t.Helper()
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Showing nodes accounting for"):
			i := strings.Index(line, " of ")
			if i < 0 || !strings.HasSuffix(line, " total") {
				t.Fatalf("unexpected line %q", line)
			}
			total = parseValue(t, strings.TrimSuffix(line[i+len(" of "):], " total"))
		case len(f) == 5 && f[0] == "flat" && f[1] == "flat%":
			inTable = true
		case inTable && len(f) >= 6:
			rows = append(rows, topRow{parseValue(t, f[0]), parseValue(t, f[3]), strings.Join(f[5:], " ")})
		case inTable && len(f) > 0:
			t.Fatalf("unexpected row %q", line)
		}
	}
	if !inTable {
		t.Fatalf("no -top table in pprof's output:\n%s", out)
	}
	return rows, total
}

// want is what pprof should print per function for buffers chosen by
// keep: flat (allocated in the function itself) and cum (on the stack),
// in bytes or buffers.
func want(m *event.DeviceMemory, keep func(*event.Buffer) bool, count bool) (flat, cum map[string]int64, total int64) {
	flat, cum = map[string]int64{}, map[string]int64{}
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if keep != nil && !keep(b) {
			continue
		}
		v := int64(b.Total())
		if count {
			v = int64(max(b.Count, 1))
		}
		total += v
		stack := b.CallStack() // pprof's locations start at the call site
		if len(stack) == 0 {
			stack = []event.Frame{{Function: UnknownFunction}}
		}
		flat[stack[0].Function] += v
		seen := map[string]bool{}
		for _, f := range stack {
			if !seen[f.Function] {
				seen[f.Function] = true
				cum[f.Function] += v
			}
		}
	}
	return flat, cum, total
}

// checkTop compares -top's rows with the wanted values, function by
// function, and says which differ.
func checkTop(t *testing.T, what string, rows []topRow, flat, cum map[string]int64) {
	t.Helper()
	if len(rows) != len(cum) {
		t.Errorf("%s: %d rows, want one per function on the stacks: %d\n%v", what, len(rows), len(cum), rows)
	}
	for _, r := range rows {
		if r.flat != flat[r.name] || r.cum != cum[r.name] {
			t.Errorf("%s: %s flat %d cum %d, want %d and %d", what, r.name, r.flat, r.cum, flat[r.name], cum[r.name])
		}
	}
	for i := 1; i < len(rows); i++ {
		if abs(rows[i].flat) > abs(rows[i-1].flat) {
			t.Errorf("%s: row %d (%s) flat above the row before", what, i, rows[i].name)
		}
	}
}

func abs(n int64) int64 { return max(n, -n) }

// TestPprofTop: bytes per function, the total and the header (with the
// tracker's warnings) as `go tool pprof -top` shows them.
func TestPprofTop(t *testing.T) {
	m := fixture()
	out := pprofTool(t, "-top", "-nodefraction=0", "-unit=B", writeProfile(t, m, "m.pb.gz"))
	rows, total := parseTop(t, out)
	flat, cum, live := want(m, nil, false)
	if total != live {
		t.Errorf("pprof's total %d, want the %d bytes live", total, live)
	}
	checkTop(t, "-top", rows, flat, cum)
	if rows[0].name != m.Buffers[0].Stack[0].Function {
		t.Errorf("top row %s, want the largest allocation site %s", rows[0].name, m.Buffers[0].Stack[0].Function)
	}
	// The comments are the legend above the table, so a user reading -top
	// sees that the profile is incomplete, and why; the counts line is not
	// shown.
	head := out[:strings.Index(out, "Type: space")]
	for _, w := range m.Warnings {
		if !strings.Contains(head, w.Text) {
			t.Errorf("-top does not show warning %q above its table:\n%s", w.Text, out)
		}
	}
	_, bufs := m.Live()
	if !strings.Contains(head, fmt.Sprintf("devprof device memory: %d live buffers, %s (%d bytes); incomplete: %d allocations (%s) untracked", bufs, iec(uint64(live)), live, m.Counts.Untracked, iec(m.Counts.UntrackedBytes))) || strings.Contains(out, "devprof counts") {
		t.Errorf("-top header:\n%s", head)
	}
}

// TestPprofAllocations: -sample_index=allocations counts buffers.
func TestPprofAllocations(t *testing.T) {
	m := fixture()
	out := pprofTool(t, "-top", "-nodefraction=0", "-sample_index=allocations", writeProfile(t, m, "m.pb.gz"))
	if !strings.Contains(out, "Type: allocations") {
		t.Errorf("output does not say allocations:\n%s", out)
	}
	rows, total := parseTop(t, out)
	flat, cum, n := want(m, nil, true)
	if _, bufs := m.Live(); total != n || total != int64(bufs) {
		t.Errorf("total %d allocations, want %d", total, bufs)
	}
	checkTop(t, "-sample_index=allocations", rows, flat, cum)
}

// TestPprofTagFocus: -tagfocus=device=gpu:1 keeps device 1's buffers.
func TestPprofTagFocus(t *testing.T) {
	m := fixture()
	out := pprofTool(t, "-top", "-nodefraction=0", "-unit=B", "-tagfocus=device=gpu:1", writeProfile(t, m, "m.pb.gz"))
	rows, _ := parseTop(t, out)
	flat, cum, n := want(m, func(b *event.Buffer) bool { return b.Device == 1 }, false)
	if n == 0 || len(flat) < 2 {
		t.Fatal("the fixture has too little on gpu:1 to test")
	}
	checkTop(t, "-tagfocus=device=gpu:1", rows, flat, cum)
	if !strings.Contains(out, fmt.Sprintf("Showing nodes accounting for %dB, ", n)) {
		t.Errorf("output does not account for gpu:1's %d bytes:\n%s", n, out)
	}
}

// TestPprofTags: -tags breaks the bytes down by every label's values.
func TestPprofTags(t *testing.T) {
	m := fixture()
	out := pprofTool(t, "-tags", "-unit=B", writeProfile(t, m, "m.pb.gz"))
	got := map[string]map[string]int64{}
	var key string
	for _, line := range strings.Split(out, "\n") {
		tl := strings.TrimSpace(line)
		switch {
		case strings.Contains(tl, ": Total "):
			key = tl[:strings.Index(tl, ":")]
			got[key] = map[string]int64{}
		case key != "" && strings.Contains(tl, "): "):
			v, name, _ := strings.Cut(tl, " ")
			_, value, _ := strings.Cut(name, "): ")
			got[key][value] = parseValue(t, v)
		}
	}
	wantTags := map[string]map[string]int64{}
	add := func(k, v string, n int64) {
		if v == "" {
			return
		}
		if wantTags[k] == nil {
			wantTags[k] = map[string]int64{}
		}
		wantTags[k][v] += n
	}
	for i := range m.Buffers {
		b := &m.Buffers[i]
		n := int64(b.Total())
		add("kind", b.Kind, n)
		add("device", DeviceLabel(b.Device), n)
		add("tags", strings.Join(b.Tags, ","), n)
		add("span", b.Span, n)
		add("source", b.Source, n)
		add("api", b.API, n)
	}
	if fmt.Sprint(got) != fmt.Sprint(wantTags) {
		t.Errorf("-tags shows\n%v\nwant\n%v\n%s", got, wantTags, out)
	}
}

// TestPprofDiffBase is the leak hunt the JAX docs describe: two profiles
// of the same program, the later holding a leaking function's extra
// buffers and one buffer fewer; -diff_base puts the leak on the first row
// with exactly the bytes it added, the freed buffer's site negative, and
// everything equal in both (same stacks and labels) cancels out.
func TestPprofDiffBase(t *testing.T) {
	before := fixture()
	after := fixture()
	leak := []event.Frame{{Function: "main.(*Cache).put", File: "/src/cache.go", Line: 58}, {Function: "main.train", File: "/src/main.go", Line: 33}, {Function: "main.main", File: "/src/main.go", Line: 14}}
	var leaked int64
	for i := range 5 {
		b := event.Buffer{Address: 0xdead0000 + uint64(i), Bytes: 2 << 20, Count: 1, Device: 1, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"cache"}, Stack: leak}
		after.Buffers = append(after.Buffers, b)
		leaked += int64(b.Bytes)
	}
	freed := -1
	for i, b := range after.Buffers {
		if b.Device == -1 {
			freed = i
		}
	}
	freedBytes, freedSite := int64(after.Buffers[freed].Bytes), after.Buffers[freed].Stack[0].Function
	after.Buffers = append(after.Buffers[:freed], after.Buffers[freed+1:]...)
	// Addresses and times differ between the two moments, as they would.
	for i := range after.Buffers {
		after.Buffers[i].Address += 0x1000
		after.Buffers[i].Time = after.Buffers[i].Time.Add(1e9)
	}
	out := pprofTool(t, "-top", "-nodefraction=0", "-unit=B", "-diff_base="+writeProfile(t, before, "before.pb.gz"), writeProfile(t, after, "after.pb.gz"))
	rows, _ := parseTop(t, out)
	if len(rows) == 0 || rows[0].name != leak[0].Function || rows[0].flat != leaked {
		t.Fatalf("-diff_base: first row %+v, want %s with %d bytes\n%s", rows, leak[0].Function, leaked, out)
	}
	flat := map[string]int64{leak[0].Function: leaked, freedSite: -freedBytes}
	for _, r := range rows {
		if r.flat != flat[r.name] {
			t.Errorf("-diff_base: %s flat %d, want %d", r.name, r.flat, flat[r.name])
		}
	}
	if !strings.Contains(out, fmt.Sprintf("Showing nodes accounting for %dB, ", leaked-freedBytes)) {
		t.Errorf("-diff_base does not account for %d bytes of growth:\n%s", leaked-freedBytes, out)
	}
}

// TestPprofBaseTraces: with -base (after minus before), samples whose
// stack and labels are equal in both profiles merge and cancel, so
// -traces lists only what changed. A per-buffer address or time among the
// labels would keep every sample apart and list them all.
func TestPprofBaseTraces(t *testing.T) {
	before, after := fixture(), fixture()
	grow := after.Buffers[len(after.Buffers)-2] // one more pinned staging buffer
	grow.Address, grow.Time = 0xbeef, grow.Time.Add(1e9)
	after.Buffers = append(after.Buffers, grow)
	for i := range after.Buffers {
		after.Buffers[i].Address += 0x1000
	}
	out := pprofTool(t, "-traces", "-unit=B", "-base="+writeProfile(t, before, "before.pb.gz"), writeProfile(t, after, "after.pb.gz"))
	var blocks []string // one per sample, between the separator lines
	for _, b := range strings.Split(out, "-----------+")[1:] {
		if strings.Trim(b, "-\n") != "" {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("-base -traces lists %d samples, want only the one that grew:\n%s", len(blocks), out)
	}
	var value int64
	for _, line := range strings.Split(blocks[0], "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == grow.Stack[0].Function {
			value = parseValue(t, f[0])
		}
	}
	if value != int64(grow.Bytes) || !strings.Contains(blocks[0], "device:  host") || !strings.Contains(blocks[0], "span:  "+grow.Span) {
		t.Errorf("-base -traces: %d bytes grew at %s, want %d\n%s", value, grow.Stack[0].Function, grow.Bytes, out)
	}
}
