package devmem_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// memRecord is a memory event of a trace, its arguments by key.
type memRecord struct {
	kind  event.ActivityKind
	name  string
	track event.Track
	t     int64
	args  map[string]any
}

// memEvents returns the memory events of s in time order.
func memEvents(t *testing.T, s *event.Snapshot) []memRecord {
	t.Helper()
	var out []memRecord
	for _, r := range s.Events {
		tr, ok := s.TrackOf(r)
		if !ok || tr.Kind != event.TrackMemory {
			continue
		}
		if end, _ := s.EndOf(r); r.Kind() != event.KindActivity || end != r.Start() {
			t.Errorf("memory event %s is a %v of %d ns, want an instant activity", s.Name(r), r.Kind(), end-r.Start())
		}
		m := memRecord{kind: r.Activity(), name: s.Name(r), track: tr, t: r.Start(), args: map[string]any{}}
		for _, a := range s.Args(r) {
			m.args[a.Key] = a.Value()
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b memRecord) int { return cmp.Compare(a.t, b.t) })
	return out
}

// recordTracking runs fn in a recorded session with tracking on (CUDA
// off) and returns the session's snapshot.
func recordTracking(t *testing.T, maxEvents int64, o devmem.Options, fn func(ctx context.Context)) *event.Snapshot {
	t.Helper()
	o.CUDA = devmem.ModeOff
	if err := devmem.Start(o); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := devmem.Stop(); err != nil {
			t.Error(err)
		}
	}()
	return eventtest.Record(t, maxEvents, fn)
}

func TestSessionEvents(t *testing.T) {
	const MiB = 1 << 20
	s := recordTracking(t, 10_000, devmem.Options{MaxBuffers: 3}, func(ctx context.Context) {
		ctx = devmem.WithTags(ctx, "model")
		ctx, step := annotate.Step(ctx, "train", 3)
		fctx, fwd := annotate.Begin(ctx, "forward")
		devmem.Alloc(fctx, 0x10, 10*MiB, devmem.Attrs{Tags: []string{"weights"}})
		fwd.End()
		devmem.Alloc(ctx, 0x20, 20*MiB, devmem.Attrs{Device: 1, Kind: "managed"})
		devmem.Alloc(context.Background(), 0x30, 5, devmem.Attrs{Device: -1})
		devmem.Free(0x10)
		devmem.Free(0x10)                                       // double free: no event
		devmem.Free(0x99)                                       // unknown: no event
		devmem.Alloc(ctx, 0x20, 1*MiB, devmem.Attrs{Device: 1}) // 0x20's free was missed
		devmem.Alloc(ctx, 0x40, 0, devmem.Attrs{})              // zero size: no event
		devmem.Alloc(ctx, 0x50, 1, devmem.Attrs{})
		devmem.Alloc(ctx, 0x60, 1, devmem.Attrs{}) // the table is full: no event
		step.End()
	})
	evs := memEvents(t, s)
	type want struct {
		kind   event.ActivityKind
		device int
		args   map[string]any
	}
	wants := []want{
		{event.ActivityAlloc, 0, map[string]any{"address": uint64(0x10), "bytes": uint64(10 * MiB), "memory_kind": "device", "tags": "model,weights",
			"span": "train/forward", "bytes_in_use": uint64(10 * MiB), "peak_bytes_in_use": uint64(10 * MiB), "step": int64(3)}},
		{event.ActivityAlloc, 1, map[string]any{"address": uint64(0x20), "bytes": uint64(20 * MiB), "memory_kind": "managed", "tags": "model",
			"span": "train", "bytes_in_use": uint64(20 * MiB), "peak_bytes_in_use": uint64(20 * MiB), "step": int64(3)}},
		{event.ActivityAlloc, -1, map[string]any{"address": uint64(0x30), "bytes": uint64(5), "memory_kind": "device",
			"bytes_in_use": uint64(5), "peak_bytes_in_use": uint64(5)}},
		// A free carries its allocation's facts.
		{event.ActivityFree, 0, map[string]any{"address": uint64(0x10), "bytes": uint64(10 * MiB), "memory_kind": "device", "tags": "model,weights",
			"span": "train/forward", "bytes_in_use": uint64(0), "peak_bytes_in_use": uint64(10 * MiB), "step": int64(3)}},
		// The replaced buffer is freed before the new one is allocated.
		{event.ActivityFree, 1, map[string]any{"address": uint64(0x20), "bytes": uint64(20 * MiB), "memory_kind": "managed", "tags": "model",
			"span": "train", "bytes_in_use": uint64(0), "peak_bytes_in_use": uint64(20 * MiB), "step": int64(3)}},
		{event.ActivityAlloc, 1, map[string]any{"address": uint64(0x20), "bytes": uint64(1 * MiB), "memory_kind": "device", "tags": "model",
			"span": "train", "bytes_in_use": uint64(1 * MiB), "peak_bytes_in_use": uint64(20 * MiB), "step": int64(3)}},
		{event.ActivityAlloc, 0, map[string]any{"address": uint64(0x50), "bytes": uint64(1), "memory_kind": "device", "tags": "model",
			"span": "train", "bytes_in_use": uint64(1), "peak_bytes_in_use": uint64(10 * MiB), "step": int64(3)}},
	}
	if len(evs) != len(wants) {
		t.Fatalf("%d memory events, want %d: %+v", len(evs), len(wants), evs)
	}
	names := map[int]string{-1: "host memory (devmem)", 0: "GPU 0 memory (devmem)", 1: "GPU 1 memory (devmem)"}
	for i, w := range wants {
		e := evs[i]
		if e.kind != w.kind || e.name != w.kind.String() || e.track.Device != w.device || e.track.Name != names[w.device] {
			t.Errorf("event %d: %v %q on %+v, want %v on device %d", i, e.kind, e.name, e.track, w.kind, w.device)
		}
		if fmt.Sprint(e.args) != fmt.Sprint(w.args) {
			t.Errorf("event %d args\n got %v\nwant %v", i, e.args, w.args)
		}
		if i > 0 && e.t <= evs[i-1].t {
			t.Errorf("event %d at %d, not after the one before (%d)", i, e.t, evs[i-1].t)
		}
		if e.t < s.Meta.Start.Mono || e.t > s.Meta.Stop.Mono {
			t.Errorf("event %d at %d, outside the session [%d, %d]", i, e.t, s.Meta.Start.Mono, s.Meta.Stop.Mono)
		}
	}
	// One track per device, registered once.
	n := 0
	for _, tr := range s.Tracks {
		if tr.Kind == event.TrackMemory {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d memory tracks, want 3: %+v", n, s.Tracks)
	}
}

// Allocations made before a session are carried into its trace at its
// first memory event (issue 39: they showed as "(not in trace)" though
// the tracker knew their tags); their frees are matched to them; the
// counts of in use include them. A second session carries them again and
// registers its own tracks.
func TestSessionEventsAcrossSessions(t *testing.T) {
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	devmem.Alloc(context.Background(), 1, 100, devmem.Attrs{Tags: []string{"early"}})
	for range 2 {
		s := eventtest.Record(t, 1000, func(ctx context.Context) {
			devmem.Alloc(ctx, 2, 10, devmem.Attrs{})
			devmem.Free(2)
		})
		evs := memEvents(t, s)
		if len(evs) != 3 || evs[0].args[event.ArgCarried] != uint64(1) || evs[0].args["tags"] != "early" || evs[0].args["bytes_in_use"] != uint64(100) ||
			evs[1].args["bytes_in_use"] != uint64(110) || evs[2].args["bytes_in_use"] != uint64(100) {
			t.Fatalf("events %+v, want the early buffer carried (100 bytes in use), an alloc to 110 bytes in use and a free to 100", evs)
		}
	}
	devmem.Alloc(context.Background(), 3, 1, devmem.Attrs{}) // no session: no event, no panic
	s := eventtest.Record(t, 1000, func(ctx context.Context) { devmem.Free(1) })
	evs := memEvents(t, s)
	if len(evs) != 3 || evs[0].args["bytes_in_use"] != uint64(100) || evs[1].args["bytes_in_use"] != uint64(101) ||
		evs[2].kind != event.ActivityFree || evs[2].args["tags"] != "early" || evs[2].args["bytes"] != uint64(100) || evs[2].args["bytes_in_use"] != uint64(1) {
		t.Errorf("events %+v, want both live buffers carried (largest first), then the free of the early buffer, leaving 1 byte", evs)
	}
	tl := s.MemoryTimelines(8)
	if len(tl) != 1 || tl[0].InUse[len(tl[0].InUse)-1] != 1 || slices.ContainsFunc(tl[0].Series, func(se event.MemorySeries) bool { return se.Key == event.MemoryUnseen }) {
		t.Errorf("timeline %+v, want 1 byte in use at the end, all of it in the trace", tl)
	}
}

// Events of many goroutines, replayed in time order, give each event's
// bytes in use exactly: the trace's order is the table's.
func TestSessionEventsConcurrent(t *testing.T) {
	const workers, each = 8, 300
	s := recordTracking(t, 1<<20, devmem.Options{}, func(ctx context.Context) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range uint64(each) {
					// Workers share addresses: frees and reuses of one
					// address race between them.
					addr := i % 16
					devmem.Alloc(ctx, addr, uint64(w+1), devmem.Attrs{Device: w % 2, Tags: []string{fmt.Sprint("w", w)}})
					devmem.Free(addr)
				}
			}()
		}
		wg.Wait()
	})
	if d := s.Meta.Dropped(); d != 0 {
		t.Fatalf("%d events dropped", d)
	}
	evs := memEvents(t, s)
	inUse := map[int]uint64{}
	live := map[uint64]uint64{}
	for i, e := range evs {
		addr, bytes := e.args["address"].(uint64), e.args["bytes"].(uint64)
		switch e.kind {
		case event.ActivityAlloc:
			if _, ok := live[addr]; ok {
				t.Fatalf("event %d: allocation at %d, still live in the replay (no free before it)", i, addr)
			}
			live[addr] = bytes
			inUse[e.track.Device] += bytes
		case event.ActivityFree:
			if live[addr] != bytes {
				t.Fatalf("event %d: free of %d bytes at %d, the replay holds %d", i, bytes, addr, live[addr])
			}
			delete(live, addr)
			inUse[e.track.Device] -= bytes
		}
		if got := e.args["bytes_in_use"].(uint64); got != inUse[e.track.Device] {
			t.Fatalf("event %d: bytes_in_use %d, the replay has %d", i, got, inUse[e.track.Device])
		}
	}
	for _, tl := range s.MemoryTimelines(4) {
		if last := tl.InUse[len(tl.InUse)-1]; last != inUse[tl.Device] {
			t.Errorf("device %d timeline ends at %d bytes, replay at %d", tl.Device, last, inUse[tl.Device])
		}
	}
}

// A full buffer drops events; the recorder counts them, and the table's
// own counts stay exact.
func TestSessionEventsDropped(t *testing.T) {
	s := recordTracking(t, 40, devmem.Options{}, func(ctx context.Context) {
		for i := range uint64(100) {
			devmem.Alloc(ctx, i, 1, devmem.Attrs{})
		}
	})
	evs := memEvents(t, s)
	if len(evs) == 0 || len(evs) >= 100 || s.Meta.Dropped() == 0 {
		t.Fatalf("%d events kept, %d dropped; want some of each", len(evs), s.Meta.Dropped())
	}
	last := evs[len(evs)-1]
	if last.args["bytes_in_use"].(uint64) != last.args["address"].(uint64)+1 {
		t.Errorf("the last event kept says %v bytes in use at address %v", last.args["bytes_in_use"], last.args["address"])
	}
}

// TestSessionCarriesLiveBuffers: buffers allocated before a session are
// written into it at its first memory event (marked carried, with their
// tags), so that its memory timeline splits them by tags from the start,
// with nothing "(not in trace)", and a later free of one takes its bytes
// from its tags' series. A second session carries what is live then.
func TestSessionCarriesLiveBuffers(t *testing.T) {
	const MiB = 1 << 20
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	ctx := context.Background()
	devmem.Alloc(ctx, 0x1, 8*MiB, devmem.Attrs{Tags: []string{"weights"}})
	devmem.Alloc(ctx, 0x2, 2*MiB, devmem.Attrs{Tags: []string{"kv-cache"}})
	devmem.Alloc(ctx, 0x3, 1*MiB, devmem.Attrs{Device: 1, Tags: []string{"weights"}})

	session := func(fn func(ctx context.Context)) *event.Snapshot { return eventtest.Record(t, 10_000, fn) }
	s := session(func(ctx context.Context) {
		devmem.Alloc(ctx, 0x4, 4*MiB, devmem.Attrs{Tags: []string{"activations"}})
		devmem.Free(0x2)
	})
	evs := memEvents(t, s)
	carried := 0
	for _, e := range evs {
		if e.args[event.ArgCarried] != nil {
			carried++
			if e.kind != event.ActivityAlloc || e.args[event.ArgTags] == nil {
				t.Errorf("carried event %+v: want an allocation with its tags", e)
			}
		}
	}
	if carried != 3 || len(evs) != 5 {
		t.Errorf("%d events, %d carried; want the 3 live buffers carried, then the allocation and the free:\n%+v", len(evs), carried, evs)
	}
	tls := s.MemoryTimelines(0)
	if len(tls) != 2 {
		t.Fatalf("%d timelines, want devices 0 and 1", len(tls))
	}
	for _, tl := range tls {
		last := map[string]uint64{}
		for _, se := range tl.Series {
			if se.Key == event.MemoryUnseen {
				t.Errorf("device %d: a %q series, peak %d", tl.Device, se.Key, se.Peak)
			}
			last[se.Key] = se.Bytes[len(se.Bytes)-1]
		}
		var want map[string]uint64
		if tl.Device == 0 {
			want = map[string]uint64{"weights": 8 * MiB, "kv-cache": 0, "activations": 4 * MiB}
		} else {
			want = map[string]uint64{"weights": 1 * MiB}
		}
		if !maps.Equal(last, want) || tl.InUse[len(tl.InUse)-1] != sum(want) {
			t.Errorf("device %d at the end: series %v, in use %d; want %v", tl.Device, last, tl.InUse[len(tl.InUse)-1], want)
		}
	}

	s = session(func(ctx context.Context) { devmem.Free(0x1) })
	evs = memEvents(t, s)
	if len(evs) != 4 || evs[3].kind != event.ActivityFree {
		t.Errorf("second session: %d events, want 0x1, 0x3, 0x4 carried, then 0x1's free:\n%+v", len(evs), evs)
	}
}

func sum(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}
