package eventtest

import (
	"strconv"

	"github.com/devprof/devprof/event"
)

// GPUShaped writes n events into sink as a reader of a GPU trace does:
// per step, nested host spans (begun unfinished, ended later), a kernel
// launch (an API call) and its kernel with a flow, and a counter sample
// every few events. The readers' and the tables'
// benchmarks measure it (a GPU trace's shape: arguments on most events,
// flows, counters), written once in a format or streamed directly.
func GPUShaped(sink event.Sink, n int) {
	thread := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	api := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 2, Name: "cuda api"})
	stream := sink.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7, Name: "Stream #7"})
	dev := sink.Track(event.Track{Kind: event.TrackDevice, Device: 0, DeviceName: "H200"})
	names := make([]string, 64)
	for i := range names {
		names[i] = "op_" + strconv.Itoa(i)
	}
	args := []event.Arg{
		{Key: event.ArgGrid, Kind: event.ArgString, Str: "128,1,1"},
		{Key: event.ArgBlock, Kind: event.ArgString, Str: "256,1,1"},
		{Key: event.ArgRegistersPerThread, Kind: event.ArgUint, Num: 64},
		{Kind: event.ArgFlow},
	}
	flow := []event.Arg{{Kind: event.ArgFlow}}
	t := int64(0)
	step := int64(0)
	for i := 0; i < n; {
		root := sink.Span(event.Span{Name: "train_step", Start: t, Track: thread, Unfinished: true, Step: true, StepNum: step})
		i++
		for j := 0; j < 16 && i < n; j++ {
			t += 100
			corr := uint64(i)
			flow[0].Num = corr
			sink.Span(event.Span{Name: names[j], Start: t, End: t + 50, Parent: root, Track: thread})
			sink.ActivityOf(event.ActivityAPI, api, "cudaLaunchKernel", t+10, t+20, flow)
			args[3].Num = corr
			sink.ActivityOf(event.ActivityKernel, stream, names[j+16], t+30, t+80, args)
			i += 3
			if j%4 == 0 && i < n {
				sink.TrackCounter(dev, "utilization", "%", t, float64(j))
				i++
			}
		}
		t += 100
		sink.EndSpan(root, t)
		step++
	}
	m := sink.Meta()
	g := GPUShapedMeta(n)
	m.Host, m.Start, m.Stop = g.Host, g.Start, g.Stop
}

// GPUShapedMeta is the metadata GPUShaped gives its trace of n events at
// its end, as readers that learn it last do: its host and clock anchors.
func GPUShapedMeta(n int) event.Meta {
	const wall = 1_700_000_000_000_000_000
	t := gpuShapedEnd(n)
	return event.Meta{Host: "bench", Start: event.ClockAnchor{Mono: 0, Wall: wall}, Stop: event.ClockAnchor{Mono: t, Wall: wall + t}}
}

// gpuShapedEnd is the time GPUShaped's trace of n events ends: its loop,
// emitting nothing.
func gpuShapedEnd(n int) int64 {
	t := int64(0)
	for i := 0; i < n; {
		i++
		for j := 0; j < 16 && i < n; j++ {
			t += 100
			i += 3
			if j%4 == 0 && i < n {
				i++
			}
		}
		t += 100
	}
	return t
}
