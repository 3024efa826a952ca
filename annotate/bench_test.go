package annotate

import (
	"context"
	"fmt"
	"testing"

	"github.com/devprof/devprof/internal/recorder"
)

// benchRecords bounds benchmark buffers: large enough that a one-second
// benchmark on this class of machine does not fill it (drops are checked).
const benchRecords = 1 << 25

// benchBuffer activates a buffer for a benchmark and fails it if events
// were dropped, since the drop path is not what it measures.
func benchBuffer(b *testing.B) func() {
	buf := recorder.NewBuffer(benchRecords, 3)
	if !recorder.Activate(buf) {
		b.Fatal("another buffer is active")
	}
	return func() {
		recorder.Deactivate(buf)
		if d := buf.Dropped(); d > 0 {
			b.Fatalf("%d events dropped: raise benchRecords", d)
		}
	}
}

func BenchmarkSpanOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Begin(ctx, "span", Int("batch", 32))
		s.End()
	}
}

func BenchmarkSpanOn(b *testing.B) {
	ctx := context.Background()
	defer benchBuffer(b)()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Begin(ctx, "span", Int("batch", 32))
		s.End()
	}
}

// BenchmarkSpanOnInt is BenchmarkSpanOn through BeginInt.
func BenchmarkSpanOnInt(b *testing.B) {
	ctx := context.Background()
	defer benchBuffer(b)()
	b.ReportAllocs()
	for b.Loop() {
		_, s := BeginInt(ctx, "span", "batch", 32)
		s.End()
	}
}

func BenchmarkSpanOnNested(b *testing.B) {
	defer benchBuffer(b)()
	ctx, root := Begin(context.Background(), "root")
	defer root.End()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Begin(ctx, "span", Int("batch", 32))
		s.End()
	}
}

func BenchmarkSpanOnParallel(b *testing.B) {
	defer benchBuffer(b)()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_, s := Begin(ctx, "span", Int("batch", 32))
			s.End()
		}
	})
}

func BenchmarkCounterOn(b *testing.B) {
	defer benchBuffer(b)()
	c := Counter{Name: "loss"}
	b.ReportAllocs()
	for b.Loop() {
		c.Set(0.5)
	}
}

func BenchmarkSpanOnFull(b *testing.B) {
	buf := recorder.NewBuffer(1, 3)
	if !recorder.Activate(buf) {
		b.Fatal("another buffer is active")
	}
	defer recorder.Deactivate(buf)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Begin(ctx, "span", Int("batch", 32))
		s.End()
	}
}

// BenchmarkSpanOnDistinctNames is a span whose name is made from data, a
// new string each time (the names are built before the timer runs): every
// span takes the string table's slow path until the table is full.
func BenchmarkSpanOnDistinctNames(b *testing.B) {
	names := make([]string, 1<<17)
	for i := range names {
		names[i] = fmt.Sprintf("request-%08d", i)
	}
	ctx := context.Background()
	defer benchBuffer(b)()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, s := Begin(ctx, names[i&(len(names)-1)], Int("batch", 32))
		s.End()
		i++
	}
}
