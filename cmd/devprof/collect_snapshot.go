package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/devprof/devprof/exporters/formats"
	pb "github.com/devprof/devprof/profileserver/profilerpb"
)

// snapshotTimeout is a snapshot's per-host limit when --timeout is not
// given: the server answers at once, so this is the time to copy and send
// its ring.
const snapshotTimeout = time.Minute

// snapshotOne asks one host for its flight recorder's snapshot
// (GetSnapshot) and writes <host>.xplane.pb: devprof collect --snapshot,
// whose run is written exactly as a capture's (runCollect).
func snapshotOne(addr, runDir string, timeout time.Duration) (string, error) {
	conn, err := dialProfiler(addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := pb.NewProfilerServiceClient(conn).GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	if err != nil {
		return "", err
	}
	if resp.GetEmptyTrace() {
		return "", errors.New("its flight recorder holds no event in its window")
	}
	path := filepath.Join(runDir, fileHostName(addr)+formats.XPlane.SessionExt)
	if ok, err := writeResponseXPlane(resp, path); ok {
		return path, err
	}
	return "", errors.New("the answer holds no xplane.pb")
}
