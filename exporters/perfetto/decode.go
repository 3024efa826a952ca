package perfetto

import (
	"fmt"
	"io"
	"os"

	"github.com/devprof/devprof/event"
)

// ReadFile reads the Perfetto trace at path into the event model; see
// Decode.
func ReadFile(path string) (*event.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Read reads a Perfetto trace into the event model: Decode into an
// event.Builder.
func Read(r io.Reader) (*event.Snapshot, error) {
	b := event.NewBuilder(event.Meta{})
	if err := Decode(r, b); err != nil {
		return nil, err
	}
	return b.Snapshot(), nil
}
