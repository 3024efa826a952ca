package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// twoSpans writes a trace with spans of two names (a longer than b), one
// warning, one note and drops, in format f, and returns its path.
func twoSpans(t *testing.T, name string, f *formats.Format) string {
	t.Helper()
	b := event.NewBuilder(event.Meta{Host: "h", PID: 1, Stop: event.ClockAnchor{Mono: 100}})
	b.Span(event.Span{Name: "long", Start: 0, End: 50})
	b.Span(event.Span{Name: "short", Start: 60, End: 70})
	s := b.Snapshot()
	s.Meta.Warnings = append(s.Meta.Warnings, event.Warning{Source: "cupti", Code: "unavailable", Text: "no GPU here"})
	s.Meta.Notes = append(s.Meta.Notes, event.Note{Source: "cupti", Text: "clock mapped by an offset"})
	s.Meta.AddDrops("recorder", 3)
	path := filepath.Join(t.TempDir(), name)
	if err := formats.WriteFile(path, f, s); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFlagsAfterArguments: flags may follow the file, as with most CLIs,
// and "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	path := twoSpans(t, "x.pftrace", formats.Perfetto)
	for _, args := range [][]string{{"summary", path, "-top", "1"}, {"summary", "-top", "1", path}, {"summary", "-sort", "name", path, "-top=1"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
			continue
		}
		if got := strings.Contains(stdout, "short"); got == strings.Contains(stdout, "long") {
			t.Errorf("%v: want one row of the two:\n%s", args, stdout)
		}
	}
	if code, _, stderr := runCLI("summary", "--", "-top"); code != 1 || !strings.Contains(stderr, "-top") {
		t.Errorf("summary -- -top: exit %d, %q; want -top read as a file name", code, stderr)
	}
	if code, _, stderr := runCLI("summary", path, "extra"); code != 2 || !strings.Contains(stderr, "got 2") {
		t.Errorf("two files: exit %d, %q; want a usage error", code, stderr)
	}
}

// flagNames returns the flags a command's -h lists.
func flagNames(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z_]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestCommandHelpIsComplete: each command's -h shows its usage line with
// every flag, the flags (with no empty heading when there are none) and
// an example; devprof -h lists every command with every flag.
func TestCommandHelpIsComplete(t *testing.T) {
	_, top, _ := runCLI("-h")
	for _, c := range commands {
		// Help is asked-for output: stdout, so that | less shows it.
		code, help, stderr := runCLI(append(strings.Fields(c.name), "-h")...)
		if code != 0 || stderr != "" {
			t.Errorf("%s -h: exit %d, stderr %q", c.name, code, stderr)
		}
		names := flagNames(help)
		if c.name == "demo" && !slices.Contains(names, "chrome") || c.name == "summary" && !slices.Contains(names, "json") {
			t.Errorf("%s -h lists flags %v", c.name, names)
		}
		usageLine, _, _ := strings.Cut(help, "\n")
		for _, n := range names {
			if !strings.Contains(usageLine, "-"+n) {
				t.Errorf("%s: flag -%s missing from the usage line %q (and so from devprof -h)", c.name, n, usageLine)
			}
		}
		if strings.Contains(help, "Flags") != (len(names) > 0) {
			t.Errorf("%s -h: a Flags heading over %d flags:\n%s", c.name, len(names), help)
		}
		if !strings.Contains(help, "\nExample:\n  devprof "+c.name) {
			t.Errorf("%s -h has no example:\n%s", c.name, help)
		}
		if !strings.Contains(top, "  devprof "+strings.TrimSpace(c.name+" "+c.args)+"\n") {
			t.Errorf("devprof -h does not list %s as %q", c.name, c.args)
		}
	}
}

// testOnlyEnv are the DEVPROF_* variables only devprof's own tests read.
var testOnlyEnv = []string{"DEVPROF_CONFORMANCE_DIR", "DEVPROF_REQUIRE_CUPTI", "DEVPROF_REQUIRE_S3", "DEVPROF_CLOCK_TEST_LONG", "DEVPROF_PANIC_CHILD"}

// TestHelpListsEnvironment: devprof -h lists every DEVPROF_* variable the
// tree's non-test code names, and no other.
func TestHelpListsEnvironment(t *testing.T) {
	code, top, _ := runCLI("-h")
	if code != 0 || !strings.Contains(top, "Environment") {
		t.Fatalf("devprof -h: exit %d\n%s", code, top)
	}
	found := map[string]bool{}
	re := regexp.MustCompile(`"(DEVPROF_[A-Z0-9_]+)"`)
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".venv" || d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found["DEVPROF_DISABLE"] || !found["DEVPROF_CUPTI_LIB"] {
		t.Fatalf("the scan of the tree found only %v", found)
	}
	for name := range found {
		if !slices.Contains(testOnlyEnv, name) && !strings.Contains(top, "\n  "+name+"\n") {
			t.Errorf("devprof -h does not list %s", name)
		}
	}
	for _, e := range envVars {
		if !found[e.name] {
			t.Errorf("devprof -h lists %s, which no code reads", e.name)
		}
	}
}

func TestVersionAndExitStatus(t *testing.T) {
	code, stdout, _ := runCLI("version")
	if code != 0 || !strings.HasPrefix(stdout, "devprof ") || !strings.Contains(stdout, runtime.Version()) {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
	if code, _, _ := runCLI("version", "extra"); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
	if code, stdout, _ := runCLI("-h"); code != 0 || !strings.Contains(stdout, "Usage") {
		t.Errorf("-h: exit %d, %q", code, stdout)
	}
	if code, stdout, _ := runCLI("help", "summary"); code != 0 || !strings.Contains(stdout, "Usage: devprof summary") {
		t.Errorf("help summary: exit %d, %q", code, stdout)
	}
	path := twoSpans(t, "x.pftrace", formats.Perfetto)
	if code, stdout, stderr := runCLI("summary", path, "-top", "-1"); code != 2 || stdout != "" || !strings.Contains(stderr, "-top -1: want 0 (all) or more") {
		t.Errorf("-top -1: exit %d, stdout %q, stderr %q; want a usage error", code, stdout, stderr)
	}
	// A usage error is found before any file is read: the file need not exist.
	missing := filepath.Join(t.TempDir(), "missing.pftrace")
	if code, _, stderr := runCLI("summary", missing, "-sort", "bogus"); code != 2 || !strings.Contains(stderr, `-sort "bogus": want one of total, self`) {
		t.Errorf("-sort bogus: exit %d, stderr %q; want 2 naming the keys", code, stderr)
	}
	if code, _, stderr := runCLI("demo", "-steps", "0"); code != 2 || !strings.Contains(stderr, "at least 1") {
		t.Errorf("demo -steps 0: exit %d, stderr %q; want 2", code, stderr)
	}
}

// TestSummaryWordsAndMeta: counts read "1 span", not "1 spans", and the
// trace's warnings, notes and drops are all shown, from every format.
func TestSummaryWordsAndMeta(t *testing.T) {
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 10}})
	b.Span(event.Span{Name: "only", Start: 1, End: 9})
	one := filepath.Join(t.TempDir(), "one.pftrace")
	if err := formats.WriteFile(one, formats.Perfetto, b.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if _, stdout, _ := runCLI("summary", one); !strings.Contains(stdout, ": 1 span on 1 row, 0 instants, 0 counter samples\n") {
		t.Errorf("summary of one span:\n%s", stdout)
	}
	for _, f := range formats.All() {
		if f.Write == nil {
			continue // an input-only format (a Go execution trace) has no warnings or notes to carry
		}
		path := twoSpans(t, "x"+f.Extensions[0], f)
		_, stdout, stderr := runCLI("summary", path)
		for _, want := range []string{"warning: no GPU here\n", "note: clock mapped by an offset\n", "3 events dropped"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary of %s lacks %q:\n%s%s", f.Name, want, stdout, stderr)
			}
		}
	}
}

func TestSummaryJSON(t *testing.T) {
	path := twoSpans(t, "x.xplane.pb", formats.XPlane)
	code, stdout, stderr := runCLI("summary", "-json", "-top", "1", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		File, Format string
		Spans        int
		Dropped      int64
		Drops        []struct {
			Source string
			Events int64
		}
		Warnings []struct{ Source, Code, Text string }
		Notes    []struct{ Source, Text string }
		Table    []struct {
			Name    string
			Count   int
			TotalNS int64 `json:"total_ns"`
			SelfNS  int64 `json:"self_ns"`
		}
		DeviceCounters []any `json:"device_counters"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if got.File != path || got.Format != "xplane" || got.Spans != 2 || got.Dropped != 3 || len(got.Drops) != 1 || got.Drops[0].Source != "recorder" ||
		len(got.Table) != 2 || got.Table[0].Name != "long" || got.Table[0].TotalNS != 50 || got.Table[1].SelfNS != 10 ||
		len(got.Warnings) != 1 || got.Warnings[0].Text != "no GPU here" || len(got.Notes) != 1 || got.DeviceCounters == nil {
		t.Errorf("summary -json:\n%s\nparsed %+v", stdout, got)
	}
}
