//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/internal/gpucheck"
	"github.com/devprof/devprof/internal/gpucheck/cudabind"
	"github.com/devprof/devprof/sources/nvml"
	"github.com/devprof/devprof/trace"
)

// nvmlWindow runs phases of known load under a session sampling NVML
// every 100 ms, for comparison with nvidia-smi sampled beside it
// (scripts/gpu-check starts it): idle, idle holding hold bytes of device
// memory, every SM spinning, a copy loop. It writes the run under
// dir/logdir and the phases' wall-clock bounds to dir/phases.json.
func nvmlWindow(lib *cudabind.Lib, dir string, hold int64, copyBytes int64) error {
	s, err := trace.StartSession(filepath.Join(dir, "logdir"), trace.Options{
		GPUMetrics: nvml.Options{Mode: nvml.ModeOn, Period: 100 * time.Millisecond},
	})
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var phases []gpucheck.Phase
	phase := func(name string, do func() error) error {
		_, sp := annotate.Begin(context.Background(), "phase "+name)
		p := gpucheck.Phase{Name: name, WallStart: time.Now().UnixNano()}
		err := do()
		p.WallEnd = time.Now().UnixNano()
		sp.End()
		phases = append(phases, p)
		fmt.Printf("gpucheck: window phase %-5s %.2f s\n", name, float64(p.WallEnd-p.WallStart)/1e9)
		return err
	}
	idle := func() error { time.Sleep(1500 * time.Millisecond); return nil }
	var held uintptr
	var trips int64
	steps := []struct {
		name string
		do   func() error
	}{
		{"idle", idle},
		{"hold", func() error {
			p, err := lib.Malloc(hold)
			held = p
			if err == nil {
				time.Sleep(1500 * time.Millisecond)
			}
			return err
		}},
		{"spin", func() error { return lib.Spin(2500 * time.Millisecond) }},
		{"copy", func() (err error) { trips, err = lib.CopyFor(copyBytes, 2500*time.Millisecond); return err }},
		{"free", func() error {
			err := lib.Free(held)
			held = 0
			time.Sleep(1500 * time.Millisecond)
			return err
		}},
	}
	var runErr error
	for _, st := range steps {
		if runErr = phase(st.name, st.do); runErr != nil {
			break
		}
	}
	if held != 0 {
		lib.Free(held)
	}
	if err := s.Stop(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	fmt.Printf("gpucheck: window copy phase made %d round trips of %d bytes (%.1f GB/s each way)\n", trips, copyBytes,
		float64(trips*copyBytes)/(float64(phases[3].WallEnd-phases[3].WallStart)))
	w := gpucheck.Window{Phases: phases, HoldBytes: hold, CopyBytes: copyBytes, CopyTrips: trips,
		Perfetto: filepath.Base(s.Outputs().Perfetto), XPlane: filepath.Base(s.Outputs().XPlane)}
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "phases.json"), b, 0o644); err != nil {
		return err
	}
	if m, ok := gpucheck.MetricsOf(s.Snapshot(), 0); ok {
		for name, vs := range m.Series {
			fmt.Printf("gpucheck: window NVML %-30s %d samples\n", name, len(vs))
		}
	}
	fmt.Printf("gpucheck: window run in %s\n", s.Outputs().RunDir)
	return nil
}
