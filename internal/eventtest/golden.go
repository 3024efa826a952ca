package eventtest

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/devprof/devprof/event"
)

// GoldenSnapshot is a small session built with event.NewBuilder, the same
// on every run, that the writers' golden files (testdata/golden at the
// repository root) are made from: two steps of nested host spans with
// arguments of every kind, an instant, counters, a device stream with a
// kernel and a copy linked to their launches by flows, a memory tracker's
// allocations and frees on the device and in host memory (event/memory.go),
// an unfinished span, drops of two sources (the recorder's and cupti's),
// and a warning and a note with their source (and the warning's code).
func GoldenSnapshot() *event.Snapshot {
	const wall = 1_795_000_000_000_000_000
	b := event.NewBuilder(event.Meta{Host: "golden", PID: 4242, Program: "golden.test",
		HostTracerLevel: 2, DeviceTracerLevel: 1,
		Start: event.ClockAnchor{Mono: 1_000, Boot: 2_000, Wall: wall},
		Stop:  event.ClockAnchor{Mono: 101_000, Boot: 102_000, Wall: wall + 100_000}})
	dev := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3",
		ID: 7, Name: "Stream #7(Compute)", Caps: event.DeviceCaps{ClockRateKHz: 1_980_000, Cores: 132,
			MemoryBytes: 80 << 30, MemoryBandwidth: 3_350_000_000_000, ComputeCapMajor: 9}})
	gpuMem := b.Track(event.Track{Kind: event.TrackMemory, Device: 0, Name: "GPU 0 memory (devmem)"})
	hostMem := b.Track(event.Track{Kind: event.TrackMemory, Device: -1, Name: "host memory (devmem)"})
	const MiB = 1 << 20
	memory := func(track uint32, kind event.ActivityKind, t int64, addr, bytes uint64, mkind, tags, span, api string, inUse, peak uint64, step int64) {
		args := []event.Arg{
			{Key: event.ArgAddress, Kind: event.ArgUint, Num: addr},
			{Key: event.ArgBytes, Kind: event.ArgUint, Num: bytes},
			{Key: event.ArgMemoryKind, Kind: event.ArgString, Str: mkind},
		}
		for _, a := range [][2]string{{event.ArgTags, tags}, {event.ArgSpan, span}, {event.ArgAPI, api}} {
			if a[1] != "" {
				args = append(args, event.Arg{Key: a[0], Kind: event.ArgString, Str: a[1]})
			}
		}
		args = append(args, event.Arg{Key: event.ArgInUse, Kind: event.ArgUint, Num: inUse},
			event.Arg{Key: event.ArgPeakInUse, Kind: event.ArgUint, Num: peak})
		if step >= 0 {
			args = append(args, event.Arg{Key: event.ArgStep, Kind: event.ArgInt, Num: uint64(step)})
		}
		b.ActivityOf(kind, track, kind.String(), t, t, args)
	}
	memory(gpuMem, event.ActivityAlloc, 1_500, 0x7f0000000000, 64*MiB, "device", "weights", "", "", 64*MiB, 64*MiB, -1)
	memory(hostMem, event.ActivityAlloc, 1_600, 0x5000, 1*MiB, "pinned", "", "", "cudaMallocHost", 1*MiB, 1*MiB, -1)
	for i := range int64(2) {
		t0 := 2_000 + i*40_000
		addr := 0x7f0004000000 + uint64(i)<<20
		memory(gpuMem, event.ActivityAlloc, t0+150, addr, 4*MiB, "device", "activations", "train/fwd", "", 68*MiB, 68*MiB, i)
		memory(gpuMem, event.ActivityFree, t0+25_000, addr, 4*MiB, "device", "activations", "train/fwd", "", 64*MiB, 68*MiB, i)
		step := b.Span(event.Span{Name: "train", Start: t0, End: t0 + 30_000, Step: true, StepNum: i})
		fwd := b.Span(event.Span{Name: "fwd", Start: t0 + 100, End: t0 + 9_000, Parent: step, Args: []event.Arg{
			{Key: "batch", Kind: event.ArgInt, Num: 32},
			{Key: "lr", Kind: event.ArgFloat, Num: math.Float64bits(0.125)},
			{Key: "mode", Kind: event.ArgString, Str: "train"},
			{Key: "wait", Kind: event.ArgDuration, Num: 1_500},
		}})
		flow := uint64(2*i + 1)
		b.Span(event.Span{Name: "cudaLaunchKernel", Start: t0 + 200, End: t0 + 400, Parent: fwd,
			Args: []event.Arg{{Kind: event.ArgFlow, Num: flow}}})
		b.Activity(dev, "saxpy", t0+500, t0+5_500, []event.Arg{{Kind: event.ArgFlow, Num: flow},
			{Key: "kernel_details", Kind: event.ArgString, Str: "regs:32 static_shared:0 dynamic_shared:0 grid:4096,1,1 block:256,1,1 occ_pct:100"}})
		b.Span(event.Span{Name: "cudaMemcpyAsync", Start: t0 + 9_100, End: t0 + 9_300, Parent: step,
			Args: []event.Arg{{Kind: event.ArgFlow, Num: flow + 1}}})
		b.Activity(dev, "Memcpy DtoH", t0+9_400, t0+12_000, []event.Arg{{Kind: event.ArgFlow, Num: flow + 1},
			{Key: "bytes", Kind: event.ArgUint, Num: 4 << 20}})
		b.Instant("checkpoint", t0+20_000, 0, step, []event.Arg{{Key: "ok", Kind: event.ArgBool, Num: 1}})
		b.Counter("loss", "", t0+29_000, 1.5/float64(i+1))
		b.Counter("device memory", "bytes", t0+29_000, float64((i+1)<<20))
	}
	b.Span(event.Span{Name: "eval", Start: 90_000, Unfinished: true})
	b.AddDrops(event.DropsRecorder, 5)
	b.AddDrops("cupti", 2)
	b.SetMaxEvents(1 << 20)
	b.Warn(event.Warning{Source: "golden", Code: "golden_warning", Text: "golden: a warning the writers must carry"})
	b.Note(event.Note{Source: "golden", Text: "golden: a note the writers must carry"})
	return b.Snapshot()
}

// FirstDifference returns the index of the first byte where a and b
// differ (the shorter one's length when one is a prefix of the other).
func FirstDifference(a, b []byte) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// CompareGolden checks got against the golden file at path, byte for byte;
// with update it rewrites the file instead (go test ./exporters/... -update).
func CompareGolden(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test ./exporters/... -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		n := FirstDifference(got, want)
		tb.Errorf("output differs from %s at byte %d (%d bytes, want %d); if the change is intended, run go test ./exporters/... -update", path, n, len(got), len(want))
	}
}

// Golden is the golden-file test every exporter runs: it writes
// GoldenSnapshot with write and compares the bytes with the file at path
// (rewriting it instead when update is set: go test ./exporters/...
// -update), so that any change to the output is seen; then it reads the
// file back with read and checks the spans, kernels and metadata came
// back.
func Golden(t *testing.T, format, path string, update bool, write func(io.Writer, *event.Snapshot) error, read func(string) (*event.Snapshot, error)) {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, GoldenSnapshot()); err != nil {
		t.Fatal(err)
	}
	CompareGolden(t, path, buf.Bytes(), update)

	s, err := read(path)
	if err != nil {
		t.Fatal(err)
	}
	steps, kernels := 0, 0
	for _, r := range s.Events {
		switch {
		case r.Kind() == event.KindSpan && s.Name(r) == "train":
			steps++
		case s.Name(r) == "saxpy": // an activity, or a span where the format has no devices
			kernels++
		}
	}
	if steps != 2 || kernels != 2 {
		t.Errorf("%s: read back %d train spans and %d saxpy kernels, want 2 and 2", format, steps, kernels)
	}
	// The warning, the note and the drops of both sources come back as
	// the structure they were.
	CheckMeta(t, format, s, GoldenSnapshot())
}
