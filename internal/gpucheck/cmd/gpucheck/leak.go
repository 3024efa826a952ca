//go:build cgo

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/internal/gpucheck/cudabind"
	"github.com/devprof/devprof/trace"
)

// The leak run's shape: weights held for the whole run, activations made
// and freed each step, and a cache block each step that nothing frees.
const (
	weightBuffers   = 4
	weightBytes     = 32 << 20
	activationBytes = 128 << 20
	cacheBytes      = 4 << 20
	leakBaseStep    = 2  // base.memory.pb.gz is saved after this step
	leakSteps       = 12 // after.memory.pb.gz after the last
)

// leakRun allocates through a cgo binding (package cudabind) from three
// call sites, one of which leaks, under a session tracking CUDA's
// allocations, and saves device-memory profiles before and after the leak
// grew: `go tool pprof -diff_base base.memory.pb.gz after.memory.pb.gz`
// must put loadCache on top. The run's trace (with NVML's memory
// figures) is in dir/logdir.
func leakRun(lib *cudabind.Lib, dir string) error {
	s, err := trace.StartSession(filepath.Join(dir, "logdir"), trace.Options{DeviceMemory: &devmem.Options{CUDA: devmem.ModeOn}})
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = leakLoop(lib, dir)
	if serr := s.Stop(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	fmt.Printf("gpucheck: leak run in %s, profiles base.memory.pb.gz and after.memory.pb.gz in %s\n", s.Outputs().RunDir, dir)
	return nil
}

func leakLoop(lib *cudabind.Lib, dir string) error {
	ctx := context.Background()
	weights, err := loadWeights(devmem.WithTags(ctx, "weights"), lib)
	if err != nil {
		return err
	}
	for i := range leakSteps {
		sctx, st := annotate.Step(ctx, "train", int64(i))
		err := trainStep(sctx, lib)
		st.End()
		if err != nil {
			return err
		}
		if i+1 == leakBaseStep {
			if err := trace.SaveDeviceMemoryProfile(filepath.Join(dir, "base.memory.pb.gz")); err != nil {
				return err
			}
		}
	}
	if err := trace.SaveDeviceMemoryProfile(filepath.Join(dir, "after.memory.pb.gz")); err != nil {
		return err
	}
	_ = weights // held to the end, as a model's weights are
	return nil
}

//go:noinline
func loadWeights(ctx context.Context, lib *cudabind.Lib) ([]uintptr, error) {
	var ps []uintptr
	for range weightBuffers {
		p, err := lib.Malloc(weightBytes)
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

//go:noinline
func trainStep(ctx context.Context, lib *cudabind.Lib) error {
	act, err := lib.Malloc(activationBytes)
	if err != nil {
		return err
	}
	if _, err := loadCache(devmem.WithTags(ctx, "kv-cache"), lib); err != nil {
		return err
	}
	return lib.Free(act)
}

// loadCache is the leak: its block is never freed.
//
//go:noinline
func loadCache(ctx context.Context, lib *cudabind.Lib) (uintptr, error) {
	return lib.Malloc(cacheBytes)
}
