package xplane_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/eventtest"
)

// memoryEvents describes the memory events of s, times relative to its
// start; unless ordered, each event's arguments sorted by key.
func memoryEvents(s *event.Snapshot, ordered bool) []string {
	var out []string
	for _, r := range s.Events {
		t, ok := s.TrackOf(r)
		if !ok || t.Kind != event.TrackMemory {
			continue
		}
		end, _ := s.EndOf(r)
		args := s.Args(r)
		if !ordered {
			slices.SortFunc(args, func(a, b event.Arg) int { return strings.Compare(a.Key, b.Key) })
		}
		out = append(out, fmt.Sprintf("%v %v %q at %d-%d on %q (device %d) %v", r.Kind(), r.Activity(), s.Name(r),
			r.Start()-s.Meta.Start.Mono, end-s.Meta.Start.Mono, t.Name, t.Device, args))
	}
	slices.Sort(out)
	return out
}

// The stats of the memory events are what xprof's memory_profile reads
// (int64 numbers, the allocator as memory id, the free bytes from the
// device's memory size); read back, the events are what they were.
func TestMemoryEvents(t *testing.T) {
	s := eventtest.GoldenSnapshot()
	data := writeXSpace(t, s)
	xs := decodeXSpace(t, data)
	var host = xs.Planes[0]
	if host.Name != xplane.HostPlaneName {
		t.Fatalf("first plane %q", host.Name)
	}
	const MiB = 1 << 20
	// The allocation is linked to the span of its step, not given a
	// group_id (which would stop xprof's own grouping).
	var step0 uint64
	for _, r := range s.Events {
		if r.IsStep() && r.StepNum() == 0 {
			step0 = r.ID()
		}
	}
	for _, l := range host.Lines {
		for _, e := range l.Events {
			if host.EventMetadata[e.MetadataId].Name != "train" {
				continue
			}
			st := xstats(host, e.Stats)
			if p := st["_p"]; p == nil || st["_pt"] == nil || st["_pt"].GetInt64Value() != 0 || (p.GetUint64Value() != step0) != (st["step_num"].GetInt64Value() != 0) {
				t.Errorf("step %d: producer %v %v, want the step's ID %d for step 0", st["step_num"].GetInt64Value(), p, st["_pt"], step0)
			}
		}
	}
	type stat struct {
		kind string
		v    any
	}
	found := 0
	for _, l := range host.Lines {
		if l.Name != "GPU 0 memory (devmem)" {
			continue
		}
		if l.TimestampNs != 0 {
			t.Errorf("memory line at %d ns: the tool reads raw offsets, every line must start at the profile start", l.TimestampNs)
		}
		for _, e := range l.Events {
			if host.EventMetadata[e.MetadataId].Name != xplane.MemoryAllocationName || e.GetOffsetPs() != 1_150_000 {
				continue
			}
			found++
			got := map[string]stat{}
			for name, st := range xstats(host, e.Stats) {
				switch {
				case st.GetRefValue() != 0:
					got[name] = stat{"ref", host.StatMetadata[int64(st.GetRefValue())].Name}
				case st.Value == nil:
				default:
					got[name] = stat{fmt.Sprintf("%T", st.Value), fmt.Sprint(st.GetInt64Value(), st.GetUint64Value())}
				}
			}
			i64 := func(v int64) stat { return stat{"*xplanepb.XStat_Int64Value", fmt.Sprint(v, 0)} }
			want := map[string]stat{
				"allocator_name":    {"ref", "GPU_0_devmem"},
				"bytes_reserved":    i64(0),
				"bytes_allocated":   i64(68 * MiB),
				"bytes_available":   i64(80<<30 - 68*MiB),
				"peak_bytes_in_use": i64(68 * MiB),
				"requested_bytes":   i64(4 * MiB),
				"allocation_bytes":  i64(4 * MiB),
				"addr":              i64(0x7f0004000000),
				"_c":                {"*xplanepb.XStat_Uint64Value", fmt.Sprint(0, step0)},
				"_ct":               i64(0),
				"tf_op":             {"ref", "fwd"},
				"region_type":       {"ref", "activations"},
				"memory_kind":       {"ref", "device"},
				"tags":              {"ref", "activations"},
				"span":              {"ref", "train/fwd"},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("stats\n got %v\nwant %v", got, want)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d allocations of the first step's activations on the GPU's memory line, want 1", found)
	}
	got := readXSpace(t, data)
	if w, g := memoryEvents(s, true), memoryEvents(got, true); !slices.Equal(w, g) {
		t.Errorf("memory events read back\n got %q\nwant %q", g, w)
	}
	for _, r := range got.Events {
		if r.IsStep() && len(got.Args(r)) != 0 {
			t.Errorf("step %d read back with arguments %v", r.StepNum(), got.Args(r))
		}
	}
	// Written again, the file is the same.
	if again := writeXSpace(t, got); !bytes.Equal(again, writeXSpace(t, readXSpace(t, again))) {
		t.Error("a file written from one read back changes when written again")
	}
}

// TSL's allocator events in a real JAX profile become the memory track of
// their allocator, keeping TSL's own stats; written again they are the
// same events.
func TestMemoryEventsOfJAX(t *testing.T) {
	s := readXSpace(t, mustReadFile(t, realJAX))
	evs := memoryEvents(s, false)
	if len(evs) != 64 {
		t.Fatalf("%d memory events in the JAX profile, want 64", len(evs))
	}
	tls := s.MemoryTimelines(8)
	if len(tls) != 1 || tls[0].Device != 0 || s.Tracks[tls[0].Track-1].Name != "GPU_0_bfc" {
		t.Fatalf("timelines %+v", tls)
	}
	if tl := tls[0]; tl.Peak != 10488320 || tl.LifetimePeak != 137363968 {
		t.Errorf("peak %d (lifetime %d), want 10488320 (137363968) as xprof's memory_profile shows", tl.Peak, tl.LifetimePeak)
	}
	// TSL's stats (its allocator, fragmentation, free bytes) stay; written
	// again, only their order may change (the writer's).
	for _, r := range s.Events {
		if tr, ok := s.TrackOf(r); ok && tr.Kind == event.TrackMemory {
			keys := map[string]bool{}
			for _, a := range s.Args(r) {
				keys[a.Key] = true
			}
			for _, k := range []string{"address", "bytes", "bytes_in_use", "peak_bytes_in_use", "allocator_name", "requested_bytes", "fragmentation", "bytes_available"} {
				if !keys[k] {
					t.Fatalf("%s lacks %s: %v", s.Name(r), k, s.Args(r))
				}
			}
			break
		}
	}
	again := readXSpace(t, writeXSpace(t, s))
	if w, g := evs, memoryEvents(again, false); !slices.Equal(w, g) {
		t.Errorf("JAX memory events written and read again differ:\n got %q\nwant %q", g[:2], w[:2])
	}
}
