// Package benchline reads the result lines of `go test -bench` for the
// bench module's commands: benchtable (the targets table) and benchpair
// (two builds side by side) read the same lines and take the same medians.
package benchline

import (
	"slices"
	"strconv"
	"strings"
)

// Metric is one value of a result line with its unit ("ns/op", "B/op", a
// custom metric's unit).
type Metric struct {
	Value float64
	Unit  string
}

// Result is one benchmark result line.
type Result struct {
	// Printed is the benchmark's name as printed, without "Benchmark"
	// ("SpanOn-2").
	Printed string
	// Name is Printed without its -GOMAXPROCS suffix ("SpanOn").
	Name string
	// Metrics are the line's value/unit pairs after the iteration count;
	// pairs whose value is not a number are left out.
	Metrics []Metric
}

// Parse reads a result line split into fields, starting at the
// benchmark's name: "BenchmarkX-2 1000 12.5 ns/op ...". It reports false
// for anything else (a line whose second field is not an iteration count,
// or one with no value).
func Parse(f []string) (Result, bool) {
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return Result{}, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return Result{}, false
	}
	res := Result{Printed: strings.TrimPrefix(f[0], "Benchmark")}
	res.Name = res.Printed
	if i := strings.LastIndexByte(res.Name, '-'); i > 0 {
		if _, err := strconv.Atoi(res.Name[i+1:]); err == nil {
			res.Name = res.Name[:i]
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		if v, err := strconv.ParseFloat(f[i], 64); err == nil {
			res.Metrics = append(res.Metrics, Metric{v, f[i+1]})
		}
	}
	return res, true
}

// Median returns the median of xs (the mean of the middle two for an even
// count), leaving xs as it is.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
