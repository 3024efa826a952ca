package tracediff

import "math"

// exactLimit is the largest combined sample size whose Mann-Whitney
// distribution is enumerated exactly: the counts of rank sums fit a
// float64 exactly (C(40, 20) < 2^53) and the table stays small. Past it
// the normal approximation is within a few thousandths of the exact
// p-value.
const exactLimit = 40

// uTest is a two-sided Mann-Whitney U test of x against y (both sorted
// ascending): the probability, were both drawn from one distribution,
// of ranks at least as far from even as these. Ties get midranks; the
// p-value comes from the exact distribution of those midranks for small
// samples and from the normal approximation with tie correction and a
// continuity correction otherwise.
func uTest(x, y []int64) float64 {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return 1
	}
	ranks2, ties := midranks2(x, y)
	// w2 is twice the rank sum of x; its mean under the null hypothesis
	// is n(N+1).
	var w2 int64
	for _, r := range ranks2[:n] {
		w2 += int64(r)
	}
	if n+m <= exactLimit {
		return uExact(ranks2, n, w2)
	}
	return uNormal(n, m, w2, ties)
}

// uExact is the exact two-sided p-value of a doubled rank sum w2 of n of
// the values ranks2.
func uExact(ranks2 []int, n int, w2 int64) float64 {
	mean2 := int64(n) * int64(len(ranks2)+1)
	counts := rankSumCounts(ranks2, n)
	dev := abs64(w2 - mean2)
	var tail, all float64
	for s, c := range counts {
		all += c
		if abs64(int64(s)-mean2) >= dev {
			tail += c
		}
	}
	return min(1, tail/all)
}

// uNormal is the two-sided p-value of a doubled rank sum w2 of n of n+m
// values by the normal approximation, with the tie term ties.
func uNormal(n, m int, w2 int64, ties float64) float64 {
	N := n + m
	// U of x is its rank sum less n(n+1)/2; its mean is nm/2.
	nf, mf, Nf := float64(n), float64(m), float64(N)
	u := float64(w2)/2 - nf*(nf+1)/2
	variance := nf * mf / 12 * ((Nf + 1) - ties/(Nf*(Nf-1)))
	if variance <= 0 {
		return 1 // every duration is the same
	}
	z := (math.Abs(u-nf*mf/2) - 0.5) / math.Sqrt(variance)
	if z <= 0 {
		return 1
	}
	return math.Erfc(z / math.Sqrt2)
}

// midranks2 returns twice the midrank of each value of x then y in the
// two samples pooled (twice, so that a tie's half ranks are integers),
// and the tie term Σ(t³-t) over groups of t equal values.
func midranks2(x, y []int64) (ranks2 []int, ties float64) {
	n, m := len(x), len(y)
	ranks2 = make([]int, n+m)
	i, j, next := 0, 0, 1 // next: the rank the next value takes
	for i < n || j < m {
		var v int64
		if j == m || i < n && x[i] <= y[j] {
			v = x[i]
		} else {
			v = y[j]
		}
		i0, j0 := i, j
		for i < n && x[i] == v {
			i++
		}
		for j < m && y[j] == v {
			j++
		}
		t := (i - i0) + (j - j0)
		r2 := 2*next + t - 1 // twice the mean of next … next+t-1
		for k := i0; k < i; k++ {
			ranks2[k] = r2
		}
		for k := j0; k < j; k++ {
			ranks2[n+k] = r2
		}
		tf := float64(t)
		ties += tf*tf*tf - tf
		next += t
	}
	return ranks2, ties
}

// rankSumCounts returns, for every s, how many ways n of the values in
// ranks2 sum to s: the exact null distribution of a rank sum (doubled),
// ties and all.
func rankSumCounts(ranks2 []int, n int) []float64 {
	total := 0
	for _, r := range ranks2 {
		total += r
	}
	// ways[k][s]: subsets of k of the values seen so far that sum to s.
	ways := make([][]float64, n+1)
	for k := range ways {
		ways[k] = make([]float64, total+1)
	}
	ways[0][0] = 1
	for seen, r := range ranks2 {
		for k := min(seen+1, n); k >= 1; k-- {
			from, to := ways[k-1], ways[k]
			for s := total; s >= r; s-- {
				to[s] += from[s-r]
			}
		}
	}
	return ways[n]
}

// uCritical returns the confidence bound's rank for a 1-alpha interval
// of the shift between samples of n and m: the largest c with P(U < c)
// at most alpha/2 for U without ties, exact for small samples and by
// the normal approximation otherwise; 0 when no such interval is
// bounded.
func uCritical(n, m int, alpha float64) int64 {
	N := n + m
	if N <= exactLimit {
		ranks2 := make([]int, N)
		for i := range ranks2 {
			ranks2[i] = 2 * (i + 1)
		}
		counts := rankSumCounts(ranks2, n)
		var all float64
		for _, c := range counts {
			all += c
		}
		// Doubled rank sums of n distinct ranks start at n(n+1) and step
		// by 2: the u-th is U = u.
		base := n * (n + 1)
		var below float64
		c := int64(0)
		for u := 0; base+2*u < len(counts); u++ {
			below += counts[base+2*u] // P(U <= u)
			if below/all > alpha/2 {
				break
			}
			c = int64(u + 1) // P(U < u+1) <= alpha/2
		}
		return c
	}
	nf, mf := float64(n), float64(m)
	z := zQuantile(1 - alpha/2)
	c := math.Floor(nf*mf/2 - z*math.Sqrt(nf*mf*(nf+mf+1)/12))
	return int64(max(c, 0))
}

// zQuantile is the standard normal distribution's quantile at p.
func zQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// kthDifference returns the k-th smallest (from 1) of the n·m
// differences y[j]-x[i], x and y sorted ascending, without listing them:
// durations are integers, so a binary search on the difference with a
// linear count of the pairs at or below it finds it in O((n+m)·64).
func kthDifference(x, y []int64, k int64) int64 {
	lo, hi := y[0]-x[len(x)-1], y[len(y)-1]-x[0]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if pairsAtMost(x, y, mid) >= k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// pairsAtMost counts the pairs (i, j) with y[j]-x[i] <= d.
func pairsAtMost(x, y []int64, d int64) int64 {
	var count int64
	i := 0 // x[:i] are below y[j]-d: too small to count
	for _, v := range y {
		for i < len(x) && x[i] < v-d {
			i++
		}
		count += int64(len(x) - i)
	}
	return count
}

// shift is the Hodges-Lehmann estimate of how much longer y's durations
// are than x's (the median of all differences y[j]-x[i]), with Moses'
// distribution-free 1-alpha confidence interval; lo and hi are infinite
// where the samples are too small to bound it.
func shift(x, y []int64, alpha float64) (est, lo, hi float64) {
	n, m := int64(len(x)), int64(len(y))
	nm := n * m
	if nm == 0 {
		return math.NaN(), math.Inf(-1), math.Inf(1)
	}
	if nm%2 == 1 {
		est = float64(kthDifference(x, y, (nm+1)/2))
	} else {
		est = (float64(kthDifference(x, y, nm/2)) + float64(kthDifference(x, y, nm/2+1))) / 2
	}
	c := uCritical(len(x), len(y), alpha)
	if c < 1 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, float64(kthDifference(x, y, c)), float64(kthDifference(x, y, nm+1-c))
}

// quantile is the q-quantile of sorted values, interpolated linearly
// between the two nearest ranks (R's type 7, numpy's default).
func quantile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	i := int(math.Floor(h))
	if i+1 >= len(sorted) {
		return float64(sorted[len(sorted)-1])
	}
	return float64(sorted[i]) + (h-float64(i))*float64(sorted[i+1]-sorted[i])
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
