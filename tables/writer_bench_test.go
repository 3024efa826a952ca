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
// reader into Export, to Parquet files on local disk (run with -cpu 1
// for one core). It reports events/s, the files' bytes per event, the
// peak heap and how many times the trace was read. With anchor=start
// the trace's clock anchor and host are known from its start, as most
// readers give them; with anchor=end only at its end, so that Export
// reads it twice (its fallback's cost).
func BenchmarkWriter(b *testing.B) {
	for _, bc := range []struct {
		n      int
		anchor string
	}{{1_000_000, "start"}, {10_000_000, "start"}, {10_000_000, "end"}} {
		n := bc.n
		var meta event.Meta
		if bc.anchor == "start" {
			meta = eventtest.GPUShapedMeta(n)
		}
		b.Run(fmt.Sprintf("events=%d/anchor=%s", n, bc.anchor), func(b *testing.B) {
			var peak float64
			var size int64
			reads := 1.0
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				stop := heappeak.Start()
				paths, twice, err := tables.ExportHolding(dir, meta, tables.Options{Run: "r", Session: fmt.Sprint(i)}, func(s event.Sink) error {
					eventtest.GPUShaped(s, n)
					return nil
				}, tables.LiveHoldBytes)
				if err != nil {
					b.Fatal(err)
				}
				if twice {
					reads = 2
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
			b.ReportMetric(reads, "reads")
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
			reads := 1.0
			b.StartTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				stop := heappeak.Start()
				paths, twice, err := tables.ExportHolding(dir, event.Meta{}, tables.Options{Run: "r", Session: fmt.Sprint(i)}, func(s event.Sink) error {
					return formats.Perfetto.StreamFile(path, s, formats.ReadOptions{})
				}, tables.LiveHoldBytes)
				if err != nil {
					b.Fatal(err)
				}
				if twice {
					reads = 2
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
			b.ReportMetric(reads, "reads")
		})
	}
}
