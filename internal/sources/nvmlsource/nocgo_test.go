//go:build !cgo

package nvmlsource

import (
	"errors"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/nvml"
)

func TestStartSaysItNeedsCgo(t *testing.T) {
	_, err := Start(recorder.NewBuffer(10, 3), nvml.Options{})
	if !errors.Is(err, nvml.ErrNeedsCgo) || !strings.Contains(Explain(err).Text, "need cgo") {
		t.Fatalf("Start without cgo: %v", err)
	}
}
