package goruntimesource

import (
	"bytes"
	"runtime"
	rtrace "runtime/trace"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/gotrace"
	"github.com/devprof/devprof/internal/recorder"
)

// busyTrace records d of a busy program's execution trace: goroutines
// passing values over channels and allocating (so the collector runs).
func busyTrace(tb testing.TB, d time.Duration) []byte {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		ch := make(chan []byte)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(ch)
			for {
				select {
				case <-stop:
					return
				case ch <- make([]byte, 4096):
				}
			}
		}()
		go func() {
			defer wg.Done()
			for b := range ch {
				runtime.KeepAlive(b)
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	rtrace.Stop()
	return buf.Bytes()
}

// BenchmarkParse is the parse a session's Stop does: a busy program's
// execution trace into the session's buffer, in trace events per second.
func BenchmarkParse(b *testing.B) {
	data := busyTrace(b, 200*time.Millisecond)
	var events int64
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		buf := recorder.NewBuffer(8<<20, 3)
		res, err := gotrace.Convert(bytes.NewReader(data), &sink{b: buf, open: map[uint64]begunSlice{}}, gotrace.Options{MonoClock: true, KeepRuns: true})
		if err != nil {
			b.Fatal(err)
		}
		events = res.Events
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events), "events/trace")
}
