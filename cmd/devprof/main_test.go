package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/gotrace"
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
	o, snap, err := demo(context.Background(), dir, mlpdemo.Config{Steps: 12, Workers: 3, Out: &out}, true, true, &out)
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
		if snap.Name(r) == "train" {
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
	for _, c := range []string{"demo", "serve", "summary", "convert"} {
		code, out, e := runCLI(c, "-h")
		if code != 0 || !strings.Contains(out, "Usage: devprof "+c) || e != "" {
			t.Errorf("%s -h: %d stdout %q stderr %q", c, code, out, e)
		}
	}
	// A mistyped command gets a suggestion, not the whole usage.
	if code, _, e := runCLI("sumary", "x.pftrace"); code != 2 || !strings.Contains(e, `did you mean "summary"?`) || strings.Contains(e, "Environment") {
		t.Errorf("sumary: %d %q", code, e)
	}
	if near := nearestCommand("frobnicate"); near != "" {
		t.Errorf("frobnicate: suggested %q", near)
	}
	if code, _, e := runCLI("summary"); code != 2 || !strings.Contains(e, "exactly one FILE") {
		t.Errorf("summary without file: %d %q", code, e)
	}
	if code, _, e := runCLI("demo", "-steps", "x"); code != 2 || !strings.Contains(e, "invalid value") {
		t.Errorf("bad flag: %d %q", code, e)
	}
}

// TestServeAnyFormat: serve opens every format devprof reads in the
// Perfetto UI: a Perfetto trace as it is, an XSpace (which the UI cannot
// open) and Chrome JSON converted on the fly into a Perfetto file kept
// beside the input (nothing is left in the temporary directory).
func TestServeAnyFormat(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the conversion goes; checked empty after
	serveAddr = "127.0.0.1:0"
	defer func() { serveAddr = "" }()
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 10}})
	b.Span(event.Span{Name: "served-step", Start: 1, End: 9})
	s := b.Snapshot()
	goTrace := goTraceFile(t, "served-step")
	for _, c := range []struct {
		name      string
		f         *formats.Format
		converted bool
		kept      bool // h.pftrace is there already: never overwritten
	}{
		{"h.pftrace", formats.Perfetto, false, false},
		{"h.xplane.pb", formats.XPlane, true, false},
		{"x.xplane.pb", formats.XPlane, true, true},
		{"misnamed.pftrace", formats.XPlane, true, true},
		{"j.json.gz", formats.Chrome, true, true},
		{"trace.out", formats.GoTrace, true, true},
	} {
		path := filepath.Join(dir, c.name)
		if c.f == formats.GoTrace {
			if err := os.WriteFile(path, goTrace, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := formats.WriteFile(path, c.f, s); err != nil {
			t.Fatal(err)
		}
		// stdout is drained on its own goroutine: serve writes to it while
		// the test is fetching.
		pr, pw := io.Pipe()
		var errOut bytes.Buffer
		code := make(chan int, 1)
		go func() {
			code <- run([]string{"serve", "-timeout", "20s", path}, pw, &errOut)
			pw.Close()
		}()
		urls := make(chan string, 1)
		lines := make(chan []string, 1)
		go func() {
			var out []string
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				line := sc.Text()
				out = append(out, line)
				// perfettolink: serving FILE (N bytes) once at URL
				if i := strings.Index(line, " once at http://"); i >= 0 && strings.HasPrefix(line, "perfettolink: serving ") {
					urls <- line[i+len(" once at "):]
				}
			}
			close(urls)
			lines <- out
		}()
		var got []byte
		if u, ok := <-urls; ok {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
			resp, err := client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		rc := <-code
		out := <-lines
		if rc != 0 || got == nil {
			t.Fatalf("serve %s: exit %d, fetched %d bytes\n%s\n%s", c.name, rc, len(got), strings.Join(out, "\n"), errOut.String())
		}
		said := strings.Contains(strings.Join(out, "\n"), "devprof serve: "+path+" is a "+c.f.Display+"; serving it converted to Perfetto")
		if said != c.converted {
			t.Errorf("serve %s: said it converted: %v, want %v\n%s", c.name, said, c.converted, strings.Join(out, "\n"))
		}
		served := filepath.Join(t.TempDir(), "served")
		os.WriteFile(served, got, 0o644)
		snap, f, err := formats.Read(served)
		if err != nil || f != formats.Perfetto {
			t.Fatalf("serve %s served a %v: %v", c.name, f, err)
		}
		steps := 0
		for _, r := range snap.Events {
			if snap.Name(r) == "served-step" {
				steps++
			}
		}
		// The Go trace's region is one of its many events.
		if steps != 1 || c.f != formats.GoTrace && len(snap.Events) != 1 {
			t.Errorf("serve %s served %d events, %d of them served-step", c.name, len(snap.Events), steps)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("serve %s left %v in the temporary directory", c.name, left)
		}
		// What the link served (and the UI's "drag it here" names) is
		// kept beside the input, where it outlives serve.
		said = strings.Contains(strings.Join(out, "\n"), "kept as "+renamed(path, c.f, formats.Perfetto))
		temporary := strings.Contains(strings.Join(out, "\n"), "in a temporary file, removed when serve ends")
		if said != c.kept || temporary != (c.converted && !c.kept) {
			t.Errorf("serve %s: said kept %v, temporary %v; want kept %v\n%s", c.name, said, temporary, c.kept, strings.Join(out, "\n"))
		}
		if _, err := os.Stat(renamed(path, c.f, formats.Perfetto)); c.kept && err != nil {
			t.Errorf("serve %s: the converted trace is not kept: %v", c.name, err)
		}
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

// TestConvertChain converts the demo's trace through every format and back
// and requires the same spans at the end, and summary to read each file.
func TestConvertChain(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	o, _, err := demo(context.Background(), filepath.Join(dir, "logdir"), mlpdemo.Config{Steps: 4, Workers: 2}, false, false, &out)
	if err != nil {
		t.Fatal(err)
	}
	orig, _, err := formats.Read(o.Perfetto)
	if err != nil {
		t.Fatal(err)
	}
	chain := []string{o.Perfetto, filepath.Join(dir, "a.xplane.pb"), filepath.Join(dir, "b.json.gz"), filepath.Join(dir, "c.json"), filepath.Join(dir, "d.pftrace.gz")}
	for i := 1; i < len(chain); i++ {
		code, stdout, stderr := runCLI("convert", chain[i-1], chain[i])
		if code != 0 || !strings.Contains(stdout, "→ "+chain[i]) {
			t.Fatalf("convert %s %s: exit %d\n%s%s", chain[i-1], chain[i], code, stdout, stderr)
		}
		code, stdout, stderr = runCLI("summary", chain[i])
		if code != 0 || !strings.Contains(stdout, "dense2/grad") || !strings.Contains(stdout, "train") {
			t.Fatalf("summary %s: exit %d\n%s%s", chain[i], code, stdout, stderr)
		}
	}
	final, _, err := formats.Read(chain[len(chain)-1])
	if err != nil {
		t.Fatal(err)
	}
	names := func(evs []string) map[string]int {
		m := map[string]int{}
		for _, n := range evs {
			m[n]++
		}
		return m
	}
	var a, b []string
	for _, r := range orig.Events {
		a = append(a, r.Kind().String()+":"+orig.Name(r))
	}
	for _, r := range final.Events {
		b = append(b, r.Kind().String()+":"+final.Name(r))
	}
	na, nb := names(a), names(b)
	for k, v := range na {
		if nb[k] != v {
			t.Errorf("%s: %d after the chain, %d before", k, nb[k], v)
		}
	}
	if len(a) != len(b) {
		t.Errorf("%d events after the chain, %d before", len(b), len(a))
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "bad.xplane.pb")
	os.WriteFile(corrupt, []byte{0x0a, 0xff, 0xff, 0x7f, 1}, 0o644)
	good := filepath.Join(dir, "good.pftrace")
	code, _, e := runCLI("demo", "-logdir", dir, "-steps", "1", "-workers", "1")
	if code != 0 {
		t.Fatal(e)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "plugins", "profile", "*", "*.pftrace"))
	os.Rename(files[0], good)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"convert", good, filepath.Join(dir, "out.txt")}, "cannot tell the output format"},
		{[]string{"convert", good, filepath.Join(dir, "out.xplane.pb.gz")}, "does not read gzip"},
		{[]string{"convert", filepath.Join(dir, "missing.pftrace"), filepath.Join(dir, "o.pftrace")}, "no such file"},
		{[]string{"convert", corrupt, filepath.Join(dir, "o.pftrace")}, "xplane"},
		{[]string{"convert", good, filepath.Join(dir, "nodir", "o.pftrace")}, "cannot write"},
	}
	for _, c := range cases {
		code, _, e := runCLI(c.args...)
		last := strings.TrimSpace(e)
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		if code != 1 || !strings.Contains(last, c.want) || !strings.HasPrefix(last, "devprof convert: ") {
			t.Errorf("%v: exit %d, last line %q; want exit 1 and %q", c.args, code, last, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.pftrace")); !os.IsNotExist(err) {
		t.Error("a failed convert left an output file")
	}
	if code, _, _ := runCLI("convert", good); code != 2 {
		t.Error("convert with one argument should be a usage error")
	}
}

// TestEmptyTraceIsRefused is issue 17: a zero-byte file named like a
// Perfetto trace used to read as a trace with no events, so summary printed
// an empty table and convert wrote an empty trace. Both must refuse it in
// one line, exit 1 and write nothing.
func TestEmptyTraceIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x.pftrace", "x.pftrace.gz"} {
		in := filepath.Join(dir, name)
		if err := os.WriteFile(in, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+name+".json")
		for _, args := range [][]string{{"summary", in}, {"convert", in, out}} {
			code, stdout, stderr := runCLI(args...)
			line := strings.TrimSpace(stderr)
			if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof "+args[0]+": ") || !strings.Contains(line, in) || !strings.Contains(line, "empty") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, no output and one line saying %s is empty", args, code, stdout, stderr, in)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("convert of an empty %s wrote %s", name, out)
		}
	}
}

// summary prints each device's counters as min, mean and max.
func TestSummaryDeviceCounters(t *testing.T) {
	b := event.NewBuilder(event.Meta{Host: "h", PID: 1, Program: "p", Stop: event.ClockAnchor{Mono: 10_000}})
	dev := b.Track(event.Track{Kind: event.TrackDevice, Device: 1, DeviceName: "NVIDIA H100 80GB HBM3"})
	for i, v := range []float64{20, 60, 100} {
		b.TrackCounter(dev, "GPU utilization", "%", int64(1000*(i+1)), v)
	}
	b.Span(event.Span{Name: "step", Start: 500, End: 4000})
	path := filepath.Join(t.TempDir(), "x.pftrace")
	if err := formats.WriteFile(path, formats.Perfetto, b.Snapshot()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("summary", path)
	if code != 0 {
		t.Fatalf("summary: exit %d\n%s", code, errOut)
	}
	re := regexp.MustCompile(`GPU 1 \(NVIDIA H100 80GB HBM3\)\s+GPU utilization\s+%\s+3\s+20\s+60\s+100`)
	if !re.MatchString(out) {
		t.Errorf("summary lacks the device's counter statistics:\n%s", out)
	}
}

// goTraceFile records a Go execution trace of this process (runtime/trace,
// as go test -trace does) in which a region named region runs a GC.
func goTraceFile(t *testing.T, region string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	rtrace.WithRegion(context.Background(), region, runtime.GC)
	rtrace.Stop()
	return buf.Bytes()
}

// TestGoTraceInput: a Go execution trace converts to every format devprof
// writes and summarises with the Go runtime's section.
func TestGoTraceInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "trace.out")
	if err := os.WriteFile(in, goTraceFile(t, "my-region"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("summary", in)
	if code != 0 || !strings.Contains(stdout, "(Go execution trace)") || !regexp.MustCompile(`Go runtime: [1-9][0-9]* GC cycles?; [1-9][0-9]* stop-the-world pauses?`).MatchString(stdout) || !strings.Contains(stdout, "my-region") {
		t.Errorf("summary: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("summary", "-json", in)
	var js struct {
		GoRuntime *struct {
			GCs     int `json:"gc_cycles"`
			Pauses  int `json:"stw_pauses"`
			Regions []struct {
				Name string `json:"name"`
			} `json:"regions"`
		} `json:"go_runtime"`
	}
	if err := json.Unmarshal([]byte(stdout), &js); code != 0 || err != nil || js.GoRuntime == nil || js.GoRuntime.GCs < 1 || js.GoRuntime.Pauses < 1 ||
		len(js.GoRuntime.Regions) != 1 || js.GoRuntime.Regions[0].Name != "my-region" {
		t.Errorf("summary -json: exit %d, %v: %s", code, err, stdout)
	}
	for _, ext := range []string{".pftrace", ".xplane.pb", ".json.gz"} {
		out := filepath.Join(dir, "t"+ext)
		if code, stdout, stderr := runCLI("convert", in, out); code != 0 || !strings.Contains(stdout, "(Go execution trace, ") {
			t.Errorf("convert to %s: exit %d\n%s%s", ext, code, stdout, stderr)
		}
		if code, stdout, _ := runCLI("summary", out); code != 0 || !strings.Contains(stdout, "my-region") {
			t.Errorf("summary of %s: exit %d\n%s", ext, code, stdout)
		}
	}
	if code, _, stderr := runCLI("convert", filepath.Join(dir, "t.pftrace"), filepath.Join(dir, "back.out")); code == 0 || !strings.Contains(stderr, "does not write") {
		t.Errorf("convert to a Go trace: exit %d, %s", code, stderr)
	}
}

// TestGoTraceMaxEvents: -max_events bounds what convert and summary keep
// of a Go execution trace and says what was dropped, while the GC counts
// still cover the whole file; a bound on a format read whole, or a
// negative one, is refused.
func TestGoTraceMaxEvents(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "trace.out")
	if err := os.WriteFile(in, goTraceFile(t, "my-region"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.pftrace")
	code, stdout, stderr := runCLI("convert", "-max_events", "20", in, out)
	if code != 0 || !strings.Contains(stdout, " events)") || !regexp.MustCompile(`kept the first 20 events, up to [0-9.]+ s into the trace's [0-9.]+ s; [1-9][0-9]* later events not drawn \(raise with -max_events N, .*\); the Go runtime's counts cover the whole file`).MatchString(stderr) {
		t.Errorf("convert -max_events 20: exit %d\n%s%s", code, stdout, stderr)
	}
	s, _, err := formats.Read(out)
	// The first 20 events and the collector's slices past them.
	collector := 0
	for _, e := range s.Events {
		if e.Lane() == 0 || int(e.Lane()) > len(s.Tracks) {
			continue
		}
		if n := s.Tracks[e.Lane()-1].Name; n == gotrace.TrackGC || n == gotrace.TrackSTW {
			collector++
		}
	}
	if err != nil || collector == 0 || len(s.Events) > 20+collector {
		t.Fatalf("the Perfetto file read back: %v, %d events of which %d the collector's, want at most 20 others", err, len(s.Events), collector)
	}
	code, stdout, _ = runCLI("summary", "-max_events", "20", in)
	if code != 0 || !regexp.MustCompile(`Go runtime: [1-9][0-9]* GC cycles?; [1-9][0-9]* stop-the-world pauses?`).MatchString(stdout) {
		t.Errorf("summary -max_events 20: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("convert", "-max_events", "20", out, filepath.Join(dir, "u.json.gz")); code == 0 || !strings.Contains(stderr, "read whole") {
		t.Errorf("-max_events on a Perfetto input: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("summary", "-max_events", "-1", in); code != 2 || !strings.Contains(stderr, "want 0") {
		t.Errorf("-max_events -1: exit %d, %s", code, stderr)
	}
}

// Every flag is spelled with underscores; the earlier spellings keep
// working, silently.
func TestEarlierFlagSpellings(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("log_dir", "", "")
	fs.Bool("go_runtime", true, "")
	fs.String("expected_sum", "", "")
	got := canonicalFlags(fs, []string{"-logdir", "d", "--go-runtime=false", "-expected-sum=1GiB", "-unknown-flag", "file", "--", "-logdir"})
	want := []string{"-log_dir", "d", "--go_runtime=false", "-expected_sum=1GiB", "-unknown-flag", "file", "--", "-logdir"}
	if !slices.Equal(got, want) {
		t.Errorf("canonicalFlags: %q, want %q", got, want)
	}
	dir := t.TempDir()
	code, _, stderr := runCLI("demo", "-logdir", dir, "-go-runtime=false", "-steps", "1", "-chrome=false")
	if code != 0 || strings.Contains(stderr, "flag provided but not defined") {
		t.Fatalf("demo with the earlier spellings: exit %d, %s", code, stderr)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "plugins", "profile", "*", "*.pftrace")); len(runs) != 1 {
		t.Errorf("demo -logdir %s wrote %v", dir, runs)
	}
}
