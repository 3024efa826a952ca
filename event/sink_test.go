package event

import "testing"

func TestBuilderEndSpan(t *testing.T) {
	b := NewBuilder(Meta{})
	var ids []uint64
	// Enough spans for several segments, each begun unfinished.
	for i := range 3*builderSegment + 7 {
		ids = append(ids, b.Span(Span{Name: "s", Start: int64(i), Unfinished: true}))
	}
	done := b.Span(Span{Name: "done", Start: 5, End: 9})
	for i, id := range ids {
		if i%3 != 0 {
			b.EndSpan(id, int64(i)+100)
		}
	}
	b.EndSpan(done, 50)    // already ended: unchanged
	b.EndSpan(ids[1], 7)   // ended twice: the first end stays
	b.EndSpan(0, 1)        // not an ID
	b.EndSpan(1<<40, 1)    // not an ID
	b.Meta().Program = "p" // the reader fills metadata in as it learns it
	s := b.Snapshot()
	if s.Meta.Program != "p" {
		t.Errorf("Meta().Program did not reach the snapshot: %q", s.Meta.Program)
	}
	byID := map[uint64]*Record{}
	for _, r := range s.Events {
		byID[r.id] = r
	}
	for i, id := range ids {
		r := byID[id]
		if i%3 == 0 {
			if r.Ended() {
				t.Errorf("span %d ended without EndSpan", i)
			}
			continue
		}
		if !r.Ended() || r.End() != int64(i)+100 {
			t.Errorf("span %d: ended %v at %d, want %d", i, r.Ended(), r.End(), i+100)
		}
	}
	if r := byID[done]; r.End() != 9 {
		t.Errorf("EndSpan moved a finished span's end to %d", r.End())
	}
}

func TestBuilderEndSpanBeforeStart(t *testing.T) {
	b := NewBuilder(Meta{})
	id := b.Span(Span{Name: "s", Start: 10, Unfinished: true})
	b.EndSpan(id, 3)
	r := b.Snapshot().Events[0]
	if r.End() != 10 {
		t.Errorf("an end before the start: End = %d, want the start (10)", r.End())
	}
}

func TestBuilderReset(t *testing.T) {
	b := NewBuilder(Meta{Program: "p", PID: 7})
	tr := b.Track(Track{Kind: TrackHostThread, ID: 1, Name: "t"})
	b.Process(Process{PID: 9})
	b.Span(Span{Name: "gone", Start: 1, End: 2, Track: tr})
	b.Meta().Host = "h"
	b.Meta().AddDrops("x", 3)
	b.Reset()
	id := b.Span(Span{Name: "kept", Start: 5, End: 6})
	s := b.Snapshot()
	if len(s.Tracks) != 0 || len(s.Processes) != 0 || len(s.Events) != 1 || s.Name(s.Events[0]) != "kept" {
		t.Fatalf("after Reset: %d tracks, %d processes, %d events", len(s.Tracks), len(s.Processes), len(s.Events))
	}
	if s.Events[0].id != id || id != 1 {
		t.Errorf("the first span after Reset has ID %d, want 1", id)
	}
	if s.Meta.Program != "p" || s.Meta.PID != 7 || s.Meta.Host != "" || s.Meta.Dropped() != 0 {
		t.Errorf("Reset kept %+v, want NewBuilder's metadata", s.Meta)
	}
}

// TestBuilderLanesOfChildrenOfTrackSpans holds the lanes of spans on no
// track to what they were when every span's lane was kept: the lane of
// the root of its chain of Span-added parents, on a track or not.
func TestBuilderLanesOfChildrenOfTrackSpans(t *testing.T) {
	rng := uint64(12345)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(n))
	}
	b := NewBuilder(Meta{})
	tr := b.Track(Track{Kind: TrackHostThread, ID: 1, Name: "t"})
	lanes := map[uint64]uint32{} // the old bookkeeping: every Span-added span
	var ids []uint64
	want := map[uint64]uint32{}
	for i := range 3000 {
		var parent uint64
		if len(ids) > 0 && next(4) > 0 {
			parent = ids[next(len(ids))]
		}
		if next(10) == 0 {
			parent = 1 << 40 // no such span
		}
		switch next(5) {
		case 0: // a root on a track that keeps no lane
			ids = append(ids, b.TrackSlice(tr, "ts", int64(i), int64(i)+1, nil))
			continue
		case 1, 2: // on a track
			id := b.Span(Span{Name: "on", Start: int64(i), End: int64(i) + 1, Parent: parent, Track: tr})
			lane := uint32(id)
			if l, ok := lanes[parent]; ok {
				lane = l
			}
			lanes[id] = lane
			ids = append(ids, id)
		default: // on no track: its lane is what the test checks
			id := b.Span(Span{Name: "off", Start: int64(i), End: int64(i) + 1, Parent: parent})
			lane := uint32(id)
			if l, ok := lanes[parent]; ok {
				lane = l
			}
			lanes[id] = lane
			want[id] = lane
			ids = append(ids, id)
		}
	}
	s := b.Snapshot()
	checked := 0
	for _, r := range s.Events {
		if l, ok := want[r.id]; ok {
			checked++
			if r.lane != l {
				t.Errorf("span %d (parent %d): lane %d, want %d", r.id, r.parent, r.lane, l)
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d spans on no track checked", checked)
	}
}
