package event

import "testing"

func TestStreamOf(t *testing.T) {
	procs := []Process{
		{PID: 620, Name: "python3", Labels: []string{"CPU"}},             // 1: Kineto's host process
		{PID: 0, Name: "python3", Labels: []string{"GPU 3"}},             // 2: Kineto's device 3
		{PID: 7, Name: "GPU 1 (NVIDIA H100 80GB HBM3)"},                  // 3: devprof's Chrome writer
		{PID: 1, Name: "/device:GPU:0"},                                  // 4: JAX's Perfetto JSON
		{PID: 9, Name: "GPU x", Labels: []string{"GPU -1", "GPU 2 (a)"}}, // 5: the first label that reads
		{PID: 10, Name: "GPUs"},                                          // 6: not a device
	}
	for _, c := range []struct {
		name   string
		t      Track
		device int
		stream int64
		ok     bool
	}{
		{"a device stream", Track{Kind: TrackDeviceStream, Device: 2, ID: 7, Name: "Stream #9"}, 2, 7, true},
		{"a device stream of no device", Track{Kind: TrackDeviceStream, Device: -1, ID: 7}, -1, 0, false},
		{"a whole device", Track{Kind: TrackDevice, Device: 2}, -1, 0, false},
		{"memory", Track{Kind: TrackMemory, Device: 2}, -1, 0, false},
		{"a process", Track{Kind: TrackProcess, Process: 2}, -1, 0, false},
		{"a host thread", Track{Kind: TrackHostThread, ID: 1909984960, Process: 1}, -1, 0, false},
		{"a program thread", Track{Kind: TrackHostThread, ID: 5, Name: "main"}, -1, 0, false},
		{"Kineto's stream", Track{Kind: TrackHostThread, ID: 13, Name: "stream 13 ", Process: 2}, 3, 13, true},
		{"a GPU process's named stream", Track{Kind: TrackHostThread, ID: 99, Name: "Stream #4(Memcpy)", Process: 3}, 1, 4, true},
		{"JAX's stream", Track{Kind: TrackHostThread, ID: 14, Name: "Stream #14(Compute)", Process: 4}, 0, 14, true},
		{"a stream named on the program", Track{Kind: TrackHostThread, Device: 1, ID: 3, Name: "Stream #12"}, 1, 12, true},
		{"a stream name without a number", Track{Kind: TrackHostThread, ID: 3, Name: "Stream #main", Process: 4}, 0, 3, true},
		{"a stream name of no device", Track{Kind: TrackHostThread, Device: -1, ID: 3, Name: "Stream #12"}, -1, 0, false},
		{"a label after one that does not read", Track{Kind: TrackHostThread, ID: 5, Process: 5}, 2, 5, true},
		{"a name that only starts like GPU", Track{Kind: TrackHostThread, ID: 5, Process: 6}, -1, 0, false},
		{"a process out of range", Track{Kind: TrackHostThread, ID: 5, Process: 40}, -1, 0, false},
		{"stream case matters", Track{Kind: TrackHostThread, ID: 5, Name: "stream #5"}, -1, 0, false},
	} {
		d, s, ok := StreamOf(c.t, procs)
		if d != c.device || s != c.stream || ok != c.ok {
			t.Errorf("%s: StreamOf = %d, %d, %v; want %d, %d, %v", c.name, d, s, ok, c.device, c.stream, c.ok)
		}
	}
}

func FuzzStreamOf(f *testing.F) {
	f.Add("Stream #14(Compute)", "GPU 0 (H100)", "GPU 1", int64(3), 0, uint8(TrackHostThread))
	f.Add("stream 13 ", "python3", "GPU 3", int64(13), 0, uint8(TrackHostThread))
	f.Fuzz(func(t *testing.T, name, proc, label string, id int64, device int, kind uint8) {
		tr := Track{Kind: TrackKind(kind), Name: name, ID: id, Device: device, Process: 1}
		d, s, ok := StreamOf(tr, []Process{{Name: proc, Labels: []string{label}}})
		if !ok && (d != -1 || s != 0) {
			t.Fatalf("not a stream, yet device %d stream %d", d, s)
		}
		if ok && d < 0 {
			t.Fatalf("a stream of device %d", d)
		}
	})
}
