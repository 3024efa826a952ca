//go:build cgo

package gpucheck

import (
	"context"
	"runtime"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/trace"
)

// The checks pass on a session that recorded exactly what was launched:
// the fake libcupti's kernels (grid 1,1,1, block 128,1,1, 2 µs each).
func TestCheckOfAFakeSession(t *testing.T) {
	t.Setenv("FAKECUPTI_LAYOUT", "13")
	t.Setenv("FAKECUPTI_SCRIPT", "0")
	lib := fakecuda.Build(t)
	t.Setenv("DEVPROF_CUPTI_LIB", lib)
	fk, err := fakecuda.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.StartSession(t.TempDir(), &trace.Options{AdvancedConfig: map[string]any{"gpu_metrics": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, dev := annotate.Device(context.Background(), "work")
		for range 5 {
			fk.Launch("_Z4spinl", 0, 7)
		}
		dev.End()
	}()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	w := Workload{Kernels: []Kernel{{Name: "spin(long)", Count: 5, Grid: "1,1,1", Block: "128,1,1", SpinNs: 2000, SlackNs: 10}}}
	if problems := Check(s.Snapshot(), w); len(problems) != 0 {
		t.Errorf("problems on a faithful session: %q", problems)
	}
	w.Kernels[0].Count = 6
	if problems := Check(s.Snapshot(), w); len(problems) != 1 {
		t.Errorf("a wrong count gave %q", problems)
	}
}
