package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// badCorpus maps each file of testdata/bad to what the refusal must say.
var badCorpus = map[string]string{
	"empty.pftrace":              "is empty",
	"empty.pftrace.gz":           "is empty",
	"empty.xplane.pb":            "is empty",
	"empty.json":                 "is empty",
	"empty.json.gz":              "is empty",
	"empty-gunzipped.pftrace.gz": "is empty",
	"truncated.pftrace.gz":       "unexpected EOF",
	"truncated.json.gz":          "unexpected EOF",
	"truncated.json":             "unexpected end of JSON",
	"random.pftrace":             "perfetto: packet 1",
	"random.pftrace.gz":          "perfetto: packet 1",
	"random.xplane.pb":           "cannot decode XSpace",
	"random.json":                "chrome: invalid character",
	"random.json.gz":             "chrome: invalid character",
	"random.trace.json.gz":       "chrome: invalid character",
	"random.txt":                 "cannot tell its format",
	"notes.txt":                  "cannot tell its format",
	"not-a-trace.json":           `has no "traceEvents"`,
	"array-not-a-trace.json":     "want an object",
	// pprof profiles are not traces: each says what it is instead of
	// reading as an empty Perfetto trace.
	"memory.pb.gz":           "is a device-memory profile (pprof), not a trace: devprof memory",
	"cpu.pb.gz":              "is a pprof profile, not a trace: open it with go tool pprof",
	"diff.pb.gz":             "does not read as a memory profile: pprof: sample 7 has negative values",
	"truncated-memory.pb.gz": "does not read as a memory profile: pprof: gzip stream: unexpected EOF",
}

// memoryBadCorpus maps each file of testdata/bad to what devprof memory's
// refusal must say; memory.pb.gz is the one file it reads.
var memoryBadCorpus = map[string]string{
	"empty.pftrace":              "pprof: empty: not a profile",
	"empty.pftrace.gz":           "pprof: empty: not a profile",
	"empty.xplane.pb":            "pprof: empty: not a profile",
	"empty.json":                 "pprof: empty: not a profile",
	"empty.json.gz":              "pprof: empty: not a profile",
	"empty-gunzipped.pftrace.gz": "pprof: empty: not a profile",
	"truncated.pftrace.gz":       "pprof: gzip stream: unexpected EOF",
	"truncated.json.gz":          "pprof: gzip stream: unexpected EOF",
	"truncated.json":             "pprof: not a pprof profile",
	"random.pftrace":             "pprof: not a pprof profile",
	"random.pftrace.gz":          "pprof: not a pprof profile",
	"random.xplane.pb":           "pprof: not a pprof profile",
	"random.json":                "pprof: not a pprof profile",
	"random.json.gz":             "pprof: not a pprof profile",
	"random.trace.json.gz":       "pprof: not a pprof profile",
	"random.txt":                 "pprof: not a pprof profile",
	"notes.txt":                  "pprof: not a pprof profile",
	"not-a-trace.json":           "pprof: not a pprof profile",
	"array-not-a-trace.json":     "pprof: not a pprof profile",
	"cpu.pb.gz":                  "pprof: not a device-memory profile: its sample types are samples/count, cpu/nanoseconds",
	"diff.pb.gz":                 "negative values",
	"truncated-memory.pb.gz":     "pprof: gzip stream: unexpected EOF",
}

// readers are the commands that read a trace file, as argument lists
// around the file; convert's output goes to out.
func readers(file, out string) map[string][]string {
	return map[string][]string{
		"summary": {"summary", file},
		"convert": {"convert", file, out},
		"serve":   {"serve", "-timeout", "1ms", file},
	}
}

// TestBadInputCorpus runs every command that reads files on every bad
// file and on directories that hold no trace: each must exit 1 with one
// line on stderr naming the input and what is wrong, print nothing on
// stdout and write nothing.
func TestBadInputCorpus(t *testing.T) {
	entries, err := os.ReadDir("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{} // path → wanted text
	for _, e := range entries {
		want, ok := badCorpus[e.Name()]
		if !ok {
			t.Errorf("testdata/bad/%s has no entry in badCorpus", e.Name())
			continue
		}
		inputs[filepath.Join("testdata", "bad", e.Name())] = want
	}
	if len(inputs) != len(badCorpus) {
		t.Errorf("testdata/bad has %d of badCorpus's %d files", len(inputs), len(badCorpus))
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	emptyLog := filepath.Join(dir, "emptylog")
	noTraceLog := filepath.Join(dir, "notracelog")
	for _, d := range []string{plain, filepath.Join(emptyLog, "plugins", "profile"), filepath.Join(noTraceLog, "plugins", "profile", "2025_01_01_00_00_00")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(plain, "readme.txt"), []byte("hi"), 0o644)
	inputs[plain] = "is a directory, not a trace file"
	inputs[emptyLog] = "is a log directory with no runs"
	inputs[noTraceLog] = "is a log directory with no trace"
	inputs[filepath.Join(dir, "missing.pftrace")] = "no such file"

	for in, want := range inputs {
		for name, args := range readers(in, filepath.Join(dir, "out.pftrace")) {
			code, stdout, stderr := runCLI(args...)
			line := strings.TrimSuffix(stderr, "\n")
			if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof "+name+": ") || !strings.Contains(line, in) || !strings.Contains(line, want) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 1, no output and one line naming it and saying %q", name, in, code, stdout, stderr, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.pftrace")); !os.IsNotExist(err) {
				t.Fatalf("convert %s wrote its output", in)
			}
		}
	}
}

// TestMemoryBadInputCorpus runs devprof memory (with and without -base)
// on every bad file, a directory and a missing file: each must exit 1 with
// one line on stderr naming the input and what is wrong, and print
// nothing on stdout.
func TestMemoryBadInputCorpus(t *testing.T) {
	entries, err := os.ReadDir("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join("testdata", "bad", "memory.pb.gz")
	inputs := map[string]string{}
	for _, e := range entries {
		want, ok := memoryBadCorpus[e.Name()]
		switch {
		case e.Name() == "memory.pb.gz":
		case !ok:
			t.Errorf("testdata/bad/%s has no entry in memoryBadCorpus", e.Name())
		default:
			inputs[filepath.Join("testdata", "bad", e.Name())] = want
		}
	}
	if len(inputs) != len(memoryBadCorpus) {
		t.Errorf("testdata/bad has %d of memoryBadCorpus's %d files", len(inputs), len(memoryBadCorpus))
	}
	dir := t.TempDir()
	inputs[dir] = "is a directory with no memory profile"
	inputs[filepath.Join(dir, "missing.pb.gz")] = "no such file"
	for in, want := range inputs {
		for _, args := range [][]string{{"memory", in}, {"memory", "-base", in, good}, {"memory", "-base", good, in}, {"memory", "-json", in}} {
			code, stdout, stderr := runCLI(args...)
			line := strings.TrimSuffix(stderr, "\n")
			if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof memory: ") || !strings.Contains(line, in) || !strings.Contains(line, want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, no output and one line naming it and saying %q", args, code, stdout, stderr, want)
			}
		}
	}
}

// TestDirectoryMeansItsNewestTrace: a log directory or a run directory
// given where a file is wanted stands for the newest run's trace,
// preferring the Perfetto file, and stderr says which file was read.
func TestDirectoryMeansItsNewestTrace(t *testing.T) {
	logdir := t.TempDir()
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 10}})
	b.Span(event.Span{Name: "oldstep", Start: 1, End: 9})
	old := b.Snapshot()
	b = event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 10}})
	b.Span(event.Span{Name: "newstep", Start: 1, End: 9})
	cur := b.Snapshot()
	oldRun := filepath.Join(logdir, "plugins", "profile", "2025_01_01_00_00_00")
	newRun := filepath.Join(logdir, "plugins", "profile", "2025_01_02_00_00_00")
	write := func(path string, s *event.Snapshot, mod time.Time) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := formats.WriteFile(path, nil, s); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write(filepath.Join(oldRun, "h.pftrace"), old, now.Add(-time.Hour))
	write(filepath.Join(newRun, "h.xplane.pb"), cur, now)
	write(filepath.Join(newRun, "h.pftrace"), cur, now)
	write(filepath.Join(newRun, "h.trace.json.gz"), cur, now)
	want := filepath.Join(newRun, "h.pftrace")
	for _, dir := range []string{logdir, newRun} {
		code, stdout, stderr := runCLI("summary", dir)
		if code != 0 || !strings.Contains(stdout, "newstep") || strings.Contains(stdout, "oldstep") || stderr != "devprof summary: "+dir+" is a directory; reading its newest trace, "+want+"\n" {
			t.Errorf("summary %s: exit %d\nstdout %q\nstderr %q; want %s read and named", dir, code, stdout, stderr, want)
		}
	}
	// Without a Perfetto file the XSpace is next.
	os.Remove(want)
	code, stdout, stderr := runCLI("convert", newRun, filepath.Join(t.TempDir(), "o.json"))
	if code != 0 || !strings.Contains(stderr, "reading its newest trace, "+filepath.Join(newRun, "h.xplane.pb")) || !strings.Contains(stdout, "h.xplane.pb") {
		t.Errorf("convert %s: exit %d\nstdout %q\nstderr %q; want h.xplane.pb read", newRun, code, stdout, stderr)
	}
}
