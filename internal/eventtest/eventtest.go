// Package eventtest records events for tests the way a trace session does,
// without the session's files: sources write into a fresh active buffer and
// the test gets its snapshot, ready for an exporter or a reader.
package eventtest

import (
	"context"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// Record runs fn under a fresh active buffer of maxEvents records at host
// tracer level 2, as trace.StartSession and Session.Stop do, and returns
// the snapshot (host "testhost", PID 4242, program "reader.test"). Only one
// buffer can be active at a time, so tests that call it must not run in
// parallel with each other.
func Record(tb testing.TB, maxEvents int64, fn func(ctx context.Context)) *event.Snapshot {
	tb.Helper()
	buf := recorder.NewBuffer(maxEvents, 2)
	if !recorder.Activate(buf) {
		tb.Fatal("another buffer is active")
	}
	meta := event.Meta{Host: "testhost", PID: 4242, Program: "reader.test"}
	meta.Start = recorder.ReadClocks()
	func() {
		defer recorder.Deactivate(buf)
		fn(context.Background())
	}()
	meta.Stop = recorder.ReadClocks()
	return buf.Snapshot(meta)
}
