//go:build cgo

package cuptiwrap

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/fakecuda"
)

// debianCupti is the soname of Debian bookworm's CUPTI (CUDA 11.8).
const debianCupti = "libcupti.so.11.8"

// TestRealLibcuptiWithoutGPU loads the real libcupti on a machine without
// an NVIDIA driver: Start must fail cleanly with CUPTI_ERROR_NOT_INITIALIZED
// and the actionable message, and nothing may crash or stay behind.
func TestRealLibcuptiWithoutGPU(t *testing.T) {
	lib, err := load(debianCupti)
	if err != nil {
		fakecuda.MissingReal(t, "Debian's libcupti.so.11.8", err)
	}
	info, err := lib.describe()
	if err != nil {
		t.Fatal(err)
	}
	if info.Soname != debianCupti || info.APIVersion != 18 || info.Layout != "11.8" ||
		!strings.HasPrefix(filepath.Base(info.Resolved), "libcupti.so.2022.") || len(info.MissingOptional) != 0 {
		t.Errorf("LibraryInfo = %+v", info)
	}

	for range 2 { // twice: the first failure must leave a clean state
		c, err := Start(Options{Library: debianCupti}, func([]Record) {})
		if err == nil {
			// Only where a usable NVIDIA driver and GPU exist.
			if _, err := c.Stop(); err != nil {
				t.Fatalf("Stop on a machine with a GPU: %v", err)
			}
			t.Logf("a GPU is usable here: checked Start/Stop with the real library instead")
			return
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != 15 || ce.Name != "CUPTI_ERROR_NOT_INITIALIZED" || !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Start = %v (%#v), want CUPTI_ERROR_NOT_INITIALIZED", err, err)
		}
		if !strings.Contains(err.Error(), "no NVIDIA GPU or driver usable (CUPTI_ERROR_NOT_INITIALIZED)") {
			t.Errorf("message %q", err)
		}
	}
	// The memory hooks fail the same clean way (the library has their
	// entry points: MissingOptional is empty above).
	for range 2 {
		h, err := StartMemoryHooks(HookOptions{Library: debianCupti}, func(*MemoryCall) {})
		if err == nil {
			if err := h.Stop(); err != nil {
				t.Fatalf("MemoryHooks.Stop on a machine with a GPU: %v", err)
			}
			break
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != 15 || !errors.Is(err, ErrNoDevice) ||
			!strings.Contains(err.Error(), "no NVIDIA GPU or driver usable (CUPTI_ERROR_NOT_INITIALIZED)") {
			t.Fatalf("StartMemoryHooks = %v (%#v), want CUPTI_ERROR_NOT_INITIALIZED", err, err)
		}
	}
	// Works without a driver, and is CLOCK_REALTIME.
	before := uint64(time.Now().UnixNano())
	ts, err := lib.timestamp()
	after := uint64(time.Now().UnixNano())
	if err != nil || ts < before || ts > after {
		t.Errorf("cuptiGetTimestamp without a GPU = %d, %v; want within [%d, %d]", ts, err, before, after)
	}
}
