package event_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// memEvent is one allocation or free for memSnapshot.
type memEvent struct {
	free   bool
	t      int64
	addr   uint64
	bytes  uint64
	tags   string
	api    string
	inUse  uint64 // 0: no ArgInUse
	peak   uint64
	device int // its track's device
}

func memSnapshot(evs ...memEvent) *event.Snapshot {
	b := event.NewBuilder(event.Meta{Stop: event.ClockAnchor{Mono: 1 << 40}})
	tracks := map[int]uint32{}
	for _, e := range evs {
		tr, ok := tracks[e.device]
		if !ok {
			tr = b.Track(event.Track{Kind: event.TrackMemory, Device: e.device, Name: fmt.Sprintf("dev %d", e.device)})
			tracks[e.device] = tr
		}
		args := []event.Arg{
			{Key: event.ArgAddress, Kind: event.ArgUint, Num: e.addr},
			{Key: event.ArgBytes, Kind: event.ArgUint, Num: e.bytes},
		}
		if e.tags != "" {
			args = append(args, event.Arg{Key: event.ArgTags, Kind: event.ArgString, Str: e.tags})
		}
		if e.api != "" {
			args = append(args, event.Arg{Key: event.ArgAPI, Kind: event.ArgString, Str: e.api})
		}
		if e.inUse != 0 {
			args = append(args, event.Arg{Key: event.ArgInUse, Kind: event.ArgUint, Num: e.inUse},
				event.Arg{Key: event.ArgPeakInUse, Kind: event.ArgUint, Num: e.peak})
		}
		kind, name := event.ActivityAlloc, "alloc"
		if e.free {
			kind, name = event.ActivityFree, "free"
		}
		b.ActivityOf(kind, tr, name, e.t, e.t, args)
	}
	// Other activity and a non-memory track are not part of any timeline.
	stream := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7})
	b.ActivityOf(event.ActivityAlloc, stream, "MemoryAlloc", 5, 5, []event.Arg{{Key: event.ArgBytes, Kind: event.ArgUint, Num: 1 << 30}})
	return b.Snapshot()
}

// series renders a timeline's series as "key: v v v; ..." for comparison.
func series(tl event.MemoryTimeline) string {
	var out []string
	for _, s := range tl.Series {
		out = append(out, fmt.Sprintf("%s: %v peak %d", s.Key, s.Bytes, s.Peak))
	}
	return strings.Join(out, "; ")
}

func TestMemoryTimelines(t *testing.T) {
	s := memSnapshot(
		// Out of time order in storage: the timeline replays by time.
		memEvent{t: 30, addr: 3, bytes: 30, tags: "act", inUse: 160, peak: 160},
		memEvent{t: 10, addr: 1, bytes: 10, tags: "weights", inUse: 110, peak: 110}, // 100 bytes held before the trace
		memEvent{t: 20, addr: 2, bytes: 20, tags: "act", inUse: 130, peak: 130},
		memEvent{t: 40, free: true, addr: 2, bytes: 20, tags: "act", inUse: 140, peak: 160},
		memEvent{t: 50, addr: 4, bytes: 40, inUse: 180, peak: 180},
		memEvent{t: 55, addr: 4, bytes: 40, api: "cudaMalloc", inUse: 220, peak: 220},         // another key space
		memEvent{t: 60, free: true, addr: 99, bytes: 100, tags: "old", inUse: 120, peak: 220}, // allocated before the trace
		memEvent{t: 70, addr: 5, bytes: 1, tags: "tiny", inUse: 121, peak: 220},
		memEvent{t: 5, addr: 1, bytes: 8, device: -1}, // host memory, no in-use counts
	)
	tls := s.MemoryTimelines(3)
	if len(tls) != 2 {
		t.Fatalf("%d timelines, want 2 (host, GPU 0)", len(tls))
	}
	host, gpu := tls[0], tls[1]
	if host.Device != -1 || !reflect.DeepEqual(host.InUse, []uint64{8}) || host.Peak != 8 || host.LifetimePeak != 0 {
		t.Errorf("host timeline %+v", host)
	}
	if got, want := series(host), "(untagged): [8] peak 8"; got != want {
		t.Errorf("host series %s, want %s", got, want)
	}
	if gpu.Device != 0 || !reflect.DeepEqual(gpu.Times, []int64{10, 20, 30, 40, 50, 55, 60, 70}) {
		t.Errorf("gpu times %v", gpu.Times)
	}
	if want := []uint64{110, 130, 160, 140, 180, 220, 120, 121}; !reflect.DeepEqual(gpu.InUse, want) {
		t.Errorf("in use %v, want %v", gpu.InUse, want)
	}
	if gpu.Peak != 220 || gpu.PeakTime != 55 || gpu.LifetimePeak != 220 {
		t.Errorf("peak %d at %d (lifetime %d), want 220 at 55 (220)", gpu.Peak, gpu.PeakTime, gpu.LifetimePeak)
	}
	// (untagged) peaks at 80, act at 50, weights at 10, tiny at 1: the top
	// three get series, tiny is the other tags; the 100 bytes from before
	// the trace are unseen until their free.
	want := "(untagged): [0 0 0 0 40 80 80 80] peak 80; " +
		"act: [0 20 50 30 30 30 30 30] peak 50; " +
		"weights: [10 10 10 10 10 10 10 10] peak 10; " +
		"other tags: [0 0 0 0 0 0 0 1] peak 1; " +
		"(not in trace): [100 100 100 100 100 100 0 0] peak 100"
	if got := series(gpu); got != want {
		t.Errorf("series\n got %s\nwant %s", got, want)
	}
	for i := range gpu.Times {
		var sum uint64
		for _, sr := range gpu.Series {
			sum += sr.Bytes[i]
		}
		if sum != gpu.InUse[i] {
			t.Errorf("at %d the series sum to %d, in use %d", gpu.Times[i], sum, gpu.InUse[i])
		}
	}
	// No bound: every tag set has its own series; the same snapshot gives
	// the same answer every time.
	all := s.MemoryTimelines(0)
	if n := len(all[1].Series); n != 5 {
		t.Errorf("unbounded: %d series, want 4 tag sets and the unseen", n)
	}
	if !reflect.DeepEqual(all, s.MemoryTimelines(0)) {
		t.Error("MemoryTimelines is not deterministic")
	}
}

func TestMemoryTimelineReplaced(t *testing.T) {
	// An allocation at an address still live (its free was never seen)
	// replaces the old one in its series; a tag set that stays at zero
	// still gets its series.
	s := memSnapshot(
		memEvent{t: 1, addr: 1, bytes: 10, tags: "a"},
		memEvent{t: 2, addr: 1, bytes: 7, tags: "b"},
		memEvent{t: 3, addr: 2, bytes: 0, tags: "z"},
	)
	tl := s.MemoryTimelines(8)[0]
	if got, want := series(tl), "a: [10 0 0] peak 10; b: [0 7 7] peak 7; z: [0 0 0] peak 0"; got != want {
		t.Errorf("series %s, want %s", got, want)
	}
	if !reflect.DeepEqual(tl.InUse, []uint64{10, 7, 7}) || tl.Peak != 10 || tl.PeakTime != 1 {
		t.Errorf("in use %v, peak %d at %d", tl.InUse, tl.Peak, tl.PeakTime)
	}
}

func TestMemoryTimelinesNone(t *testing.T) {
	b := event.NewBuilder(event.Meta{})
	b.Span(event.Span{Name: "x", Start: 1, End: 2})
	if tls := b.Snapshot().MemoryTimelines(8); len(tls) != 0 {
		t.Errorf("%d timelines in a trace without memory events", len(tls))
	}
}
