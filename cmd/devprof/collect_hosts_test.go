package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/profileserver"
)

// collectChildEnv, when set, makes the test binary a profile server
// child (see collectChild) instead of running tests: its value names the
// host's work.
const collectChildEnv = "DEVPROF_TEST_COLLECT_CHILD"

func TestMain(m *testing.M) {
	if name := os.Getenv(collectChildEnv); name != "" {
		os.Exit(collectChild(name))
	}
	os.Exit(m.Run())
}

// collectChild serves tensorflow.ProfilerService on a free 127.0.0.1 port,
// prints the address, and records a span "work <name>" a millisecond,
// each with its wall-clock start as argument wall_ns, until its stdin
// closes (the parent test ended).
func collectChild(name string) int {
	if n, ok := strings.CutPrefix(name, "flight:"); ok {
		stop, err := startChildFlightRecorder()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		name = n
	}
	srv, err := profileserver.StartServer("", profileserver.Options{Log: io.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	fmt.Println(srv.Addr())
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	for {
		select {
		case <-stop:
			return 0
		case <-time.After(time.Millisecond):
			_, sp := annotate.Begin(context.Background(), "work "+name, annotate.Int64("wall_ns", time.Now().UnixNano()))
			time.Sleep(100 * time.Microsecond)
			sp.End()
		}
	}
}

// startCollectChild starts a profile server in a child process and
// returns its address; the child ends with the test.
func startCollectChild(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), collectChildEnv+"="+name)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("child %s did not end when its stdin closed", name)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: %v", name, err)
	}
	return strings.TrimSpace(line)
}

// hostSpans maps each process name of s to its spans.
func hostSpans(s *event.Snapshot) map[string][]*event.Record {
	out := map[string][]*event.Record{}
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan || !r.OnTrack() || int(r.Lane()) > len(s.Tracks) {
			continue
		}
		p := s.ProcessOf(s.Tracks[r.Lane()-1])
		out[p.Name] = append(out[p.Name], r)
	}
	return out
}

func TestCollectThreeHostsMergedIntoOnePerfettoTrace(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	names := []string{"a", "b", "c"}
	var addrs []string
	for _, n := range names {
		addrs = append(addrs, startCollectChild(t, n))
	}
	logdir := t.TempDir()
	code, stdout, stderr := runCLI("collect", strings.Join(addrs, ","), "1000", "--log_dir", logdir, "--no_perfetto_link")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	runDir := strings.TrimSpace(stdout)
	for _, a := range addrs {
		if _, err := os.Stat(filepath.Join(runDir, fileHostName(a)+".xplane.pb")); err != nil {
			t.Errorf("host %s: %v", a, err)
		}
	}
	merged := filepath.Join(runDir, collectMergedName)
	s, err := formats.Perfetto.ReadFile(merged, nil)
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for _, p := range s.Processes {
		procs = append(procs, p.Name)
	}
	if !slices.Equal(procs, addrs) {
		t.Errorf("processes %q, want one per host %q", procs, addrs)
	}
	spans := hostSpans(s)
	var firsts []int64
	for i, a := range addrs {
		n, bad := 0, 0
		var offs []int64
		first := int64(-1)
		for _, r := range spans[a] {
			if s.Name(r) != "work "+names[i] {
				if strings.HasPrefix(s.Name(r), "work ") {
					bad++
				}
				continue
			}
			n++
			if first < 0 || r.Start() < first {
				first = r.Start()
			}
			// Alignment: the span's place on the merged timeline is the
			// wall-clock time the child saw when it began it.
			for _, arg := range s.Args(r) {
				if arg.Key == "wall_ns" {
					d := s.Meta.Start.Wall + (r.Start() - s.Meta.Start.Mono) - arg.Int()
					offs = append(offs, max(d, -d))
				}
			}
		}
		if n < 100 {
			t.Errorf("host %s: %d spans of its work in a 1s capture of a span a millisecond", a, n)
		}
		if bad > 0 {
			t.Errorf("host %s holds %d spans of other hosts", a, bad)
		}
		// The median, not the worst: a child descheduled between reading
		// the clock and beginning the span moves that one span. The
		// captures begin within milliseconds of each other, so the bound
		// is tighter than that (TestMergeHostsAlignsWallClocks checks the
		// alignment with hosts a second apart).
		slices.Sort(offs)
		if len(offs) == 0 {
			t.Errorf("host %s: no span carries wall_ns", a)
		} else if med := offs[len(offs)/2]; med > int64(time.Millisecond) {
			t.Errorf("host %s: spans sit a median %v from the wall-clock time they began at", a, time.Duration(med))
		}
		firsts = append(firsts, first)
	}
	if d := slices.Max(firsts) - slices.Min(firsts); d > int64(500*time.Millisecond) {
		t.Errorf("the hosts' first spans lie %v apart on the merged timeline", time.Duration(d))
	}

	// What the checker is told to expect comes from the xplanes, not from
	// reading the merged file back.
	var hosts []collectedHost
	for _, a := range addrs {
		x, err := formats.XPlane.ReadFile(filepath.Join(runDir, fileHostName(a)+".xplane.pb"), nil)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, collectedHost{name: a, snap: x})
	}
	conformance.Export(t, "collect_three_hosts", merged, mergeHosts(hosts))

	// One dead address among them fails clearly and costs the others
	// nothing.
	logdir = t.TempDir()
	dead := "127.0.0.1:1"
	code, stdout, stderr = runCLI("collect", addrs[0]+","+dead+","+addrs[2], "300", "--log_dir", logdir, "--no_perfetto_link")
	if code != 1 || !strings.Contains(stderr, dead+":") || !strings.Contains(stderr, "1 of 3 host(s) failed") {
		t.Errorf("with a dead host: exit %d, stderr:\n%s", code, stderr)
	}
	s, err = formats.Perfetto.ReadFile(filepath.Join(strings.TrimSpace(stdout), collectMergedName), nil)
	if err != nil {
		t.Fatal(err)
	}
	spans = hostSpans(s)
	if len(s.Processes) != 2 || len(spans[addrs[0]]) == 0 || len(spans[addrs[2]]) == 0 {
		t.Errorf("with a dead host: %d processes, %d and %d spans of the live hosts", len(s.Processes), len(spans[addrs[0]]), len(spans[addrs[2]]))
	}
}

func TestMergeHostsAlignsWallClocks(t *testing.T) {
	host := func(wall int64, pid int, name string) collectedHost {
		b := event.NewBuilder(event.Meta{Host: name, PID: pid, Program: "server",
			Start: event.ClockAnchor{Mono: 0, Boot: wall, Wall: wall},
			Stop:  event.ClockAnchor{Mono: int64(time.Second), Boot: wall + int64(time.Second), Wall: wall + int64(time.Second)}})
		th := b.Track(event.Track{Kind: event.TrackHostThread, ID: 7, Name: "main"})
		b.Span(event.Span{Name: "at 100ms", Start: int64(100 * time.Millisecond), End: int64(200 * time.Millisecond), Track: th,
			Args: []event.Arg{{Kind: event.ArgFlow, Num: 1}}})
		return collectedHost{name: name, snap: b.Snapshot()}
	}
	const wall = int64(1_700_000_000_000_000_000)
	// The second host started its capture 1.5s after the first (and the
	// same pid: two machines).
	s := mergeHosts([]collectedHost{host(wall+int64(1500*time.Millisecond), 42, "late:1"), host(wall, 42, "early:2")})
	if s.Meta.Start.Wall != wall || s.Meta.Stop.Mono != int64(2500*time.Millisecond) {
		t.Errorf("merged start %d (want %d), stop %v (want 2.5s)", s.Meta.Start.Wall, wall, time.Duration(s.Meta.Stop.Mono))
	}
	got := map[string]int64{}
	flows := map[uint64]bool{}
	for p, rs := range hostSpans(s) {
		for _, r := range rs {
			got[p] = r.Start()
			for _, a := range s.Args(r) {
				if a.Kind == event.ArgFlow {
					flows[a.Num] = true
				}
			}
		}
	}
	if got["late:1"] != int64(1600*time.Millisecond) || got["early:2"] != int64(100*time.Millisecond) {
		t.Errorf("span starts %v, want late:1 at 1.6s and early:2 at 100ms", got)
	}
	if len(flows) != 2 {
		t.Errorf("the hosts' flow ids %v run together", flows)
	}
	if len(s.Processes) != 2 || s.Processes[0].Name != "late:1" || s.Processes[1].Name != "early:2" {
		t.Errorf("processes %+v", s.Processes)
	}

	// The collector's own process is not empty: in the file, it shows
	// each host's capture window at its wall-clock place, with what the
	// host returned.
	var buf bytes.Buffer
	if err := formats.Perfetto.Write(&buf, s, false); err != nil {
		t.Fatal(err)
	}
	back, err := formats.Perfetto.Decode(&buf, "merged.pftrace")
	if err != nil {
		t.Fatal(err)
	}
	type window struct {
		start, end time.Duration
		args       string
	}
	windows := map[string]window{}
	for _, r := range back.Events {
		if r.Kind() != event.KindSpan || !strings.HasPrefix(back.Name(r), "capture ") {
			continue
		}
		if r.OnTrack() && int(r.Lane()) <= len(back.Tracks) && back.Tracks[r.Lane()-1].Process != 0 {
			t.Errorf("%q sits in process %q, want the collector's", back.Name(r), back.ProcessOf(back.Tracks[r.Lane()-1]).Name)
		}
		end, _ := back.EndOf(r)
		var args []string
		for _, a := range back.Args(r) {
			args = append(args, fmt.Sprintf("%s=%v", a.Key, a.Value()))
		}
		windows[back.Name(r)] = window{time.Duration(r.Start() - back.Meta.Start.Mono), time.Duration(end - back.Meta.Start.Mono), strings.Join(args, " ")}
	}
	want := map[string]window{
		"capture late:1":  {1500 * time.Millisecond, 2500 * time.Millisecond, "host=late:1 program=server pid=42 events=1 dropped=0"},
		"capture early:2": {0, time.Second, "host=early:2 program=server pid=42 events=1 dropped=0"},
	}
	if !maps.Equal(windows, want) {
		t.Errorf("the collector's capture windows in the file:\n%+v\nwant\n%+v", windows, want)
	}
	if back.Meta.Program != "devprof collect" {
		t.Errorf("the trace's own process is %q, want the collector", back.Meta.Program)
	}
}
