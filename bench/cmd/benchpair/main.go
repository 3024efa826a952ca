// Command benchpair compares two builds of a benchmark binary measured side
// by side: it reads `go test -bench` lines each prefixed with a round
// number and a build label ("3 base BenchmarkX-2 ..."), as
// scripts/bench-ab writes them, and prints for every benchmark and unit
// the median of each build and the median of the per-round differences
// (new − base) with their range.
//
// A paired difference is what a shared, noisy machine can show: two runs
// in one round see the same load, so their difference moves far less than
// either figure (issue 18's measurements were made this way).
//
// Usage:
//
//	go run ./cmd/benchpair -base base -new new <rounds.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/bench/internal/benchline"
)

func main() {
	base := flag.String("base", "base", "label of the reference build")
	cur := flag.String("new", "new", "label of the build compared with it")
	flag.Parse()
	if err := run(os.Stdout, os.Stdin, *base, *cur); err != nil {
		fmt.Fprintln(os.Stderr, "benchpair:", err)
		os.Exit(1)
	}
}

// key names one figure: a benchmark (without its -GOMAXPROCS suffix) and
// a unit.
type key struct{ bench, unit string }

// rounds maps a figure to its values by round and build label.
type rounds map[key]map[string]map[string]float64

// parse reads the prefixed benchmark lines; other lines are skipped.
func parse(r io.Reader) (rounds, []key, error) {
	out := rounds{}
	var order []key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		r, ok := benchline.Parse(f[2:])
		if !ok {
			continue
		}
		round, label := f[0], f[1]
		for _, m := range r.Metrics {
			k := key{r.Name, m.Unit}
			if out[k] == nil {
				out[k] = map[string]map[string]float64{}
				order = append(order, k)
			}
			if out[k][round] == nil {
				out[k][round] = map[string]float64{}
			}
			out[k][round][label] = m.Value
		}
	}
	return out, order, sc.Err()
}

func run(w io.Writer, r io.Reader, base, cur string) error {
	data, order, err := parse(r)
	if err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no prefixed benchmark lines in the input (want \"ROUND LABEL BenchmarkName-N ...\")")
	}
	fmt.Fprintf(w, "| benchmark | unit | %s (median) | %s (median) | paired %s − %s, median [range] | rounds |\n", base, cur, cur, base)
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, k := range order {
		var b, c, d []float64
		for _, byLabel := range data[k] {
			x, okb := byLabel[base]
			y, okc := byLabel[cur]
			if !okb || !okc {
				continue
			}
			b, c, d = append(b, x), append(c, y), append(d, y-x)
		}
		if len(d) == 0 {
			continue
		}
		lo, hi := slices.Min(d), slices.Max(d)
		note := ""
		switch {
		case hi < 0:
			note = ", lower every round"
		case lo > 0:
			note = ", higher every round"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s [%s .. %s]%s | %d |\n", k.bench, k.unit,
			num(benchline.Median(b)), num(benchline.Median(c)), signed(benchline.Median(d)), signed(lo), signed(hi), note, len(d))
	}
	return nil
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', precision(v), 64) }

func signed(v float64) string {
	s := num(v)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// precision keeps about three significant digits, at least one decimal
// under 100.
func precision(v float64) int {
	switch a := max(v, -v); {
	case a >= 100:
		return 0
	case a >= 10:
		return 1
	default:
		return 2
	}
}
