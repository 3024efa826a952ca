package tracediff

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultSampleSize is how many durations per name a Collector keeps
// unless told otherwise: exactly every one up to it, a uniform random
// sample of that many past it. 4096 keeps a name to 32 KiB while the
// rank test on it still resolves a shift of a few percent of the spread.
const DefaultSampleSize = 4096

// Durations are the per-instance durations of one name in one trace.
// Count, Total, Self, Min and Max cover every finished instance; the
// sample, which quantiles and the rank test read, holds every duration
// up to the collector's sample size and a uniform random sample of that
// many past it (Sampled).
type Durations struct {
	// Count is how many instances finished; Unfinished is how many had
	// not when the trace stopped (their durations, cut short by the
	// stop, are left out of everything else).
	Count, Unfinished int64
	// Total is the sum of the durations; Self is Total less the time of
	// the spans that name an instance as their parent (nanoseconds).
	Total, Self int64
	// Min and Max are the shortest and longest duration.
	Min, Max int64
	// Device says some instance was device work (see Kind).
	Device bool

	sample []int64
	sorted bool
	seen   int64 // instances offered to the sample
	rng    *rand.Rand
	seed   uint64
}

// Sampled reports whether the sample is a random subset of the
// durations rather than all of them.
func (d *Durations) Sampled() bool { return d.seen > int64(len(d.sample)) }

// Sample returns the durations the quantiles and the rank test read,
// sorted ascending. It belongs to d.
func (d *Durations) Sample() []int64 {
	if !d.sorted {
		slices.Sort(d.sample)
		d.sorted = true
	}
	return d.sample
}

// Mean is the mean duration over every finished instance (NaN when
// none finished).
func (d *Durations) Mean() float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	return float64(d.Total) / float64(d.Count)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the sample, linearly
// interpolated between ranks: exact while the sample holds every
// duration.
func (d *Durations) Quantile(q float64) float64 { return quantile(d.Sample(), q) }

// add records one finished instance; limit bounds the sample.
func (d *Durations) add(dur int64, limit int) {
	if d.Count == 0 || dur < d.Min {
		d.Min = dur
	}
	if d.Count == 0 || dur > d.Max {
		d.Max = dur
	}
	d.Count++
	d.Total += dur
	d.Self += dur
	d.seen++
	d.sorted = false
	if len(d.sample) < limit {
		d.sample = append(d.sample, dur)
		return
	}
	// Reservoir sampling: the i-th duration replaces a kept one with
	// probability limit/i, which leaves every duration equally likely to
	// be kept. The generator is seeded by the name, so that the same
	// trace read twice keeps the same sample.
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(d.seed, 0x9e3779b97f4a7c15))
	}
	if i := d.rng.Int64N(d.seen); i < int64(limit) {
		d.sample[i] = dur
	}
}

// nameSeed is the reservoir's seed for a name: the same name draws the
// same positions in every trace.
func nameSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
