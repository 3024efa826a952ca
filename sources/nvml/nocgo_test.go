//go:build !cgo

package nvml

import (
	"errors"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/recorder"
)

func TestStartSaysItNeedsCgo(t *testing.T) {
	_, err := Start(recorder.NewBuffer(10, 3), Options{})
	if !errors.Is(err, ErrNeedsCgo) || !strings.Contains(Explain(err).Text, "need cgo") {
		t.Fatalf("Start without cgo: %v", err)
	}
}
