//go:build cgo

package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/devprof/devprof/trace"
)

// measureOverhead times a launch-bound loop (launches tiny kernels and a
// synchronize a step) in paired rounds, one without a session and one
// under a session with its defaults (CUPTI and NVML on), alternating
// which goes first, and prints each round and the median slow-down. Only
// the loop is timed: starting and stopping a session are not, as the
// peers' figures (scripts/gpucheck/peer_overhead.py) time only theirs.
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
	traced := func() (time.Duration, error) {
		dir, err := os.MkdirTemp("", "gpucheck-overhead")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		s, err := trace.StartSession(dir, nil)
		if err != nil {
			return 0, err
		}
		d, lerr := loop()
		if err := s.Stop(); err != nil && lerr == nil {
			lerr = err
		}
		return d, lerr
	}
	if _, err := loop(); err != nil { // warm: module load, first launches
		return err
	}
	if _, err := traced(); err != nil { // warm: CUPTI's first attach
		return err
	}
	var ratios, offs, ons []float64
	for i := range rounds {
		var off, on time.Duration
		var err1, err2 error
		if i%2 == 0 {
			off, err1 = loop()
			on, err2 = traced()
		} else {
			on, err2 = traced()
			off, err1 = loop()
		}
		if err1 != nil || err2 != nil {
			return fmt.Errorf("round %d: %v %v", i, err1, err2)
		}
		perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(steps) }
		offs, ons = append(offs, perStep(off)), append(ons, perStep(on))
		ratios = append(ratios, float64(on)/float64(off))
		fmt.Printf("gpucheck: overhead round %d: %.1f µs/step untraced, %.1f µs/step traced, %.3f×\n", i, perStep(off), perStep(on), ratios[i])
	}
	fmt.Printf("gpucheck: overhead (%d launches + 1 sync a step, %d steps, %d rounds): untraced %.1f µs/step, traced %.1f µs/step, slow-down %.3f× median [%.3f .. %.3f]\n",
		launches, steps, rounds, median(offs), median(ons), median(ratios), slices.Min(ratios), slices.Max(ratios))
	return nil
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
