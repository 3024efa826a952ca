package profileserver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/devprof/devprof/profileserver/profilerpb"
	"github.com/devprof/devprof/trace"
)

// GetSnapshot over gRPC on 127.0.0.1: without a flight recorder it fails
// with FAILED_PRECONDITION; with one it answers at once with the last
// window as an XSpace, and the flight recorder keeps recording (a second
// snapshot holds work done after the first). While the flight recorder
// runs, a Profile capture is refused (one session at a time).
func TestGetSnapshot(t *testing.T) {
	_, c := serve(t)
	ctx := context.Background()
	_, err := c.GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	wantCode(t, err, codes.FailedPrecondition, "no flight recorder")

	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off,
		FlightRecorder: &trace.FlightRecorderOptions{Window: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	work(t, "before")
	time.Sleep(400 * time.Millisecond)
	took := time.Now()
	resp, err := c.GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(took); d > 5*time.Second {
		t.Errorf("GetSnapshot took %v", d)
	}
	if resp.GetEmptyTrace() {
		t.Fatal("empty_trace set for a ring that holds work")
	}
	n := spans(t, xspaceOf(t, resp))["before"]
	// A span a millisecond for 400 ms, of which the window holds 200 ms:
	// far fewer than all, far more than none.
	if n < 20 || n > 300 {
		t.Errorf("%d spans in a 200 ms window of a span a millisecond", n)
	}
	work(t, "after")
	time.Sleep(50 * time.Millisecond)
	resp, err = c.GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if spans(t, xspaceOf(t, resp))["after"] == 0 {
		t.Error("the second snapshot lacks the work done after the first: recording stopped")
	}
	_, err = c.Profile(ctx, request(100))
	wantCode(t, err, codes.FailedPrecondition, "already running")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	wantCode(t, err, codes.FailedPrecondition, "no flight recorder")
}
