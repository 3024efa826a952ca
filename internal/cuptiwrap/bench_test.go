//go:build cgo

package cuptiwrap

import (
	"testing"
	"time"

	"github.com/devprof/devprof/internal/fakecuda"
)

// filledBuffer returns the fake's script, repeated, in one buffer of about
// size bytes, and a parser over it.
func filledBuffer(tb testing.TB, layout string, size int) (*parser, fakecuda.Buffer, *int) {
	tb.Helper()
	path := fakecuda.Build(tb)
	fk, err := fakecuda.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	lib, err := load(path)
	if err != nil {
		tb.Fatal(err)
	}
	buf, err := fk.Fill(layout, size)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(buf.Free)
	var n int
	p := newParser(lib, layout, 0, func(b []Record) { n += len(b) })
	tb.Cleanup(p.close)
	return p, buf, &n
}

// TestParseNoAllocs: once names are cached, parsing allocates nothing.
func TestParseNoAllocs(t *testing.T) {
	for _, layout := range []string{"11.8", "12", "13"} {
		p, buf, n := filledBuffer(t, layout, 256<<10)
		parse := func() {
			p.parseBuffer(buf.Ptr, uintptr(buf.Valid))
			p.flush()
		}
		parse() // warm-up: names
		perBuffer := *n
		if perBuffer < 1000 || p.unknown != 0 || p.walkErrors != 0 {
			t.Fatalf("layout %s: %d records, %d unknown, %d walk errors", layout, perBuffer, p.unknown, p.walkErrors)
		}
		if allocs := testing.AllocsPerRun(20, parse); allocs != 0 {
			t.Errorf("layout %s: %.1f allocations per buffer of %d records, want 0", layout, allocs, perBuffer)
		}
	}
}

// BenchmarkParse measures the drain goroutine's parsing of a 4 MiB buffer
// of mixed records (the fake's script), sink excluded.
func BenchmarkParse(b *testing.B) {
	for _, layout := range []string{"11.8", "13"} {
		b.Run(layout, func(b *testing.B) {
			p, buf, n := filledBuffer(b, layout, DefaultBufferSize)
			p.parseBuffer(buf.Ptr, uintptr(buf.Valid))
			p.flush()
			perBuffer := *n
			b.SetBytes(int64(buf.Valid))
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				p.parseBuffer(buf.Ptr, uintptr(buf.Valid))
				p.flush()
			}
			b.ReportMetric(float64(perBuffer)*float64(b.N)/time.Since(start).Seconds(), "records/s")
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(perBuffer*b.N), "ns/record")
		})
	}
}
