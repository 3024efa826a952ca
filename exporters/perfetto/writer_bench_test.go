package perfetto

import (
	"context"
	"io"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// benchSnapshot records n spans: steps of 10 nested children, as a training
// loop produces them.
func benchSnapshot(tb testing.TB, n int) *event.Snapshot {
	tb.Helper()
	b := recorder.NewBuffer(int64(n), 3)
	if !recorder.Activate(b) {
		tb.Fatal("another buffer is active")
	}
	start := recorder.ReadClocks()
	ctx := context.Background()
	for i := 0; i < n; i += 10 {
		sctx, st := annotate.Step(ctx, "train", int64(i/10))
		for j := 0; j < 9; j++ {
			_, sp := annotate.Begin(sctx, "op", annotate.Int("layer", j))
			sp.End()
		}
		st.End()
	}
	recorder.Deactivate(b)
	return b.Snapshot(event.Meta{Host: "bench", Program: "bench", Start: start, Stop: recorder.ReadClocks()})
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWrite reports encoding throughput (events/s counts begin and end
// separately, as the size target does) and bytes per begin/end event.
func BenchmarkWrite(b *testing.B) { benchWrite(b, WriteOptions{}) }

// BenchmarkWriteUncompressed is BenchmarkWrite with the packets written
// bare: the encoder alone, without deflating.
func BenchmarkWriteUncompressed(b *testing.B) { benchWrite(b, WriteOptions{Uncompressed: true}) }

func benchWrite(b *testing.B, opts WriteOptions) {
	const n = 200_000
	s := benchSnapshot(b, n)
	var cw countingWriter
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cw.n = 0
		if err := Write(&cw, s, opts); err != nil {
			b.Fatal(err)
		}
	}
	events := float64(2 * n)
	b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cw.n)/events, "B/event")
}

func BenchmarkWriteGzip(b *testing.B) {
	s := benchSnapshot(b, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, s, WriteOptions{Gzip: true}); err != nil {
			b.Fatal(err)
		}
	}
}
