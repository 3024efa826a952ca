package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/heappeak"
)

// BenchmarkConvertPeak runs devprof convert of a session's .pftrace of
// 1 M and 10 M events into each written format, as the CLI does, and
// reports the heap's peak over the whole command (peak-heap-MiB: live
// and not yet swept objects, which is what the process's resident memory
// follows) beside the model's own size (model-MiB: the heap a read
// snapshot holds once garbage is collected). Issue 38's bound is
// peak-heap-MiB ≤ model-MiB + 256.
//
// DEVPROF_BENCH_PFTRACE names a trace file of your own to convert as
// well (sub-benchmark "file").
func BenchmarkConvertPeak(b *testing.B) {
	sizes := []string{"1M", "10M"}
	if os.Getenv("DEVPROF_BENCH_PFTRACE") != "" {
		sizes = append(sizes, "file")
	}
	for _, size := range sizes {
		for _, ext := range []string{"xplane.pb", "trace.json.gz", "pftrace"} {
			b.Run(size+"/"+ext, func(b *testing.B) {
				var in string
				switch size {
				case "1M":
					in = sessionPftrace(b, 1_000_000)
				case "10M":
					in = sessionPftrace(b, 10_000_000)
				default:
					in = os.Getenv("DEVPROF_BENCH_PFTRACE")
				}
				model := modelHeap(b, in)
				out := filepath.Join(b.TempDir(), "out."+ext)
				var peak float64
				for b.Loop() {
					os.Remove(out)
					runtime.GC()
					stop := heappeak.Start()
					err := runConvert([]string{in, out}, io.Discard, io.Discard)
					peak = max(peak, float64(stop()))
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
				b.ReportMetric(model/(1<<20), "model-MiB")
			})
		}
	}
}

// modelHeap returns the bytes of heap a snapshot read from path holds.
func modelHeap(b *testing.B, path string) float64 {
	b.Helper()
	live := func() float64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return float64(s[0].Value.Uint64())
	}
	with := func() float64 {
		f, err := formats.Detect(path)
		if err != nil {
			b.Fatal(err)
		}
		s, err := f.ReadFileWith(path, formats.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		held := live()
		runtime.KeepAlive(s)
		return held
	}()
	return with - live()
}

// sessionPftrace records, once per size, a session of n events shaped
// as a training loop (steps of 98 ops with an argument and a leaf each,
// eight names) and writes it as a session writes its .pftrace, to a file
// kept in the temporary directory for later runs.
func sessionPftrace(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "devprof-convert-bench-"+strconv.Itoa(n)+".pftrace")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	names := []string{"forward", "backward", "optimizer", "matmul", "relu", "loss", "load", "sync"}
	s := eventtest.Record(b, int64(n), func(ctx context.Context) {
		for i, step := 0, int64(0); i < n; step++ {
			sctx, st := annotate.Step(ctx, "train", step)
			i++
			for j := 0; j < 98 && i < n; j++ {
				octx, op := annotate.BeginInt(sctx, names[j%8], "op", int64(j))
				i++
				if i < n {
					annotate.BeginLeaf(octx, names[(j+3)%8]).End()
					i++
				}
				op.End()
			}
			st.End()
		}
	})
	if err := formats.WriteFile(path+".tmp.pftrace", formats.Perfetto, s); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp.pftrace", path); err != nil {
		b.Fatal(err)
	}
	return path
}
