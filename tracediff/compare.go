package tracediff

import (
	"cmp"
	"math"
	"slices"
)

// DefaultAlpha is the significance level a comparison uses unless told
// otherwise, benchstat's.
const DefaultAlpha = 0.05

// MinSamples is the fewest instances a name needs on each side for its
// change to be called significant. Four against four can reach p < 0.05
// (every base instance faster than every new one), but one preempted
// span among four decides it: such rows stay "~".
const MinSamples = 5

// Verdict is what a comparison concludes about one name.
type Verdict uint8

// The verdicts.
const (
	NoChange Verdict = iota // no significant change: the difference is within noise
	Slower                  // significantly longer in the new trace
	Faster                  // significantly shorter in the new trace
	TooFew                  // fewer than MinSamples instances on a side: not tested
	Added                   // only in the new trace
	Removed                 // only in the base trace
)

// String returns the verdict as the table shows it: "~" for no change.
func (v Verdict) String() string {
	switch v {
	case Slower:
		return "slower"
	case Faster:
		return "faster"
	case TooFew:
		return "too few"
	case Added:
		return "added"
	case Removed:
		return "removed"
	}
	return "~"
}

// Stats summarize one side of a row. Times are nanoseconds; Mean, P50
// and P95 are NaN when no instance finished.
type Stats struct {
	Count, Unfinished int64
	Total, Self       int64
	Mean, P50, P95    float64
	// Sampled says P50 and P95 (and the test) come from a random sample
	// of the durations (see Durations).
	Sampled bool
}

func statsOf(d *Durations) Stats {
	if d == nil {
		return Stats{Mean: math.NaN(), P50: math.NaN(), P95: math.NaN()}
	}
	return Stats{Count: d.Count, Unfinished: d.Unfinished, Total: d.Total, Self: d.Self,
		Mean: d.Mean(), P50: d.Quantile(0.5), P95: d.Quantile(0.95), Sampled: d.Sampled()}
}

// Row is the comparison of one name.
type Row struct {
	Name string
	// Kind is KindDevice when either trace ran the name as device work.
	Kind      Kind
	Base, New Stats
	// Shift is the Hodges-Lehmann estimate of how much longer an
	// instance takes in the new trace (the median of the differences
	// between every new and every base duration, ns), and ShiftLow and
	// ShiftHigh its 1-alpha confidence interval (Moses'; infinite when
	// too few instances bound it). NaN when a side has no instance.
	Shift, ShiftLow, ShiftHigh float64
	// Change is Shift relative to the base's median duration (0.2: 20 %
	// longer), and ChangeLow and ChangeHigh the interval's. Infinite
	// when the base's durations are all zero and the new ones are not.
	Change, ChangeLow, ChangeHigh float64
	// P is the Mann-Whitney U test's two-sided p-value (1 when not
	// tested).
	P       float64
	Verdict Verdict
	// Impact is the change in self time over the whole trace (new less
	// base, ns): what rows are sorted by. Self time rather than total,
	// so that a slower span comes before the spans that enclose it.
	Impact int64
}

// Significant reports whether the row's durations changed beyond noise.
func (r *Row) Significant() bool { return r.Verdict == Slower || r.Verdict == Faster }

// Report is the comparison of two profiles.
type Report struct {
	Alpha float64
	// Rows holds every name of either trace: the significant changes
	// and the names in only one trace first, each group by the size of
	// its impact, largest first.
	Rows []Row
}

// Compare compares every name of base and new at significance level
// alpha (0: DefaultAlpha): a Mann-Whitney U test on the per-instance
// durations, and the shift between them with its confidence interval.
func Compare(base, new *Profile, alpha float64) *Report {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	keys := map[string]bool{}
	for k := range base.Names {
		keys[k] = true
	}
	for k := range new.Names {
		keys[k] = true
	}
	r := &Report{Alpha: alpha, Rows: make([]Row, 0, len(keys))}
	for k := range keys {
		r.Rows = append(r.Rows, compareName(k, base.Names[k], new.Names[k], alpha))
	}
	slices.SortFunc(r.Rows, func(x, y Row) int {
		return cmp.Or(
			cmp.Compare(rank(&x), rank(&y)),
			cmp.Compare(abs64(y.Impact), abs64(x.Impact)),
			cmp.Compare(x.Name, y.Name))
	})
	return r
}

// rank orders rows by how much they call for attention: changes beyond
// noise and names in one trace only, then the rest.
func rank(r *Row) int {
	switch r.Verdict {
	case Slower, Faster, Added, Removed:
		return 0
	}
	return 1
}

func compareName(name string, b, n *Durations, alpha float64) Row {
	r := Row{Name: name, Base: statsOf(b), New: statsOf(n), P: 1,
		Shift: math.NaN(), ShiftLow: math.NaN(), ShiftHigh: math.NaN(),
		Change: math.NaN(), ChangeLow: math.NaN(), ChangeHigh: math.NaN()}
	if b != nil && b.Device || n != nil && n.Device {
		r.Kind = KindDevice
	}
	r.Impact = r.New.Self - r.Base.Self
	bn, nn := r.Base.Count, r.New.Count
	switch {
	case bn == 0 && nn == 0:
		r.Verdict = TooFew // only unfinished instances
		return r
	case bn == 0:
		r.Verdict = Added
		return r
	case nn == 0:
		r.Verdict = Removed
		return r
	}
	x, y := b.Sample(), n.Sample()
	r.Shift, r.ShiftLow, r.ShiftHigh = shift(x, y, alpha)
	ref := r.Base.P50
	if ref == 0 {
		ref = r.Base.Mean
	}
	r.Change, r.ChangeLow, r.ChangeHigh = relative(r.Shift, ref), relative(r.ShiftLow, ref), relative(r.ShiftHigh, ref)
	if bn < MinSamples || nn < MinSamples {
		r.Verdict = TooFew
		return r
	}
	r.P = uTest(x, y)
	switch {
	case r.P >= alpha:
		r.Verdict = NoChange
	case r.Shift > 0 || r.Shift == 0 && r.New.Mean > r.Base.Mean:
		r.Verdict = Slower
	default:
		r.Verdict = Faster
	}
	return r
}

// relative is v as a fraction of ref, infinite (with v's sign) when ref
// is 0 and v is not.
func relative(v, ref float64) float64 {
	if ref == 0 {
		if v == 0 {
			return 0
		}
		return math.Copysign(math.Inf(1), v)
	}
	return v / ref
}

// Slower returns the rows that got significantly slower by more than
// threshold (0.05: 5 %) by their estimated change: what fails a
// regression check. A name only in the new trace is not among them: it
// was not slower, it is new.
func (r *Report) Slower(threshold float64) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == Slower && row.Change > threshold {
			out = append(out, row)
		}
	}
	return out
}

// Changed counts the rows whose verdict is not "~" (nor too few to
// test).
func (r *Report) Changed() int {
	n := 0
	for _, row := range r.Rows {
		if rank(&row) == 0 {
			n++
		}
	}
	return n
}
