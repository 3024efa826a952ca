//go:build !cgo

package nvmlsource

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/nvml"
)

// Source samples GPU metrics for one session; without cgo there is none.
type Source struct{}

// Start fails with ErrNeedsCgo: go-nvml needs cgo.
func Start(buf *recorder.Buffer, o nvml.Options) (*Source, error) { return nil, nvml.ErrNeedsCgo }

// Stop does nothing.
func (s *Source) Stop() recorder.SourceReport { return recorder.SourceReport{} }

// MemoryUsage needs cgo: it returns ErrNeedsCgo.
func MemoryUsage(o nvml.Options) ([]event.DeviceUsage, error) { return nil, nvml.ErrNeedsCgo }
