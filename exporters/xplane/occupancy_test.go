package xplane

import (
	"math"
	"testing"
)

// The figures TSL computed (with CUDA's occupancy calculator) for kernels
// on a real H100 (compute capability 9.0), as xprof's kernel_stats shows
// them for testdata/real-gpu/jax-*.xplane.pb.
func TestTheoreticalOccupancyMatchesTSL(t *testing.T) {
	for _, c := range []struct {
		name         string
		block        string
		regs, shared int64
		want         float64
	}{
		{"saxpy (libwork)", "256,1,1", 16, 0, 100},
		{"scale (libwork)", "256,1,1", 16, 1024, 100},
		{"gemm_fusion_dot (train)", "128,1,1", 198, 0, 12.5},
		{"loop_reduce_fusion (train)", "128,1,1", 16, 0, 100},
	} {
		got, ok := theoreticalOccupancy(9, 0, threads(c.block), c.regs, c.shared)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v%% (ok %v), TSL says %v%%", c.name, got, ok, c.want)
		}
	}
}

func TestTheoreticalOccupancyLimits(t *testing.T) {
	// Shared memory bounds: 100 KiB per block on 9.0 (228 KiB) leaves room
	// for 2 blocks of 8 warps: 16 of 64 warps.
	if got, _ := theoreticalOccupancy(9, 0, 256, 32, 100<<10); got != 25 {
		t.Errorf("shared-memory bound: %v%%, want 25", got)
	}
	// Blocks per SM bound: 32-thread blocks on 8.6 (16 blocks, 48 warps).
	if got, _ := theoreticalOccupancy(8, 6, 32, 16, 0); math.Abs(got-100*16.0/48) > 1e-9 {
		t.Errorf("block bound: %v%%", got)
	}
	if _, ok := theoreticalOccupancy(3, 5, 256, 16, 0); ok {
		t.Error("an unknown architecture gave an occupancy")
	}
	if _, ok := theoreticalOccupancy(9, 0, 0, 16, 0); ok {
		t.Error("an unknown block size gave an occupancy")
	}
	if got, ok := theoreticalOccupancy(9, 0, 1024, 255, 0); !ok || got != 0 {
		t.Errorf("a block that does not fit: %v%% (ok %v), want 0", got, ok)
	}
	if threads("4,2,1") != 8 || threads("x") != 0 || threads("0,1,1") != 0 {
		t.Error("threads")
	}
}
