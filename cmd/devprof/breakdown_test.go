package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/membreakdown"
)

// breakdownMemory is liveMemory (weights on two devices, untagged
// buffers with and without a stack, pinned host memory) and two buffers
// tagged for two categories.
func breakdownMemory() *event.DeviceMemory {
	m := liveMemory()
	for range 2 {
		m.Buffers = append(m.Buffers, event.Buffer{Address: uint64(0x9000 + len(m.Buffers)), Bytes: 2 << 20, Count: 1, Device: 0, Kind: "device",
			Source: "api", Tags: []string{"grad", "weights"}, Stack: stepStack})
	}
	return m
}

// TestBreakdownCommand: devprof memory breakdown on a profile written by
// exporters/pprof prints each category with its total, devices and tags,
// Others, Untrackable from -expected-sum and the multi-match warning,
// and writes MXNet's CSV and the plot.
func TestBreakdownCommand(t *testing.T) {
	path := writeMemProfile(t, breakdownMemory(), "m.pb.gz")
	dir := t.TempDir()
	csvPath, plotPath := filepath.Join(dir, "m.csv"), filepath.Join(dir, "m.png")
	code, out, errOut := runCLI("memory", "breakdown", path, "-expected_sum", "1GiB", "-csv", csvPath, "-plot", plotPath)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The fixture: 3×6 MiB (gpu:0) and 6 MiB (gpu:1) "weights,fp16"; 2×2
	// MiB "grad,weights" (gpu:0); 4×1 MiB untagged in train/step at
	// train.go:71 (gpu:1); 5000 B untagged without a stack (gpu:0); 300
	// KiB pinned.
	tracked := uint64(4*6<<20 + 2*2<<20 + 4<<20 + 5000)
	for _, want := range []string{
		path + ": device memory at " + when(liveMemory().Time) + ": " + size(tracked, false) + " tracked in 11 buffers on gpu:0, gpu:1\n",
		"host memory (pinned, pageable) left out: 300.0 KiB in 1 buffer\n",
		"warning: " + liveMemory().Warnings[0].Text + "\n",
		"categories (the default dictionary): Parameters, Gradients, Optimizer state, Activations, Workspace, Data\n",
		"\nParameters: 28.0 MiB in 6 buffers (gpu:0 22.0 MiB, gpu:1 6.0 MiB)\n",
		"  24.0 MiB        4  weights,fp16\n",
		"   4.0 MiB        2  grad,weights\n",
		"\nGradients: 4.0 MiB in 2 buffers (gpu:0 4.0 MiB)\n",
		"\nOthers: 4.0 MiB in 5 buffers (gpu:0 4.9 KiB, gpu:1 4.0 MiB)\n",
		"  4.0 MiB        4  unknown:train.go:71:main.step train/step\n",
		"  4.9 KiB        1  unknown\n",
		"Untrackable (in use on the device, but in no tracked buffer):\n  all  +" + size(1<<30-tracked, false) + "  = 1.0 GiB (-expected_sum) − " + size(tracked, false) + " tracked\n",
		"warning: \"grad,weights\" (2 buffers, 4.0 MiB) matched Parameters and Gradients: counted in each\n",
		"CSV (MXNet's layout): " + csvPath + "\nplot: " + plotPath + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if p, g, o := strings.Index(out, "\nParameters:"), strings.Index(out, "\nGradients:"), strings.Index(out, "\nOthers:"); !(p < g && g < o) {
		t.Errorf("categories out of order (Parameters, Gradients, Others):\n%s", out)
	}

	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV: %v\n%s", err, data)
	}
	count := map[string]int{}
	for _, r := range recs {
		count[r[0]+" = "+r[1]]++
	}
	want := map[string]int{"weights,fp16 = 6": 4, "grad,weights = 2": 2, "unknown:train.go:71:main.step train/step = 1": 4, "unknown = 0.00476837158203125": 1}
	if !maps.Equal(count, want) {
		t.Errorf("CSV lines %v, want %v:\n%s", count, want, data)
	}
	if !strings.Contains(string(data), "\"weights,fp16\",6\n") {
		t.Errorf("a tag with a comma is not quoted:\n%s", data)
	}

	f, err := os.Open(plotPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() != 960 || img.Bounds().Dy() != 576 {
		t.Errorf("the plot: %v, %v", err, img.Bounds())
	}
}

// hasLine reports whether out has a line that reads as want once runs
// of spaces (column padding) are one space.
func hasLine(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == want {
			return true
		}
	}
	return false
}

// TestBreakdownNVML: the Untrackable of each device comes from NVML's
// figures at capture (per process where the driver said, else the
// device's use), with the total, a negative one said as such; a device
// without a figure is unknown, and so is the total.
func TestBreakdownNVML(t *testing.T) {
	m := breakdownMemory()
	m.Devices = []event.DeviceUsage{{Device: 0, Total: 80 << 30, Used: 3 << 30, Process: 2 << 30}, {Device: 1, Total: 80 << 30, Used: 8 << 20}}
	r := membreakdown.Categorize(m, membreakdown.DefaultDictionary(), membreakdown.Options{})
	var buf bytes.Buffer
	writeBreakdown(&buf, "m.pb.gz", "the default dictionary", membreakdown.DefaultDictionary(), m, r)
	t0 := uint64(3*6<<20 + 2*2<<20 + 5000)
	t1 := uint64(6<<20 + 4<<20)
	for _, want := range []string{
		"gpu:0 +" + size(2<<30-t0, false) + " = 2.0 GiB (NVML at capture, this process) − " + size(t0, false) + " tracked",
		"gpu:1 -2.0 MiB = 8.0 MiB (NVML at capture, all processes) − 10.0 MiB tracked; negative: more tracked than the figure says",
		"all +" + size(2<<30+8<<20-t0-t1, false) + " = " + size(2<<30+8<<20, false) + " (NVML at capture) − " + size(t0+t1, false) + " tracked",
	} {
		if !hasLine(buf.String(), want) {
			t.Errorf("output lacks the line %q:\n%s", want, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "Untrackable (in use on the device, but in no tracked buffer):\n  gpu:0") {
		t.Errorf("no Untrackable heading over gpu:0:\n%s", buf.String())
	}
	m.Devices = m.Devices[:1]
	buf.Reset()
	writeBreakdown(&buf, "m.pb.gz", "the default dictionary", membreakdown.DefaultDictionary(), m, membreakdown.Categorize(m, membreakdown.DefaultDictionary(), membreakdown.Options{}))
	for _, want := range []string{"gpu:1 unknown (no NVML figure for it in the profile)", "all unknown (some device has no figure; -expected_sum BYTES gives one)"} {
		if !hasLine(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
	m.Devices = nil
	buf.Reset()
	writeBreakdown(&buf, "m.pb.gz", "the default dictionary", membreakdown.DefaultDictionary(), m, membreakdown.Categorize(m, membreakdown.DefaultDictionary(), membreakdown.Options{}))
	if !strings.Contains(buf.String(), "Untrackable: unknown: the profile carries no NVML figures for its devices; -expected_sum BYTES gives one\n") {
		t.Errorf("no figures:\n%s", buf.String())
	}
}

// TestBreakdownJSONAndKeywords: -json prints the breakdown by a keyword
// file, categories in the file's order where sizes tie, every tag, and
// the dictionary it used.
func TestBreakdownJSONAndKeywords(t *testing.T) {
	path := writeMemProfile(t, breakdownMemory(), "m.pb.gz")
	kw := filepath.Join(t.TempDir(), "kw.yaml")
	os.WriteFile(kw, []byte("# my categories\nWeights: [weights]\nStep: [train/step]\nFp16: [fp16]\n"), 0o644)
	code, out, errOut := runCLI("memory", "breakdown", "-json", "-keywords", kw, "-expected-sum", "64MiB", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		File           string
		Keywords       string
		Dictionary     []struct{ Category string }
		TrackedBytes   uint64 `json:"tracked_bytes"`
		TrackedBuffers int    `json:"tracked_buffers"`
		HostBytes      uint64 `json:"host_bytes"`
		Devices        []int
		Categories     []struct {
			Name    string
			Bytes   uint64
			Buffers int
			Devices []struct{ Device int }
			Tags    []struct {
				Tag   string
				Bytes uint64
			}
		}
		Untrackable    []any
		UntrackableAll *struct {
			Bytes int64
			From  string
		} `json:"untrackable_total"`
		MultiMatches []struct {
			Text       string
			Categories []string
		} `json:"multi_matches"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tracked := uint64(4*6<<20 + 2*2<<20 + 4<<20 + 5000)
	var names []string
	for _, c := range got.Categories {
		names = append(names, c.Name)
	}
	// Weights (24+4 MiB) and Fp16 (24 MiB) then Step (4 MiB); the 5000 B
	// untagged buffer is Others.
	if !slices.Equal(names, []string{"Weights", "Fp16", "Step", "Others"}) {
		t.Errorf("categories %q", names)
	}
	if got.File != path || got.Keywords != kw || len(got.Dictionary) != 3 || got.Dictionary[1].Category != "Step" ||
		got.TrackedBytes != tracked || got.TrackedBuffers != 11 || got.HostBytes != 300<<10 || !slices.Equal(got.Devices, []int{0, 1}) {
		t.Errorf("header fields: %+v", got)
	}
	if u := got.UntrackableAll; u == nil || u.From != "expected-sum" || u.Bytes != 64<<20-int64(tracked) || len(got.Untrackable) != 0 {
		t.Errorf("untrackable %+v %+v", got.Untrackable, u)
	}
	if len(got.MultiMatches) != 1 || got.MultiMatches[0].Text != "weights,fp16" || !slices.Equal(got.MultiMatches[0].Categories, []string{"Weights", "Fp16"}) {
		t.Errorf("multi-matches %+v", got.MultiMatches)
	}
	if o := got.Categories[3]; o.Bytes != 5000 || len(o.Tags) != 1 || o.Tags[0].Tag != "unknown" {
		t.Errorf("Others %+v", o)
	}
}

// TestBreakdownDirectory: a log directory stands for its newest run's
// memory profile, named on stderr.
func TestBreakdownDirectory(t *testing.T) {
	logdir := t.TempDir()
	old := filepath.Join(logdir, "plugins", "profile", "2026_01_01_00_00_00", "h.memory.pb.gz")
	cur := filepath.Join(logdir, "plugins", "profile", "2026_01_02_00_00_00", "h.memory.pb.gz")
	for i, p := range []string{old, cur} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		m := breakdownMemory()
		if i == 0 {
			m.Buffers = m.Buffers[:1]
		}
		src := writeMemProfile(t, m, "m.pb.gz")
		data, _ := os.ReadFile(src)
		os.WriteFile(p, data, 0o644)
		mod := time.Now().Add(time.Duration(i-1) * time.Hour)
		os.Chtimes(p, mod, mod)
	}
	for _, dir := range []string{logdir, filepath.Dir(cur)} {
		code, out, errOut := runCLI("memory", "breakdown", dir)
		if code != 0 || errOut != "devprof memory breakdown: "+dir+" is a directory; reading its newest memory profile, "+cur+"\n" || !strings.Contains(out, "in 11 buffers") {
			t.Errorf("%s: exit %d\nstderr %q\n%s", dir, code, errOut, out)
		}
	}
}

// TestBreakdownUsageErrors: flags that cannot work exit 2 before reading
// anything, saying why.
func TestBreakdownUsageErrors(t *testing.T) {
	path := writeMemProfile(t, breakdownMemory(), "m.pb.gz")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{path, "-plot", "m.jpg"}, "-plot m.jpg: cannot tell the image format: name a .svg or a .png file"},
		{[]string{path, "-expected-sum", "1.5G"}, `-expected_sum 1.5G: "G" is ambiguous: say GiB (binary) or GB (decimal)`},
		{[]string{path, "-expected-sum", "0"}, "want more than 0 bytes"},
		{[]string{path, "-expected-sum", "lots"}, "want a size such as"},
		{[]string{}, "want exactly one INPUT"},
		{[]string{path, path}, "want exactly one INPUT"},
	} {
		code, out, errOut := runCLI(append([]string{"memory", "breakdown"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"1610612736": 1610612736, "1.5GiB": 3 << 29, "1.5gib": 3 << 29, "1536MiB": 1536 << 20, "1536 MiB": 1536 << 20,
		"2GB": 2e9, "10kB": 10000, "7B": 7, ".5KiB": 512, "0.1GiB": 107374182, "1TiB": 1 << 40,
	} {
		if got, err := parseBytes(in); got != want || err != nil {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1.5", "1.5 G", "1 M", "-1GiB", "1e9", "1 PiB", "99999999999999999999", "9000000TiB", "0.0000001KiB"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
}

// badKeywords maps each file of testdata/badkeywords to where and what
// devprof memory breakdown -keywords must say is wrong with it.
var badKeywords = map[string]string{
	"binary.json":             "binary.json: is not UTF-8 text",
	"duplicate.yaml":          `duplicate.yaml:3:1: category "Parameters" again (first at line 1)`,
	"empty-keyword.yaml":      `empty-keyword.yaml:3:5: category "Parameters": an empty keyword would match every buffer`,
	"empty-name.json":         "empty-name.json:2:2: a category's name is empty",
	"empty.yaml":              "empty.yaml: is empty",
	"keyword-not-string.json": `keyword-not-string.json:2:29: category "Parameters": want a keyword (a string), found a number (3)`,
	"list.json":               "list.json:1:1: want an object of category names to keyword lists, found a list",
	"not-a-list.yaml":         `not-a-list.yaml:2:12: category "Gradients": want a list of keywords, found "grad"`,
	"nothing.yml":             `nothing.yml:1:12: category "Parameters": want a list of keywords, found nothing (null)`,
	"reserved.json":           `reserved.json:1:29: category "Others" is reserved`,
	"syntax.json":             "syntax.json:2:14: JSON syntax: invalid character ':' after array element",
	"syntax.yaml":             "syntax.yaml:2:10: YAML syntax: did not find expected ',' or ']'",
}

// TestBreakdownBadKeywords: every keyword file of the corpus is refused
// with exit 1 and one line naming its line (and column) and the
// problem, before anything is printed or written.
func TestBreakdownBadKeywords(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "badkeywords"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(badKeywords) {
		t.Errorf("testdata/badkeywords has %d files, badKeywords %d", len(entries), len(badKeywords))
	}
	path := writeMemProfile(t, breakdownMemory(), "m.pb.gz")
	out := filepath.Join(t.TempDir(), "m.csv")
	for _, e := range entries {
		want, ok := badKeywords[e.Name()]
		if !ok {
			t.Errorf("testdata/badkeywords/%s has no entry in badKeywords", e.Name())
			continue
		}
		kw := filepath.Join("testdata", "badkeywords", e.Name())
		code, stdout, stderr := runCLI("memory", "breakdown", "-keywords", kw, "-csv", out, path)
		line := strings.TrimSuffix(stderr, "\n")
		if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof memory breakdown: "+filepath.Join("testdata", "badkeywords")+string(filepath.Separator)+want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", kw, code, stdout, stderr, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: the CSV was written", kw)
		}
	}
}

// TestBreakdownBadInputCorpus: devprof memory breakdown refuses every
// bad file as devprof memory does, and directories without a memory
// profile, in one line naming the input.
func TestBreakdownBadInputCorpus(t *testing.T) {
	inputs := map[string]string{}
	for name, want := range memoryBadCorpus {
		inputs[filepath.Join("testdata", "bad", name)] = want
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	emptyLog := filepath.Join(dir, "emptylog")
	noProfileLog := filepath.Join(dir, "noprofilelog")
	run := filepath.Join(noProfileLog, "plugins", "profile", "2026_01_01_00_00_00")
	for _, d := range []string{plain, filepath.Join(emptyLog, "plugins", "profile"), run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(run, "h.pftrace"), []byte("x"), 0o644)
	inputs[plain] = "is a directory with no memory profile (<host>.memory.pb.gz)"
	inputs[emptyLog] = "is a log directory with no runs"
	inputs[noProfileLog] = "is a log directory with no memory profile (<host>.memory.pb.gz) in its runs"
	inputs[filepath.Join(dir, "missing.pb.gz")] = "no such file"
	out := filepath.Join(dir, "out.png")
	for in, want := range inputs {
		code, stdout, stderr := runCLI("memory", "breakdown", "-plot", out, in)
		line := strings.TrimSuffix(stderr, "\n")
		if code != 1 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "devprof memory breakdown: ") || !strings.Contains(line, in) || !strings.Contains(line, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, no output and one line naming it and saying %q", in, code, stdout, stderr, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: the plot was written", in)
		}
	}
	// A profile of host memory only reads, but has nothing to plot.
	host := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: 1 << 20, Count: 1, Device: -1, Kind: "pinned"}}}
	path := writeMemProfile(t, host, "host.pb.gz")
	code, stdout, stderr := runCLI("memory", "breakdown", "-plot", out, path)
	if code != 1 || stdout != "" || !strings.Contains(stderr, out) || !strings.Contains(stderr, "no device memory") {
		t.Errorf("host memory only, -plot: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI("memory", "breakdown", path); code != 0 || !strings.Contains(stdout, "(no device memory)") {
		t.Errorf("host memory only: exit %d\n%s", code, stdout)
	}
}

// TestMemoryStillReadsFiles: devprof memory FILE is unchanged beside its
// subcommand, and help finds the subcommand.
func TestMemoryStillReadsFiles(t *testing.T) {
	path := writeMemProfile(t, breakdownMemory(), "m.pb.gz")
	if code, out, _ := runCLI("memory", path); code != 0 || !strings.Contains(out, "TOTAL") {
		t.Errorf("memory FILE: exit %d\n%s", code, out)
	}
	if code, help, _ := runCLI("help", "memory", "breakdown"); code != 0 || !strings.HasPrefix(help, "Usage: devprof memory breakdown ") {
		t.Errorf("help memory breakdown: exit %d\n%s", code, help)
	}
}

// TestBreakdownNVMLFromProfile: the NVML figures a profile carries (as
// trace.SaveDeviceMemoryProfile writes them) reach Untrackable through
// the file.
func TestBreakdownNVMLFromProfile(t *testing.T) {
	m := breakdownMemory()
	m.Devices = []event.DeviceUsage{{Device: 0, Total: 80 << 30, Used: 3 << 30, Process: 2 << 30}, {Device: 1, Total: 80 << 30, Used: 8 << 20}}
	path := filepath.Join(t.TempDir(), "m.pb.gz")
	if err := pprof.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("memory", "breakdown", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t0 := uint64(3*6<<20 + 2*2<<20 + 5000)
	for _, want := range []string{
		"gpu:0 +" + size(2<<30-t0, false) + " = 2.0 GiB (NVML at capture, this process) − " + size(t0, false) + " tracked",
		"gpu:1 -2.0 MiB = 8.0 MiB (NVML at capture, all processes) − 10.0 MiB tracked; negative: more tracked than the figure says",
	} {
		if !hasLine(out, want) {
			t.Errorf("output lacks the line %q:\n%s", want, out)
		}
	}
}

// TestBreakdownStorageCSV: -csv_columns 5 writes MXNet 2's storage
// profiler's columns from a profile read back: the header, a row per
// allocation of device memory (host memory left out), sizes in bytes,
// and an nvml_amend row for the device whose NVML figure exceeds what is
// tracked there (not for gpu:1, where less was said than tracked); any
// other -csv_columns is a usage error before anything is read.
func TestBreakdownStorageCSV(t *testing.T) {
	m := breakdownMemory()
	m.Devices = []event.DeviceUsage{{Device: 0, Total: 80 << 30, Used: 3 << 30, Process: 2 << 30}, {Device: 1, Total: 80 << 30, Used: 8 << 20}}
	path := filepath.Join(t.TempDir(), "m.pb.gz")
	if err := pprof.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.csv")
	code, stdout, errOut := runCLI("memory", "breakdown", "-csv", out, "-csv_columns", "5", path)
	if code != 0 || !strings.Contains(stdout, "CSV (MXNet 2's storage profiler's columns): "+out) {
		t.Fatalf("exit %d: %s%s", code, stdout, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV: %v\n%s", err, data)
	}
	if !slices.Equal(recs[0], []string{"Attribute Name", "Requested Size", "Device", "Actual Size", "Reuse?"}) {
		t.Errorf("header %q", recs[0])
	}
	back, err := pprof.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var allocs int
	var amends [][]string
	for _, r := range recs[1:] {
		if r[0] == membreakdown.NVMLAmend {
			amends = append(amends, r)
			continue
		}
		allocs++
		if r[1] != r[3] || r[4] != "0" || r[2] != "0" && r[2] != "1" {
			t.Errorf("row %q: want equal sizes, reuse 0, device 0 or 1", r)
		}
	}
	if uint64(allocs) != membreakdown.CSVRows(back) {
		t.Errorf("%d allocation rows, want %d", allocs, membreakdown.CSVRows(back))
	}
	t0 := uint64(3*6<<20 + 2*2<<20 + 5000)
	if want := [][]string{{membreakdown.NVMLAmend, fmt.Sprint(2<<30 - t0), "0", fmt.Sprint(2<<30 - t0), "0"}}; !reflect.DeepEqual(amends, want) {
		t.Errorf("amend rows %q, want %q", amends, want)
	}
	if code, _, errOut := runCLI("memory", "breakdown", "-csv", out, "-csv_columns", "3", path); code != 2 || !strings.Contains(errOut, "-csv_columns 3") {
		t.Errorf("-csv_columns 3: exit %d: %s", code, errOut)
	}
}
