package event

import (
	"strings"
	"unicode/utf8"
)

// validUTF8 makes every string a snapshot holds valid UTF-8, replacing
// each invalid sequence with U+FFFD. Every format devprof writes needs it
// (protobuf string fields, JSON), and one bad name (bytes from a file
// name) must not cost the file: xprof's converter returns nothing at all
// for an XSpace with one. Doing it once here, when a snapshot is made,
// covers every writer, convert and summary. Slices shared with the
// recorder are copied before they are changed.
func (s *Snapshot) validUTF8() {
	s.strs = validStrings(s.strs)
	s.Meta.Host = valid(s.Meta.Host)
	s.Meta.Program = valid(s.Meta.Program)
	for i := range s.Meta.Warnings {
		w := &s.Meta.Warnings[i]
		w.Source, w.Code, w.Text = valid(w.Source), valid(w.Code), valid(w.Text)
	}
	for i := range s.Meta.Notes {
		n := &s.Meta.Notes[i]
		n.Source, n.Text = valid(n.Source), valid(n.Text)
	}
	for i := range s.Meta.Drops {
		s.Meta.Drops[i].Source = valid(s.Meta.Drops[i].Source)
	}
	for i := range s.Tracks {
		t := &s.Tracks[i]
		t.Name, t.DeviceName = valid(t.Name), valid(t.DeviceName)
	}
}

func valid(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// validStrings returns strs with every string valid, copying the slice
// only when one is not.
func validStrings(strs []string) []string {
	out := strs
	for i, v := range strs {
		if utf8.ValidString(v) {
			continue
		}
		if &out[0] == &strs[0] {
			out = append([]string(nil), strs...)
		}
		out[i] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return out
}
