package chrome

import (
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
)

// TestDevicesStayApart: the streams of two GPUs in a file devprof wrote
// come back as two devices' streams (event.StreamOf), on the streaming
// and the batch path alike, though the reader folds each device's
// process into the program's.
func TestDevicesStayApart(t *testing.T) {
	const us = int64(1000)
	b := event.NewBuilder(event.Meta{Host: "h", Program: "p", PID: 10,
		Start: event.ClockAnchor{Mono: 0, Wall: 1.7e18}, Stop: event.ClockAnchor{Mono: 100 * us, Wall: 1.7e18 + 100*us}})
	b.Span(event.Span{Name: "step", Start: 0, End: 90 * us})
	for dev := range 3 {
		tr := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: dev, DeviceName: "NVIDIA H100", ID: 7, Name: "Stream #7(Compute)"})
		b.ActivityOf(event.ActivityKernel, tr, "gemm", int64(dev+1)*10*us, int64(dev+1)*10*us+5*us, nil)
	}
	data := encode(t, b.Snapshot())
	if resets := checkStream(t, "three GPUs", data); resets != 0 {
		t.Errorf("a session's trace with three GPUs was read again (%d)", resets)
	}
	for _, s := range []*event.Snapshot{mustRead(t, data), readBatch(t, data)} {
		var got []int
		for _, tk := range s.Tracks {
			if dev, stream, ok := event.StreamOf(tk, s.Processes); ok {
				if stream != 7 {
					t.Errorf("track %q: stream %d, want 7", tk.Name, stream)
				}
				got = append(got, dev)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []int{0, 1, 2}) {
			t.Errorf("devices of the streams read back: %v, want [0 1 2]", got)
		}
	}
}

// TestDeviceNamedLate: a device's process_name after its thread's first
// slice is read again through the batch path, which names the track from
// the last process_name.
func TestDeviceNamedLate(t *testing.T) {
	data := []byte(`{"traceEvents":[
{"ph":"M","name":"process_name","pid":2,"tid":0,"args":{"name":"GPU 0"}},
{"ph":"M","name":"thread_name","pid":2,"tid":5,"args":{"name":"Stream #5"}},
{"ph":"X","pid":2,"tid":5,"ts":1,"dur":1,"name":"k"},
{"ph":"M","name":"process_name","pid":2,"tid":0,"args":{"name":"GPU 1 (H100)"}}
],"otherData":{"start_unix_ns":1000}}`)
	if resets := checkStream(t, "late process_name", data); resets != 1 {
		t.Errorf("read again %d times, want once", resets)
	}
	s := mustRead(t, data)
	if len(s.Tracks) != 1 {
		t.Fatalf("%d tracks", len(s.Tracks))
	}
	if dev, _, ok := event.StreamOf(s.Tracks[0], s.Processes); !ok || dev != 1 {
		t.Errorf("device %d (%v), want 1", dev, ok)
	}
}
