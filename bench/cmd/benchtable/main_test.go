package main

import (
	"strings"
	"testing"

	"github.com/devprof/devprof/bench/internal/benchline"
)

// sample is `go test -bench` output as scripts/bench collects it (two
// invocations appended), trimmed: OTelSpan is absent, one run of
// XPlaneEncode failed, and the runs of a benchmark vary.
const sample = `goos: linux
goarch: amd64
pkg: github.com/devprof/devprof/bench
cpu: AMD EPYC
BenchmarkDevprofSpanOff-2          	1000000000	         0.6178 ns/op	       0 B/op	       0 allocs/op
BenchmarkDevprofSpanOff-2          	1000000000	         0.3100 ns/op	       0 B/op	       0 allocs/op
BenchmarkDevprofSpanOff-2          	1000000000	         0.5000 ns/op	       0 B/op	       0 allocs/op
BenchmarkDevprofSpanOn-2           	11922273	        90.00 ns/op	        40.00 cpu-ns/op	       300.0 self-made-chunks/Mspan	     184 B/op	       0 allocs/op
BenchmarkDevprofSpanOn-2           	11922273	        20.00 ns/op	        20.00 cpu-ns/op	       100.0 self-made-chunks/Mspan	     184 B/op	       0 allocs/op
BenchmarkDevprofSpanOn-2           	11922273	        25.00 ns/op	        24.00 cpu-ns/op	       0 self-made-chunks/Mspan	     184 B/op	       1 allocs/op
BenchmarkDevprofSpanOn-2           	11922273	        29.00 ns/op	        28.00 cpu-ns/op	       50.0 self-made-chunks/Mspan	     184 B/op	       0 allocs/op
BenchmarkDevprofSpanOnParallel-2   	22071110	        14.00 ns/op	     184 B/op	       0 allocs/op
BenchmarkDevprofSpanOnParallel-2   	22071110	        16.00 ns/op	     184 B/op	       0 allocs/op
BenchmarkDevprofSpanOnInt-2        	11922273	        24.00 ns/op	        22.00 cpu-ns/op	       0 self-made-chunks/Mspan	     0 B/op	       0 allocs/op
BenchmarkDevprofLeafSpan-2         	11922273	        21.00 ns/op	        20.00 cpu-ns/op	       0 self-made-chunks/Mspan	     12 B/op	       0 allocs/op
BenchmarkTwoTimeSince-2            	22216944	        52.92 ns/op	        50.00 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkRuntimeTraceRegion-2      	 6239556	       183.5 ns/op	      24 B/op	       1 allocs/op
BenchmarkPerfettoEncode-2   	       3	 342751600 ns/op	        16.94 B/event	   5835130 events/s	263839381 B/op	     646 allocs/op
--- FAIL: BenchmarkXPlaneEncode-2
    bench_test.go:1: boom
BenchmarkXPlaneEncode-2     	       30	 35273281 ns/op	        22.45 B/event	   28350070 events/s	437203637 B/op	     692 allocs/op
FAIL
exit status 1
FAIL	github.com/devprof/devprof/bench	28.533s
goos: linux
goarch: amd64
pkg: github.com/devprof/devprof/bench
cpu: AMD EPYC
BenchmarkStop1M-2           	       1	1581078849 ns/op	       175.8 buffer-MiB	       410.9 peak-heap-MiB	706223056 B/op	    1413 allocs/op
BenchmarkStop1M-2           	       1	120000000 ns/op	       175.8 buffer-MiB	       40.0 peak-heap-MiB	706223056 B/op	    1413 allocs/op
BenchmarkStop1M-2           	       1	140000000 ns/op	       175.8 buffer-MiB	       50.0 peak-heap-MiB	706223056 B/op	    1413 allocs/op
BenchmarkSession10M-2       	       1	23532087575 ns/op	    424952 spans/s	8603430640 B/op	   36329 allocs/op
PASS
ok  	github.com/devprof/devprof/bench	28.533s
`

const want = `cpu: AMD EPYC

| target                                   | benchmark               | median                           | peer (median)                 | ratio        | goal               | result  |
| ---------------------------------------- | ----------------------- | -------------------------------- | ----------------------------- | ------------ | ------------------ | ------- |
| span off                                 | DevprofSpanOff-2        | 0.50 ns n=3                      |                               |              | <= 1 ns            | PASS    |
| span off: allocations                    | DevprofSpanOff-2        | 0 allocs/op n=3                  |                               |              | 0 allocs/op        | PASS    |
| span on (one int arg)                    | DevprofSpanOn-2         | 27.0 ns n=4                      |                               |              | <= 30 ns           | PASS    |
| span on: allocations                     | DevprofSpanOn-2         | 0 allocs/op n=4                  |                               |              | 0 allocs/op        | PASS    |
| span on vs two time.Since calls          | DevprofSpanOn-2         | 27.0 ns n=4                      | TwoTimeSince-2 52.9 ns        | 0.51x        | <= 0.60x           | PASS    |
| span on vs two time.Since, thread CPU    | DevprofSpanOn-2         | 26.0 ns n=4                      | TwoTimeSince-2 50.0 ns        | 0.52x        | <= 0.60x           | PASS    |
| span on: bytes (fresh buffer memory)     | DevprofSpanOn-2         | 184 B/op n=4                     |                               |              | 0 B/op             | MISS    |
| span on: chunks the writer made itself   | DevprofSpanOn-2         | 75 per M spans n=4               |                               |              | 0 per M spans      | MISS    |
| BeginInt (one int arg) vs two time.Since | DevprofSpanOnInt-2      | 24.0 ns n=1                      | TwoTimeSince-2 52.9 ns        | 0.45x        | <= 0.60x           | PASS    |
| BeginInt vs two time.Since, thread CPU   | DevprofSpanOnInt-2      | 22.0 ns n=1                      | TwoTimeSince-2 50.0 ns        | 0.44x        | <= 0.60x           | PASS    |
| leaf span (BeginLeaf) vs two time.Since  | DevprofLeafSpan-2       | 21.0 ns n=1                      | TwoTimeSince-2 52.9 ns        | 0.40x        | <= 0.60x           | PASS    |
| leaf span: bytes (fresh buffer memory)   | DevprofLeafSpan-2       | 12 B/op n=1                      |                               |              | 0 B/op             | MISS    |
| span on vs runtime/trace, tracer on      | DevprofSpanOn-2         | 27.0 ns n=4                      | RuntimeTraceRegion-2 183.5 ns | 6.80x faster | >= 5x faster       | PASS    |
| leaf span vs runtime/trace region        | DevprofLeafSpan-2       | 21.0 ns n=1                      | RuntimeTraceRegion-2 183.5 ns | 8.74x faster | >= 5x faster       | PASS    |
| span on vs OTel SDK span                 | DevprofSpanOn-2         | 27.0 ns n=4                      | OTelSpan MISSING              | MISSING      | >= 10x faster      | MISSING |
| flight-recorder span vs span on          | DevprofSpanFlight       | MISSING                          |                               |              | <= 1.10x           | MISSING |
| span on, RunParallel vs 1 core           | DevprofSpanOnParallel-2 | 15.0 ns n=2                      | DevprofSpanOn-2 27.0 ns       | 1.80x        | >= 1.80x           | PASS    |
| Perfetto encoding, one core              | PerfettoEncode-2        | 5.8 M events/s n=1               |                               |              | >= 20 M events/s   | MISS    |
| XPlane encoding, one core                | XPlaneEncode-2          | 28.4 M events/s n=1              |                               |              | >= 10 M events/s   | PASS    |
| Perfetto size                            | PerfettoEncode-2        | 16.94 B/event n=1                |                               |              | <= 10 B            | MISS    |
| Stop() 1 M events, both formats          | Stop1M-2                | 140.0 ms n=3                     |                               |              | <= 150 ms          | PASS    |
| Stop() 1 M: peak heap growth             | Stop1M-2                | +50.0 MiB (buffer 175.8 MiB) n=3 |                               |              | <= buffer + 64 MiB | PASS    |
| 10 M-event session end to end            | Session10M-2            | 23.53 s n=1                      |                               |              | <= 3 s             | MISS    |

15 PASS, 6 MISS, 2 MISSING (medians over n runs; ratios of medians)
`

func TestTable(t *testing.T) {
	var out strings.Builder
	if err := run(&out, strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := benchline.Median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestEmptyInput(t *testing.T) {
	var out strings.Builder
	if err := run(&out, strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 PASS, 0 MISS, 23 MISSING") {
		t.Errorf("empty input:\n%s", out.String())
	}
}
