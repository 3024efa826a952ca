package analysis

import (
	"context"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/internal/eventtest"
)

// TestSessionSteps: a session's own snapshot, whose spans sit on lanes
// rather than tracks, replays into the analysis: its annotate.Step spans
// are the steps, and each step's host busy time is its child's.
func TestSessionSteps(t *testing.T) {
	s := eventtest.Record(t, 1<<12, func(ctx context.Context) {
		for i := range 3 {
			sctx, step := annotate.Step(ctx, "train", int64(i))
			time.Sleep(time.Millisecond)
			_, work := annotate.Begin(sctx, "work")
			time.Sleep(time.Millisecond)
			work.End()
			step.End()
		}
	})
	want := map[int64]int64{} // step number -> its work span's length
	var steps []int64
	for _, r := range s.Events {
		if r.IsStep() {
			steps = append(steps, r.StepNum())
			for _, c := range s.Events {
				if c.Parent() == r.ID() {
					end, _ := s.EndOf(c)
					want[r.StepNum()] = end - c.Start()
				}
			}
		}
	}
	if len(steps) != 3 || len(want) != 3 {
		t.Fatalf("the session recorded steps %v with children %v", steps, want)
	}
	r := Analyze(s, Options{})
	if r.Steps == nil || len(r.Steps.All) != 3 {
		t.Fatalf("steps %+v", r.Steps)
	}
	for i, st := range r.Steps.All {
		if st.Number != int64(i) || st.HostBusyNS != want[st.Number] || st.DeviceBusyNS != 0 || st.DeviceIdleNS != st.WallNS {
			t.Errorf("step %+v: want number %d, host busy %d, no device time", st, i, want[st.Number])
		}
	}
}
