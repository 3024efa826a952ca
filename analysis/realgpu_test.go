package analysis

import (
	"cmp"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
)

func fixture(name string) string { return filepath.Join("..", "testdata", "real-gpu", name) }

// analyzeFile streams a file into an Analyzer, as devprof analyze does,
// and checks that the model read whole and replayed says the same: the
// readers' order contract is what lets the sink stream.
func analyzeFile(t *testing.T, name string, opt Options) *Report {
	t.Helper()
	path := fixture(name)
	f, err := formats.Detect(path)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAnalyzer(event.Meta{}, opt)
	if err := f.StreamFile(path, a, formats.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	r := a.Report()
	s, _, err := formats.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if whole := Analyze(s, opt); !reflect.DeepEqual(whole, r) {
		t.Errorf("%s: streamed and read whole differ\nstreamed %+v\n   whole %+v", name, r, whole)
	}
	for _, d := range r.Devices {
		checkAddsUp(t, name, "device", d.Breakdown)
		for _, s := range d.Streams {
			checkAddsUp(t, name, s.Name, s.Breakdown)
			if i := s.Idle; i.HostWaitNS+i.KernelWaitNS+i.SyncNS+i.OtherNS != s.IdleNS {
				t.Errorf("%s %s: idle by cause %+v does not add up to its idle %d", name, s.Name, i, s.IdleNS)
			}
		}
	}
	return r
}

func checkAddsUp(t *testing.T, file, what string, b Breakdown) {
	t.Helper()
	if b.ComputeNS+b.CommunicationNS+b.MemoryNS+b.IdleNS != b.WallNS || b.IdleNS < 0 {
		t.Errorf("%s %s: %+v does not add up to its wall", file, what, b)
	}
}

// TestKinetoFixture: PyTorch's profiler recording the libwork workload
// (500 iterations of H2D copy, memset, saxpy, scale, D2H copy on one
// stream; no ProfilerStep spans). One stream, so compute is exactly the
// kernels' time; the device waits on the host most of the time: each
// iteration's copy is launched only after the host synchronized and
// freed and allocated its buffers.
func TestKinetoFixture(t *testing.T) {
	r := analyzeFile(t, "kineto-h100-libwork.json.gz", Options{})
	if r.Steps != nil {
		t.Errorf("steps %+v: the trace has none", r.Steps)
	}
	if len(r.Devices) != 1 || len(r.Devices[0].Streams) != 1 {
		t.Fatalf("devices %+v: want one device with one stream", r.Devices)
	}
	d := r.Devices[0]
	want := Breakdown{StartNS: 2255576, WallNS: 66678087, ComputeNS: 1353738, MemoryNS: 7229409, IdleNS: 58094940}
	if d.Breakdown != want {
		t.Errorf("device\n got %+v\nwant %+v", d.Breakdown, want)
	}
	if d.ComputeNS != r.Kernels.TotalNS || r.Kernels.Count != 1000 {
		t.Errorf("compute %d ns, %d kernels of %d ns: want the kernels' own time", d.ComputeNS, r.Kernels.Count, r.Kernels.TotalNS)
	}
	// 2,500 pieces of work, so 2,499 gaps.
	wantIdle := IdleByCause{HostWaitNS: 48673740, KernelWaitNS: 9390928, OtherNS: 30272, Gaps: 2499}
	if r.Idle.IdleByCause != wantIdle {
		t.Errorf("idle\n got %+v\nwant %+v", r.Idle.IdleByCause, wantIdle)
	}
	g := r.Idle.Largest[0]
	if g.Cause != CauseHostWait || g.Launch != "cudaMemcpyAsync" || g.HostSpan != "cudaStreamSynchronize" {
		t.Errorf("largest gap %+v: want the next iteration's copy, launched after the host's synchronize", g)
	}
	l := r.Kernels.Launch
	if l.Linked != 1000 || l.Tiny != 1000 || len(l.TinyLaunchers) != 1 || l.TinyLaunchers[0].Name != "cudaLaunchKernel" {
		t.Errorf("launch %+v", l)
	}
	if len(r.Kernels.Top) != 2 || r.Kernels.Top[0].Count != 500 || r.Kernels.Top[0].Occupancy != 24 {
		t.Errorf("top kernels %+v", r.Kernels.Top)
	}
}

// TestDevprofFixture: devprof recording 20 steps of the same workload
// (testdata/real-gpu/devprof-h100-libwork.manifest.json). Step 0 holds
// CUDA's start-up (the first cudaMalloc makes the context): warm-up.
func TestDevprofFixture(t *testing.T) {
	r := analyzeFile(t, "devprof-h100-libwork.pftrace", Options{})
	st := r.Steps
	if st == nil || len(st.All) != 20 || st.Source != "step markers" {
		t.Fatalf("steps %+v: want 20 marked steps", st)
	}
	if st.Warmup != 1 || st.All[0].Number != 0 || st.All[0].WallNS < 5*st.Wall.P50 {
		t.Errorf("warm-up %d, step 0 %+v, p50 %d: want step 0, far slower, apart", st.Warmup, st.All[0], st.Wall.P50)
	}
	for _, s := range st.All {
		if s.DeviceBusyNS+s.DeviceIdleNS != s.WallNS || s.HostBusyNS > s.WallNS || s.DeviceBusyNS <= 0 {
			t.Errorf("step %+v", s)
		}
	}
	// Per step: two kernels, an H2D copy, a memset and a D2H copy on one
	// stream (the synchronizations are not work).
	if r.Kernels.Count != 40 || len(r.Devices) != 1 || r.Idle.Gaps != 5*20-1 {
		t.Errorf("%d kernels, %d devices, %d gaps; want 40, 1, 99", r.Kernels.Count, len(r.Devices), r.Idle.Gaps)
	}
	if d := r.Devices[0]; d.MemoryNS < 10*d.ComputeNS {
		t.Errorf("device %+v: the 4 MiB copies should dwarf the kernels", d.Breakdown)
	}
	if l := r.Kernels.Launch; l.Linked != 40 || len(l.TinyLaunchers) != 1 || l.TinyLaunchers[0].Name != "gpu_step" {
		t.Errorf("launch %+v: want every kernel linked, launched inside gpu_step", l)
	}
}

// TestJAXFixture: a jitted JAX training loop of 8 steps (TSL's step
// markers), its 6 kernels a step run as one CUDA graph.
func TestJAXFixture(t *testing.T) {
	r := analyzeFile(t, "jax-h100-train.xplane.pb", Options{})
	st := r.Steps
	if st == nil || len(st.All) != 8 {
		t.Fatalf("steps %+v: want 8", st)
	}
	// Steps 0 and 1 compile and warm up (1.28 ms and 0.35 ms against a
	// median of 0.16 ms).
	if st.Warmup != 2 {
		t.Errorf("warm-up %d, want 2 (walls %+v)", st.Warmup, st.All)
	}
	if r.Kernels.Count != 48 || r.Kernels.Launch.Linked != 48 {
		t.Errorf("%d kernels, %d linked; want 48, 48", r.Kernels.Count, r.Kernels.Launch.Linked)
	}
	for _, k := range r.Kernels.Top {
		if k.Count != 8 || k.Occupancy <= 0 {
			t.Errorf("kernel %+v: want 8 instances with xprof's occupancy", k)
		}
	}
	if d := r.Devices[0]; d.Name != "NVIDIA H100 80GB HBM3" || d.ComputeNS == 0 || d.MemoryNS != 0 {
		t.Errorf("device %+v", d)
	}
}

// venvPython returns the conformance virtualenv's interpreter (.venv at
// the module root, made by scripts/pyenv). Without it the test skips,
// except under scripts/test (DEVPROF_CONFORMANCE_DIR set), where a skip
// would hide a failure.
func venvPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		if conformance.Dir() != "" {
			t.Fatalf("DEVPROF_CONFORMANCE_DIR is set but the conformance virtualenv is missing (%v): run scripts/pyenv", err)
		}
		t.Skipf("no conformance virtualenv (%v): run scripts/pyenv, or scripts/test", err)
	}
	return py
}

// htaResult is what conformance/hta_check.py prints (microseconds).
type htaResult struct {
	Temporal struct {
		Idle       float64 `json:"idle_us"`
		Compute    float64 `json:"compute_us"`
		NonCompute float64 `json:"non_compute_us"`
		KernelTime float64 `json:"kernel_time_us"`
	} `json:"temporal"`
	Idle []struct {
		Stream   int64   `json:"stream"`
		Category string  `json:"category"`
		Idle     float64 `json:"idle_us"`
	} `json:"idle"`
}

// runHTA runs conformance/hta_check.py on a Kineto trace.
func runHTA(t *testing.T, py, path string) htaResult {
	t.Helper()
	out, err := exec.Command(py, filepath.Join("..", "conformance", "hta_check.py"), path).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("hta_check.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var h htaResult
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("hta_check.py printed %q: %v", out, err)
	}
	if len(h.Idle) == 0 {
		t.Fatalf("HTA found no idle time: %s", out)
	}
	return h
}

// TestHTAAgrees runs HTA 0.5.0 (holistictraceanalysis, pinned in
// conformance/requirements.txt) on the Kineto fixture and holds devprof's
// temporal and idle-time breakdowns to its own, within 1% of the wall
// time. HTA's non-compute is communication plus memory; its "other" idle
// is sync plus other (it has no sync).
func TestHTAAgrees(t *testing.T) {
	py := venvPython(t)
	name := "kineto-h100-libwork.json.gz"
	h := runHTA(t, py, fixture(name))
	r := analyzeFile(t, name, Options{})
	d := r.Devices[0]
	wall := float64(d.WallNS)
	within := func(what string, ours int64, hta float64) {
		t.Helper()
		hta *= 1000 // µs to ns
		if diff := math.Abs(float64(ours) - hta); diff > 0.01*wall {
			t.Errorf("%s: devprof %d ns, HTA %.0f ns: %.2f%% of the wall time apart (1%% allowed)", what, ours, hta, 100*diff/wall)
		} else {
			t.Logf("%s: devprof %d ns, HTA %.0f ns", what, ours, hta)
		}
	}
	within("wall (HTA's kernel time)", d.WallNS, h.Temporal.KernelTime)
	within("compute", d.ComputeNS, h.Temporal.Compute)
	within("non-compute", d.CommunicationNS+d.MemoryNS, h.Temporal.NonCompute)
	within("idle", d.IdleNS, h.Temporal.Idle)
	byCause := map[string]float64{}
	for _, i := range h.Idle {
		if i.Stream != d.Streams[0].ID {
			t.Errorf("HTA's stream %d: devprof has only %d", i.Stream, d.Streams[0].ID)
		}
		byCause[i.Category] += i.Idle
	}
	s := d.Streams[0].Idle
	within("host wait", s.HostWaitNS, byCause["host_wait"])
	within("kernel wait", s.KernelWaitNS, byCause["kernel_wait"])
	within("other (sync and other)", s.SyncNS+s.OtherNS, byCause["other"])
}

// TestFormatsAgree: the golden session written as Perfetto, XSpace and
// Chrome JSON says the same in each, but where its timeline begins and
// the device's name, which the Chrome reader gives no track (devprof's
// Chrome writer names the device's process, which it reads back as the
// program's).
func TestFormatsAgree(t *testing.T) {
	var want *Report
	for _, name := range []string{"session.pftrace", "session.xplane.pb", "session.trace.json"} {
		path := filepath.Join("..", "testdata", "golden", name)
		s, _, err := formats.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		r := Analyze(s, Options{})
		if len(r.Devices) != 1 || r.Kernels.Count != 2 || r.Steps == nil || len(r.Steps.All) != 2 {
			t.Errorf("%s: %d devices, %d kernels, steps %+v", name, len(r.Devices), r.Kernels.Count, r.Steps)
		}
		r.StartNS, r.EndNS, r.Events = 0, 0, 0
		if want != nil && len(r.Devices) == 1 && r.Devices[0].Name == "" {
			r.Devices[0].Name = want.Devices[0].Name
		}
		if want == nil {
			want = r
		} else if !reflect.DeepEqual(r, want) {
			t.Errorf("%s differs from %s:\n got %+v\nwant %+v", name, "session.pftrace", r, want)
		}
	}
}

// TestHTASyncEvents holds the one place the two differ by definition: a
// stream's synchronization event (Kineto's cuda_sync, "Stream Sync") is
// non-compute time to HTA's temporal breakdown, and no device work to
// devprof. With 100µs of it put in the fixture's largest gap, HTA's
// non-compute grows and its idle shrinks by exactly that; devprof's
// figures, and both idle-time breakdowns, stay as they were.
func TestHTASyncEvents(t *testing.T) {
	py := venvPython(t)
	f, err := os.Open(fixture("kineto-h100-libwork.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var trace map[string]any
	if err := json.NewDecoder(zr).Decode(&trace); err != nil {
		t.Fatal(err)
	}
	events := trace["traceEvents"].([]any)
	type work struct{ ts, end float64 }
	var gpu []work
	for _, e := range events {
		m := e.(map[string]any)
		switch m["cat"] {
		case "kernel", "gpu_memcpy", "gpu_memset":
			ts, dur := m["ts"].(float64), m["dur"].(float64)
			gpu = append(gpu, work{ts, ts + dur})
		}
	}
	slices.SortFunc(gpu, func(x, y work) int { return cmp.Compare(x.ts, y.ts) })
	gap := 1
	for i := range gpu[1:] {
		if gpu[i+1].ts-gpu[i].end > gpu[gap].ts-gpu[gap-1].end {
			gap = i + 1
		}
	}
	const syncUS = 100.0
	if gpu[gap].ts-gpu[gap-1].end < syncUS+20 {
		t.Fatalf("the largest gap is %vµs: no room for the sync", gpu[gap].ts-gpu[gap-1].end)
	}
	trace["traceEvents"] = append(events, map[string]any{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 13,
		"ts": gpu[gap-1].end + 10, "dur": syncUS, "args": map[string]any{"device": 0, "context": 1, "stream": 13, "correlation": 999999}})
	path := filepath.Join(t.TempDir(), "rank-0.json")
	data, err := json.Marshal(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := runHTA(t, py, path)
	base := runHTA(t, py, fixture("kineto-h100-libwork.json.gz"))
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%s: %.3fµs, want %.3fµs", what, got, want)
		}
	}
	near("HTA's non-compute", h.Temporal.NonCompute, base.Temporal.NonCompute+syncUS)
	near("HTA's idle", h.Temporal.Idle, base.Temporal.Idle-syncUS)

	s, _, err := formats.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got, want := Analyze(s, Options{}), analyzeFile(t, "kineto-h100-libwork.json.gz", Options{})
	if got.Devices[0].Breakdown != want.Devices[0].Breakdown || got.Idle.IdleByCause != want.Idle.IdleByCause {
		t.Errorf("with a sync event devprof says\n%+v %+v\nwithout\n%+v %+v", got.Devices[0].Breakdown, got.Idle.IdleByCause,
			want.Devices[0].Breakdown, want.Idle.IdleByCause)
	}
	d := got.Devices[0]
	near("devprof's non-compute against HTA's less the sync", float64(d.CommunicationNS+d.MemoryNS)/1000, h.Temporal.NonCompute-syncUS)
}
