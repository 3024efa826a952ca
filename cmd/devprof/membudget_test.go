package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
)

// writeRawProfile writes p gzipped as pprof does, and returns its path
// and size.
func writeRawProfile(t *testing.T, p *profile.Profile) (string, int) {
	t.Helper()
	var raw bytes.Buffer
	if err := p.WriteUncompressed(&raw); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(raw.Bytes())
	zw.Close()
	path := filepath.Join(t.TempDir(), "m.pb.gz")
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, gz.Len()
}

// countProfile is a memory profile of one sample standing for count
// allocations of one byte on gpu:0, with no stack.
func countProfile(count int64) *profile.Profile {
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Value: []int64{count, count}, Label: map[string][]string{"device": {"gpu:0"}}}},
	}
}

// assertNothingWritten checks that dir holds only the input.
func assertNothingWritten(t *testing.T, dir, input string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Join(dir, e.Name()) != input {
			t.Errorf("%s written", e.Name())
		}
	}
}

// TestBreakdownCSVOfBillionAllocations is the case: a profile of
// under 200 bytes that says it holds 10⁹ allocations once made -csv write
// 2.9 GB. Now the CSV (either layout) is refused before anything is
// written, exit 1 with one line naming the count, while the table and
// -json, which print the count as a number, stay small.
func TestBreakdownCSVOfBillionAllocations(t *testing.T) {
	path, size := writeRawProfile(t, countProfile(1e9))
	if size > 200 {
		t.Fatalf("the profile is %d bytes, want the issue's tiny one", size)
	}
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "m.csv")
	for _, columns := range []string{"2", "5"} {
		code, stdout, stderr := runCLI("memory", "breakdown", "-csv", out, "-csv_columns", columns, path)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "1000000000 lines") || !strings.Contains(stderr, "-max_rows") {
			t.Errorf("-csv_columns %s: exit %d, stdout %q, stderr %q: want exit 1, one line naming 1000000000 lines and -max_rows", columns, code, stdout, stderr)
		}
		assertNothingWritten(t, dir, path)
	}
	for _, args := range [][]string{{"memory", "breakdown", "-json", path}, {"memory", "breakdown", path}, {"memory", "-json", path}, {"memory", "-n", "0", "-stack", path}} {
		code, stdout, stderr := runCLI(append(args, "-max_rows", "1")...) // 1 entry: 128 rows are still allowed
		if code != 0 || len(stdout) > 8<<10 || !strings.Contains(stdout, "1000000000") {
			t.Errorf("%q: exit %d, %d bytes out (want under 8 KiB, the count as a number): %s%s", args, code, len(stdout), stdout, stderr)
		}
	}
}

// TestCSVRowBudget: the CSV is refused just past -max_rows (above the
// per-entry allowance), written whole at the bound, and written whatever
// its size with -max_rows 0.
func TestCSVRowBudget(t *testing.T) {
	path, _ := writeRawProfile(t, countProfile(1000))
	out := filepath.Join(t.TempDir(), "m.csv")
	code, _, stderr := runCLI("memory", "breakdown", "-csv", out, "-max_rows", "999", path)
	if code != 1 || !strings.Contains(stderr, "1000 lines") {
		t.Fatalf("-max_rows 999: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("refused, yet %s exists: %v", out, err)
	}
	for _, max := range []string{"1000", "0"} {
		if code, _, stderr := runCLI("memory", "breakdown", "-csv", out, "-max_rows", max, path); code != 0 {
			t.Fatalf("-max_rows %s: exit %d: %s", max, code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil || bytes.Count(data, []byte("\n")) != 1000 {
			t.Errorf("-max_rows %s: %d lines, want 1000: %v", max, bytes.Count(data, []byte("\n")), err)
		}
	}
	// The default bound: 4,194,304 lines, whatever the per-entry
	// allowance of so small an input.
	path, _ = writeRawProfile(t, countProfile(defaultMaxRows+1))
	if code, _, stderr := runCLI("memory", "breakdown", "-csv", out, path); code != 1 || !strings.Contains(stderr, fmt.Sprint(defaultMaxRows+1, " lines")) {
		t.Errorf("past the default: exit %d, %s", code, stderr)
	}
}

// deepProfile is samples samples of one byte, each under the same stack
// of one location whose depth lines are inlined frames: a few bytes of
// input per sample that -stack and -json would print as depth lines.
func deepProfile(samples, depth int) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}}}
	loc := &profile.Location{ID: 1}
	for i := range depth {
		fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("main.inlined%04d", i), Filename: "main.go"}
		p.Function = append(p.Function, fn)
		loc.Line = append(loc.Line, profile.Line{Function: fn, Line: int64(i + 1)})
	}
	p.Location = []*profile.Location{loc}
	for i := range samples {
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1, int64(i + 1)}, Location: []*profile.Location{loc},
			Label: map[string][]string{"device": {"gpu:0"}}})
	}
	return p
}

// TestMemoryStackBudget: 100 samples under one stack of 4,096 inlined
// frames would print 409,600 stack lines from a small file (2,000 such
// samples, 8 M); under -max_rows 1000 (and the 128 rows per entry
// allowed whatever it says) -json and -n 0 -stack are refused (exit 1,
// one line naming the count, nothing printed), the default table of 30
// rows is not, and -max_rows 0 lifts the bound.
func TestMemoryStackBudget(t *testing.T) {
	path, size := writeRawProfile(t, deepProfile(100, 4096))
	t.Logf("profile: %d bytes", size)
	for _, args := range [][]string{{"-json"}, {"-n", "0", "-stack"}} {
		code, stdout, stderr := runCLI(append([]string{"memory", path, "-max_rows", "1000"}, args...)...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "409700") || !strings.Contains(stderr, "12800 allowed") {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q: want exit 1 and one line naming the count", args, code, len(stdout), stderr)
		}
	}
	if code, stdout, stderr := runCLI("memory", path, "-stack"); code != 0 || !strings.Contains(stdout, "main.inlined4095") {
		t.Errorf("the default 30 rows with stacks: exit %d: %s", code, stderr)
	}
	// -base compares sites: one site, its one stack.
	if code, _, stderr := runCLI("memory", "-base", path, path, "-json"); code != 0 {
		t.Errorf("-base -json: exit %d: %s", code, stderr)
	}
	small, _ := writeRawProfile(t, deepProfile(3, 4096))
	if code, _, _ := runCLI("memory", small, "-json", "-max_rows", "1000"); code != 1 {
		t.Errorf("3 × 4,097 rows under -max_rows 1000: exit %d, want 1", code)
	}
	code, stdout, stderr := runCLI("memory", small, "-json", "-max_rows", "0")
	var j jsonMemory
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil || len(j.Buffers) != 3 || len(j.Buffers[0].Stack) != 4096 {
		t.Errorf("-max_rows 0: exit %d, %d buffers: %s", code, len(j.Buffers), stderr)
	}
}

// TestTimelineValuesBudget: splitting a trace's memory into categories
// holds a series per tag set; past the bound it is refused with one line
// that names the counts and -tags, which is not.
func TestTimelineValuesBudget(t *testing.T) {
	logdir := recordMemory(t)
	traces, _ := filepath.Glob(filepath.Join(logdir, "plugins", "profile", "run", "*.pftrace"))
	if len(traces) != 1 {
		t.Fatalf("traces %q", traces)
	}
	defer func(v uint64) { maxTimelineValues = v }(maxTimelineValues)
	maxTimelineValues = 10
	code, stdout, stderr := runCLI("memory", "timeline", traces[0])
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "tag set") || !strings.Contains(stderr, "-tags") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("memory", "timeline", "-tags", logdir); code != 0 {
		t.Errorf("-tags: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI("memory", "timeline", "-max_rows", "0", logdir); code != 0 {
		t.Errorf("-max_rows 0: exit %d: %s", code, stderr)
	}
}

// cliChildEnv, when set, makes the test binary run devprof with the
// arguments it holds (separated by ASCII's unit separator, 0x1f) instead of the tests: a real
// process that a signal can interrupt.
const cliChildEnv = "DEVPROF_TEST_CLI_CHILD"

func init() {
	if args := os.Getenv(cliChildEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
}

// TestInterruptedCSVLeavesNothing: devprof memory breakdown writing a
// CSV of 10⁹ lines (asked for with -max_rows 0), interrupted by SIGINT or
// SIGTERM once its temporary file has grown, dies of the signal and
// leaves neither the CSV nor a .tmp-* file.
func TestInterruptedCSVLeavesNothing(t *testing.T) {
	input, _ := writeRawProfile(t, countProfile(1e9))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "m.csv")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), cliChildEnv+"="+strings.Join([]string{"memory", "breakdown", "-max_rows", "0", "-csv", out, input}, "\x1f"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(time.Minute)
			for {
				ents, _ := os.ReadDir(dir)
				if len(ents) == 1 && strings.HasPrefix(ents[0].Name(), ".m.csv.tmp-") {
					if st, err := os.Stat(filepath.Join(dir, ents[0].Name())); err == nil && st.Size() > 1<<20 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no growing temporary file in a minute: %v; %s", ents, stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("devprof ended with %v, want killed by %v; %s", err, sig, stderr.String())
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

// TestMemorySaysCUDAWasNotHooked: a profile saved where CUDA could not be
// hooked (here: no libcupti) says why in devprof memory's warnings and in
// -json, so that no CUDA allocation does not read as none made.
func TestMemorySaysCUDAWasNotHooked(t *testing.T) {
	if err := devmem.Start(devmem.Options{Library: filepath.Join(t.TempDir(), "libcupti.so.404")}); err != nil {
		t.Fatalf("ModeAuto with no libcupti: %v", err)
	}
	defer devmem.Stop()
	devmem.Alloc(context.Background(), 0x1000, 1<<20, devmem.Attrs{Device: 0, Tags: []string{"weights"}})
	m, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	path := writeMemProfile(t, m, "m.pb.gz")
	code, out, stderr := runCLI("memory", path)
	if code != 0 || !regexp.MustCompile(`(?m)^warning: .*CUDA allocations are not tracked`).MatchString(out) {
		t.Errorf("exit %d: want a warning saying why CUDA allocations are not tracked:\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI("memory", "-json", path)
	var j jsonMemory
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || !slices.ContainsFunc(j.Warnings, func(w jsonWarning) bool { return w.Code == devmem.CodeCUDANotHooked }) {
		t.Errorf("-json: exit %d, warnings %+v: want %s", code, j.Warnings, devmem.CodeCUDANotHooked)
	}
}

// TestMemoryJSONStreamedAsEncoded: -json and -base -json, written item by
// item so that a million buffers do not sit in memory as one document,
// are byte for byte what encoding the whole value at once gives: decoded
// and encoded again, they come back the same, with HTML-like and
// non-ASCII text, and with empty lists.
func TestMemoryJSONStreamedAsEncoded(t *testing.T) {
	m := liveMemory()
	m.Buffers[0].Tags = []string{"<weights> & \"bias\"", "ünïcode\n"}
	m.Warnings = []event.Warning{{Source: "devmem", Code: "x", Text: "a <b> & c"}}
	before := liveMemory()
	before.Buffers = before.Buffers[:1]
	for name, write := range map[string]func(*bytes.Buffer) error{
		"memory": func(b *bytes.Buffer) error { return writeMemoryJSON(b, "p<1>", m) },
		"empty":  func(b *bytes.Buffer) error { return writeMemoryJSON(b, "p", &event.DeviceMemory{}) },
		"growth": func(b *bytes.Buffer) error { return writeGrowthJSON(b, "a", "b", before, m, growthOf(before, m)) },
		"same":   func(b *bytes.Buffer) error { return writeGrowthJSON(b, "a", "b", m, m, growthOf(m, m)) },
	} {
		var got bytes.Buffer
		if err := write(&got); err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		var err error
		if strings.HasPrefix(name, "memory") || name == "empty" {
			var v jsonMemory
			err = json.Unmarshal(got.Bytes(), &v)
			encodeJSON(&again, v)
		} else {
			var v jsonGrowth
			err = json.Unmarshal(got.Bytes(), &v)
			encodeJSON(&again, v)
		}
		if err != nil || !bytes.Equal(got.Bytes(), again.Bytes()) {
			t.Errorf("%s: %v; streamed:\n%s\nencoded at once:\n%s", name, err, got.String(), again.String())
		}
	}
}
