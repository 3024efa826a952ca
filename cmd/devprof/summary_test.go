package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
)

// TestSummaryByProcess checks that summary splits its table by process
// for PyTorch's trace, whose spans are in four processes (the Python
// process 620, the GPU as pid 0, pid -1 and the string pid "Spans").
func TestSummaryByProcess(t *testing.T) {
	const kineto = "../../testdata/real-gpu/kineto-h100-libwork.json.gz"
	code, stdout, stderr := runCLI("summary", "-top", "2", kineto)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"\nprocess 620 (python3) [CPU]: 8001 spans on 1 row\n",
		"\nprocess 0 (python3) [GPU 0]: 2500 spans on 1 row\n",
		"\nprocess \"Spans\": 1 span on 1 row\n",
		"\nprocess -1: 1 span on 1 row\n",
		"dropped 5501 flows",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "\nprocess ") != 4 {
		t.Errorf("want 4 process sections:\n%s", stdout)
	}

	code, stdout, stderr = runCLI("summary", "-json", kineto)
	if code != 0 {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	var out jsonSummary
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	spans := map[string]int{}
	for _, p := range out.Processes {
		key := p.Name
		if p.Label != nil {
			key = "label:" + *p.Label
		}
		spans[key] += p.Spans
		if len(p.Table) == 0 {
			t.Errorf("process %d has no table", p.PID)
		}
	}
	if len(out.Processes) != 4 || spans["python3"] != 10501 || spans["label:Spans"] != 1 || out.Spans != 10503 {
		t.Errorf("processes %+v (spans %v), want 4 holding all 10503 spans", out.Processes, spans)
	}
}

// TestSummaryDropLines: events lost (the recorder's, a reader's) make the
// totals low; flows lost beside them are worded apart, as flows.
func TestSummaryDropLines(t *testing.T) {
	m := event.Meta{MaxEvents: 1000, Drops: []event.Drops{
		{Source: event.DropsRecorder, Events: 10},
		{Source: "a:1: chrome flows", Events: 1},
		{Source: "perfetto reader", Events: 2},
		{Source: chrome.DropsFlows, Events: 3},
	}}
	got := dropLines(&m)
	want := []string{
		"12 events dropped (recorder: 10, buffer full at max_events=1000; perfetto reader: 2); totals are low",
		"4 one-ended flows dropped (a:1: chrome flows: 1; chrome flows: 3): flows are arrows between events; every span and event is counted",
	}
	if !slices.Equal(got, want) {
		t.Errorf("dropLines:\n%q\nwant\n%q", got, want)
	}
	if got := dropLines(&event.Meta{}); len(got) != 0 {
		t.Errorf("no drops: %q", got)
	}
}

// TestSummaryMergedHostsDevices: in devprof collect's merge of two GPU
// hosts (the real H100 JAX training profile twice), each host's kernels
// are summarized under their own device, not under the collector's
// process, whose only spans are its capture windows.
func TestSummaryMergedHostsDevices(t *testing.T) {
	x, err := xplane.ReadFile("../../testdata/real-gpu/jax-h100-train.xplane.pb")
	if err != nil {
		t.Fatal(err)
	}
	kernels := 0
	for _, r := range x.Events {
		if tr, ok := x.TrackOf(r); ok && r.Kind() != event.KindCounter && (tr.Kind == event.TrackDevice || tr.Kind == event.TrackDeviceStream) {
			kernels++
		}
	}
	if kernels == 0 {
		t.Fatal("the fixture has no device work")
	}
	var buf bytes.Buffer
	if err := perfetto.Write(&buf, mergeHosts([]collectedHost{{name: "a:1", snap: x}, {name: "b:2", snap: x}}), perfetto.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "collect.pftrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("summary", "-top", "1", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		" (devprof collect): 2 spans on ", // the collector: its two capture windows, nothing else
		"\ndevice 0 (a:1: ",
		"\ndevice 1 (b:2: ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI("summary", "-json", path)
	if code != 0 {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	var out jsonSummary
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Devices) != 2 || out.Devices[0].Spans != out.Devices[1].Spans || !strings.HasPrefix(out.Devices[1].Name, "b:2: ") {
		t.Fatalf("devices %+v, want two alike, the second b:2's", out.Devices)
	}
	total := 0
	for _, p := range out.Processes {
		total += p.Spans
	}
	for _, d := range out.Devices {
		total += d.Spans
	}
	if total != out.Spans || out.Devices[0].Spans == 0 {
		t.Errorf("processes and devices hold %d spans, the trace %d", total, out.Spans)
	}
}
