package trace_test

import (
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
)

// checkReadable reads a Perfetto file back and checks that each named span
// is there, finished or flagged unfinished as expected.
func checkReadable(t *testing.T, path string, finished map[string]bool) {
	t.Helper()
	tr, err := perfetto.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, fin := range finished {
		found := false
		for _, s := range tr.Slices {
			if s.Name != name {
				continue
			}
			found = true
			unfinished := false
			for _, a := range s.Args {
				if a.Name == "unfinished" && a.Value == true {
					unfinished = true
				}
			}
			if unfinished == fin {
				t.Errorf("span %q: unfinished=%v, want finished=%v", name, unfinished, fin)
			}
		}
		if !found {
			t.Errorf("span %q missing from %s", name, path)
		}
	}
}

// checkRoundTrip reads the Perfetto file of snapshot s back and checks that
// every span is there once, with its exact times and its exact parent.
func checkRoundTrip(t *testing.T, path string, s *event.Snapshot) {
	t.Helper()
	tr, err := perfetto.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		name       string
		start, dur int64
	}
	got := map[key]string{}
	for _, sl := range tr.Slices {
		parent := ""
		if sl.Parent >= 0 {
			parent = tr.Slices[sl.Parent].Name
		}
		k := key{sl.Name, sl.Start, sl.Dur}
		if _, dup := got[k]; dup {
			t.Fatalf("slice %v twice", k)
		}
		got[k] = parent
	}
	n := 0
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan {
			continue
		}
		n++
		end, _ := s.EndOf(r)
		k := key{s.Name(r), s.Meta.BootNanos(r.Start()), end - r.Start()}
		parent, ok := got[k]
		if !ok {
			t.Fatalf("span %v not in the trace", k)
		}
		want := ""
		if p := s.Lookup(r.Parent()); p != nil {
			want = s.Name(p)
		}
		if parent != want {
			t.Fatalf("span %q: parent %q in the trace, recorded %q", s.Name(r), parent, want)
		}
	}
	if n != len(tr.Slices) {
		t.Fatalf("trace has %d slices, session recorded %d spans", len(tr.Slices), n)
	}
}
