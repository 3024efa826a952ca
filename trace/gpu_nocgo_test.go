//go:build !cgo

package trace_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/trace"
)

// Built without cgo, devprof records the host and says, in the outputs,
// why there is no GPU activity.
func TestGPUNeedsCgo(t *testing.T) {
	s := mustStart(t, t.TempDir(), trace.Options{})
	_, sp := annotate.Device(context.Background(), "host_only")
	sp.End()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if len(snap.Events) != 1 {
		t.Fatalf("%d events, want the one span", len(snap.Events))
	}
	if !slices.ContainsFunc(snap.Meta.Warnings, func(w event.Warning) bool { return strings.Contains(w.Text, "CGO_ENABLED=1") }) {
		t.Fatalf("warnings %q: want the reason (cgo)", snap.Meta.Warnings)
	}
}
