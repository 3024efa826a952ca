// Package tracediff compares two traces over the event model: for every
// span name and every kernel (and other device activity) name, how its
// count and per-instance durations changed, and whether the change is
// beyond the noise between runs.
//
// A Collector is an event.Sink: a reader streams each trace into one,
// which keeps per name the count, total and self time and a bounded
// sample of the durations (every duration up to Options.SampleSize, a
// uniform random sample of that many past it), not the events. Compare
// then tests each name as benchstat tests a benchmark: a Mann-Whitney U
// test on the per-instance durations (exact for small samples, the
// normal approximation with tie correction past them) at a significance
// level, and the Hodges-Lehmann estimate of the shift with Moses'
// confidence interval. A name with fewer than MinSamples instances on a
// side is never called changed.
//
// Durations of one trace are not independent draws (a slow step slows
// its spans together), so a p-value here says the difference is unlikely
// to be run-to-run noise of the kind the trace itself shows, not that
// the runs are a controlled experiment: compare runs of the same work
// on the same machine.
package tracediff
