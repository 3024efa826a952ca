package trace

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// SetWriteOutput replaces how a session writes an output file, so that
// tests can make writes fail; the returned function restores it.
func SetWriteOutput(f func(path string, format *formats.Format, s *event.Snapshot) error) (restore func()) {
	old := writeOutput
	writeOutput = f
	return func() { writeOutput = old }
}
