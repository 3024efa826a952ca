package devmem_test

import (
	"context"
	"io"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/heappeak"
)

// siteBits is how many two-way choices lead to an allocation in
// recurse: 2^siteBits distinct call stacks, as a program's many call
// sites make.
const siteBits = 10

// recurse allocates at addr under depth frames of plain recursion and
// then the siteBits frames that spell bits, so that the stack is one of
// 2^siteBits and about depth+siteBits frames deep.
//
//go:noinline
func recurse(depth, bits int, addr, bytes uint64) {
	if depth > 0 {
		recurse(depth-1, bits, addr, bytes)
		return
	}
	bitZero(bits, 0, addr, bytes)
}

// bitZero and bitOne are one frame each of the path to a call site:
// the next frame is bitOne where bits has a one at level.
//
//go:noinline
func bitZero(bits, level int, addr, bytes uint64) {
	switch {
	case level == siteBits:
		devmem.Alloc(context.Background(), addr, bytes, devmem.Attrs{Tags: []string{"weights"}})
	case bits>>level&1 == 0:
		bitZero(bits, level+1, addr, bytes)
	default:
		bitOne(bits, level+1, addr, bytes)
	}
}

//go:noinline
func bitOne(bits, level int, addr, bytes uint64) {
	switch {
	case level == siteBits:
		devmem.Alloc(context.Background(), addr, bytes, devmem.Attrs{Tags: []string{"weights"}})
	case bits>>level&1 == 0:
		bitZero(bits, level+1, addr, bytes)
	default:
		bitOne(bits, level+1, addr, bytes)
	}
}

// fillTable allocates n live buffers of distinct sizes (so that each is
// a sample of its own, a profile's largest form) from 2^siteBits call
// sites, depth frames of recursion deep.
func fillTable(n, depth int) {
	for i := range n {
		recurse(depth, i%(1<<siteBits), uint64(i+1)<<12, uint64(256*(i+1)))
	}
}

// heapNow is the heap's live objects after a collection.
func heapNow() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// BenchmarkSave is what saving the device memory live now costs: a
// Snapshot of the tracker written as a pprof profile (as
// trace.SaveDeviceMemoryProfile does, to io.Discard here), with 1 M
// live buffers (the default MaxBuffers) from 1024 call sites, shallow
// (about 15 frames) and deep (about 50: the framework stacks CUDA
// allocations sit under). It reports the tracker's own heap
// (tracker-MiB), the heap's peak while saving above it
// (save-peak-MiB) and the process's CPU time (cpu-s/op: user and system, every core).
func BenchmarkSave(b *testing.B) {
	for _, c := range []struct {
		name    string
		buffers int
		depth   int
	}{
		{"1M/shallow", 1 << 20, 0},
		{"1M/deep", 1 << 20, 36},
		{"64K/deep", 1 << 16, 36},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
				b.Fatal(err)
			}
			defer devmem.Stop()
			before := heapNow()
			fillTable(c.buffers, c.depth)
			tracker := heapNow() - before
			m, err := devmem.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			if len(m.Buffers) != c.buffers {
				b.Fatalf("%d buffers tracked, want %d", len(m.Buffers), c.buffers)
			}
			frames := len(m.Buffers[0].Stack)
			m = nil
			base := heapNow()
			b.ResetTimer()
			cpu := cpuSeconds()
			stop := heappeak.Start()
			for range b.N {
				m, err := devmem.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.Write(io.Discard, m); err != nil {
					b.Fatal(err)
				}
			}
			peak := stop()
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(tracker)/(1<<20), "tracker-MiB")
			b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "save-peak-MiB")
			b.ReportMetric(float64(frames), "frames")
		})
	}
}
