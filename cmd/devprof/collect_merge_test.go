package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/perfetto"
)

// mergeTestHost is host i's trace for the merge tests: its capture starts
// at a different wall-clock time per host (not in host order), with a
// thread of nested spans, a device stream and a counter.
func mergeTestHost(i int) *event.Snapshot {
	wall := int64(1_700_000_000_000_000_000) + int64((i*7)%5)*int64(300*time.Millisecond)
	b := event.NewBuilder(event.Meta{Host: fmt.Sprint("host", i), PID: 40 + i, Program: "server",
		Start: event.ClockAnchor{Mono: 1000, Boot: wall, Wall: wall},
		Stop:  event.ClockAnchor{Mono: 1000 + int64(time.Second), Boot: wall + int64(time.Second), Wall: wall + int64(time.Second)},
		Drops: []event.Drops{{Source: "host", Events: int64(i)}}})
	th := b.Track(event.Track{Kind: event.TrackHostThread, ID: 7, Name: "main"})
	st := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 1, Name: "stream 1", DeviceName: "GPU"})
	for k := range 200 {
		t := int64(1000 + k*1000)
		p := b.Span(event.Span{Name: "step", Start: t, End: t + 900, Track: th, Args: []event.Arg{{Kind: event.ArgFlow, Num: uint64(k)}}})
		b.Span(event.Span{Name: "op", Start: t + 10, End: t + 500, Track: th, Parent: p})
		b.ActivityOf(event.ActivityKernel, st, "kernel", t+100, t+400, nil)
		b.TrackCounter(st, "utilization", "%", t, float64(k%100))
	}
	b.Counter("queue", "", 5000, 3)
	return b.Snapshot()
}

func perfettoBytes(t *testing.T, s *event.Snapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := perfetto.Write(&buf, s, perfetto.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMergeHostsHoldsOneHostAtATime checks that the merge asks for each
// host's trace in turn and lets it go before the next: when host i is
// read, no earlier host's snapshot is reachable (a weak pointer to it
// is cleared by a collection). The merged trace is the one mergeHosts
// makes of all the hosts at once.
func TestMergeHostsHoldsOneHostAtATime(t *testing.T) {
	const n = 4
	var all []collectedHost
	metas := make([]event.Meta, n)
	for i := range n {
		s := mergeTestHost(i)
		all = append(all, collectedHost{name: fmt.Sprintf("10.0.0.%d:9999", i), snap: s})
		metas[i] = s.Meta
	}
	want := perfettoBytes(t, mergeHosts(all))
	all = nil

	var read []weak.Pointer[event.Snapshot]
	got, errs := mergeHostsFrom(n,
		func(i int) (event.Meta, error) { return metas[i], nil },
		func(i int) (collectedHost, error) {
			runtime.GC()
			for j, w := range read {
				if w.Value() != nil {
					t.Errorf("host %d's trace is still held when host %d is read", j, i)
				}
			}
			s := mergeTestHost(i)
			read = append(read, weak.Make(s))
			return collectedHost{name: fmt.Sprintf("10.0.0.%d:9999", i), snap: s}, nil
		})
	if len(errs) != 0 || len(read) != n {
		t.Fatalf("errors %v; %d hosts read, want %d", errs, len(read), n)
	}
	if !bytes.Equal(perfettoBytes(t, got), want) {
		t.Error("merging host by host gives another trace than merging them all at once")
	}
}

// TestMergeHostFiles merges hosts' XSpace files one at a time: the trace
// is mergeHosts' of the files read back, and a file that does not read
// is left out with an error naming its host.
func TestMergeHostFiles(t *testing.T) {
	dir := t.TempDir()
	var names, paths []string
	var hosts []collectedHost
	for i := range 3 {
		name := fmt.Sprintf("10.0.0.%d:9999", i)
		path := filepath.Join(dir, fmt.Sprintf("h%d.xplane.pb", i))
		if err := formats.WriteFile(path, formats.XPlane, mergeTestHost(i)); err != nil {
			t.Fatal(err)
		}
		back, err := formats.XPlane.ReadFile(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		names, paths = append(names, name), append(paths, path)
		hosts = append(hosts, collectedHost{name: name, snap: back})
	}
	got, errs := mergeHostFiles(names, paths)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if !bytes.Equal(perfettoBytes(t, got), perfettoBytes(t, mergeHosts(hosts))) {
		t.Error("mergeHostFiles gives another trace than mergeHosts of the same files")
	}

	bad := filepath.Join(dir, "bad.xplane.pb")
	if err := os.WriteFile(bad, []byte{0x0a, 0xff, 0xff, 0x7f, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, errs = mergeHostFiles([]string{names[0], "10.0.0.9:9999", names[2]}, []string{paths[0], bad, paths[2]})
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "10.0.0.9:9999: the xplane it sent cannot be read back: ") {
		t.Fatalf("errors %v; want one for 10.0.0.9:9999", errs)
	}
	if !bytes.Equal(perfettoBytes(t, got), perfettoBytes(t, mergeHosts([]collectedHost{hosts[0], hosts[2]}))) {
		t.Error("with a host left out, another trace than mergeHosts of the others")
	}
}
