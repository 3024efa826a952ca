package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/trace"
)

// flightWindow is the window of the test children's flight recorders.
const flightWindow = 500 * time.Millisecond

// startChildFlightRecorder makes a test child (collectChild with a
// "flight:" name) record in a flight recorder, as a service that keeps
// tracing on would.
func startChildFlightRecorder() (func(), error) {
	dir, err := os.MkdirTemp("", "devprof-flight-child-")
	if err != nil {
		return nil, err
	}
	s, err := trace.StartSession(dir, trace.Options{DeviceTracerLevel: trace.Off,
		FlightRecorder: &trace.FlightRecorderOptions{Window: flightWindow, MaxEvents: 1 << 16}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return func() { s.Stop(); os.RemoveAll(dir) }, nil
}

// devprof collect --snapshot takes two Go servers' flight-recorder
// snapshots into one run directory, as a capture is written: an xplane
// per host holding the last window of its work, and the merged Perfetto
// trace (checked by the Perfetto checker under scripts/test). A server
// without a flight recorder fails clearly and costs the others nothing.
func TestCollectSnapshotOfFlightRecorders(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := startCollectChild(t, "flight:a"), startCollectChild(t, "flight:b")
	time.Sleep(2 * flightWindow) // the rings hold more than the window
	logdir := t.TempDir()
	took := time.Now()
	code, stdout, stderr := runCLI("collect", "--snapshot", a+","+b, "--log_dir", logdir, "--no_perfetto_link")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if d := time.Since(took); d > 10*time.Second {
		t.Errorf("the snapshot took %v: it should answer at once", d)
	}
	runDir := strings.TrimSpace(stdout)
	var hosts []collectedHost
	for i, addr := range []string{a, b} {
		x, err := formats.XPlane.ReadFile(filepath.Join(runDir, fileHostName(addr)+".xplane.pb"), nil)
		if err != nil {
			t.Fatal(err)
		}
		name := "work " + []string{"a", "b"}[i]
		n := 0
		for _, r := range x.Events {
			if x.Name(r) == name {
				n++
			}
		}
		// A span a millisecond or so: the window holds hundreds.
		if n < 50 {
			t.Errorf("host %s: %d spans of its work in a %v window", addr, n, flightWindow)
		}
		if span := time.Duration(x.Meta.Stop.Mono - x.Meta.Start.Mono); span > flightWindow+100*time.Millisecond {
			t.Errorf("host %s: the snapshot spans %v, more than its %v window", addr, span, flightWindow)
		}
		if x.Meta.Dropped() == 0 {
			t.Errorf("host %s: nothing counted as left out of the window after %v of recording", addr, 2*flightWindow)
		}
		hosts = append(hosts, collectedHost{name: addr, snap: x})
	}
	merged := filepath.Join(runDir, collectMergedName)
	s, err := formats.Perfetto.ReadFile(merged, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Processes) != 2 {
		t.Errorf("merged trace: %d processes, want one per host", len(s.Processes))
	}
	conformance.Export(t, "collect_snapshot", merged, mergeHosts(hosts))

	// A server with no flight recorder answers FAILED_PRECONDITION, which
	// collect reports; the other host's snapshot is still written.
	plain := startCollectChild(t, "plain")
	code, stdout, stderr = runCLI("collect", "--snapshot", plain+","+a, "--log_dir", t.TempDir(), "--no_perfetto_link")
	if code != 1 || !strings.Contains(stderr, "no flight recorder") || !strings.Contains(stderr, "1 of 2 host(s) failed") {
		t.Errorf("with a host without a flight recorder: exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(stdout), fileHostName(a)+".xplane.pb")); err != nil {
		t.Errorf("the flight recorder's snapshot beside the failed host: %v", err)
	}
	// A duration makes no sense with --snapshot.
	if code, _, stderr := runCLI("collect", "--snapshot", a, "1000"); code != 2 || !strings.Contains(stderr, "no duration") {
		t.Errorf("--snapshot with a duration: exit %d, stderr:\n%s", code, stderr)
	}
}
