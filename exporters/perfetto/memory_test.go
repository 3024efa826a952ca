package perfetto

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
)

// memoryEvents describes the memory events of s: kind, name, track and
// arguments, times through boot.
func memoryEvents(s *event.Snapshot, boot func(int64) int64) []string {
	var out []string
	for _, r := range s.Events {
		t, ok := s.TrackOf(r)
		if !ok || t.Kind != event.TrackMemory {
			continue
		}
		out = append(out, fmt.Sprintf("%v %v %q at %d on %q (device %d) %v", r.Kind(), r.Activity(), s.Name(r), boot(r.Start()), t.Name, t.Device, s.Args(r)))
	}
	slices.Sort(out)
	return out
}

func TestMemoryTracks(t *testing.T) {
	s := eventtest.GoldenSnapshot()
	data := encode(t, s, false)
	tr := mustRead(t, data)
	byUUID := map[uint64]Track{}
	procs := map[int64]Track{}
	for _, tk := range tr.Tracks {
		byUUID[tk.UUID] = tk
		if tk.Kind == TrackProcess {
			procs[tk.PID] = tk
		}
	}
	// The allocations and frees are instants on a thread of their device's
	// process (the program's for host memory), the address in hex.
	threads := map[string]Track{}
	instants := map[string]int{}
	for _, in := range tr.Instants {
		th := byUUID[in.Track]
		if th.Description != MemoryEventsDescription {
			continue
		}
		threads[th.Name] = th
		instants[th.Name+" "+in.Name]++
		addr := ""
		for _, a := range in.Args {
			if a.Name == event.ArgAddress {
				addr, _ = a.Value.(string)
			}
		}
		if len(addr) < 3 || addr[:2] != "0x" {
			t.Errorf("%s at %d: address %q, want hex", in.Name, in.TS, addr)
		}
	}
	if want := map[string]int{"GPU 0 memory (devmem) alloc": 3, "GPU 0 memory (devmem) free": 2, "host memory (devmem) alloc": 1}; !reflect.DeepEqual(instants, want) {
		t.Errorf("memory instants %v, want %v", instants, want)
	}
	if p := procs[threads["GPU 0 memory (devmem)"].PID]; p.Name != "GPU 0 (NVIDIA H100 80GB HBM3)" {
		t.Errorf("GPU memory thread in process %q", p.Name)
	}
	if p := threads["host memory (devmem)"].PID; p != int64(s.Meta.PID) {
		t.Errorf("host memory thread in pid %d, want the program's %d", p, s.Meta.PID)
	}
	// Counters beside it: bytes in use, and per tag set.
	counters := map[string][]float64{}
	for _, c := range tr.Counters {
		tk := byUUID[c.Track]
		if tk.Description != MemoryCounterDescription {
			continue
		}
		parent := byUUID[tk.ParentUUID]
		counters[fmt.Sprintf("%s/%s (%s)", parent.Name, tk.Name, tk.Unit)] = append(counters[fmt.Sprintf("%s/%s (%s)", parent.Name, tk.Name, tk.Unit)], c.Value)
	}
	const MiB = 1 << 20
	want := map[string][]float64{
		"GPU 0 (NVIDIA H100 80GB HBM3)/GPU 0 memory (devmem) in use (bytes)":       {64 * MiB, 68 * MiB, 64 * MiB, 68 * MiB, 64 * MiB},
		"GPU 0 (NVIDIA H100 80GB HBM3)/GPU 0 memory (devmem): weights (bytes)":     {64 * MiB},
		"GPU 0 (NVIDIA H100 80GB HBM3)/GPU 0 memory (devmem): activations (bytes)": {0, 4 * MiB, 0, 4 * MiB, 0},
		"golden.test/host memory (devmem) in use (bytes)":                          {1 * MiB},
		"golden.test/host memory (devmem): (untagged) (bytes)":                     {1 * MiB},
	}
	if !reflect.DeepEqual(counters, want) {
		t.Errorf("memory counters\n got %v\nwant %v", counters, want)
	}
	// Read back, the events are memory events again and the counters,
	// derived from them, are left out.
	got := tr.Snapshot()
	if w, g := memoryEvents(s, s.Meta.BootNanos), memoryEvents(got, func(t int64) int64 { return t }); !slices.Equal(w, g) {
		t.Errorf("memory events read back\n got %q\nwant %q", g, w)
	}
	for _, r := range got.Events {
		if r.Kind() == event.KindCounter && (got.Name(r) != "loss" && got.Name(r) != "device memory") {
			t.Errorf("counter %q read back", got.Name(r))
		}
	}
	if w, g := s.MemoryTimelines(MemoryTopTags), got.MemoryTimelines(MemoryTopTags); len(w) != len(g) || !reflect.DeepEqual(w[0].Series, g[0].Series) || !reflect.DeepEqual(w[1].InUse, g[1].InUse) {
		t.Errorf("timelines read back differ:\n%+v\n%+v", g, w)
	}
	path := filepath.Join(t.TempDir(), "memory.pftrace")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "memory", path, s)
}

// A device with memory events alone is a process too; past MemoryTopTags
// tag sets, the rest share one counter.
func TestMemoryTopTags(t *testing.T) {
	b := event.NewBuilder(event.Meta{Program: "p", PID: 7, Stop: event.ClockAnchor{Mono: 1000}})
	mem := b.Track(event.Track{Kind: event.TrackMemory, Device: 3, Name: "GPU 3 memory (devmem)"})
	var inUse uint64
	for i := range 12 {
		inUse += uint64(100 - i)
		b.ActivityOf(event.ActivityAlloc, mem, "alloc", int64(10+i), int64(10+i), []event.Arg{
			{Key: event.ArgAddress, Kind: event.ArgUint, Num: uint64(i)},
			{Key: event.ArgBytes, Kind: event.ArgUint, Num: uint64(100 - i)},
			{Key: event.ArgTags, Kind: event.ArgString, Str: fmt.Sprint("t", i)},
			{Key: event.ArgInUse, Kind: event.ArgUint, Num: inUse},
		})
	}
	tr := mustRead(t, encode(t, b.Snapshot(), false))
	var names []string
	var gpu Track
	for _, tk := range tr.Tracks {
		if tk.Kind == TrackProcess && tk.Name == "GPU 3" {
			gpu = tk
		}
	}
	for _, tk := range tr.Tracks {
		if tk.Description == MemoryCounterDescription {
			if tk.ParentUUID != gpu.UUID {
				t.Errorf("counter %q not under GPU 3's process", tk.Name)
			}
			names = append(names, tk.Name)
		}
	}
	want := []string{"GPU 3 memory (devmem) in use"}
	for i := range MemoryTopTags {
		want = append(want, fmt.Sprint("GPU 3 memory (devmem): t", i))
	}
	want = append(want, "GPU 3 memory (devmem): "+event.MemoryOtherTags)
	if !slices.Equal(names, want) {
		t.Errorf("counter tracks %q, want %q", names, want)
	}
	var other []float64
	for _, c := range tr.Counters {
		for _, tk := range tr.Tracks {
			if tk.UUID == c.Track && tk.Name == "GPU 3 memory (devmem): "+event.MemoryOtherTags {
				other = append(other, c.Value)
			}
		}
	}
	if want := []float64{0, 92, 92 + 91, 92 + 91 + 90, 92 + 91 + 90 + 89}; !slices.Equal(other, want) {
		t.Errorf("other tags %v, want %v", other, want)
	}
}
