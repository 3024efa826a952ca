package xplane

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/xplanepb"
)

const ms = int64(1e6)

// deviceSnapshot is a small GPU program: three steps, each launching a
// matmul kernel on stream 7 and a copy on stream 9 of GPU 0, as the CUPTI
// source will record them.
func deviceSnapshot() *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: "gpu-host", Program: "trainer", PID: 4242,
		Start: event.ClockAnchor{Mono: 0, Boot: 1e12, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 40 * ms, Boot: 1e12 + 40*ms, Wall: 1_795_000_000_040_000_000}})
	compute := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", ID: 7, Name: "Stream #7(Compute)",
		Caps: event.DeviceCaps{ClockRateKHz: 1_980_000, Cores: 132, MemoryBytes: 80 << 30, MemoryBandwidth: 3_350_000_000_000, ComputeCapMajor: 9, ComputeCapMinor: 0}})
	copies := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", ID: 9, Name: "Stream #9(MemcpyH2D)"})
	for i := int64(0); i < 3; i++ {
		t0 := 1*ms + i*10*ms
		step := b.Span(event.Span{Name: "train", Start: t0, End: t0 + 9*ms, Step: true, StepNum: i})
		corr := uint64(100 + 2*i)
		b.Span(event.Span{Name: "cudaLaunchKernel", Start: t0 + ms, End: t0 + ms + 20_000, Parent: step,
			Args: []event.Arg{{Kind: event.ArgFlow, Num: corr}, {Key: "device_id", Kind: event.ArgUint, Num: 0}}})
		b.Activity(compute, "volta_sgemm_128x64_nn", t0+ms+50_000, t0+5*ms, []event.Arg{
			{Kind: event.ArgFlow, Num: corr},
			{Key: "kernel_details", Kind: event.ArgString, Str: "regs:64 static_shared:0 dynamic_shared:8192 grid:80,1,1 block:256,1,1 occ_pct:50"},
		})
		b.Span(event.Span{Name: "cudaMemcpyAsync", Start: t0 + 6*ms, End: t0 + 6*ms + 10_000, Parent: step,
			Args: []event.Arg{{Kind: event.ArgFlow, Num: corr + 1}, {Key: "device_id", Kind: event.ArgUint, Num: 0}}})
		b.Activity(copies, "MemcpyH2D", t0+6*ms+30_000, t0+7*ms, []event.Arg{
			{Kind: event.ArgFlow, Num: corr + 1},
			{Key: "memcpy_details", Kind: event.ArgString, Str: "kind_src:pinned kind_dst:device size:1048576 dest:0 async:1"},
		})
	}
	return b.Snapshot()
}

func decode(t *testing.T, b []byte) *xplanepb.XSpace {
	t.Helper()
	var xs xplanepb.XSpace
	if err := proto.Unmarshal(b, &xs); err != nil {
		t.Fatal(err)
	}
	return &xs
}

func statMap(p *xplanepb.XPlane, stats []*xplanepb.XStat) map[string]*xplanepb.XStat {
	m := map[string]*xplanepb.XStat{}
	for _, s := range stats {
		m[p.StatMetadata[s.MetadataId].GetName()] = s
	}
	return m
}

func TestDevicePlanes(t *testing.T) {
	s := deviceSnapshot()
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	xs := decode(t, buf.Bytes())
	planes := map[string]*xplanepb.XPlane{}
	for _, p := range xs.Planes {
		planes[p.Name] = p
		for _, md := range p.StatMetadata {
			if md.Name == "group_id" {
				t.Fatalf("plane %s has group_id stat metadata: xprof would skip its own grouping", p.Name)
			}
		}
	}
	gpu, host, env := planes["/device:GPU:0"], planes[HostPlaneName], planes[TaskEnvPlaneName]
	if gpu == nil || host == nil || env == nil || len(xs.Planes) != 3 {
		t.Fatalf("planes %v", planes)
	}
	if gpu.Id != 0 {
		t.Errorf("GPU plane id %d, want the ordinal 0", gpu.Id)
	}
	caps := statMap(gpu, gpu.Stats)
	if ref := caps["gpu_device_name"].GetRefValue(); gpu.StatMetadata[int64(ref)].GetName() != "NVIDIA H100 80GB HBM3" {
		t.Errorf("device name stat %v", caps["gpu_device_name"])
	}
	if caps["clock_rate"].GetInt64Value() != 1_980_000 || caps["core_count"].GetInt64Value() != 132 ||
		caps["memory_size"].GetUint64Value() != 80<<30 || caps["memory_bandwidth"].GetUint64Value() != 3_350_000_000_000 ||
		caps["compute_cap_major"].GetInt64Value() != 9 || caps["compute_cap_minor"] == nil {
		t.Errorf("capability stats %v", caps)
	}
	lines := map[int64]*xplanepb.XLine{}
	for _, l := range gpu.Lines {
		lines[l.Id] = l
	}
	if lines[7].GetName() != "Stream #7(Compute)" || lines[9].GetName() != "Stream #9(MemcpyH2D)" || len(lines) != 2 {
		t.Fatalf("stream lines %v", lines)
	}
	kernelCorr := map[uint64]bool{}
	for _, e := range lines[7].Events {
		st := statMap(gpu, e.Stats)
		if st["correlation_id"] == nil || st["kernel_details"] == nil {
			t.Fatalf("kernel without correlation_id/kernel_details: %v", st)
		}
		kernelCorr[st["correlation_id"].GetUint64Value()] = true
		if gpu.EventMetadata[e.MetadataId].GetName() != "volta_sgemm_128x64_nn" || e.DurationPs <= 0 {
			t.Fatalf("kernel event %v", e)
		}
	}
	if len(kernelCorr) != 3 {
		t.Fatalf("kernel correlation ids %v", kernelCorr)
	}
	launches := 0
	for _, l := range host.Lines {
		if l.TimestampNs != 0 {
			t.Errorf("line %q timestamp %d, want 0 (relative to the profile start)", l.Name, l.TimestampNs)
		}
		prev := int64(-1)
		for _, e := range l.Events {
			if e.GetOffsetPs() < prev {
				t.Fatalf("line %q not sorted by start", l.Name)
			}
			prev = e.GetOffsetPs()
			if host.EventMetadata[e.MetadataId].GetName() != "cudaLaunchKernel" {
				continue
			}
			st := statMap(host, e.Stats)
			c := st["correlation_id"]
			if c == nil || !kernelCorr[c.GetUint64Value()] {
				t.Fatalf("launch correlation_id %v does not match a kernel", c)
			}
			if st["device_id"] == nil {
				t.Fatal("launch has no device_id")
			}
			launches++
		}
	}
	if launches != 3 {
		t.Fatalf("%d launches", launches)
	}
	envStats := statMap(env, env.Stats)
	if envStats["profile_start_time"].GetUint64Value() != uint64(s.Meta.Start.Wall) || envStats["profile_stop_time"].GetUint64Value() != uint64(s.Meta.Stop.Wall) {
		t.Fatalf("task environment %v", envStats)
	}
	if len(xs.Hostnames) != 1 || xs.Hostnames[0] != "gpu-host" {
		t.Fatalf("hostnames %v", xs.Hostnames)
	}

	path := filepath.Join(t.TempDir(), "gpu-host.xplane.pb")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.ExportXPlane(t, "device", path, s)
}

// TestMetaBecomesWarnings: xprof shows XSpace warnings as they are, so
// each source's drops and each warning is one line for people, with its
// structure in a prefix; a warning that had only a text stays that text.
func TestMetaBecomesWarnings(t *testing.T) {
	b := event.NewBuilder(event.Meta{Host: "h", MaxEvents: 100})
	b.AddDrops(event.DropsRecorder, 7)
	b.AddDrops("cupti", 2)
	b.Warn(event.Warning{Source: "cupti", Code: "unavailable", Text: "GPU tracing off: no GPU"})
	b.Warn(event.Warning{Text: "Detected GPU events dropped"})
	b.Span(event.Span{Name: "x", Start: 0, End: 10})
	var buf bytes.Buffer
	if err := Write(&buf, b.Snapshot()); err != nil {
		t.Fatal(err)
	}
	xs := decode(t, buf.Bytes())
	want := []string{
		"devprof drops [recorder]: 7 events dropped (buffer full at max_events=100)",
		"devprof drops [cupti]: 2 events dropped",
		"devprof warning [cupti/unavailable]: GPU tracing off: no GPU",
		"Detected GPU events dropped",
	}
	if !slices.Equal(xs.Warnings, want) {
		t.Fatalf("warnings %q, want %q", xs.Warnings, want)
	}
}
