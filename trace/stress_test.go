package trace_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/trace"
)

// A session stopped while 64 goroutines begin and end spans (a third of
// them ended by other goroutines, many after Stop) writes outputs that
// read back exactly, and its snapshot does not change when those spans
// end afterwards.
func TestStressStopWhileSpansRun(t *testing.T) {
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off, MaxEvents: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	ends := make(chan annotate.Span, 1024)
	var wg, enders sync.WaitGroup
	enders.Add(1)
	go func() {
		defer enders.Done()
		for sp := range ends {
			sp.End()
		}
	}()
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				ctx, outer := annotate.Begin(context.Background(), "outer", annotate.Int("g", g))
				_, inner := annotate.Begin(ctx, "inner")
				if i%3 == 0 {
					ends <- inner
				} else {
					inner.End()
				}
				if i%16 == 0 {
					time.Sleep(50 * time.Microsecond) // spans open across Stop
				}
				outer.End()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	ends0 := make([]int64, len(snap.Events))
	for i, r := range snap.Events {
		ends0[i], _ = snap.EndOf(r)
	}
	time.Sleep(20 * time.Millisecond) // spans end after Stop
	stop.Store(true)
	wg.Wait()
	close(ends)
	enders.Wait()
	for i, r := range snap.Events {
		if e, _ := snap.EndOf(r); e != ends0[i] {
			t.Fatalf("span %q (%d) ended at %d after Stop, %d in the snapshot", snap.Name(r), r.ID(), e, ends0[i])
		}
	}
	if len(snap.Events) == 0 {
		t.Fatal("nothing recorded")
	}
	checkSpansMultiset(t, s.Outputs().Perfetto, snap)
}

// checkSpansMultiset is checkRoundTrip for traces of many goroutines,
// whose spans may share a name, start and length: the Perfetto file at
// path holds exactly snap's spans, with their parents, as a multiset.
func checkSpansMultiset(t *testing.T, path string, snap *event.Snapshot) {
	t.Helper()
	tr, err := perfetto.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		name, parent string
		start, dur   int64
	}
	count := map[key]int{}
	for _, sl := range tr.Slices {
		k := key{name: sl.Name, start: sl.Start, dur: sl.Dur}
		if sl.Parent >= 0 {
			k.parent = tr.Slices[sl.Parent].Name
		}
		count[k]++
	}
	for _, r := range snap.Events {
		end, _ := snap.EndOf(r)
		k := key{name: snap.Name(r), start: snap.Meta.BootNanos(r.Start()), dur: end - r.Start()}
		if p := snap.Lookup(r.Parent()); p != nil {
			k.parent = snap.Name(p)
		}
		if count[k]--; count[k] < 0 {
			t.Fatalf("span %+v not in the Perfetto file (or fewer times than recorded)", k)
		}
	}
	for k, n := range count {
		if n != 0 {
			t.Fatalf("span %+v in the Perfetto file %d more times than recorded", k, n)
		}

	}
}
