package recorder

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
)

// A plain buffer snapshotted while 64 goroutines begin, nest and end
// spans — a third of them ended on other goroutines, many ended after the
// snapshot, some twice — exports records that never change afterwards:
// ends are plain stores (EndSpan), and the snapshot closes open spans and
// waits for every End in flight before it reads them. Run with and
// without -race: the race build takes the atomic form of the same
// protocol (publish_atomic.go), the plain build the plain stores.
func TestStressSnapshotWhileSpansRun(t *testing.T) {
	for round := range 3 {
		b := NewBuffer(1<<20, 3)
		var stop atomic.Bool
		var began atomic.Int32 // workers that have recorded a span
		ends := make(chan func(), 4096)
		var enders, workers sync.WaitGroup
		for range 4 {
			enders.Add(1)
			go func() {
				defer enders.Done()
				for end := range ends {
					end()
				}
			}()
		}
		for g := range 64 {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for i := 0; !stop.Load(); i++ {
					ctx, outer, _ := b.StartSpan(context.Background(), "outer", []Arg{NumArg("g", event.ArgInt, uint64(g))}, 1, 0, 0, false)
					if outer == nil {
						return // full
					}
					ictx, inner, _ := b.StartSpan(ctx, "inner", nil, 1, 0, 0, false)
					if inner != nil {
						tok := ictx.EndToken()
						if i%3 == 0 {
							ends <- func() { inner.EndNow(tok); inner.EndNow(tok) }
						} else {
							inner.EndNow(tok)
						}
					}
					outer.EndNow(ctx.EndToken())
					if i == 0 {
						began.Add(1)
					}
					if i%2 == 0 {
						outer.EndNow(ctx.EndToken()) // twice: the first end stays
					}
				}
			}()
		}
		// On a loaded machine the workers may not have run yet when a
		// fixed sleep ends (CI once snapshotted nothing): wait for some.
		for deadline := time.Now().Add(10 * time.Second); began.Load() < 8 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(20+30*round) * time.Millisecond)
		s := b.Snapshot(event.Meta{Stop: event.ClockAnchor{Mono: nanotime()}})
		type fact struct {
			start, end int64
			ended      bool
		}
		before := make(map[uint64]fact, len(s.Events))
		for _, r := range s.Events {
			before[r.ID()] = fact{r.Start(), r.End(), r.Ended()}
			if r.Ended() && r.End() < r.Start() {
				t.Fatalf("span %d ends at %d before its start %d", r.ID(), r.End(), r.Start())
			}
		}
		// Spans go on ending (after the snapshot) for a while.
		time.Sleep(10 * time.Millisecond)
		stop.Store(true)
		workers.Wait()
		close(ends)
		enders.Wait()
		open := 0
		for _, r := range s.Events {
			if f := before[r.ID()]; f != (fact{r.Start(), r.End(), r.Ended()}) {
				t.Fatalf("record %d changed after the snapshot: %+v, now start %d end %d ended %v", r.ID(), f, r.Start(), r.End(), r.Ended())
			}
			if !r.Ended() {
				open++
				// (A span the writers, never deactivated here, began after
				// the stop time was read ends where it began.)
				if end, fin := s.EndOf(r); fin || end != max(s.Meta.Stop.Mono, r.Start()) {
					t.Fatalf("open span %d ends at %d (finished %v), want the stop time", r.ID(), end, fin)
				}
			}
		}
		if len(s.Events) == 0 {
			t.Fatal("nothing recorded")
		}
		t.Logf("round %d: %d events, %d open at the snapshot", round, len(s.Events), open)
	}
}

// Ps past the buffer's shards (GOMAXPROCS raised after it was made) share
// the spill shard under its lock: nothing is lost or written twice, and
// no span context is handed out twice.
func TestSpillShardSharedByExtraPs(t *testing.T) {
	// One shard: every P but P 0 spills. The budget has room to spare:
	// a chunk refilled for a goroutine that meanwhile moved to a P with
	// room is retired with its room unused (pinSlow), up to a chunk each.
	b := newBuffer(1<<17, 3, 1, chunkRecords)
	const goroutines, per = 16, 2000
	var wg sync.WaitGroup
	ctxs := make([][]*SpanContext, goroutines) // every context handed out, by goroutine
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				ctx, r, _ := b.StartSpan(context.Background(), "s", nil, 1, 0, 0, false)
				if r == nil {
					t.Error("a span was dropped")
					return
				}
				ctxs[g] = append(ctxs[g], ctx)
				r.EndNow(ctx.EndToken())
				b.Put(&Entry{Kind: event.KindInstant}, "i", nil)
			}
		}()
	}
	wg.Wait()
	handed := map[*SpanContext]bool{} // the spill shard's block of contexts is shared too
	for _, cs := range ctxs {
		for _, c := range cs {
			if handed[c] {
				t.Fatalf("context %p handed out twice", c)
			}
			handed[c] = true
		}
	}
	s := b.Snapshot(event.Meta{})
	if len(s.Events) != 2*goroutines*per || s.Meta.Dropped() != 0 {
		t.Fatalf("%d events, %d dropped; want %d and 0", len(s.Events), s.Meta.Dropped(), 2*goroutines*per)
	}
	seen := map[uint64]bool{}
	for _, r := range s.Events {
		if seen[r.ID()] {
			t.Fatalf("ID %d twice", r.ID())
		}
		seen[r.ID()] = true
		if s.Name(r) == "s" && !r.Ended() {
			t.Fatalf("span %d lost its end", r.ID())
		}
	}
	if b.spill.cur.Load() == nil && runtime.GOMAXPROCS(0) > 1 {
		t.Log("no goroutine ran on a P past the first: the spill shard was not exercised this time")
	}
}
