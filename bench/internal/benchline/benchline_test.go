package benchline

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	res, ok := Parse(strings.Fields("BenchmarkDevprofSpanOn-2   \t 1000  53.7 ns/op  50.1 cpu-ns/op  x bad/unit  0 allocs/op"))
	if !ok || res.Printed != "DevprofSpanOn-2" || res.Name != "DevprofSpanOn" {
		t.Fatalf("Parse = %+v, %v", res, ok)
	}
	want := []Metric{{53.7, "ns/op"}, {50.1, "cpu-ns/op"}, {0, "allocs/op"}}
	if !slices.Equal(res.Metrics, want) {
		t.Errorf("metrics %v, want %v", res.Metrics, want)
	}
	if res, ok := Parse(strings.Fields("BenchmarkStep-to-step 10 1 ns/op")); !ok || res.Name != "Step-to-step" {
		t.Errorf("a name whose last dash is not a GOMAXPROCS suffix: %+v, %v", res, ok)
	}
	for _, line := range []string{"", "PASS", "BenchmarkX-2", "BenchmarkX-2 --- FAIL: x", "ok  pkg 1.2s", "goos: linux"} {
		if _, ok := Parse(strings.Fields(line)); ok {
			t.Errorf("Parse(%q) accepted a line that is no result", line)
		}
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{5, 1, 3}
	if m := Median(xs); m != 3 {
		t.Errorf("Median odd = %v, want 3", m)
	}
	if !slices.Equal(xs, []float64{5, 1, 3}) {
		t.Errorf("Median sorted its input: %v", xs)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("Median even = %v, want 2.5", m)
	}
}
