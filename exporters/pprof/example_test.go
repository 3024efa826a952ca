package pprof_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
)

// A memory profile written from the live buffers a tracker listed, and
// read back: buffers of one size, site, device and labels become one
// entry with a count, as pprof keeps them.
func Example() {
	load := []event.Frame{{Function: "main.loadWeights", File: "main.go", Line: 40}, {Function: "main.main", File: "main.go", Line: 12}}
	m := &event.DeviceMemory{
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Buffers: []event.Buffer{
			{Address: 0x7f0000000000, Bytes: 64 << 20, Count: 1, Device: 0, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights"}, Stack: load},
			{Address: 0x7f0004000000, Bytes: 64 << 20, Count: 1, Device: 0, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights"}, Stack: load},
			{Address: 0x7f2000000000, Bytes: 1 << 20, Count: 1, Device: -1, Kind: "pinned", Source: "api", Span: "train/step"},
		},
		Counts: event.MemoryCounts{Allocs: 4, Frees: 1},
	}
	var buf bytes.Buffer
	if err := pprof.Write(&buf, m); err != nil { // or pprof.WriteFile("memory.pb.gz", m)
		panic(err)
	}
	back, err := pprof.Read(&buf)
	if err != nil {
		panic(err)
	}
	live, n := back.Live()
	fmt.Printf("%v: %d bytes in %d buffers, %d allocs and %d frees seen\n", back.Time.UTC(), live, n, back.Counts.Allocs, back.Counts.Frees)
	for _, b := range back.Buffers {
		fmt.Printf("%d × %d bytes on %s (%s) at %q tags %q span %q\n", b.Count, b.Bytes, pprof.DeviceLabel(b.Device), b.Kind, b.Site(), b.Tags, b.Span)
	}
	// Output:
	// 2026-01-02 03:04:05 +0000 UTC: 135266304 bytes in 3 buffers, 4 allocs and 1 frees seen
	// 2 × 67108864 bytes on gpu:0 (device) at "main.loadWeights (main.go:40)" tags ["weights"] span ""
	// 1 × 1048576 bytes on host (pinned) at "" tags [] span "train/step"
}

// Read takes JAX's device-memory profiles too; a device devprof cannot
// number (a CPU or TPU device) is kept as a tag.
func ExampleRead() {
	// A profile laid out as jax.profiler.save_device_memory_profile lays
	// out its own: Python frames, kind and the device's own name as labels.
	fn := &profile.Function{ID: 1, Name: "init_params", SystemName: "init_params", Filename: "model.py"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 14}}}
	jax := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{loc}, Value: []int64{1, 4096}, Label: map[string][]string{"kind": {"buffer"}, "device": {"cuda:0"}}},
			{Location: []*profile.Location{loc}, Value: []int64{2, 200}, Label: map[string][]string{"kind": {"buffer"}, "device": {"TFRT_CPU_0"}}},
		},
		Location: []*profile.Location{loc},
		Function: []*profile.Function{fn},
	}
	var file bytes.Buffer
	if err := jax.Write(&file); err != nil { // gzip-compressed, as JAX writes it
		panic(err)
	}
	m, err := pprof.Read(&file)
	if err != nil {
		panic(err)
	}
	for _, b := range m.Buffers {
		fmt.Printf("%d bytes, kind %s, device %d %q, tags %q, allocated at %s\n", b.Total(), b.Kind, b.Device, b.DeviceName, b.Tags, b.Site())
	}
	// Output:
	// 4096 bytes, kind buffer, device 0 "", tags [], allocated at init_params (model.py:14)
	// 200 bytes, kind buffer, device -1 "TFRT_CPU_0", tags [], allocated at init_params (model.py:14)
}
