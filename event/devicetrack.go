package event

import (
	"strconv"
	"strings"
)

// StreamOf reports whether the events on track t are work queued on a
// device's stream, and if so which device (its ordinal) and which stream.
// procs are the trace's processes (Snapshot.Processes), which a host
// thread's Process indexes from 1.
//
// It is a convention for reading the model, not a property of it: a
// source that records device work (CUPTI, an XSpace's device plane, a
// Perfetto device track) puts it on a TrackDeviceStream, but the Chrome
// format has no device tracks, so the tools that write it (Kineto, JAX,
// devprof's own writer) give each stream as a thread of a process that
// stands for the device, and the model read back keeps them as host
// threads. Every consumer that asks "where did the device work run"
// (devprof analyze, the kernels table) must answer alike, so they ask
// here. A track is a device's stream when it is:
//
//   - a TrackDeviceStream of a device (Device >= 0): that device, its ID;
//   - a TrackHostThread of a process whose name or one of whose labels is
//     "GPU <n>" or begins with "GPU <n> " (Kineto's labels, devprof's
//     process names: "GPU 0 (NVIDIA H100 80GB HBM3)"): device n;
//   - otherwise a TrackHostThread named as TSL and devprof name streams,
//     "Stream #<id>..." ("Stream #14(Compute)"): its Device field (the
//     Chrome reader sets it on the threads of the "GPU <n>" processes it
//     folds into the program's in a file devprof wrote; 0 elsewhere).
//
// The stream of a host thread is the number its name gives after
// "Stream #" where it has one (a Chrome thread's id is not always its
// stream's), else the thread's ID (Kineto names a stream's thread by the
// stream's id: tid 13, "stream 13").
func StreamOf(t Track, procs []Process) (device int, stream int64, ok bool) {
	switch t.Kind {
	case TrackDeviceStream:
		if t.Device < 0 {
			return -1, 0, false
		}
		return t.Device, t.ID, true
	case TrackHostThread:
	default:
		return -1, 0, false
	}
	device = -1
	if t.Process > 0 && t.Process <= len(procs) {
		p := &procs[t.Process-1]
		if n, ok := gpuOrdinal(p.Name); ok {
			device = n
		} else {
			for _, l := range p.Labels {
				if n, ok := gpuOrdinal(l); ok {
					device = n
					break
				}
			}
		}
	}
	if device < 0 && strings.HasPrefix(t.Name, "Stream #") {
		device = t.Device
	}
	if device < 0 {
		return -1, 0, false
	}
	if n, ok := streamNumber(t.Name); ok {
		return device, n, true
	}
	return device, t.ID, true
}

// gpuOrdinal reads "GPU <n>", alone or followed by a space and more.
func gpuOrdinal(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "GPU ")
	if !ok {
		return 0, false
	}
	rest, _, _ = strings.Cut(rest, " ")
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// streamNumber reads the stream a name such as "Stream #7(Compute)"
// gives.
func streamNumber(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "Stream #")
	if !ok {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.ParseInt(rest[:end], 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
