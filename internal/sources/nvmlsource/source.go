//go:build cgo

package nvmlsource

import (
	"fmt"
	"math"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/nvmlhook"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/nvml"
)

// Source samples GPU metrics for one session.
type Source struct {
	buf     *recorder.Buffer
	lib     gonvml.Interface
	opts    nvml.Options
	devices []*device
	memV2   bool  // the driver has nvmlDeviceGetMemoryInfo_v2
	offset  int64 // wall-clock ns minus session monotonic ns
	start   int64 // session monotonic ns at Start: older driver samples are left out

	stop     chan struct{}
	done     sync.WaitGroup
	stopOnce sync.Once

	mu     sync.Mutex // guards warned and report
	warned map[string]bool
	report recorder.SourceReport
}

// Start describes every GPU NVML sees (and the program's CUDA driver can
// use) on a TrackDevice track of buf, and samples their metrics into
// counters every o.Period until Stop. An error says why there will be no
// GPU metrics; after a failed NVML Init it makes no other NVML call (a
// call into a library that is not there ends the process).
func Start(buf *recorder.Buffer, o nvml.Options) (*Source, error) {
	lib, err := library(o)
	if err != nil {
		return nil, err
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%w: %s", nvml.ErrUnavailable, explainReturn(ret))
	}
	s := &Source{buf: buf, lib: lib, opts: o, stop: make(chan struct{}), warned: map[string]bool{}}
	s.memV2 = lib.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil
	if err := s.describe(); err != nil {
		lib.Shutdown()
		return nil, err
	}
	s.offset = wallOffset()
	s.start = recorder.Mono()
	for _, d := range s.devices {
		// Driver samples from before the session are not the session's.
		d.lastUtil = uint64((s.start + s.offset) / 1000)
		d.lastMemUtil = d.lastUtil
	}
	s.done.Add(1)
	go s.run()
	if o.PCIe {
		s.done.Add(1)
		go s.runPCIe()
	}
	return s, nil
}

// period is the sampling period o asks for.
func period(o nvml.Options) time.Duration {
	if o.Period == 0 {
		return nvml.DefaultPeriod
	}
	return o.Period
}

// library returns the NVML to use: a test's, or go-nvml's over the
// system's libnvidia-ml.
func library(o nvml.Options) (gonvml.Interface, error) {
	if lib, _ := nvmlhook.Get(); lib != nil {
		l, ok := lib.(gonvml.Interface)
		if !ok {
			return nil, fmt.Errorf("nvmlhook: %T is not an nvml.Interface", lib)
		}
		return l, nil
	}
	if o.Library != "" {
		return gonvml.New(gonvml.WithLibraryPath(o.Library)), nil
	}
	return gonvml.New(), nil
}

// explainReturn says what an NVML Init failure means for the user.
func explainReturn(ret gonvml.Return) string {
	switch ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "no libnvidia-ml.so.1 (no NVIDIA driver on this machine)"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded (check nvidia-smi)"
	case gonvml.ERROR_NO_PERMISSION:
		return "no permission to use NVML"
	}
	return fmt.Sprintf("nvmlInit: %s (%d)", ret.Error(), int32(ret))
}

// wallOffset measures wall-clock ns minus monotonic ns from several paired
// reads, keeping the narrowest, to place the driver's timestamped samples
// (CPU wall-clock microseconds) on the session's timeline.
func wallOffset() int64 {
	best, gap := int64(0), int64(math.MaxInt64)
	for range 16 {
		m0 := recorder.Mono()
		w := time.Now().UnixNano()
		m1 := recorder.Mono()
		if m1-m0 < gap {
			gap, best = m1-m0, w-(m0+(m1-m0)/2)
		}
	}
	return best
}

// Stop stops sampling, takes one last sample and reports what was left
// out. Later calls return the first call's report.
func (s *Source) Stop() recorder.SourceReport {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.done.Wait()
		s.lib.Shutdown()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report
}

// warn adds a warning once per key (a device and a metric).
func (s *Source) warn(key, code, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned[key] {
		return
	}
	s.warned[key] = true
	s.report.Warnings = append(s.report.Warnings, event.Warning{Source: nvml.SourceName, Code: code, Text: fmt.Sprintf(format, args...)})
}

// note adds a note about how the metrics were taken.
func (s *Source) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Notes = append(s.report.Notes, event.Note{Source: nvml.SourceName, Text: fmt.Sprintf(format, args...)})
}
