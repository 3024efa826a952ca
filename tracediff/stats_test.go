package tracediff

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUTestKnownValues checks p-values worked out by hand: with no
// overlap, 2 of the C(n+m, n) equally likely rank sets are as extreme.
func TestUTestKnownValues(t *testing.T) {
	for _, c := range []struct {
		x, y []int64
		p    float64
	}{
		{[]int64{1, 2, 3}, []int64{4, 5, 6}, 2.0 / 20},
		{[]int64{1, 2, 3, 4, 5}, []int64{6, 7, 8, 9, 10}, 2.0 / 252},
		{[]int64{6, 7, 8, 9, 10}, []int64{1, 2, 3, 4, 5}, 2.0 / 252},
		// Midranks 1.5 1.5 3.5 3.5 5.5 5.5; x's sum 6.5 is 4 from the
		// mean 10.5, as far as only {1.5,1.5,3.5} (2 ways) and
		// {3.5,5.5,5.5} (2 ways) of the 20 sets: p = 4/20.
		{[]int64{1, 1, 2}, []int64{2, 3, 3}, 4.0 / 20},
		// Interleaved evenly: every set is at least as far from the
		// mean as a sum of exactly the mean.
		{[]int64{1, 4, 5, 8}, []int64{2, 3, 6, 7}, 1},
		{[]int64{7, 7, 7, 7, 7}, []int64{7, 7, 7, 7, 7}, 1},
	} {
		if got := uTest(c.x, c.y); math.Abs(got-c.p) > 1e-12 {
			t.Errorf("uTest(%v, %v) = %v, want %v", c.x, c.y, got, c.p)
		}
	}
}

// TestUTestExactMatchesEnumeration checks the exact distribution
// against listing every way of splitting the pooled values, ties and
// all.
func TestUTestExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n, m := 1+rng.IntN(7), 1+rng.IntN(7)
		x, y := make([]int64, n), make([]int64, m)
		for i := range x {
			x[i] = rng.Int64N(6) // few values: many ties
		}
		for i := range y {
			y[i] = rng.Int64N(6) + rng.Int64N(2)
		}
		slices.Sort(x)
		slices.Sort(y)
		want := enumeratedP(x, y)
		if got := uTest(x, y); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: uTest(%v, %v) = %v, enumeration says %v", trial, x, y, got, want)
		}
	}
}

// enumeratedP is the two-sided p-value by brute force: every choice of
// len(x) of the pooled values, its rank sum against x's.
func enumeratedP(x, y []int64) float64 {
	pooled := append(slices.Clone(x), y...)
	sorted := slices.Clone(pooled)
	slices.Sort(sorted)
	rank := func(v int64) float64 { // midrank
		lo, hi := 0, 0
		for _, s := range sorted {
			if s < v {
				lo++
			}
			if s <= v {
				hi++
			}
		}
		return float64(lo+1+hi) / 2
	}
	ranks := make([]float64, len(pooled))
	for i, v := range pooled {
		ranks[i] = rank(v)
	}
	n, N := len(x), len(pooled)
	mean := float64(n) * float64(N+1) / 2
	var obs float64
	for _, r := range ranks[:n] {
		obs += r
	}
	dev := math.Abs(obs - mean)
	extreme, all := 0, 0
	for mask := 0; mask < 1<<N; mask++ {
		if popcount(mask) != n {
			continue
		}
		var s float64
		for i := range N {
			if mask&(1<<i) != 0 {
				s += ranks[i]
			}
		}
		all++
		if math.Abs(s-mean) >= dev-1e-9 {
			extreme++
		}
	}
	return float64(extreme) / float64(all)
}

func popcount(v int) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// TestUTestNormalNearExact checks the normal approximation (used past
// exactLimit values) against the exact distribution at the limit, on
// the same samples.
func TestUTestNormalNearExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	for range 200 {
		x, y := make([]int64, 20), make([]int64, 20)
		d := rng.Int64N(12)
		for i := range x {
			x[i] = 100 + rng.Int64N(20)
			y[i] = 100 + d + rng.Int64N(20)
		}
		slices.Sort(x)
		slices.Sort(y)
		ranks2, ties := midranks2(x, y)
		var w2 int64
		for _, r := range ranks2[:len(x)] {
			w2 += int64(r)
		}
		exact, approx := uExact(ranks2, len(x), w2), uNormal(len(x), len(y), w2, ties)
		worst = max(worst, math.Abs(exact-approx))
		if math.Abs(exact-approx) > 0.01 {
			t.Errorf("x %v y %v: exact p %.4f, normal approximation %.4f", x, y, exact, approx)
		}
	}
	t.Logf("largest difference between exact and approximate p: %.4f", worst)
}

// TestUTestNormalKnownValue checks the approximation on a case worked
// by hand: 25 against 25 with no overlap has U = 0, mean 312.5 and
// variance 25·25·51/12 = 2656.25, so z = 312/51.539 = 6.0537 and
// p = 1.418e-9.
func TestUTestNormalKnownValue(t *testing.T) {
	x, y := make([]int64, 25), make([]int64, 25)
	for i := range x {
		x[i], y[i] = int64(i), int64(25+i)
	}
	if p := uTest(x, y); math.Abs(p-1.418e-9)/1.418e-9 > 0.01 {
		t.Errorf("p = %g, want 1.418e-9", p)
	}
}

// TestCritical checks Moses' bound against the tables: for 5 against 5
// at 0.05, P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so the
// interval runs from the 3rd difference; the normal approximation is
// within one of the exact value at the limit.
func TestCritical(t *testing.T) {
	if c := uCritical(5, 5, 0.05); c != 3 {
		t.Errorf("uCritical(5, 5, 0.05) = %d, want 3", c)
	}
	if c := uCritical(3, 3, 0.05); c != 0 {
		t.Errorf("uCritical(3, 3, 0.05) = %d, want 0 (the smallest p, 0.1, is above 0.05)", c)
	}
	// The tables' two-sided 0.05 critical U for 20 against 20 is 127,
	// so the interval starts at the 128th difference.
	if c := uCritical(20, 20, 0.05); c != 128 {
		t.Errorf("uCritical(20, 20, 0.05) = %d, want 128", c)
	}
	nf := 20.0
	approx := math.Floor(nf*nf/2 - 1.959964*math.Sqrt(nf*nf*(2*nf+1)/12))
	if math.Abs(approx-128) > 1 {
		t.Errorf("normal approximation %v is not within one of 128", approx)
	}
}

// TestShift checks the Hodges-Lehmann estimate and k-th difference
// against listing every difference.
func TestShift(t *testing.T) {
	est, lo, hi := shift([]int64{1, 2, 3}, []int64{11, 12, 13}, 0.05)
	if est != 10 || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("shift of 3 against 3 = %v [%v, %v], want 10 and an unbounded interval", est, lo, hi)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		x, y := make([]int64, 1+rng.IntN(30)), make([]int64, 1+rng.IntN(30))
		for i := range x {
			x[i] = rng.Int64N(1000)
		}
		for i := range y {
			y[i] = rng.Int64N(1000) + 200
		}
		slices.Sort(x)
		slices.Sort(y)
		var diffs []int64
		for _, b := range x {
			for _, a := range y {
				diffs = append(diffs, a-b)
			}
		}
		slices.Sort(diffs)
		for _, k := range []int{1, len(diffs) / 3, len(diffs)} {
			if k < 1 {
				continue
			}
			if got := kthDifference(x, y, int64(k)); got != diffs[k-1] {
				t.Fatalf("kthDifference(k=%d) = %d, want %d", k, got, diffs[k-1])
			}
		}
		est, lo, hi := shift(x, y, 0.05)
		nm := len(diffs)
		want := float64(diffs[nm/2])
		if nm%2 == 0 {
			want = float64(diffs[nm/2-1]+diffs[nm/2]) / 2
		}
		if est != want {
			t.Fatalf("shift = %v, want the median difference %v", est, want)
		}
		if c := uCritical(len(x), len(y), 0.05); c >= 1 && (lo != float64(diffs[c-1]) || hi != float64(diffs[int64(nm)-c])) {
			t.Fatalf("interval [%v, %v], want [%d, %d]", lo, hi, diffs[c-1], diffs[int64(nm)-c])
		}
	}
}

func TestQuantile(t *testing.T) {
	s := []int64{1, 2, 3, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 2.5}, {0.95, 3.85}, {1, 4}} {
		if got := quantile(s, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(quantile(nil, 0.5)) {
		t.Error("quantile of nothing is a number")
	}
}
