package xplane

import (
	"strconv"
	"strings"
)

// smLimits are the per-SM resources that bound how many blocks of a kernel
// are resident at once, by compute capability (NVIDIA's CUDA C
// Programming Guide, "Compute Capabilities"; the same figures the CUDA
// occupancy calculator uses).
type smLimits struct {
	maxThreads  int // resident threads per SM
	maxBlocks   int // resident blocks per SM
	registers   int // 32-bit registers per SM
	sharedBytes int // shared memory per SM available to blocks (the maximum carve-out)
	reserved    int // shared memory the system reserves per block
}

// limitsFor returns the limits of a compute capability, and false for one
// it does not know.
func limitsFor(major, minor int64) (smLimits, bool) {
	switch {
	case major == 7 && minor == 0, major == 7 && minor == 2:
		return smLimits{2048, 32, 65536, 96 << 10, 0}, true
	case major == 7 && minor == 5:
		return smLimits{1024, 16, 65536, 64 << 10, 0}, true
	case major == 8 && minor == 0:
		return smLimits{2048, 32, 65536, 164 << 10, 1 << 10}, true
	case major == 8 && minor == 7:
		return smLimits{1536, 16, 65536, 164 << 10, 1 << 10}, true
	case major == 8: // 8.6, 8.9
		return smLimits{1536, 16, 65536, 100 << 10, 1 << 10}, true
	case major == 9:
		return smLimits{2048, 32, 65536, 228 << 10, 1 << 10}, true
	case major == 10 || major == 11:
		return smLimits{2048, 32, 65536, 228 << 10, 1 << 10}, true
	case major == 12:
		return smLimits{1536, 32, 65536, 100 << 10, 1 << 10}, true
	}
	return smLimits{}, false
}

// Allocation granularities of recent architectures (compute capability
// 7.0 and on): registers are given to a warp in units of 256, shared
// memory to a block in units of 128 bytes.
const (
	warpSize           = 32
	registerUnit       = 256
	sharedUnit         = 128
	maxRegistersThread = 255
)

// theoreticalOccupancy returns the percentage of an SM's warp slots a
// kernel can fill (what TSL writes as occ_pct, and xprof's kernel_stats
// shows): the resident blocks are bounded by threads, blocks, registers
// and shared memory per SM. ok is false when the device or launch is not
// known well enough to say.
func theoreticalOccupancy(major, minor int64, threadsPerBlock, regsPerThread, sharedPerBlock int64) (pct float64, ok bool) {
	lim, known := limitsFor(major, minor)
	if !known || threadsPerBlock <= 0 || regsPerThread > maxRegistersThread || regsPerThread < 0 || sharedPerBlock < 0 {
		return 0, false
	}
	warps := int((threadsPerBlock + warpSize - 1) / warpSize)
	maxWarps := lim.maxThreads / warpSize
	blocks := min(lim.maxBlocks, maxWarps/warps)
	if regsPerThread > 0 {
		perWarp := roundUp(int(regsPerThread)*warpSize, registerUnit)
		blocks = min(blocks, lim.registers/perWarp/warps)
	}
	if smem := roundUp(int(sharedPerBlock)+lim.reserved, sharedUnit); smem > 0 {
		blocks = min(blocks, lim.sharedBytes/smem)
	}
	if blocks <= 0 {
		return 0, true // the block does not fit on an SM at all
	}
	return 100 * float64(blocks*warps) / float64(maxWarps), true
}

func roundUp(n, unit int) int { return (n + unit - 1) / unit * unit }

// threads returns the threads of a block given as "x,y,z", or 0.
func threads(block string) int64 {
	n := int64(1)
	parts := strings.Split(block, ",")
	if len(parts) != 3 {
		return 0
	}
	for _, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || v <= 0 {
			return 0
		}
		n *= v
	}
	return n
}
