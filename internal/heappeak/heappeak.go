// Package heappeak is a test helper: benchmarks that report a peak heap
// (a reader's, a save's, an analysis's) sample the heap's live objects
// through it, so that every figure called peak-heap means the same.
package heappeak

import (
	"runtime/metrics"
	"sync"
	"time"
)

// Start samples the bytes of live heap objects every millisecond until
// the returned stop is called, which reads once more and returns the
// most it saw: a ticker's view, not every byte, but the peak of a phase
// that lasts longer than a few milliseconds is seen. runtime/metrics
// stops nothing, unlike runtime.ReadMemStats, so sampling does not slow
// what is measured.
func Start() (stop func() uint64) {
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	var once sync.Once
	return func() uint64 {
		once.Do(func() {
			close(done)
			wg.Wait()
			read()
		})
		return peak
	}
}

// MiB converts bytes to mebibytes, the unit benchmarks report.
func MiB(b uint64) float64 { return float64(b) / (1 << 20) }
