//go:build cgo

package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/devprof/devprof/sources/nvml"
	"github.com/devprof/devprof/trace"
)

// measureOverhead times a launch-bound loop (launches tiny kernels and a
// synchronize a step) in rounds of three, without a session, under a
// session with its defaults (CUPTI and NVML on) and under one without
// NVML, rotating which goes first, and prints each round and the median
// slow-downs. Only the loop is timed: starting and stopping a session are
// not, as the peers' figures (scripts/gpucheck/peer_overhead.py) time
// only theirs.
func measureOverhead(path string, rounds, steps, launches int) error {
	f, err := lookup(path, "devprof_launch_loop")
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	loop := func() (time.Duration, error) {
		t0 := time.Now()
		for i := range steps {
			if rc := launchLoop(f, launches); rc != 0 {
				return 0, fmt.Errorf("step %d: CUDA error %d", i, rc)
			}
		}
		return time.Since(t0), nil
	}
	traced := func(o trace.Options) (time.Duration, error) {
		dir, err := os.MkdirTemp("", "gpucheck-overhead")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		s, err := trace.StartSession(dir, o)
		if err != nil {
			return 0, err
		}
		d, lerr := loop()
		if err := s.Stop(); err != nil && lerr == nil {
			lerr = err
		}
		return d, lerr
	}
	// Three variants a round, in a rotating order: untraced, a session
	// with its defaults (CUPTI and NVML), and one without NVML's sampler,
	// which tells what the counters cost apart from CUPTI.
	variants := []struct {
		name string
		run  func() (time.Duration, error)
	}{
		{"untraced", loop},
		{"traced", func() (time.Duration, error) { return traced(trace.Options{}) }},
		{"traced, NVML off", func() (time.Duration, error) {
			return traced(trace.Options{GPUMetrics: nvml.Options{Mode: nvml.ModeOff}})
		}},
	}
	for _, v := range variants { // warm: module load, CUPTI's first attach
		if _, err := v.run(); err != nil {
			return err
		}
	}
	perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(steps) }
	times := make([][]float64, len(variants))
	ratios := make([][]float64, len(variants))
	for i := range rounds {
		d := make([]time.Duration, len(variants))
		for j := range variants {
			k := (i + j) % len(variants)
			var err error
			if d[k], err = variants[k].run(); err != nil {
				return fmt.Errorf("round %d, %s: %v", i, variants[k].name, err)
			}
		}
		line := fmt.Sprintf("gpucheck: overhead round %d: %.1f µs/step untraced", i, perStep(d[0]))
		for k := range variants {
			times[k] = append(times[k], perStep(d[k]))
			ratios[k] = append(ratios[k], float64(d[k])/float64(d[0]))
			if k > 0 {
				line += fmt.Sprintf(", %.1f µs/step %s, %.3f×", perStep(d[k]), variants[k].name, ratios[k][i])
			}
		}
		fmt.Println(line)
	}
	for k := 1; k < len(variants); k++ {
		fmt.Printf("gpucheck: overhead %s (%d launches + 1 sync a step, %d steps, %d rounds): untraced %.1f µs/step, traced %.1f µs/step, slow-down %.3f× median [%.3f .. %.3f]\n",
			variants[k].name, launches, steps, rounds, median(times[0]), median(times[k]), median(ratios[k]), slices.Min(ratios[k]), slices.Max(ratios[k]))
	}
	return nil
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
