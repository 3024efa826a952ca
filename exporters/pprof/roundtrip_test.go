package pprof

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/heappeak"
)

// The tracker's defaults (devmem.DefaultMaxBuffers,
// devmem.DefaultStackDepth): the most a profile devprof writes holds
// unless told otherwise.
const (
	trackerMaxBuffers = 1 << 20
	trackerStackDepth = 64
)

// liveMemory is what a tracker holding n buffers lists: each of its own
// size (so each is a sample: a profile's largest form) from sites call
// sites, depth frames deep, the CUDA ones under two frames of a
// binding's glue; buffers of one site share its stack, as the tracker's
// do.
func liveMemory(n, sites, depth int) *event.DeviceMemory {
	stacks := make([][]event.Frame, sites)
	for s := range stacks {
		st := make([]event.Frame, depth)
		for i := range st {
			st[i] = event.Frame{Function: fmt.Sprintf("example.com/model.layer%d", i), File: "/src/model/layers.go", Line: 10 + i}
		}
		st[0] = event.Frame{Function: "example.com/cuda._Cfunc_cudaMalloc", File: "_cgo_gotypes.go", Line: 99}
		st[1] = event.Frame{Function: "example.com/cuda.Malloc", File: "/src/cuda/cuda.go", Line: 20}
		st[2] = event.Frame{Function: fmt.Sprintf("example.com/model.alloc%d", s), File: "/src/model/alloc.go", Line: s + 1}
		stacks[s] = st
	}
	tags := [][]string{{"weights"}, {"activations", "fp16"}, nil}
	m := &event.DeviceMemory{Time: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), Counts: event.MemoryCounts{Allocs: uint64(n)}}
	m.Buffers = make([]event.Buffer, n)
	for i := range m.Buffers {
		b := event.Buffer{Bytes: uint64(256 * (i + 1)), Count: 1, Device: i % 4, Kind: "device", Tags: tags[i%3], Stack: stacks[i%sites]}
		if i%2 == 0 {
			b.Source, b.API, b.Glue = "cuda", "cudaMalloc", 2
		} else {
			b.Source, b.Span = "api", "train/step"
		}
		m.Buffers[i] = b
	}
	return m
}

// checkRoundTrip writes m, reads it back and checks that every buffer
// came back as it was (each is a sample of its own), but for what pprof
// does not keep (addresses, times).
func checkRoundTrip(t *testing.T, m *event.DeviceMemory) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	size := buf.Len()
	back, err := Read(&buf)
	if err != nil {
		t.Fatalf("reading the %d-byte profile written: %v", size, err)
	}
	if len(back.Buffers) != len(m.Buffers) || !back.Time.Equal(m.Time) || back.Counts != m.Counts {
		t.Fatalf("read %d buffers at %v, counts %+v; wrote %d at %v, %+v", len(back.Buffers), back.Time, back.Counts, len(m.Buffers), m.Time, m.Counts)
	}
	want := slices.Clone(m.Buffers)
	for i := range want {
		want[i].Address, want[i].Time = 0, time.Time{}
	}
	(&event.DeviceMemory{Buffers: want}).Sort()
	for i := range want {
		g, w := &back.Buffers[i], &want[i]
		if g.Bytes != w.Bytes || g.Count != w.Count || g.Device != w.Device || g.Kind != w.Kind || g.Source != w.Source || g.API != w.API ||
			g.Span != w.Span || g.Glue != w.Glue || !slices.Equal(g.Tags, w.Tags) || !slices.Equal(g.Stack, w.Stack) {
			t.Fatalf("buffer %d read back as\n%+v\nwrote\n%+v", i, *g, *w)
		}
	}
}

// TestRoundTripAtTrackerMaximum: a profile of as many buffers as the
// tracker keeps by default, each with a stack as deep as it keeps (an
// inflated profile of about 100 MB, which the reader once refused at 64
// MiB), reads back buffer for buffer.
func TestRoundTripAtTrackerMaximum(t *testing.T) {
	if testing.Short() || raceEnabled {
		// 4 s, 73 s with the race detector (the test starts no goroutine).
		t.Skip("1 M buffers of 64 frames: TestRoundTripStreams reads the same way in -short and -race")
	}
	checkRoundTrip(t, liveMemory(trackerMaxBuffers, 1024, trackerStackDepth))
}

// TestRoundTripStreams is TestRoundTripAtTrackerMaximum's path at a size every
// run can afford, with the reader's field bound lowered below the
// profile's size, so that a profile larger than any bound is read as it
// streams.
func TestRoundTripStreams(t *testing.T) {
	defer func(n int) { maxFieldSize = n }(maxFieldSize)
	maxFieldSize = 1 << 16
	m := liveMemory(1<<15, 256, trackerStackDepth)
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	if n := inflatedSize(t, buf.Bytes()); n < 4*maxFieldSize {
		t.Fatalf("the profile is %d bytes inflated: too small to test streaming", n)
	}
	checkRoundTrip(t, m)
}

func inflatedSize(t testing.TB, gz []byte) int {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// BenchmarkRead reads back a profile of 1 M live buffers (the tracker's
// default bound), each a sample of its own, from 1024 call sites,
// shallow (17 frames) and deep (53: a framework's stacks), as devprof
// memory does. It reports the heap's peak above what was there before
// (read-peak-MiB, the model included), the process's CPU time
// (cpu-s/op) and the profile's size (file-MB, inflated-MB).
func BenchmarkRead(b *testing.B) {
	for _, c := range []struct {
		name  string
		depth int
	}{{"1M/shallow", 17}, {"1M/deep", 53}} {
		b.Run(c.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := Write(&buf, liveMemory(trackerMaxBuffers, 1024, c.depth)); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			inflated := inflatedSize(b, data)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			b.ResetTimer()
			cpu := cpuSeconds()
			stop := heappeak.Start()
			for range b.N {
				m, err := Read(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if len(m.Buffers) != trackerMaxBuffers {
					b.Fatalf("read %d buffers", len(m.Buffers))
				}
			}
			peak := stop()
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "read-peak-MiB")
			b.ReportMetric(float64(len(data))/1e6, "file-MB")
			b.ReportMetric(float64(inflated)/1e6, "inflated-MB")
		})
	}
}
