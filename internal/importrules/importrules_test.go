// Package importrules holds the test that keeps devprof's one-way flow
// (ARCHITECTURE.md) true in the tree: sources → recorder → event model →
// exporters → files and servers. It has no code of its own.
package importrules

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/devprof/devprof/"

// layer says which devprof packages the packages under one path may
// import. Paths ending in "/" cover every package beneath them; a package
// matches its longest row. Every devprof package must match a row: a new
// package is placed in the flow on purpose (and in ARCHITECTURE.md).
type layer struct {
	path  string
	may   []string // devprof packages (or trees, ending in "/") it may import
	what  string   // its place in the flow, for failure messages
	cmdOK bool     // may import anything but the recorder and internal test helpers (trace, cmd)
}

var layers = []layer{
	{path: "event", what: "the event model: the ground floor imports no devprof package"},
	{path: "internal/recorder", may: []string{"event"}, what: "the recorder: fills the model"},
	{path: "annotate", may: []string{"event", "internal/recorder"}, what: "a source (spans, steps, counters)"},
	{path: "devmem", may: []string{"event", "internal/recorder", "internal/cuptiwrap", "internal/mode"}, what: "a source (device-memory tracking: CUDA's allocations through internal/cuptiwrap, the explicit API)"},
	{path: "sources/", may: []string{"event", "internal/cuptiwrap", "internal/mode"}, what: "a source's public face: the options, modes and names a user sets and reads, never the recorder"},
	{path: "internal/sources/", may: []string{"event", "internal/recorder", "internal/cuptiwrap", "sources/", "internal/nvmlhook", "internal/gotrace"}, what: "a source's machinery: started and stopped by a session, it writes through the recorder"},
	{path: "internal/mode", what: "the one auto/on/off mode of the optional sources and device-memory tracking"},
	{path: "internal/cuptiwrap", what: "the cgo layer over libcupti, below the CUPTI source"},
	{path: "exporters/", may: []string{"event", "exporters/", "internal/intern", "internal/protoenc", "internal/atomicfile", "internal/metatext", "internal/gotrace", "internal/xplanepb"}, what: "an exporter: reads the model, never the recorder or a source"},
	{path: "internal/gotrace", may: []string{"event"}, what: "the Go execution trace's tracks, shared by the Go-runtime source and the Go-trace reader"},
	{path: "exporters/analysispage", may: []string{"analysis"}, what: "an exporter of pages: an analysis report (and hosts side by side) as one HTML page with inline SVG charts"},
	{path: "exporters/memplot", may: []string{"event", "membreakdown", "internal/atomicfile", "internal/metatext"}, what: "an exporter of images: device memory by category (membreakdown's report, per-device timelines) as SVG or PNG"},
	{path: "perfettolink", what: "a server for a written file"},
	{path: "internal/spanstats", what: "top-N span statistics for devprof summary"},
	{path: "membreakdown", may: []string{"event"}, what: "an analysis over the model: device memory by keyword category (MXNet's breakdown) for devprof memory breakdown"},
	{path: "analysis", may: []string{"event"}, what: "an analysis over the model: steps, device time by category, idle gaps with their cause, kernel and launch statistics (devprof analyze)"},
	{path: "tables", may: []string{"event"}, what: "an exporter of tables: the model as Parquet (devprof export), never the recorder, a source or a bucket"},
	{path: "tracediff", may: []string{"event"}, what: "an analysis over the model: two traces compared per span and kernel name (devprof diff)"},
	{path: "internal/intern", what: "exporters' string interning"},
	{path: "internal/xplanepb", what: "generated code of our XSpace .proto subset, for the xplane reader and tests"},
	{path: "internal/protoenc", what: "exporters' protobuf encoding"},
	{path: "internal/atomicfile", what: "atomic file writes for outputs"},
	{path: "internal/runstore", may: []string{"internal/atomicfile"}, what: "where a run lives: a local directory or a bucket URL (uploads and downloads of finished files)"},
	{path: "internal/s3test", what: "test helper: runs a real S3 server (versitygw) on 127.0.0.1"},
	{path: "internal/sinkpipe", may: []string{"event"}, what: "runs a sink (the analysis) on a goroutine of its own behind a reader, so reading and consuming use two cores"},
	{path: "internal/metatext", may: []string{"event"}, what: "exporters' shared wording of warnings, notes and drops"},
	{path: "internal/mlpdemo", may: []string{"annotate"}, what: "the demo workload: a user of annotate"},
	{path: "internal/eventtest", may: []string{"event", "internal/recorder"}, what: "test helper: records snapshots for exporters' tests"},
	{path: "internal/fakecuda", what: "test helper: the fake libcupti"},
	{path: "internal/fakecuda/fakebind", what: "test helper: a second cgo binding of the fake libcupti's allocator, shaped differently"},
	{path: "internal/heappeak", what: "test helper: samples the heap's live objects for benchmarks' peak-heap figures"},
	{path: "internal/pftest", what: "test helper: encodes Perfetto traces in the forms other writers emit"},
	{path: "internal/nvmlhook", what: "test seam: lets tests hand the NVML source a mock NVML and CUDA enumeration"},
	{path: "internal/nvmlmock", what: "test helper: go-nvml's mock answering as a real H100"},
	{path: "internal/conformance", may: []string{"event", "internal/metatext"}, what: "test helper: hands traces to the Python checkers"},
	{path: "internal/gpucheck", may: []string{"event"}, what: "checks a real-GPU trace against the workload that made it"},
	{path: "internal/gpucheck/cudabind", what: "the real-GPU check's cgo binding of CUDA's allocator, shaped as a user's Go CUDA binding"},
	{path: "internal/gpucheck/cmd/", cmdOK: true, what: "the real-GPU check's driver (scripts/gpu-check)"},
	{path: "profileserver", may: []string{"trace", "event", "profileserver/profilerpb"}, what: "a server: remote capture (tensorflow.ProfilerService) over trace.Capture"},
	{path: "profileserver/profilerpb", what: "generated code of our profiler-service .proto subset"},
	{path: "trace", cmdOK: true, what: "sessions: wires sources, recorder and exporters together"},
	{path: "cmd/", cmdOK: true, what: "the CLI"},
	{path: "internal/importrules", what: "this test"},
	{path: "internal/readmecheck", what: "test: builds the complete programs of README.md and docs/"},
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Dir          string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; is the module root right?", len(pkgs))
	}
	return pkgs
}

func rowOf(path string) *layer {
	var best *layer
	for i := range layers {
		l := &layers[i]
		if path == l.path || strings.HasSuffix(l.path, "/") && strings.HasPrefix(path, l.path) {
			if best == nil || len(l.path) > len(best.path) {
				best = l
			}
		}
	}
	return best
}

func allowed(l *layer, imp string) bool {
	if l.cmdOK {
		return imp != "internal/recorder" || l.path == "trace"
	}
	for _, m := range l.may {
		if imp == m || strings.HasSuffix(m, "/") && strings.HasPrefix(imp, m) {
			return true
		}
	}
	return false
}

// TestImportRules checks every package's own imports (tests may use the
// test helpers) against its row.
func TestImportRules(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		l := rowOf(rel)
		if l == nil {
			t.Errorf("%s has no place in the flow: add it to ARCHITECTURE.md and to this test's layers", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !allowed(l, imp) {
				t.Errorf("%s (%s) imports %s: against the flow (ARCHITECTURE.md)", rel, l.what, imp)
			}
		}
	}
}

// TestRulesCanFail makes sure the table is not vacuous: known bad edges
// are refused and known good ones allowed.
func TestRulesCanFail(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"event", "internal/recorder", false},
		{"exporters/perfetto", "internal/recorder", false},
		{"exporters/xplane", "sources/cupti", false},
		{"exporters/chrome", "annotate", false},
		{"exporters/pprof", "internal/recorder", false},
		{"exporters/pprof", "sources/cupti", false},
		{"sources/cupti", "exporters/xplane", false},
		{"annotate", "exporters/perfetto", false},
		{"cmd/devprof", "internal/recorder", false},
		{"exporters/perfetto", "event", true},
		{"exporters/pprof", "internal/metatext", true},
		{"sources/cupti", "internal/recorder", false},
		{"sources/nvml", "internal/sources/nvmlsource", false},
		{"internal/sources/cuptisource", "internal/recorder", true},
		{"internal/sources/nvmlsource", "sources/nvml", true},
		{"internal/sources/goruntimesource", "exporters/pprof", false},
		{"sources/goruntime", "internal/mode", true},
		{"trace", "internal/recorder", true},
		{"membreakdown", "event", true},
		{"membreakdown", "exporters/pprof", false},
		{"membreakdown", "internal/atomicfile", false},
		{"exporters/memplot", "membreakdown", true},
		{"exporters/memplot", "exporters/pprof", false},
		{"exporters/perfetto", "membreakdown", false},
	} {
		if got := allowed(rowOf(c.from), c.to); got != c.ok {
			t.Errorf("%s → %s allowed = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

// TestNoPublicWayToRecord checks the exported API of every package
// outside internal/: nothing but a session may start recording, so no
// exported name may hand out the recorder or mention it. A source's
// Start, which takes the session's buffer, is internal/sources' alone.
func TestNoPublicWayToRecord(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "cmd/") {
			continue
		}
		cmd := exec.Command("go", "doc", "-all", ".")
		cmd.Dir = p.Dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %s: %v\n%s", rel, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if recorderExposed(line) {
				t.Errorf("%s exports the recorder: %s", rel, strings.TrimSpace(line))
			}
		}
	}
}

// recorderExposed reports whether a line of go doc output (not a
// comment) names the recorder.
func recorderExposed(line string) bool {
	code := strings.TrimSpace(line)
	return !strings.HasPrefix(code, "//") && strings.Contains(code, "recorder.")
}

// TestRecorderExposureCanFail: the check flags every public mention of
// the recorder, a source's Start and Stop included now that sources'
// machinery is internal, and no comment.
func TestRecorderExposureCanFail(t *testing.T) {
	for _, c := range []struct {
		line string
		bad  bool
	}{
		{"func Start(buf *recorder.Buffer, cfg Options) (*Source, error)", true},
		{"func Active() *recorder.Buffer", true},
		{"func (s *Source) Stop() recorder.SourceReport", true},
		{"func (s *Source) Buffer() *recorder.Buffer", true},
		{"    Buf *recorder.Buffer", true},
		{"func (o Options) Validate() error", false},
		{"    // Events are written by the recorder.", false},
	} {
		if got := recorderExposed(c.line); got != c.bad {
			t.Errorf("%q flagged %v, want %v", c.line, got, c.bad)
		}
	}
}
