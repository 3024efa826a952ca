package event

import (
	"testing"
	"unicode/utf8"
)

func TestSnapshotStringsAreValidUTF8(t *testing.T) {
	b := NewBuilder(Meta{Host: "h\xff", Program: "p\xfe"})
	b.Warn(Warning{Source: "reader", Text: "cannot open \xff.bin"})
	b.Note(Note{Source: "cupti", Text: "clock \xfe"})
	tr := b.Track(Track{Kind: TrackDeviceStream, Name: "Stream \xc3", DeviceName: "GPU\x80"})
	b.Span(Span{Name: "bad \xff name", Start: 1, End: 2, Args: []Arg{{Key: "k\xfe", Kind: ArgString, Str: "v\xfd"}}})
	b.Activity(tr, "ok", 1, 2, nil)
	s := b.Snapshot()
	for i, v := range s.strs {
		if !utf8.ValidString(v) {
			t.Errorf("string %d %q is not valid UTF-8", i, v)
		}
	}
	if s.Meta.Host != "h\uFFFD" || s.Meta.Program != "p\uFFFD" || s.Tracks[0].Name != "Stream \uFFFD" || s.Tracks[0].DeviceName != "GPU\uFFFD" {
		t.Errorf("meta %q %q, track %q %q", s.Meta.Host, s.Meta.Program, s.Tracks[0].Name, s.Tracks[0].DeviceName)
	}
	if s.Meta.Warnings[0].Text != "cannot open \uFFFD.bin" || s.Meta.Notes[0].Text != "clock \uFFFD" {
		t.Errorf("warnings %+v notes %+v", s.Meta.Warnings, s.Meta.Notes)
	}
	if got := s.Name(s.Events[0]); got != "bad \uFFFD name" {
		t.Errorf("name %q", got)
	}
	if a := s.Args(s.Events[0])[0]; a.Key != "k\uFFFD" || a.Str != "v\uFFFD" {
		t.Errorf("arg %+v", a)
	}
}

// A table shared with its writer is copied, never changed in place.
func TestValidStringsCopiesBeforeChanging(t *testing.T) {
	in := []string{"", "ok", "bad\xff"}
	out := validStrings(in)
	if in[2] != "bad\xff" || out[2] != "bad\uFFFD" || out[1] != "ok" {
		t.Fatalf("in %q out %q", in, out)
	}
	clean := []string{"", "a"}
	if got := validStrings(clean); &got[0] != &clean[0] {
		t.Fatal("a valid table was copied")
	}
}
