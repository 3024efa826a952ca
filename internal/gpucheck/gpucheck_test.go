package gpucheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// built is a snapshot of a launch bound to its kernel, a copy, and a
// second kernel that begins before its launch.
func built() *event.Snapshot {
	b := event.NewBuilder(event.Meta{Stop: event.ClockAnchor{Mono: 100_000}})
	th := b.Track(event.Track{Kind: event.TrackHostThread, ID: 7})
	st := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7})
	flow := func(id uint64) event.Arg { return event.Arg{Kind: event.ArgFlow, Num: id} }
	b.Activity(th, "cudaLaunchKernel", 1_000, 1_500, []event.Arg{flow(1)})
	b.Activity(st, "saxpy(int, float, float const*, float*)", 2_000, 12_000, []event.Arg{
		flow(1), {Key: event.ArgGrid, Kind: event.ArgString, Str: "4096,1,1"}, {Key: event.ArgBlock, Kind: event.ArgString, Str: "256,1,1"}})
	b.Activity(th, "cudaMemcpyAsync", 20_000, 20_500, []event.Arg{flow(2)})
	b.Activity(st, "Memcpy HtoD (Pinned -> Device)", 21_000, 22_000, []event.Arg{
		flow(2), {Key: event.ArgCopyKind, Kind: event.ArgString, Str: "HtoD"}, {Key: event.ArgBytes, Kind: event.ArgUint, Num: 1 << 20}})
	b.Activity(th, "cudaLaunchKernel", 30_000, 30_500, []event.Arg{flow(3)})
	b.Activity(st, "spin(long)", 29_000, 39_000, []event.Arg{
		flow(3), {Key: event.ArgGrid, Kind: event.ArgString, Str: "1,1,1"}, {Key: event.ArgBlock, Kind: event.ArgString, Str: "1,1,1"}})
	s := b.Snapshot()
	return s
}

func TestCheckFindsEachDisagreement(t *testing.T) {
	s := built()
	// The snapshot's activity kinds come from the records' arguments when
	// a file does not say; a Builder snapshot says nothing, so mark them.
	for _, c := range []struct {
		w    Workload
		want []string // substrings of the problems, in order; none means agreement
	}{
		{Workload{Kernels: []Kernel{{Name: "saxpy", Count: 1, Grid: "4096,1,1", Block: "256,1,1"}}, Copies: []Copy{{Kind: "HtoD", Bytes: 1 << 20, Count: 1}}},
			[]string{"spin(long) began 1000 ns before its call"}},
		{Workload{Kernels: []Kernel{{Name: "saxpy", Count: 2, Grid: "4096,1,1", Block: "256,1,1"}}},
			[]string{`kernel "saxpy": 1 recorded, 2 launched`, "began"}},
		{Workload{Kernels: []Kernel{{Name: "saxpy", Count: 1, Grid: "4096,1,1", Block: "128,1,1"}}},
			[]string{`block "256,1,1", launched with "4096,1,1" "128,1,1"`, "began"}},
		{Workload{Kernels: []Kernel{{Name: "spin", Count: 1, Grid: "1,1,1", Block: "1,1,1", SpinNs: 20_000, SlackNs: 1_000}}},
			[]string{"lasted 10000 ns, spun 20000 ns", "began"}},
		{Workload{Copies: []Copy{{Kind: "HtoD", Bytes: 4096, Count: 1}}},
			[]string{"copy HtoD of 1048576 bytes, made of 4096", "began"}},
	} {
		got := Check(s, c.w)
		if len(got) != len(c.want) {
			t.Errorf("%+v: problems %q, want %d", c.w, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("problem %d %q, want it to say %q", i, got[i], w)
			}
		}
	}
}

func TestCausalityNeedsLinks(t *testing.T) {
	b := event.NewBuilder(event.Meta{})
	st := b.Track(event.Track{Kind: event.TrackDeviceStream})
	b.Activity(st, "k", 1, 2, []event.Arg{{Kind: event.ArgFlow, Num: 9}})
	if got := Check(b.Snapshot(), Workload{}); !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "no device work is linked") }) {
		t.Errorf("problems %q", got)
	}
}

func TestCheckMemoryFindsEachDisagreement(t *testing.T) {
	stack := []event.Frame{{Function: "main.run", File: "main.go", Line: 9}}
	m := &event.DeviceMemory{
		Buffers: []event.Buffer{
			{API: "cudaMalloc", Kind: "device", Bytes: 4 << 20, Count: 1, Source: "cuda", Stack: stack},
			{API: "cudaMalloc", Kind: "device", Bytes: 4 << 20, Count: 1, Source: "cuda", Stack: stack},
			{API: "cudaMallocHost", Kind: "pinned", Bytes: 1 << 20, Count: 1, Source: "cuda", Stack: stack},
		},
		Counts: event.MemoryCounts{Allocs: 4, Frees: 1},
	}
	want := []Alloc{
		{API: "cudaMalloc", Kind: "device", Bytes: 4 << 20, Count: 2, Caller: "main.run"},
		{API: "cudaMallocHost", Kind: "pinned", Bytes: 1 << 20, Count: 1, Caller: "main.run"},
	}
	if p := CheckMemory(m, want, 1); len(p) != 0 {
		t.Fatalf("a matching profile fails: %v", p)
	}
	for name, change := range map[string]func(m *event.DeviceMemory, w []Alloc) uint64{
		"count":   func(m *event.DeviceMemory, w []Alloc) uint64 { w[0].Count = 3; return 1 },
		"kind":    func(m *event.DeviceMemory, w []Alloc) uint64 { m.Buffers[2].Kind = "device"; return 1 },
		"device":  func(m *event.DeviceMemory, w []Alloc) uint64 { m.Buffers[0].Device = 1; return 1 },
		"stack":   func(m *event.DeviceMemory, w []Alloc) uint64 { w[1].Caller = "main.other"; return 1 },
		"extra":   func(m *event.DeviceMemory, w []Alloc) uint64 { m.Buffers[2].API = "cudaMallocManaged"; return 1 },
		"frees":   func(m *event.DeviceMemory, w []Alloc) uint64 { return 2 },
		"unknown": func(m *event.DeviceMemory, w []Alloc) uint64 { m.Counts.UnknownFrees = 1; return 1 },
	} {
		mm := *m
		mm.Buffers = append([]event.Buffer(nil), m.Buffers...)
		w := append([]Alloc(nil), want...)
		frees := change(&mm, w)
		if p := CheckMemory(&mm, w, frees); len(p) == 0 {
			t.Errorf("%s: a disagreement went unnoticed", name)
		}
	}
}
