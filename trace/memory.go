package trace

import (
	"io"
	"strings"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/internal/sources/nvmlsource"
	"github.com/devprof/devprof/sources/nvml"
)

// MemoryProfileExt ends the name of the device-memory profile a session
// writes into its run directory: <host>.memory.pb.gz.
const MemoryProfileExt = ".memory.pb.gz"

// SaveDeviceMemoryProfile writes the device memory live now — every buffer
// device-memory tracking holds, with the Go stack that allocated it — to
// path as a gzip-compressed pprof profile in the layout of JAX's
// jax.profiler.save_device_memory_profile, atomically. It works in a
// session or not, while tracking is on (devmem.Start, or a session's
// Options.DeviceMemory); otherwise it returns devmem.ErrNotTracking.
//
// Read it with `go tool pprof -top path`, find a leak with
// `go tool pprof -top -diff_base=before.pb.gz after.pb.gz`, list it with
// `devprof memory path`.
//
// When CUDA's allocations are hooked, the profile also carries what NVML
// says each GPU has in use (in all, and by this process), so that
// `devprof memory` and `devprof memory breakdown` can tell how much memory
// no tracked allocation explains.
func SaveDeviceMemoryProfile(path string) error {
	m, err := deviceMemory(nvml.Options{})
	if err != nil {
		return err
	}
	return pprof.WriteFile(path, m)
}

// WriteDeviceMemoryProfile is SaveDeviceMemoryProfile writing to w.
func WriteDeviceMemoryProfile(w io.Writer) error {
	m, err := deviceMemory(nvml.Options{})
	if err != nil {
		return err
	}
	return pprof.Write(w, m)
}

// deviceMemory lists the live buffers and, when the tracker hooks CUDA
// (so there are NVIDIA GPUs to ask) and NVML is not turned off, the
// devices' own view of their memory.
func deviceMemory(o nvml.Options) (*event.DeviceMemory, error) {
	m, err := devmem.Snapshot()
	if err != nil {
		return nil, err
	}
	addUsage(m, o)
	return m, nil
}

// memoryUsage is nvmlsource.MemoryUsage; tests replace it.
var memoryUsage = nvmlsource.MemoryUsage

func addUsage(m *event.DeviceMemory, o nvml.Options) {
	if !devmem.HookingCUDA() || o.Mode == nvml.ModeOff {
		return
	}
	u, err := memoryUsage(o)
	if err != nil {
		m.Warnings = append(m.Warnings, event.Warning{Source: "devmem", Code: "nvml_usage",
			Text: "NVML's view of device memory is missing (so is what no tracked allocation explains): " + oneLine(err)})
		return
	}
	m.Devices = u
}

// oneLine keeps the first line of an error's text.
func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// memorySource is device-memory tracking as one of a session's sources: it
// starts tracking when the session asked for it and nothing else did, and
// at Stop reports what the session's part of the tracker's counts says
// the profile lacks.
type memorySource struct {
	started bool // this session started tracking, so it stops it
	before  event.MemoryCounts
}

func startMemory(c *config) (recorder.Source, error) {
	s := &memorySource{}
	if c.deviceMemory != nil && !devmem.Tracking() {
		if err := devmem.Start(*c.deviceMemory); err != nil {
			return nil, err
		}
		s.started = true
	}
	s.before = devmem.Counts()
	return s, nil
}

// Stop implements recorder.Source.
func (s *memorySource) Stop() recorder.SourceReport {
	rep := recorder.SourceReport{Notes: devmem.Notes()}
	rep.Warnings = devmem.Warnings(countsSince(s.before, devmem.Counts()))
	if s.started {
		if err := devmem.Stop(); err != nil {
			rep.Warnings = append(rep.Warnings, event.Warning{Source: "devmem", Code: "stop", Text: "stopping device-memory tracking: " + err.Error()})
		}
	}
	return rep
}

// countsSince is what the tracker counted between two readings.
func countsSince(a, b event.MemoryCounts) event.MemoryCounts {
	return event.MemoryCounts{
		Allocs:         b.Allocs - a.Allocs,
		Frees:          b.Frees - a.Frees,
		Untracked:      b.Untracked - a.Untracked,
		UntrackedBytes: b.UntrackedBytes - a.UntrackedBytes,
		UnknownFrees:   b.UnknownFrees - a.UnknownFrees,
		DoubleFrees:    b.DoubleFrees - a.DoubleFrees,
		ZeroSize:       b.ZeroSize - a.ZeroSize,
		Replaced:       b.Replaced - a.Replaced,
	}
}
