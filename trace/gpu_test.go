//go:build cgo

package trace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"google.golang.org/protobuf/proto"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/internal/nvmlmock"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/internal/sources/cuptisource"
	"github.com/devprof/devprof/internal/xplanepb"
	cupti "github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/sources/nvml"
	"github.com/devprof/devprof/trace"
)

// useFakeCUPTI points sessions at the fake libcupti through the same
// search as the real one (DEVPROF_CUPTI_LIB), in one CUDA layout; script
// says whether the fake also plays its scripted workload (every kind of
// record) besides the launches a test makes.
func useFakeCUPTI(t *testing.T, layout string, script bool) *fakecuda.Lib {
	t.Helper()
	t.Setenv("FAKECUPTI_LAYOUT", layout)
	for _, k := range []string{"FAKECUPTI_BASE", "FAKECUPTI_DROPPED", "FAKECUPTI_FAIL", "FAKECUPTI_VERSION", "FAKECUPTI_BUFFER_LIMIT"} {
		t.Setenv(k, "")
	}
	if script {
		t.Setenv("FAKECUPTI_SCRIPT", "")
	} else {
		t.Setenv("FAKECUPTI_SCRIPT", "0")
	}
	lib := fakecuda.Build(t)
	t.Setenv("DEVPROF_CUPTI_LIB", lib)
	fk, err := fakecuda.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	return fk
}

// TestGPUSession records a training loop whose steps launch kernels on the
// fake libcupti, in each CUDA layout, and checks both outputs: device
// planes and stream lines, kernels with their details, launches linked to
// kernels by correlation_id with device_id, the attributed span as tf_op,
// and the clock note. The files go to the conformance checkers (Perfetto
// schema rules; xprof's trace viewer, kernel_stats, launch flows and the
// overview's per-step device time).
func TestGPUSession(t *testing.T) {
	for _, layout := range []string{"11.8", "12", "13"} {
		t.Run(layout, func(t *testing.T) {
			fk := useFakeCUPTI(t, layout, false)
			s := mustStart(t, t.TempDir(), trace.Options{AdvancedConfig: map[string]any{"gpu_flush_period_ms": 10}})
			ctx := context.Background()
			for step := int64(0); step < 3; step++ {
				sctx, st := annotate.Step(ctx, "train", step)
				dctx, dev := annotate.Device(sctx, "matmul", annotate.Int("step", int(step)))
				fk.Launch(fmt.Sprintf("gemm_%d", step), uint32(step%2), 7)
				_, inner := annotate.Begin(dctx, "epilogue")
				fk.Launch("bias_add", uint32(step%2), 7)
				inner.End()
				dev.End()
				time.Sleep(2 * time.Millisecond)
				st.End()
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			out, snap := s.Outputs(), s.Snapshot()
			checkGPUXSpace(t, out.XPlane, 6, false)
			checkGPUPerfetto(t, out.Perfetto, 6)
			if !slices.ContainsFunc(snap.Meta.Notes, func(n event.Note) bool {
				return n.Source == cupti.SourceName && strings.Contains(n.Text, "GPU timestamps")
			}) {
				t.Errorf("notes %q: want the clock note", snap.Meta.Notes)
			}
			name := "gpu-" + strings.ReplaceAll(layout, ".", "_")
			conformance.Export(t, name, out.Perfetto, snap)
			conformance.ExportXPlane(t, name, out.XPlane, snap)
		})
	}
}

// TestGPUSessionAllKinds records the fake's whole script (kernels on two
// streams of two devices, H2D/D2H/peer copies, memsets, allocations,
// a synchronization, runtime and driver calls, an overhead record) for the
// conformance checkers, beside a launch attributed to a span.
func TestGPUSessionAllKinds(t *testing.T) {
	fk := useFakeCUPTI(t, "12", true)
	s := mustStart(t, t.TempDir(), trace.Options{AdvancedConfig: map[string]any{"gpu_flush_period_ms": 10}})
	_, dev := annotate.Device(context.Background(), "matmul")
	fk.Launch("gemm_0", 0, 7)
	dev.End()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	out, snap := s.Outputs(), s.Snapshot()
	checkGPUXSpace(t, out.XPlane, 1, true)
	checkGPUPerfetto(t, out.Perfetto, 10)
	conformance.Export(t, "gpu-script", out.Perfetto, snap)
	conformance.ExportXPlane(t, "gpu-script", out.XPlane, snap)
}

func checkGPUXSpace(t *testing.T, path string, wantLinked int, wantMemory bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var xs xplanepb.XSpace
	if err := proto.Unmarshal(data, &xs); err != nil {
		t.Fatal(err)
	}
	hostCorr := map[uint64]uint64{} // correlation_id -> device_id on host launches
	devCorr := map[uint64]string{}  // correlation_id -> kernel on devices
	tfOps := map[string]string{}
	planes := map[string]bool{}
	deviceCounters := map[string]bool{} // "<plane>: <counter>" on device planes' _counters_ lines
	for _, p := range xs.Planes {
		planes[p.Name] = true
		stat := func(ss []*xplanepb.XStat, name string) *xplanepb.XStat {
			for _, st := range ss {
				if p.StatMetadata[st.MetadataId].GetName() == name {
					return st
				}
			}
			return nil
		}
		for _, l := range p.Lines {
			for _, e := range l.Events {
				name := p.EventMetadata[e.MetadataId].GetName()
				c := stat(e.Stats, "correlation_id")
				switch {
				case strings.HasPrefix(p.Name, "/device:GPU:") && l.Name == xplane.CountersLineName:
					deviceCounters[p.Name+": "+name] = true
				case p.Name == xplane.HostPlaneName && l.Name == xplane.CountersLineName:
					if strings.Contains(name, "memory allocated") {
						t.Errorf("device counter %q on the host plane", name)
					}
				case strings.HasPrefix(p.Name, "/device:GPU:"):
					if !strings.HasPrefix(l.Name, "Stream #") && !strings.HasPrefix(l.Name, "Context(") {
						t.Errorf("%s: line %q", p.Name, l.Name)
					}
					if strings.HasPrefix(name, "gemm_") || name == "bias_add" {
						if c == nil || stat(e.Stats, "kernel_details") == nil {
							t.Errorf("kernel %s without correlation_id or kernel_details", name)
							continue
						}
						devCorr[c.GetUint64Value()] = name
						if op := stat(e.Stats, "tf_op"); op != nil {
							tfOps[name] = p.StatMetadata[int64(op.GetRefValue())].GetName() + op.GetStrValue()
						}
					}
				case p.Name == xplane.HostPlaneName && c != nil:
					if d := stat(e.Stats, "device_id"); d != nil {
						hostCorr[c.GetUint64Value()] = d.GetUint64Value()
					}
				}
			}
		}
	}
	if !planes["/device:GPU:0"] {
		t.Errorf("no /device:GPU:0 plane (planes %v)", planes)
	}
	// The bytes a device has allocated are its counter, on its plane
	// (issue 9: they sat under /host:CPU); wantMemory says the run allocated.
	if wantMemory && !deviceCounters["/device:GPU:0: memory allocated (bytes)"] {
		t.Errorf("no memory counter on /device:GPU:0 (device counters %v)", deviceCounters)
	}
	launched := 0
	for c, k := range devCorr {
		if _, ok := hostCorr[c]; ok {
			launched++
		} else {
			t.Errorf("kernel %s (correlation %d) has no host launch with device_id", k, c)
		}
	}
	if launched < wantLinked {
		t.Errorf("%d launched kernels linked, want %d", launched, wantLinked)
	}
	for step := 0; step < wantLinked/2+wantLinked%2; step++ {
		if got := tfOps[fmt.Sprintf("gemm_%d", step)]; got != "matmul" {
			t.Errorf("gemm_%d tf_op %q, want matmul", step, got)
		}
	}
}

func checkGPUPerfetto(t *testing.T, path string, wantLinked int) {
	t.Helper()
	tr, err := perfetto.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Snapshot()
	gpuStreams := 0
	for _, tk := range s.Tracks {
		if tk.Kind == event.TrackDeviceStream {
			gpuStreams++
		}
	}
	if gpuStreams < 1 {
		t.Errorf("no GPU stream tracks read back")
	}
	flows := map[uint64]int{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				flows[a.Num]++
			}
		}
	}
	linked := 0
	for _, n := range flows {
		if n >= 2 {
			linked++
		}
	}
	if linked < wantLinked {
		t.Errorf("%d flows link two events, want at least %d (launch → device work)", linked, wantLinked)
	}
	if !slices.ContainsFunc(s.Meta.Notes, func(n event.Note) bool { return strings.Contains(n.Text, "GPU timestamps") }) {
		t.Errorf("Perfetto notes %q: the clock note did not survive", s.Meta.Notes)
	}
}

// TestGPUSessionWithoutGPU uses Debian's real libcupti (scripts/cupti-deps
// installs it) on this GPU-less machine: the session must complete with
// the host trace intact and the real CUPTI error in both outputs.
func TestGPUSessionWithoutGPU(t *testing.T) {
	const real = "libcupti.so.11.8"
	t.Setenv("DEVPROF_CUPTI_LIB", real)
	if err := probeReal(real); err != nil {
		fakecuda.MissingReal(t, "Debian's "+real, err)
	}
	s := mustStart(t, t.TempDir(), trace.Options{})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		_, sp := annotate.Device(ctx, "host_only", annotate.Int("i", i))
		sp.End()
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if n := countNamed(snap, "host_only"); n != 5 {
		t.Fatalf("%d host spans, want 5", n)
	}
	const want = "CUPTI_ERROR_NOT_INITIALIZED"
	if !slices.ContainsFunc(snap.Meta.Warnings, func(w event.Warning) bool { return strings.Contains(w.Text, want) }) {
		t.Fatalf("warnings %q: want the real CUPTI error", snap.Meta.Warnings)
	}
	// The warning is in both files.
	xs, err := os.ReadFile(s.Outputs().XPlane)
	if err != nil || !strings.Contains(string(xs), want) {
		t.Errorf("XPlane file lacks %s (%v)", want, err)
	}
	tr, err := perfetto.ReadTraceFile(s.Outputs().Perfetto)
	if err != nil {
		t.Fatal(err)
	}
	if ps := tr.Snapshot(); !slices.ContainsFunc(ps.Meta.Warnings, func(w event.Warning) bool { return strings.Contains(w.Text, want) }) {
		t.Errorf("Perfetto warnings %q", ps.Meta.Warnings)
	}
	conformance.Export(t, "gpu-none", s.Outputs().Perfetto, snap)
	conformance.ExportXPlane(t, "gpu-none", s.Outputs().XPlane, snap)
}

func countNamed(s *event.Snapshot, name string) int {
	n := 0
	for _, r := range s.Events {
		if s.Name(r) == name {
			n++
		}
	}
	return n
}

// probeReal checks that the real library loads, so that a missing package
// fails the test with its own message rather than as a wrong warning.
func probeReal(lib string) error {
	src, err := cuptisource.Start(recorder.NewBuffer(10, 1), cupti.Options{Library: lib})
	if err == nil {
		src.Stop()
		return nil
	}
	if strings.Contains(err.Error(), "CUPTI_ERROR_NOT_INITIALIZED") {
		return nil
	}
	return err
}

// TestGPUDropsCounted: records CUPTI could not deliver are events the
// trace lost, so the session's drop count (Outputs.Dropped, what Stop
// prints and the outputs carry) must include them, not only a warning.
func TestGPUDropsCounted(t *testing.T) {
	fk := useFakeCUPTI(t, "12", true) // the fake reports drops with its script
	t.Setenv("FAKECUPTI_DROPPED", "5")
	s := mustStart(t, t.TempDir(), trace.Options{AdvancedConfig: map[string]any{"gpu_flush_period_ms": 10}})
	fk.Launch("gemm_0", 0, 7)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := s.Outputs().Dropped; got != 5 {
		t.Errorf("Outputs.Dropped = %d, want the 5 records CUPTI dropped", got)
	}
	if want := []event.Drops{{Source: cupti.SourceName, Events: 5}}; !slices.Equal(s.Snapshot().Meta.Drops, want) {
		t.Errorf("Meta.Drops = %v, want %v", s.Snapshot().Meta.Drops, want)
	}
}

// TestGPUMetricsSession records kernels on the fake libcupti while the
// NVML source samples a mocked H100 (go-nvml's mock answering as the real
// one did), whose CUDA ordinal is 0: the device's facts go onto its plane
// and process, its counters under it, and xprof's kernel_stats can compute
// occupancy (checked by the conformance suite).
func TestGPUMetricsSession(t *testing.T) {
	fk := useFakeCUPTI(t, "13", false)
	g := nvmlmock.NewGPU(t, "../testdata/real-gpu/go-nvml-h100.json", "GPU-6b2e1c3a-0000-1111-2222-333344445555", "00000000:17:00.0")
	defer nvmlhook.Set(nvmlmock.New(g), func() ([]nvmlhook.CUDADevice, error) {
		return []nvmlhook.CUDADevice{{Ordinal: 0, UUID: g.UUID, SMs: 132}}, nil
	})()
	s := mustStart(t, t.TempDir(), trace.Options{
		GPUMetrics:     nvml.Options{Period: 10 * time.Millisecond},
		AdvancedConfig: map[string]any{"gpu_flush_period_ms": 10},
	})
	ctx := context.Background()
	for step := int64(0); step < 3; step++ {
		sctx, st := annotate.Step(ctx, "train", step)
		_, dev := annotate.Device(sctx, "matmul")
		fk.Launch("_Z6matmulPfS_S_i", 0, 7)
		dev.End()
		time.Sleep(15 * time.Millisecond)
		st.End()
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	out, snap := s.Outputs(), s.Snapshot()
	for _, w := range snap.Meta.Warnings {
		if w.Source == nvml.SourceName {
			t.Errorf("NVML warning: %+v", w)
		}
	}
	l := snap.Layout()
	if len(l.Devices) != 1 || l.Devices[0].UUID != g.UUID || l.Devices[0].Caps.Cores != 132 || l.Devices[0].DeviceName != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("devices %+v", l.Devices)
	}
	series := map[string]int{}
	for _, r := range l.DeviceCounters[0] {
		series[snap.Name(r)]++
	}
	for _, name := range []string{nvml.CounterUtil, nvml.CounterMemUsed, nvml.CounterPower, nvml.CounterSMClock, nvml.CounterTemp} {
		if series[name] < 3 {
			t.Errorf("%q: %d samples on GPU 0, want several", name, series[name])
		}
	}
	// Read back: the counters come back on the device from both files.
	for _, path := range []string{out.Perfetto, out.XPlane} {
		back, _, err := formats.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range back.Events {
			if tr, ok := back.TrackOf(r); ok && r.Kind() == event.KindCounter && tr.Device == 0 && back.Name(r) == nvml.CounterPower {
				n++
			}
		}
		if n != series[nvml.CounterPower] {
			t.Errorf("%s: %d power samples on device 0, wrote %d", path, n, series[nvml.CounterPower])
		}
	}
	conformance.Export(t, "gpu-metrics", out.Perfetto, snap)
	conformance.ExportXPlane(t, "gpu-metrics", out.XPlane, snap)
}

// A machine without an NVIDIA driver, where nobody asked for GPU metrics:
// NVML's reason is a note, not a warning (xprof shows warnings as a
// banner above every tool), and nothing about NVML reaches standard error.
func TestNoDriverIsANoteForAutoMetrics(t *testing.T) {
	t.Setenv("DEVPROF_CUPTI_LIB", filepath.Join(t.TempDir(), "no-libcupti.so"))
	// The driverless machine is NVML's answer, so that the test means the
	// same on a machine with a GPU (an H200 run found it reading NVML).
	defer nvmlhook.Set(&mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}, nil)()
	s := mustStart(t, t.TempDir(), trace.Options{})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	meta := s.Snapshot().Meta
	for _, w := range meta.Warnings {
		if w.Source == "nvml" {
			t.Errorf("NVML warning on a driverless machine: %+v", w)
		}
	}
	if !slices.ContainsFunc(meta.Notes, func(n event.Note) bool { return n.Source == "nvml" && strings.Contains(n.Text, "no libnvidia-ml") }) {
		t.Errorf("notes %+v: want NVML's reason as a note", meta.Notes)
	}
	// Asked for explicitly, the same failure is a warning.
	s = mustStart(t, t.TempDir(), trace.Options{AdvancedConfig: map[string]any{"gpu_metrics": "on"}})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(s.Snapshot().Meta.Warnings, func(w event.Warning) bool { return w.Source == "nvml" }) {
		t.Errorf("warnings %+v: want NVML's when metrics were asked for", s.Snapshot().Meta.Warnings)
	}
}
