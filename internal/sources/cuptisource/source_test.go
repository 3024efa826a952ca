//go:build cgo

package cuptisource

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ianlancetaylor/demangle"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/cupti"
)

// useFake points a test at the fake libcupti in one CUDA layout.
func useFake(t testing.TB, layout string, dropped int) (string, *fakecuda.Lib) {
	t.Helper()
	t.Setenv("FAKECUPTI_LAYOUT", layout)
	t.Setenv("FAKECUPTI_BASE", "")
	t.Setenv("FAKECUPTI_DROPPED", strconv.Itoa(dropped))
	t.Setenv("FAKECUPTI_FAIL", "")
	t.Setenv("FAKECUPTI_VERSION", "")
	t.Setenv("FAKECUPTI_BUFFER_LIMIT", "")
	path := fakecuda.Build(t)
	lib, err := fakecuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, lib
}

// run records one session: the fake's script, plus one kernel launched
// inside a span pushed as external correlation ("matmul") and one outside
// any. It returns the raw records CUPTI delivered, the snapshot, the report
// and the monotonic bracket of the attributed launch.
type runResult struct {
	raw     []cuptiwrap.Record
	snap    *event.Snapshot
	rep     Report
	src     *Source
	bracket [2]int64
}

func run(t *testing.T, layout string, dropped int) runResult {
	t.Helper()
	path, fk := useFake(t, layout, dropped)
	buf := recorder.NewBuffer(1<<16, 3)
	if !recorder.Activate(buf) {
		t.Fatal("another buffer is active")
	}
	defer recorder.Deactivate(buf)
	meta := event.Meta{Start: recorder.ReadClocks()}
	src, err := Start(buf, cupti.Options{Library: path, FlushPeriod: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var res runResult
	res.src = src
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c := buf.Correlator()
		if c == nil {
			t.Fatal("no device correlator registered")
		}
		if err := c.Push(4242, 9, "matmul"); err != nil {
			t.Fatal(err)
		}
		res.bracket[0] = recorder.Mono()
		fk.Launch("gemm_kernel", 1, 7)
		res.bracket[1] = recorder.Mono()
		if err := c.Pop(); err != nil {
			t.Fatal(err)
		}
		fk.Launch("plain_kernel", 0, 3)
	}()
	if err := src.col.Flush(); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	res.raw = slices.Concat(src.batches...)
	src.mu.Unlock()
	src.Stop()
	res.rep = src.Report()
	recorder.Deactivate(buf)
	meta.Stop = recorder.ReadClocks()
	res.snap = buf.Snapshot(meta)
	return res
}

func argMap(s *event.Snapshot, r *event.Record) map[string]event.Arg {
	m := map[string]event.Arg{}
	for _, a := range s.Args(r) {
		if a.Kind == event.ArgFlow {
			m["flow"] = a
			continue
		}
		m[a.Key] = a
	}
	return m
}

func TestSourceWritesEveryRecord(t *testing.T) {
	for _, layout := range []string{"11.8", "12", "13"} {
		t.Run(layout, func(t *testing.T) {
			res := run(t, layout, 0)
			s := res.snap
			if len(res.raw) < 40 {
				t.Fatalf("only %d raw records from the fake", len(res.raw))
			}
			// Index the events written, by what identifies a record.
			type key struct {
				name       string
				start, end int64
			}
			events := map[key][]*event.Record{}
			for _, r := range s.Events {
				if r.Kind() == event.KindActivity || r.Kind() == event.KindSpan {
					end, _ := s.EndOf(r)
					k := key{s.Name(r), r.Start(), end}
					events[k] = append(events[k], r)
				}
			}
			// A flow links a call and its device work only when both ends
			// were recorded.
			apiCorr, deviceCorr := map[uint32]bool{}, map[uint32]bool{}
			for i := range res.raw {
				switch raw := &res.raw[i]; raw.Kind {
				case cuptiwrap.KindRuntime, cuptiwrap.KindDriver:
					apiCorr[raw.CorrelationID] = true
				case cuptiwrap.KindKernel, cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer, cuptiwrap.KindMemset, cuptiwrap.KindMemory, cuptiwrap.KindSync:
					deviceCorr[raw.CorrelationID] = true
				}
			}
			want, flows, oneEnded := 0, 0, 0
			kinds := map[cuptiwrap.Kind]int{}
			for i := range res.raw {
				raw := &res.raw[i]
				if raw.Kind == cuptiwrap.KindExternalCorrelation {
					continue
				}
				want++
				kinds[raw.Kind]++
				name := raw.Name
				if raw.Kind == cuptiwrap.KindMemory {
					name = map[uint8]string{1: "MemoryAlloc", 2: "MemoryFree"}[raw.MemoryOp]
				}
				if raw.Kind == cuptiwrap.KindOverhead {
					name = cuptiwrap.OverheadKindName(raw.OverheadKind)
				}
				// Kernels by their demangled names, copies and memsets as
				// Kineto names them.
				switch raw.Kind {
				case cuptiwrap.KindKernel:
					name = demangle.Filter(raw.Name)
				case cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer:
					kind := cuptiwrap.CopyKindName(raw.CopyKind)
					if raw.Kind == cuptiwrap.KindMemcpyPeer {
						kind = "PtoP"
					}
					name = "Memcpy " + kind + " (" + cuptiwrap.MemoryKindName(raw.SrcKind) + " -> " + cuptiwrap.MemoryKindName(raw.DstKind) + ")"
				case cuptiwrap.KindMemset:
					name = "Memset (" + cuptiwrap.MemoryKindName(raw.MemoryKind) + ")"
				}
				end := raw.End
				if raw.Kind == cuptiwrap.KindMemory {
					end = raw.Start
				}
				k := key{name, res.src.mono(raw.Start), res.src.mono(end)}
				got := events[k]
				if len(got) != 1 {
					t.Errorf("%s record %q at %d..%d: %d events, want exactly 1", raw.Kind, name, raw.Start, raw.End, len(got))
					continue
				}
				r := got[0]
				if r.Kind() == event.KindSpan {
					// An API call made inside the pushed span: beneath it.
					if r.Parent() != 4242 || r.Lane() != 9 || s.Name(r) != "cudaLaunchKernel" {
						t.Errorf("span event %q: parent %d lane %d, want the call of the pushed span 4242 on lane 9", name, r.Parent(), r.Lane())
					}
					continue
				}
				tr := s.Tracks[r.Lane()-1]
				switch raw.Kind {
				case cuptiwrap.KindRuntime, cuptiwrap.KindDriver:
					if tr.Kind != event.TrackHostThread || tr.ID != int64(raw.ThreadID) {
						t.Errorf("API call %q on track %+v, want thread %d", name, tr, raw.ThreadID)
					}
				case cuptiwrap.KindKernel, cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer, cuptiwrap.KindMemset, cuptiwrap.KindMemory:
					if tr.Kind != event.TrackDeviceStream || tr.Device != int(raw.DeviceID) || tr.ID != int64(raw.StreamID) {
						t.Errorf("%s %q on track %+v, want device %d stream %d", raw.Kind, name, tr, raw.DeviceID, raw.StreamID)
					}
				}
				a := argMap(s, r)
				bothEnds := raw.CorrelationID != 0 && apiCorr[raw.CorrelationID] && deviceCorr[raw.CorrelationID]
				if raw.Kind == cuptiwrap.KindOverhead {
					bothEnds = false
				}
				switch f, ok := a["flow"]; {
				case bothEnds && (!ok || f.Num != FlowBase+uint64(raw.CorrelationID)):
					t.Errorf("%s %q: flow %d, want %d", raw.Kind, name, f.Num, FlowBase+uint64(raw.CorrelationID))
				case !bothEnds && ok:
					t.Errorf("%s %q has flow %d with one end (correlation %d)", raw.Kind, name, f.Num, raw.CorrelationID)
				case ok:
					flows++
				case raw.CorrelationID != 0 && raw.Kind != cuptiwrap.KindOverhead:
					oneEnded++
				}
				if raw.Kind == cuptiwrap.KindKernel && name != raw.Name && a[event.ArgMangledName].Str != raw.Name {
					t.Errorf("kernel %q: mangled name %q, want %q", name, a[event.ArgMangledName].Str, raw.Name)
				}
				if want := activityKinds[raw.Kind]; r.Activity() != want && !(raw.Kind == cuptiwrap.KindMemory && r.Activity() == event.ActivityFree) {
					t.Errorf("%s %q: activity kind %s, want %s", raw.Kind, name, r.Activity(), want)
				}
				if raw.Kind == cuptiwrap.KindKernel {
					grid := fmt.Sprintf("%d,%d,%d", raw.Grid[0], raw.Grid[1], raw.Grid[2])
					if a[event.ArgGrid].Str != grid || a[event.ArgRegistersPerThread].Int() != int64(raw.Registers) {
						t.Errorf("kernel %q: grid %q registers %d, want %q and %d", name, a[event.ArgGrid].Str, a[event.ArgRegistersPerThread].Int(), grid, raw.Registers)
					}
					// The model holds no format's vocabulary.
					if _, ok := a["kernel_details"]; ok {
						t.Errorf("kernel %q has xprof's kernel_details", name)
					}
				}
				if raw.Kind == cuptiwrap.KindMemcpy || raw.Kind == cuptiwrap.KindMemcpyPeer || raw.Kind == cuptiwrap.KindMemset {
					if a["bytes"].Num != raw.Bytes {
						t.Errorf("%s %q: bytes %d, want %d", raw.Kind, name, a["bytes"].Num, raw.Bytes)
					}
				}
			}
			if flows == 0 || oneEnded == 0 {
				t.Errorf("%d records with a flow, %d calls or device records without: the script must have both to test the rule", flows, oneEnded)
			}
			if res.rep.Events != want {
				t.Errorf("report: %d events written, %d records to write", res.rep.Events, want)
			}
			for _, k := range []cuptiwrap.Kind{cuptiwrap.KindKernel, cuptiwrap.KindMemcpy, cuptiwrap.KindMemcpyPeer, cuptiwrap.KindMemset,
				cuptiwrap.KindMemory, cuptiwrap.KindSync, cuptiwrap.KindRuntime, cuptiwrap.KindDriver, cuptiwrap.KindOverhead} {
				if kinds[k] == 0 {
					t.Errorf("the run had no %s record: the test would not cover it", k)
				}
			}
		})
	}
}

// Each launch links to its kernel by one flow, the launch names the
// kernel's device, and a kernel launched inside a pushed span carries the
// span's name.
func TestLaunchLinksAndAttribution(t *testing.T) {
	res := run(t, "12", 0)
	s := res.snap
	byFlow := map[uint64][]*event.Record{}
	var gemm, plain *event.Record
	host := func(r *event.Record) bool {
		return r.Kind() == event.KindSpan || s.Tracks[r.Lane()-1].Kind == event.TrackHostThread
	}
	for _, r := range s.Events {
		if f, ok := argMap(s, r)["flow"]; ok {
			byFlow[f.Num] = append(byFlow[f.Num], r)
		}
		switch s.Name(r) {
		case "gemm_kernel":
			gemm = r
		case "plain_kernel":
			plain = r
		}
	}
	if gemm == nil || plain == nil {
		t.Fatal("launched kernels missing")
	}
	if got := argMap(s, gemm)[event.ArgAnnotation].Str; got != "matmul" {
		t.Errorf("gemm_kernel annotation %q, want matmul", got)
	}
	if _, ok := argMap(s, plain)[event.ArgAnnotation]; ok {
		t.Errorf("plain_kernel was launched outside any span but has an annotation")
	}
	links := 0
	for f, rs := range byFlow {
		var hosts, devs []*event.Record
		for _, r := range rs {
			if host(r) {
				hosts = append(hosts, r)
			} else {
				devs = append(devs, r)
			}
		}
		if len(hosts) == 0 || len(devs) == 0 {
			continue
		}
		links++
		d := s.Tracks[devs[0].Lane()-1].Device
		if got, ok := argMap(s, hosts[0])["device_id"]; !ok || got.Num != uint64(d) {
			t.Errorf("flow %d: launch %q device_id %v, want %d", f, s.Name(hosts[0]), got, d)
		}
	}
	if links < 4 {
		t.Errorf("%d launch→device links, want at least 4", links)
	}
	// The launch was stamped by the fake with CLOCK_REALTIME while the test
	// held a monotonic bracket around it: the offset measured at start must
	// put it inside (give or take the pairing and clock drift).
	for _, r := range s.Events {
		if s.Name(r) == "gemm_kernel" {
			continue
		}
		if f, ok := argMap(s, r)["flow"]; ok && f.Num == argMap(s, gemm)["flow"].Num && host(r) {
			const slack = int64(200 * time.Microsecond)
			if r.Start() < res.bracket[0]-slack || r.Start() > res.bracket[1]+slack {
				t.Errorf("launch at %d ns, outside the bracket %d..%d taken around it", r.Start(), res.bracket[0], res.bracket[1])
			}
		}
	}
	if c := res.rep.Clock; c.Source != cupti.SourceName || !strings.Contains(c.Text, "CLOCK_REALTIME") || !strings.Contains(c.Text, "offset") {
		t.Errorf("report does not say which clock: %q", res.rep.Clock)
	}
}

// Stream tracks are named as xprof names them, with the kinds of work
// that ran on them.
func TestStreamNames(t *testing.T) {
	res := run(t, "11.8", 0)
	var names []string
	for _, tr := range res.snap.Tracks {
		if tr.Kind == event.TrackDeviceStream {
			names = append(names, fmt.Sprintf("%d:%s", tr.Device, tr.Name))
		}
	}
	if !slices.Contains(names, "1:Stream #7(Compute)") {
		t.Errorf("stream names %q: want 1:Stream #7(Compute) for the launched kernel", names)
	}
	// The fake's context-wide synchronization (stream id 2^32-1) has a
	// line of its own, not a stream's.
	if !slices.Contains(names, "1:Context(Synchronize)") {
		t.Errorf("stream names %q: want 1:Context(Synchronize)", names)
	}
	for _, n := range names {
		if !strings.Contains(n, "Stream #") && !strings.Contains(n, ":Context(") || !strings.Contains(n, "(") {
			t.Errorf("stream name %q lacks its kinds", n)
		}
	}
}

func TestDroppedRecordsAreReported(t *testing.T) {
	res := run(t, "13", 5)
	if res.rep.Stats.CUPTIDropped != 5 {
		t.Fatalf("CUPTI dropped %d, want 5", res.rep.Stats.CUPTIDropped)
	}
	if len(res.rep.Warnings) == 0 || res.rep.Warnings[0].Code != cupti.CodeRecordsDropped || !strings.Contains(res.rep.Warnings[0].Text, "5 GPU activity records dropped") {
		t.Errorf("warnings %q", res.rep.Warnings)
	}
	if want := (event.Drops{Source: cupti.SourceName, Events: 5}); res.rep.Drops != want {
		t.Errorf("drops %+v, want %+v", res.rep.Drops, want)
	}
}

// Errors from the library are explained, and Start leaves nothing behind:
// the next Start works.
func TestStartErrors(t *testing.T) {
	path, _ := useFake(t, "12", 0)
	buf := recorder.NewBuffer(1000, 3)
	for fail, want := range map[string]string{
		"not_initialized":      "no NVIDIA GPU or driver usable",
		"privileges":           "NVreg_RestrictProfilingToAdminUsers=0",
		"multiple_subscribers": "another profiler is already attached",
	} {
		t.Setenv("FAKECUPTI_FAIL", fail)
		_, err := Start(buf, cupti.Options{Library: path})
		if err == nil || !strings.Contains(Explain(err).Text, want) || !strings.HasPrefix(Explain(err).Text, "GPU tracing off: ") || Explain(err).Code != cupti.CodeUnavailable {
			t.Errorf("FAKECUPTI_FAIL=%s: %v, want a message with %q", fail, err, want)
		}
		if buf.Correlator() != nil {
			t.Errorf("FAKECUPTI_FAIL=%s: a correlator stayed registered", fail)
		}
	}
	t.Setenv("FAKECUPTI_FAIL", "")
	src, err := Start(buf, cupti.Options{Library: path})
	if err != nil {
		t.Fatalf("Start after failures: %v", err)
	}
	src.Stop()
	if _, err := Start(buf, cupti.Options{Library: "/nonexistent/libcupti.so"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/libcupti.so") {
		t.Errorf("missing library: %v", err)
	}
}

// activityKinds is the event.ActivityKind each kind of CUPTI record
// becomes (a free is the KindMemory record of a free).
var activityKinds = map[cuptiwrap.Kind]event.ActivityKind{
	cuptiwrap.KindKernel: event.ActivityKernel, cuptiwrap.KindMemcpy: event.ActivityMemcpy, cuptiwrap.KindMemcpyPeer: event.ActivityMemcpy,
	cuptiwrap.KindMemset: event.ActivityMemset, cuptiwrap.KindMemory: event.ActivityAlloc, cuptiwrap.KindSync: event.ActivitySync,
	cuptiwrap.KindRuntime: event.ActivityAPI, cuptiwrap.KindDriver: event.ActivityAPI, cuptiwrap.KindOverhead: event.ActivityOverhead,
}
