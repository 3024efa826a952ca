package tables_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/heappeak"
	"github.com/devprof/devprof/tables"
)

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriter is devprof export's own cost: a stream of events from a
// reader into a Writer, to Parquet files on local disk (run with -cpu 1
// for one core). It reports events/s, the files' bytes per event and the
// peak heap.
func BenchmarkWriter(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var peak float64
			var size int64
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				stop := heappeak.Start()
				w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Session: fmt.Sprint(i)})
				if err != nil {
					b.Fatal(err)
				}
				eventtest.GPUShaped(w, n)
				paths, err := w.Close()
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, heappeak.MiB(stop()))
				b.StopTimer()
				size = 0
				for _, path := range paths {
					st, err := os.Stat(dir + "/" + path)
					if err != nil {
						b.Fatal(err)
					}
					size += st.Size()
				}
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			// On a shared machine the wall clock also counts other
			// programs' time; the process's CPU time does not.
			b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
			b.ReportMetric(float64(size)/float64(n), "file-B/event")
			b.ReportMetric(peak, "peak-heap-MiB")
		})
	}
}

// BenchmarkExportPerfetto is devprof export end to end (run with -cpu 1
// for one core): a GPU-shaped .pftrace of 1 M or 10 M events streamed by
// the Perfetto reader into a Writer, to Parquet files on local disk. It
// reports events/s (wall and CPU), the Parquet files' size against the
// .pftrace's (parquet/pftrace) and the peak heap.
func BenchmarkExportPerfetto(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.StopTimer()
			bl := event.NewBuilder(event.Meta{})
			eventtest.GPUShaped(bl, n)
			path := filepath.Join(b.TempDir(), "bench.pftrace")
			if err := formats.WriteFile(path, formats.Perfetto, bl.Snapshot()); err != nil {
				b.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			bl = nil
			runtime.GC()
			var peak uint64
			var size int64
			b.StartTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				stop := heappeak.Start()
				w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Session: fmt.Sprint(i)})
				if err != nil {
					b.Fatal(err)
				}
				if err := formats.Perfetto.StreamFile(path, w, formats.ReadOptions{}); err != nil {
					b.Fatal(err)
				}
				paths, err := w.Close()
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, stop())
				b.StopTimer()
				size = 0
				for _, rel := range paths {
					fi, err := os.Stat(filepath.Join(dir, rel))
					if err != nil {
						b.Fatal(err)
					}
					size += fi.Size()
				}
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
			b.ReportMetric(float64(size)/float64(st.Size()), "parquet/pftrace")
			b.ReportMetric(heappeak.MiB(peak), "peak-heap-MiB")
		})
	}
}
