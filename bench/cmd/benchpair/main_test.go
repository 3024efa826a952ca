package main

import (
	"strings"
	"testing"
)

func TestPairedDifferences(t *testing.T) {
	in := `goos: linux
1 base BenchmarkSpan-2   100   50.0 ns/op   40 B/op
1 new  BenchmarkSpan-2   100   45.0 ns/op   40 B/op
2 new  BenchmarkSpan-2   100   80.0 ns/op   40 B/op
2 base BenchmarkSpan-2   100   90.0 ns/op   40 B/op
3 base BenchmarkSpan-2   100   60.0 ns/op   40 B/op
3 new  BenchmarkSpan-2   100   58.0 ns/op   40 B/op
4 base BenchmarkOther-2  100   10.0 ns/op
PASS
`
	var out strings.Builder
	if err := run(&out, strings.NewReader(in), "base", "new"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// Medians 60 and 58; differences -5, -10, -2: median -5, every round lower.
	for _, want := range []string{
		"| Span | ns/op | 60.0 | 58.0 | -5.00 [-10.0 .. -2.00], lower every round | 3 |",
		"| Span | B/op | 40.0 | 40.0 | +0.00 [+0.00 .. +0.00] | 3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing row %q in:\n%s", want, got)
		}
	}
	// A benchmark measured by one build only has no pairs and no row.
	if strings.Contains(got, "| Other |") {
		t.Errorf("unpaired benchmark printed:\n%s", got)
	}
}

func TestNoInput(t *testing.T) {
	var out strings.Builder
	if err := run(&out, strings.NewReader("PASS\n"), "base", "new"); err == nil {
		t.Fatal("no error for input without prefixed benchmark lines")
	}
}
