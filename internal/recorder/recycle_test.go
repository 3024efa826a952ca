package recorder

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// collect runs the garbage collector and gives the finalizer goroutine
// time to hand what it found to recycledRecords.
func collect() {
	runtime.GC()
	time.Sleep(2 * time.Millisecond)
}

// A full-size chunk's record array that nothing refers to reaches the
// pool the next buffers take from; one something still points into never
// does, and keeps what it held.
func TestRecordsRecycledOnlyWhenUnreferenced(t *testing.T) {
	const arrays = 8 // the race detector's sync.Pool drops a quarter of Puts
	for recycledRecords.Get() != nil {
		// What earlier tests' buffers left.
	}
	dropped := map[uintptr]bool{}
	for range arrays {
		recs := newRecords(chunkRecords)
		for i := range recs {
			recs[i].state.Store(1)
			recs[i].ID = uint64(i) + 1
		}
		dropped[uintptr(unsafe.Pointer(&recs[0]))] = true
	}
	held := newRecords(chunkRecords)
	held[100].ID = 42
	held[100].state.Store(1)
	heldAddr := uintptr(unsafe.Pointer(&held[0]))
	keep := &held[100] // an interior pointer holds the whole array
	held = nil

	recycled := 0
	for round := 0; round < 50 && recycled == 0; round++ {
		collect()
		for {
			a, _ := recycledRecords.Get().(*[chunkRecords]Record)
			if a == nil {
				break
			}
			addr := uintptr(unsafe.Pointer(&a[0]))
			if addr == heldAddr {
				t.Fatal("an array still referred to was recycled")
			}
			if dropped[addr] {
				recycled++
			}
		}
	}
	if recycled == 0 {
		t.Fatal("no dropped array was recycled after 50 collections")
	}
	if keep.ID != 42 || keep.state.Load() != 1 {
		t.Fatalf("held record changed: ID %d state %d", keep.ID, keep.state.Load())
	}
	runtime.KeepAlive(keep)
}

// A recycled array comes back with every record unpublished: no reader
// takes an old event for a committed one, no End matches an old span.
func TestReusedRecordsCleared(t *testing.T) {
	a := new([chunkRecords]Record)
	for i := range a {
		a[i].state.Store(1)
		a[i].end.Store(-int64(i) - 1)
	}
	recs := reuse(a)
	for i := range recs {
		if recs[i].state.Load() != 0 || recs[i].end.Load() != 0 {
			t.Fatalf("record %d: state %d end %d, want both 0", i, recs[i].state.Load(), recs[i].end.Load())
		}
	}
}

// A snapshot a program keeps reads the same while later buffers record
// into recycled chunks: the chunks it was made of are not among them.
func TestKeptSnapshotSurvivesRecycling(t *testing.T) {
	const spans = 3 * chunkRecords
	record := func(prefix string) *event.Snapshot {
		b := NewBuffer(1<<20, 3)
		for i := range spans {
			_, r, _ := b.StartSpanInt(context.Background(), prefix, "i", int64(i), 1, false)
			if r == nil {
				t.Fatal("buffer full")
			}
			r.EndNow(r.ID)
		}
		return b.Snapshot(event.Meta{})
	}
	kept := record("kept")
	reused := recordsReused.Load()
	check := func() {
		t.Helper()
		if len(kept.Events) != spans {
			t.Fatalf("kept snapshot has %d events, want %d", len(kept.Events), spans)
		}
		for _, r := range kept.Events {
			args := kept.Args(r)
			if kept.Name(r) != "kept" || len(args) != 1 || args[0].Key != "i" || !r.Ended() {
				t.Fatalf("kept event changed: %q %+v ended %v", kept.Name(r), args, r.Ended())
			}
		}
	}
	for round := range 6 {
		s := record(fmt.Sprint("later-", round))
		if len(s.Events) != spans {
			t.Fatalf("round %d: %d events, want %d", round, len(s.Events), spans)
		}
		for _, r := range s.Events {
			if r.Ended() == false || s.Name(r) != fmt.Sprint("later-", round) {
				t.Fatalf("round %d: event %q ended %v", round, s.Name(r), r.Ended())
			}
		}
		s = nil
		collect()
		check()
	}
	if recordsReused.Load() == reused {
		t.Fatal("no later buffer recorded into a recycled chunk: the test checked nothing")
	}
}
