package perfetto

import (
	"bytes"
	"testing"

	"github.com/devprof/devprof/event"
)

// jaxLikeTrace encodes a trace shaped like a JAX capture that devprof
// collect merged (about 78k slices and 11k instants on three threads of
// one process, in 3 MB): steps of jitted calls two levels deep, each
// call with an argument, and an instant inside most steps. It has n
// slices.
func jaxLikeTrace(tb testing.TB, n int) []byte {
	tb.Helper()
	stop := int64(1_000_000 + (n/21+1)*25_000)
	b := event.NewBuilder(event.Meta{Program: "python3", PID: 4242,
		Start: event.ClockAnchor{Mono: 1_000_000, Boot: 1_000_000}, Stop: event.ClockAnchor{Mono: stop, Boot: stop}})
	threads := []uint32{
		b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "python3"}),
		b.Track(event.Track{Kind: event.TrackHostThread, ID: 2, Name: "tf_pjrt_thread"}),
		b.Track(event.Track{Kind: event.TrackHostThread, ID: 3, Name: "XLA CPU"}),
	}
	t := int64(1_000_000)
	for i := 0; i < n; {
		tr := threads[i%len(threads)]
		step := b.Span(event.Span{Name: "devprof-jax-step", Start: t, End: t + 20_000, Track: tr})
		i++
		for c := int64(0); c < 10 && i < n; c++ {
			at := t + 100 + c*1_900
			call := b.Span(event.Span{Name: "PjitFunction(<lambda>)", Start: at, End: at + 1_500, Parent: step, Track: tr,
				Args: []event.Arg{{Key: "run_id", Kind: event.ArgInt, Num: uint64(i)}}})
			i++
			if i < n {
				b.Span(event.Span{Name: "ThunkExecutor::Execute", Start: at + 200, End: at + 1_200, Parent: call, Track: tr})
				i++
			}
		}
		if i%7 != 0 {
			b.Instant("TransferToDevice", t+19_500, tr, step, []event.Arg{{Key: "bytes", Kind: event.ArgInt, Num: 4096}})
		}
		t += 25_000
	}
	var buf bytes.Buffer
	if err := Write(&buf, b.Snapshot(), WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkRead reports how fast the reader turns a 100k-event Perfetto
// trace (shaped as a merged JAX capture) into an event snapshot: Read
// and Snapshot, as devprof convert and summary do. events/s counts
// slices, instants and counter samples read.
func BenchmarkRead(b *testing.B) {
	data := jaxLikeTrace(b, 90_000)
	t, err := ReadTrace(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	events := len(t.Slices) + len(t.Instants) + len(t.Counters)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		t, err := ReadTrace(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		t.Snapshot()
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events), "events")
}
