package event

import "testing"

// BenchmarkLayout1M lays out a million spans shaped like a training loop
// (a step span and nine children with an int argument each, as package
// bench's sessions record them): the part of Stop that runs before the
// writers start, on one goroutine.
func BenchmarkLayout1M(b *testing.B) {
	const n, stepNs, opNs = 1_000_000, 10_500, 1_000
	bld := NewBuilder(Meta{Host: "bench", Stop: ClockAnchor{Mono: int64(n/10) * stepNs}, MaxEvents: n})
	for step := range int64(n / 10) {
		t := step * stepNs
		id := bld.Span(Span{Name: "train", Start: t, End: t + 10*opNs, Step: true, StepNum: step,
			Args: []Arg{{Key: "batch", Kind: ArgInt, Num: 32}}})
		for j := range 9 {
			s := t + int64(j+1)*opNs
			bld.Span(Span{Name: "op", Start: s, End: s + opNs - 100, Parent: id,
				Args: []Arg{{Key: "layer", Kind: ArgInt, Num: uint64(j)}}})
		}
	}
	s := bld.Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		if l := s.computeLayout(); len(l.Rows) == 0 {
			b.Fatal("no rows")
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M-spans/s")
}
