//go:build !cgo

package nvml

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// Source samples GPU metrics for one session; without cgo there is none.
type Source struct{}

// Start fails with ErrNeedsCgo: go-nvml needs cgo.
func Start(buf *recorder.Buffer, o Options) (*Source, error) { return nil, ErrNeedsCgo }

// Stop does nothing.
func (s *Source) Stop() recorder.SourceReport { return recorder.SourceReport{} }

// MemoryUsage needs cgo: it returns ErrNeedsCgo.
func MemoryUsage(o Options) ([]event.DeviceUsage, error) { return nil, ErrNeedsCgo }
