package tracediff_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/internal/heappeak"
	"github.com/devprof/devprof/tracediff"
)

// benchStream writes a trace of about n events into sink: steps of a
// step span holding 50 ops of 200 names (each a child span), each op
// launching a kernel on one of 4 streams, durations noisy.
func benchStream(sink event.Sink, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1})
	var streams [4]uint32
	for i := range streams {
		streams[i] = sink.Track(event.Track{Kind: event.TrackDeviceStream, ID: int64(i)})
	}
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("op_%03d", i)
	}
	kernels := make([]string, len(names))
	for i := range kernels {
		kernels[i] = names[i] + "_kernel"
	}
	t := int64(0)
	for events := 0; events < n; {
		step := sink.Span(event.Span{Name: "step", Start: t, Track: host, Unfinished: true})
		events++
		for range 50 {
			i := rng.IntN(len(names))
			d := 1000 + rng.Int64N(9000)
			sink.Span(event.Span{Name: names[i], Start: t, End: t + d, Track: host, Parent: step})
			sink.ActivityOf(event.ActivityKernel, streams[i%4], kernels[i], t+500, t+500+d/2, nil)
			events += 2
			t += d + 100
		}
		sink.EndSpan(step, t)
	}
	sink.Meta().Stop.Mono = t
}

// BenchmarkCollector is one side of a diff without its reader: events
// into the Collector, and the comparison of two such profiles. The
// 10M-event case runs only when asked for by -bench.
func BenchmarkCollector(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC()
			stop := heappeak.Start()
			for b.Loop() {
				c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
				benchStream(c, n)
				if p := c.Profile(); len(p.Names) != 401 {
					b.Fatalf("%d names", len(p.Names))
				}
			}
			b.ReportMetric(heappeak.MiB(stop()), "peak-heap-MiB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkPerfettoSide is one side of devprof diff on a Perfetto file
// held in memory: the streaming reader into the Collector.
func BenchmarkPerfettoSide(b *testing.B) {
	for _, n := range []int{1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			builder := event.NewBuilder(event.Meta{Host: "bench"})
			benchStream(builder, n)
			var file bytes.Buffer
			if err := perfetto.Write(&file, builder.Snapshot(), perfetto.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			builder = nil
			b.ReportAllocs()
			b.SetBytes(int64(file.Len()))
			runtime.GC()
			stop := heappeak.Start()
			for b.Loop() {
				c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
				if err := perfetto.Decode(bytes.NewReader(file.Bytes()), c); err != nil {
					b.Fatal(err)
				}
				if p := c.Profile(); len(p.Names) != 401 {
					b.Fatalf("%d names", len(p.Names))
				}
			}
			b.ReportMetric(heappeak.MiB(stop()), "peak-heap-MiB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkCompare compares two profiles of 401 names with 4096
// sampled durations each: the statistics alone.
func BenchmarkCompare(b *testing.B) {
	profiles := [2]*tracediff.Profile{}
	for i := range profiles {
		c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
		benchStream(c, 10_000_000/10) // past 4096 instances of some names
		profiles[i] = c.Profile()
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := tracediff.Compare(profiles[0], profiles[1], 0); len(r.Rows) != 401 {
			b.Fatalf("%d rows", len(r.Rows))
		}
	}
}
