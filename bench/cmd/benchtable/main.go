// Command benchtable reads the output of `go test -bench` for package bench
// on standard input and prints the table of the performance targets: for
// each target the median figure over the runs (-count), the ratio to the
// peer where the target is a ratio, the target itself and PASS, MISS, or
// MISSING when a benchmark or metric it needs is absent.
//
// Usage:
//
//	go test -run '^$' -bench . -benchmem -count 5 ./bench | go run ./bench/cmd/benchtable
//
// scripts/bench runs the benchmarks and this command together. benchtable
// exits 0 whether or not targets are met; it fails only when it cannot read
// its input.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/devprof/devprof/bench/internal/benchline"
)

func main() {
	if err := run(os.Stdout, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// run reads benchmark output from r and writes the table to w.
func run(w io.Writer, r io.Reader) error {
	res, err := parse(r)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, render(res))
	return err
}

// bench is what the input says about one benchmark.
type bench struct {
	name    string               // with the -GOMAXPROCS suffix, as printed
	metrics map[string][]float64 // unit -> one value per run
}

// results is the parsed input.
type results struct {
	cpu     string
	benches map[string]*bench // keyed by name without the Benchmark prefix and suffix
}

// parse reads `go test -bench` output. Lines that are not benchmark results
// are skipped, except "cpu:".
func parse(r io.Reader) (*results, error) {
	res := &results{benches: map[string]*bench{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
			res.cpu = strings.TrimSpace(cpu)
			continue
		}
		f := strings.Fields(line)
		if len(f)%2 != 0 {
			continue
		}
		r, ok := benchline.Parse(f)
		if !ok {
			continue
		}
		b := res.benches[r.Name]
		if b == nil {
			b = &bench{name: r.Printed, metrics: map[string][]float64{}}
			res.benches[r.Name] = b
		}
		for _, m := range r.Metrics {
			b.metrics[m.Unit] = append(b.metrics[m.Unit], m.Value)
		}
	}
	return res, sc.Err()
}

// figure is a median value of one metric of one benchmark.
type figure struct {
	name string // benchmark name as printed
	v    float64
	runs int
	ok   bool
}

func (res *results) get(key, unit string) figure {
	b := res.benches[key]
	if b == nil || len(b.metrics[unit]) == 0 {
		return figure{name: key}
	}
	vs := b.metrics[unit]
	return figure{name: b.name, v: benchline.Median(vs), runs: len(vs), ok: true}
}

// check is one row of the table.
type check struct {
	target string
	bench  string // benchmark key
	unit   string
	format func(float64) string
	// peer, when set, makes the row a ratio: value/peer (or peer/value
	// with peerOverValue) compared with limit.
	peer          string
	peerOverValue bool
	ratioSuffix   string
	// extra, when set, names a metric of the same benchmark shown beside
	// the value.
	extra       string
	extraFormat func(float64) string
	limit       float64
	atLeast     bool // pass when the compared figure is >= limit, else <= limit
	goal        string
}

var checks = []check{
	{target: "span off", bench: "DevprofSpanOff", unit: "ns/op", format: fmtNs, limit: 1, goal: "<= 1 ns"},
	{target: "span off: allocations", bench: "DevprofSpanOff", unit: "allocs/op", format: fmtAllocs, limit: 0, goal: "0 allocs/op"},
	{target: "span on (one int arg)", bench: "DevprofSpanOn", unit: "ns/op", format: fmtNs, limit: 30, goal: "<= 30 ns"},
	{target: "span on: allocations", bench: "DevprofSpanOn", unit: "allocs/op", format: fmtAllocs, limit: 0, goal: "0 allocs/op"},
	{target: "span on vs two time.Since calls", bench: "DevprofSpanOn", unit: "ns/op", format: fmtNs, peer: "TwoTimeSince", limit: 0.6, goal: "<= 0.60x"},
	{target: "span on vs two time.Since, thread CPU", bench: "DevprofSpanOn", unit: "cpu-ns/op", format: fmtNs, peer: "TwoTimeSince", limit: 0.6, goal: "<= 0.60x"},
	{target: "span on: bytes (fresh buffer memory)", bench: "DevprofSpanOn", unit: "B/op", format: fmtBop, limit: 0, goal: "0 B/op"},
	{target: "span on: chunks the writer made itself", bench: "DevprofSpanOn", unit: "self-made-chunks/Mspan", format: fmtPerM, limit: 0, goal: "0 per M spans"},
	{target: "BeginInt (one int arg) vs two time.Since", bench: "DevprofSpanOnInt", unit: "ns/op", format: fmtNs, peer: "TwoTimeSince", limit: 0.6, goal: "<= 0.60x"},
	{target: "BeginInt vs two time.Since, thread CPU", bench: "DevprofSpanOnInt", unit: "cpu-ns/op", format: fmtNs, peer: "TwoTimeSince", limit: 0.6, goal: "<= 0.60x"},
	{target: "leaf span (BeginLeaf) vs two time.Since", bench: "DevprofLeafSpan", unit: "ns/op", format: fmtNs, peer: "TwoTimeSince", limit: 0.6, goal: "<= 0.60x"},
	{target: "leaf span: bytes (fresh buffer memory)", bench: "DevprofLeafSpan", unit: "B/op", format: fmtBop, limit: 0, goal: "0 B/op"},
	{target: "span on vs runtime/trace, tracer on", bench: "DevprofSpanOn", unit: "ns/op", format: fmtNs, peer: "RuntimeTraceRegion", peerOverValue: true, ratioSuffix: " faster", limit: 5, atLeast: true, goal: ">= 5x faster"},
	{target: "leaf span vs runtime/trace region", bench: "DevprofLeafSpan", unit: "ns/op", format: fmtNs, peer: "RuntimeTraceRegion", peerOverValue: true, ratioSuffix: " faster", limit: 5, atLeast: true, goal: ">= 5x faster"},
	{target: "span on vs OTel SDK span", bench: "DevprofSpanOn", unit: "ns/op", format: fmtNs, peer: "OTelSpan", peerOverValue: true, ratioSuffix: " faster", limit: 10, atLeast: true, goal: ">= 10x faster"},
	{target: "flight-recorder span vs span on", bench: "DevprofSpanFlight", unit: "ns/op", format: fmtNs, peer: "DevprofSpanOn", limit: 1.10, goal: "<= 1.10x"},
	{target: "span on, RunParallel vs 1 core", bench: "DevprofSpanOnParallel", unit: "ns/op", format: fmtNs, peer: "DevprofSpanOn", peerOverValue: true, limit: 1.8, atLeast: true, goal: ">= 1.80x"},
	{target: "Perfetto encoding, one core", bench: "PerfettoEncode", unit: "events/s", format: fmtRate, limit: 20e6, atLeast: true, goal: ">= 20 M events/s"},
	{target: "XPlane encoding, one core", bench: "XPlaneEncode", unit: "events/s", format: fmtRate, limit: 10e6, atLeast: true, goal: ">= 10 M events/s"},
	{target: "Perfetto size", bench: "PerfettoEncode", unit: "B/event", format: fmtBytes, limit: 10, goal: "<= 10 B"},
	{target: "Stop() 1 M events, both formats", bench: "Stop1M", unit: "ns/op", format: fmtNs, limit: 150e6, goal: "<= 150 ms"},
	{target: "Stop() 1 M: peak heap growth", bench: "Stop1M", unit: "peak-heap-MiB", format: fmtMiB, extra: "buffer-MiB", extraFormat: fmtBuffer, limit: 64, goal: "<= buffer + 64 MiB"},
	{target: "10 M-event session end to end", bench: "Session10M", unit: "ns/op", format: fmtNs, limit: 3e9, goal: "<= 3 s"},
}

func fmtNs(ns float64) string {
	switch {
	case ns < 10:
		return fmt.Sprintf("%.2f ns", ns)
	case ns < 1e3:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e4:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f us", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func fmtAllocs(v float64) string { return fmt.Sprintf("%g allocs/op", v) }
func fmtBop(v float64) string    { return fmt.Sprintf("%g B/op", v) }
func fmtPerM(v float64) string   { return fmt.Sprintf("%.0f per M spans", v) }
func fmtRate(v float64) string   { return fmt.Sprintf("%.1f M events/s", v/1e6) }
func fmtBytes(v float64) string  { return fmt.Sprintf("%.2f B/event", v) }
func fmtMiB(v float64) string    { return fmt.Sprintf("+%.1f MiB", v) }
func fmtBuffer(v float64) string { return fmt.Sprintf("(buffer %.1f MiB)", v) }

const missing = "MISSING"

// row evaluates c: the cells of its line of the table.
func (res *results) row(c check) []string {
	val := res.get(c.bench, c.unit)
	cells := []string{c.target, val.name, missing, "", "", c.goal, missing}
	if !val.ok {
		return cells
	}
	cells[2] = c.format(val.v)
	if c.extra != "" {
		if ex := res.get(c.bench, c.extra); ex.ok {
			cells[2] += " " + c.extraFormat(ex.v)
		}
	}
	cells[2] += fmt.Sprintf(" n=%d", val.runs)
	x := val.v
	if c.peer != "" {
		peer := res.get(c.peer, c.unit)
		cells[3] = peer.name + " " + missing
		if !peer.ok {
			cells[4] = missing
			return cells
		}
		cells[3] = fmt.Sprintf("%s %s", peer.name, c.format(peer.v))
		if c.peerOverValue {
			x = peer.v / val.v
		} else {
			x = val.v / peer.v
		}
		cells[4] = fmt.Sprintf("%.2fx%s", x, c.ratioSuffix)
	}
	pass := x <= c.limit
	if c.atLeast {
		pass = x >= c.limit
	}
	cells[6] = "MISS"
	if pass {
		cells[6] = "PASS"
	}
	return cells
}

// render formats the table as Markdown with aligned columns, followed by a
// count of each result.
func render(res *results) string {
	head := []string{"target", "benchmark", "median", "peer (median)", "ratio", "goal", "result"}
	rows := [][]string{head}
	count := map[string]int{}
	for _, c := range checks {
		r := res.row(c)
		count[r[6]]++
		rows = append(rows, r)
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	var sb strings.Builder
	if res.cpu != "" {
		fmt.Fprintf(&sb, "cpu: %s\n\n", res.cpu)
	}
	line := func(r []string) {
		sb.WriteString("|")
		for i, cell := range r {
			fmt.Fprintf(&sb, " %s%s |", cell, strings.Repeat(" ", width[i]-len([]rune(cell))))
		}
		sb.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
	fmt.Fprintf(&sb, "\n%d PASS, %d MISS, %d MISSING (medians over n runs; ratios of medians)\n", count["PASS"], count["MISS"], count[missing])
	return sb.String()
}
