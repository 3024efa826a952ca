package tables_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/tables"
)

// totals are a table set's counts and sums, computed the same way from
// the model and from the rows read back.
type totals struct {
	Spans, SpanDur, SpanStartMin, Unfinished int64
	Instants, InstantTimeSum                 int64
	Counters                                 int64
	CounterSum                               float64
	Kernels, KernelDur, KernelBytes          int64
	KernelsCorrelated                        int64
	Memory, MemoryBytes, Allocs              int64
	Flows, FlowIDSum                         int64
	Steps, StepDur, StepNumSum               int64
	Devices                                  int64
}

// modelTotals computes what the tables must hold of s.
func modelTotals(s *event.Snapshot) totals {
	var t totals
	off := s.Meta.Start.Wall - s.Meta.Start.Mono
	t.SpanStartMin = math.MaxInt64
	var args []event.Arg
	// A Chrome file's streams are threads of its devices' processes:
	// their spans are kernels (these traces annotate no range there).
	onStream := func(r *event.Record) bool {
		tr, ok := s.TrackOf(r)
		if !ok || tr.Kind != event.TrackHostThread {
			return false
		}
		_, _, ok = event.StreamOf(tr, s.Processes)
		return ok
	}
	for _, r := range s.Events {
		args = s.AppendArgs(args[:0], r)
		end, finished := s.EndOf(r)
		flows := 0
		for _, a := range args {
			if a.Kind == event.ArgFlow {
				t.Flows++
				t.FlowIDSum += int64(a.Num)
				flows++
			}
		}
		kind := r.Kind()
		if kind == event.KindSpan && onStream(r) {
			kind = event.KindActivity
		}
		switch kind {
		case event.KindSpan:
			t.Spans++
			t.SpanDur += end - r.Start()
			t.SpanStartMin = min(t.SpanStartMin, r.Start()+off)
			if !finished {
				t.Unfinished++
			}
			if n, ok := strings.CutPrefix(s.Name(r), "ProfilerStep#"); ok && !r.IsStep() && !marked(s) {
				num, _ := strconv.ParseInt(n, 10, 64)
				t.Steps++
				t.StepDur += end - r.Start()
				t.StepNumSum += num
			}
			if r.IsStep() {
				t.Steps++
				t.StepDur += end - r.Start()
				t.StepNumSum += r.StepNum()
			}
		case event.KindInstant:
			t.Instants++
			t.InstantTimeSum += r.Start() + off
		case event.KindCounter:
			t.Counters++
			_, v := s.Counter(r)
			t.CounterSum += v
		case event.KindActivity:
			var bytes int64
			for _, a := range args {
				if a.Key == event.ArgBytes {
					bytes = int64(a.Num)
				}
			}
			if k := r.Activity(); k == event.ActivityAlloc || k == event.ActivityFree {
				t.Memory++
				t.MemoryBytes += bytes
				if k == event.ActivityAlloc {
					t.Allocs++
				}
			} else {
				t.Kernels++
				t.KernelDur += end - r.Start()
				t.KernelBytes += bytes
				if flows > 0 {
					t.KernelsCorrelated++
				}
			}
		}
	}
	devs := map[int]bool{}
	for _, tr := range s.Tracks {
		if d, _, ok := event.StreamOf(tr, s.Processes); ok {
			devs[d] = true
		}
		switch tr.Kind {
		case event.TrackDeviceStream, event.TrackDevice, event.TrackMemory:
			if tr.Device >= 0 {
				devs[tr.Device] = true
			}
		}
	}
	t.Devices = int64(len(devs))
	if t.Spans == 0 {
		t.SpanStartMin = 0
	}
	return t
}

// marked reports whether s marks any step.
func marked(s *event.Snapshot) bool {
	for _, r := range s.Events {
		if r.IsStep() {
			return true
		}
	}
	return false
}

func readTable[T any](t *testing.T, root, rel string) []T {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(rel))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if v, ok := pf.Lookup(tables.MetadataSchemaVersion); !ok || v != "1" {
		t.Errorf("%s: schema_version %q, %v; want 1", rel, v, ok)
	}
	if v, _ := pf.Lookup(tables.MetadataTable); !strings.HasPrefix(rel, v+"/") {
		t.Errorf("%s: devprof_table %q", rel, v)
	}
	rows, err := parquet.Read[T](f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return rows
}

// tableTotals reads the tables of one export back.
func tableTotals(t *testing.T, root string, paths []string, run, host, session string) totals {
	t.Helper()
	if len(paths) != len(tables.Tables) {
		t.Fatalf("%d files, want %d: %v", len(paths), len(tables.Tables), paths)
	}
	for i, name := range tables.Tables {
		if want := tables.PartitionPath(name, run, host, session); paths[i] != want {
			t.Errorf("file %d is %s, want %s", i, paths[i], want)
		}
	}
	var tt totals
	check := func(table, r, h, s string) {
		if r != run || h != host || s != session {
			t.Fatalf("%s row of run %q host %q session %q, want %q %q %q", table, r, h, s, run, host, session)
		}
	}
	spans := readTable[tables.Span](t, root, paths[0])
	ids := map[int64]bool{}
	tt.SpanStartMin = math.MaxInt64
	for _, r := range spans {
		check("spans", r.Run, r.Host, r.Session)
		tt.Spans++
		tt.SpanDur += r.DurNS
		tt.SpanStartMin = min(tt.SpanStartMin, r.StartNS)
		if r.EndNS-r.StartNS != r.DurNS {
			t.Fatalf("span %d: end - start = %d, dur %d", r.ID, r.EndNS-r.StartNS, r.DurNS)
		}
		if !r.Finished {
			tt.Unfinished++
		}
		if ids[r.ID] || r.ID == 0 {
			t.Fatalf("span id %d repeated or zero", r.ID)
		}
		ids[r.ID] = true
	}
	if tt.Spans == 0 {
		tt.SpanStartMin = 0
	}
	kernels := readTable[tables.Kernel](t, root, paths[3])
	for _, r := range spans {
		if r.ParentID != 0 && !ids[r.ParentID] {
			t.Fatalf("span %d %q: parent %d is no span", r.ID, r.Name, r.ParentID)
		}
	}
	for _, r := range readTable[tables.Instant](t, root, paths[1]) {
		check("instants", r.Run, r.Host, r.Session)
		tt.Instants++
		tt.InstantTimeSum += r.TimeNS
	}
	for _, r := range readTable[tables.Counter](t, root, paths[2]) {
		check("counters", r.Run, r.Host, r.Session)
		tt.Counters++
		tt.CounterSum += r.Value
	}
	for _, r := range kernels {
		check("kernels", r.Run, r.Host, r.Session)
		tt.Kernels++
		tt.KernelDur += r.DurNS
		tt.KernelBytes += r.Bytes
		if r.CorrelationID != 0 {
			tt.KernelsCorrelated++
		}
	}
	for _, r := range readTable[tables.Memory](t, root, paths[4]) {
		check("memory", r.Run, r.Host, r.Session)
		tt.Memory++
		tt.MemoryBytes += r.Bytes
		if r.Kind == "alloc" {
			tt.Allocs++
		}
	}
	for _, r := range readTable[tables.Flow](t, root, paths[5]) {
		check("flows", r.Run, r.Host, r.Session)
		tt.Flows++
		tt.FlowIDSum += r.FlowID
	}
	for _, r := range readTable[tables.Step](t, root, paths[6]) {
		check("steps", r.Run, r.Host, r.Session)
		tt.Steps++
		tt.StepDur += r.DurNS
		tt.StepNumSum += r.StepNum
		if !ids[r.SpanID] {
			t.Fatalf("step %d: span %d is not in spans", r.StepNum, r.SpanID)
		}
	}
	hosts := readTable[tables.Host](t, root, paths[7])
	if len(hosts) == 0 || hosts[0].Device != -1 {
		t.Fatalf("hosts: %+v; want the session's row first", hosts)
	}
	h := hosts[0]
	check("hosts", h.Run, h.Host, h.Session)
	if h.Spans != tt.Spans || h.Kernels != tt.Kernels || h.Counters != tt.Counters || h.Instants != tt.Instants ||
		h.Memory != tt.Memory || h.Flows != tt.Flows || h.Steps != tt.Steps {
		t.Errorf("hosts row counts %+v disagree with the tables %+v", h, tt)
	}
	tt.Devices = int64(len(hosts) - 1)
	return tt
}

// realTraces are the real-GPU fixtures of every format devprof reads.
func realTraces(t *testing.T) []string {
	var files []string
	for _, pat := range []string{"*.pftrace", "*.xplane.pb", "*.json.gz", "h200/*.pftrace", "h200/*.xplane.pb"} {
		m, err := filepath.Glob(filepath.Join("..", "testdata", "real-gpu", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("found %d real-GPU traces: %v", len(files), files)
	}
	return files
}

// TestRoundTripRealTraces streams each real trace into a Writer, reads
// the tables back with parquet-go and compares counts and sums per table
// with the model the Builder makes of the same file; WriteSnapshot of
// that model must give the same.
func TestRoundTripRealTraces(t *testing.T) {
	for _, path := range realTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := formats.Detect(path)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := f.ReadFile(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := modelTotals(snap)
			if want.Spans+want.Kernels == 0 {
				t.Fatalf("%s: no spans or kernels in the model", path)
			}

			dir := t.TempDir()
			w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r1", Host: "h", Session: "s", SourceFormat: f.Name})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.StreamFile(path, w, formats.ReadOptions{}); err != nil {
				w.Abort()
				t.Fatal(err)
			}
			paths, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := tableTotals(t, dir, paths, "r1", "h", "s")
			if got != want {
				t.Errorf("streamed:\n got %+v\nwant %+v", got, want)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".spool-*")); len(left) > 0 {
				t.Errorf("spool left behind: %v", left)
			}

			dir2 := t.TempDir()
			paths2, err := tables.WriteSnapshot(dir2, snap, tables.Options{Run: "r1", Host: "h", Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if got2 := tableTotals(t, dir2, paths2, "r1", "h", "s"); got2 != want {
				t.Errorf("from the snapshot:\n got %+v\nwant %+v", got2, want)
			}
		})
	}
}

// TestSameRowsBothWays checks that a streamed export and the snapshot's
// hold the same rows, column for column, but for ids (a Writer numbers
// its events itself).
func TestSameRowsBothWays(t *testing.T) {
	path := filepath.Join("..", "testdata", "real-gpu", "h200", "gpucheck.pftrace")
	f, err := formats.Detect(path)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := f.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := tables.Options{Run: "r", Host: "h", Session: "s"}
	dir1, dir2 := t.TempDir(), t.TempDir()
	w, err := tables.NewWriter(dir1, event.Meta{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StreamFile(path, w, formats.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	p1, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := tables.WriteSnapshot(dir2, snap, o)
	if err != nil {
		t.Fatal(err)
	}
	sortKernels := func(ks []tables.Kernel) map[string]int {
		m := map[string]int{}
		for _, k := range ks {
			k.ID, k.CorrelationID = 0, 0
			m[strings.Join([]string{k.Name, k.Kind, k.Track, k.Args, k.Grid, k.Block, k.CopyKind}, "|")+"|"+itoa(k.StartNS)+"|"+itoa(k.DurNS)+"|"+itoa(int64(k.Device))+"|"+itoa(k.Stream)]++
		}
		return m
	}
	k1 := sortKernels(readTable[tables.Kernel](t, dir1, p1[3]))
	k2 := sortKernels(readTable[tables.Kernel](t, dir2, p2[3]))
	if !reflect.DeepEqual(k1, k2) {
		t.Errorf("kernels differ: streamed %d distinct, snapshot %d", len(k1), len(k2))
	}
	h1 := readTable[tables.Host](t, dir1, p1[7])
	h2 := readTable[tables.Host](t, dir2, p2[7])
	for i := range h1 {
		h1[i].SourceFormat = ""
	}
	for i := range h2 {
		h2[i].SourceFormat = ""
	}
	if !reflect.DeepEqual(h1, h2) {
		t.Errorf("hosts differ:\n%+v\n%+v", h1, h2)
	}
	if len(h1) < 2 || h1[1].DeviceName == "" || h1[1].UUID == "" {
		t.Errorf("hosts %+v: want the H200's facts", h1)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestRowsMatchModel checks the streamed export of each real trace row
// for row against the model the Builder makes of the same file, derived
// here independently of the package: each span's name, Unix times,
// track, thread, device, process, step and parent (by its name and
// start, since ids are numbered apart), and each kernel's columns.
func TestRowsMatchModel(t *testing.T) {
	for _, path := range realTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := formats.Detect(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := f.ReadFile(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			off := s.Meta.Start.Wall - s.Meta.Start.Mono
			type trk struct {
				name           string
				thread, stream int64
				device         int32
				pid            int64
			}
			trackOf := func(r *event.Record) trk {
				tr, ok := s.TrackOf(r)
				if !ok {
					return trk{device: -1, pid: int64(s.Meta.PID)}
				}
				out := trk{name: tr.Name, stream: tr.ID, device: -1, pid: s.ProcessOf(tr).PID}
				if d, st, ok := event.StreamOf(tr, s.Processes); ok && tr.Kind == event.TrackHostThread {
					// A Chrome file's stream, a thread of its device's process.
					out.device, out.stream = int32(d), st
					return out
				}
				switch tr.Kind {
				case event.TrackHostThread:
					out.thread = tr.ID
				case event.TrackProcess:
				default:
					out.device, out.pid = int32(tr.Device), int64(s.Meta.PID)
				}
				if tr.Process == 0 {
					out.pid = int64(s.Meta.PID)
				}
				return out
			}
			// kernelCols are the columns compared of a kernel: its grid
			// as the model's argument, Kineto's array or xprof's summary
			// give it.
			kernelCols := func(r *event.Record) (bytes int64, grid string) {
				for _, a := range s.Args(r) {
					switch a.Key {
					case event.ArgBytes:
						bytes = int64(a.Num)
					case event.ArgGrid:
						grid = strings.Trim(a.Str, "[]")
					case "kernel_details":
						if _, g, ok := strings.Cut(a.Str, "grid:"); ok && grid == "" {
							grid, _, _ = strings.Cut(g, " ")
						}
					}
				}
				return bytes, grid
			}
			markers := false
			for _, r := range s.Events {
				markers = markers || r.IsStep()
			}
			wantSpans, wantKernels := map[string]int{}, map[string]int{}
			for _, r := range s.Events {
				end, finished := s.EndOf(r)
				tr := trackOf(r)
				switch r.Kind() {
				case event.KindSpan:
					if tr.device >= 0 {
						// Work on a Chrome file's stream (these fixtures
						// annotate no range there): a kernel, a copy or a
						// memset by its name.
						kind := event.ActivityKernel
						switch {
						case strings.HasPrefix(s.Name(r), "Memcpy"):
							kind = event.ActivityMemcpy
						case strings.HasPrefix(s.Name(r), "Memset"):
							kind = event.ActivityMemset
						}
						bytes, grid := kernelCols(r)
						wantKernels[key(s.Name(r), kind, r.Start()+off, end-r.Start(), tr.device, tr.stream, tr.name, bytes, grid)]++
						continue
					}
					step, stepNum := r.IsStep(), r.StepNum()
					if n, err := strconv.ParseInt(strings.TrimPrefix(s.Name(r), "ProfilerStep#"), 10, 64); !markers && err == nil && strings.HasPrefix(s.Name(r), "ProfilerStep#") {
						step, stepNum = true, n
					}
					parent := ""
					if p := s.Lookup(r.Parent()); p != nil {
						parent = key(s.Name(p), p.Start()+off)
					}
					wantSpans[key(strings.ToValidUTF8(s.Name(r), "\ufffd"), r.Start()+off, end+off, finished, tr.name, tr.thread, tr.device, tr.pid, step, stepNum, parent)]++
				case event.KindActivity:
					if k := r.Activity(); k == event.ActivityAlloc || k == event.ActivityFree {
						continue
					}
					bytes, grid := kernelCols(r)
					wantKernels[key(s.Name(r), r.Activity(), r.Start()+off, end-r.Start(), tr.device, tr.stream, tr.name, bytes, grid)]++
				}
			}
			dir := t.TempDir()
			w, err := tables.NewWriter(dir, event.Meta{}, tables.Options{Run: "r", Host: "h"})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.StreamFile(path, w, formats.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			paths, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			spans := readTable[tables.Span](t, dir, paths[0])
			byID := map[int64]tables.Span{}
			for _, sp := range spans {
				byID[sp.ID] = sp
			}
			gotSpans := map[string]int{}
			for _, sp := range spans {
				parent := ""
				if p, ok := byID[sp.ParentID]; ok {
					parent = key(p.Name, p.StartNS)
				}
				gotSpans[key(sp.Name, sp.StartNS, sp.EndNS, sp.Finished, sp.Track, sp.ThreadID, sp.Device, sp.PID, sp.Step, sp.StepNum, parent)]++
			}
			gotKernels := map[string]int{}
			for _, k := range readTable[tables.Kernel](t, dir, paths[3]) {
				gotKernels[key(k.Name, k.Kind, k.StartNS, k.DurNS, k.Device, k.Stream, k.Track, k.Bytes, k.Grid)]++
			}
			diff := func(what string, got, want map[string]int) {
				n := 0
				for k, c := range want {
					if got[k] != c && n < 5 {
						t.Errorf("%s %s: %d in the tables, %d in the model", what, k, got[k], c)
						n++
					}
				}
				for k, c := range got {
					if want[k] == 0 && n < 5 {
						t.Errorf("%s %s: %d in the tables, none in the model", what, k, c)
						n++
					}
				}
			}
			diff("span", gotSpans, wantSpans)
			diff("kernel", gotKernels, wantKernels)
		})
	}
}

// key joins values into a map key, each %v apart.
func key(v ...any) string { return fmt.Sprintf("%v", v) }
