package recorder

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// The recorder writes records that the event model then reads as its own
// (Buffer.Snapshot hands the chunks over without a copy), so the two types
// must agree field by field: name, offset, size and kind, down into the
// stored arguments. This fails the day one of them changes alone.
func TestRecordLayoutMatchesModel(t *testing.T) {
	sameLayout(t, reflect.TypeOf(Record{}), reflect.TypeOf(event.Record{}), "Record")
}

func sameLayout(t *testing.T, rec, model reflect.Type, path string) {
	t.Helper()
	if rec.Size() != model.Size() || rec.Align() != model.Align() || rec.Kind() != model.Kind() {
		t.Fatalf("%s: recorder %s (%d bytes, align %d), model %s (%d bytes, align %d)",
			path, rec.Kind(), rec.Size(), rec.Align(), model.Kind(), model.Size(), model.Align())
	}
	switch rec.Kind() {
	case reflect.Struct:
		if rec.NumField() != model.NumField() {
			t.Fatalf("%s: recorder has %d fields, model %d", path, rec.NumField(), model.NumField())
		}
		for i := 0; i < rec.NumField(); i++ {
			a, b := rec.Field(i), model.Field(i)
			if !strings.EqualFold(a.Name, b.Name) || a.Offset != b.Offset { // the model keeps its fields unexported
				t.Fatalf("%s field %d: recorder %s at %d, model %s at %d", path, i, a.Name, a.Offset, b.Name, b.Offset)
			}
			sameLayout(t, a.Type, b.Type, path+"."+a.Name)
		}
	case reflect.Array:
		if rec.Len() != model.Len() {
			t.Fatalf("%s: recorder holds %d, model %d", path, rec.Len(), model.Len())
		}
		sameLayout(t, rec.Elem(), model.Elem(), path+"[]")
	}
}

// A snapshot's records read back through the model exactly as written:
// names, inline and overflow arguments, ends, and open spans closed at stop.
func TestSnapshotReadsThroughModel(t *testing.T) {
	b := NewBuffer(100, 3)
	args := []event.Arg{
		{Key: "i", Kind: event.ArgInt, Num: 7},
		{Key: "s", Kind: event.ArgString, Str: "seven"},
		{Key: "u", Kind: event.ArgUint, Num: 8},
		{Key: "b", Kind: event.ArgBool, Num: 1},
		{Key: "s2", Kind: event.ArgString, Str: "nine"},
	}
	rid := b.Put(&Entry{Kind: event.KindSpan, Flags: FlagMonoTime, Start: 10, End: 20}, "with args", args)
	sc, open, _ := b.StartSpan(context.Background(), "open", nil, 1, FlagMonoTime, 0, false)
	open.Start = 30 // as if begun then
	s := b.Snapshot(event.Meta{Stop: event.ClockAnchor{Mono: 50}})
	if len(s.Events) != 2 {
		t.Fatalf("%d events, want 2", len(s.Events))
	}
	m := s.Lookup(rid)
	if m == nil || s.Name(m) != "with args" || m.Start() != 10 || m.End() != 20 || !m.Ended() || (m.IsStep() || m.OnTrack()) {
		t.Fatalf("record read back as %+v (name %q)", m, s.Name(m))
	}
	if got := s.Args(m); !reflect.DeepEqual(got, args) {
		t.Fatalf("args %+v, want %+v", got, args)
	}
	o := s.Lookup(sc.ID())
	if end, finished := s.EndOf(o); o.Ended() || finished || end != 50 {
		t.Fatalf("open span: ended %v, end %d finished %v; want the stop time", o.Ended(), end, finished)
	}
	open.EndSpan(sc.EndToken(), 40) // a late End must not reach an exported record
	if o.Ended() {
		t.Fatal("an End after the snapshot changed the exported record")
	}
}
