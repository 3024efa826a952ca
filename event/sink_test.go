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
		byID[r.ID] = r
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
	if s.Events[0].ID != id || id != 1 {
		t.Errorf("the first span after Reset has ID %d, want 1", id)
	}
	if s.Meta.Program != "p" || s.Meta.PID != 7 || s.Meta.Host != "" || s.Meta.Dropped() != 0 {
		t.Errorf("Reset kept %+v, want NewBuilder's metadata", s.Meta)
	}
}
