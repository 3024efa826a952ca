package formats_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/pftest"
)

// counts returns a snapshot's spans (activity included), counter samples,
// flows with two ends or more, and those of them whose ends are all
// spans.
func counts(s *event.Snapshot) (spans, counters, flows, spanFlows int) {
	ends, instantEnds := map[uint64]int{}, map[uint64]bool{}
	for _, r := range s.Events {
		switch r.Kind() {
		case event.KindSpan, event.KindActivity:
			spans++
		case event.KindCounter:
			counters++
		}
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				ends[a.Num]++
				if r.Kind() == event.KindInstant {
					instantEnds[a.Num] = true
				}
			}
		}
	}
	for id, n := range ends {
		if n >= 2 {
			flows++
			if !instantEnds[id] {
				spanFlows++
			}
		}
	}
	return spans, counters, flows, spanFlows
}

// TestForeignPerfettoThroughChrome: a Perfetto trace in the forms other
// writers emit (legacy events, both flow forms, process and custom
// tracks, thread and process counters; pftest.ForeignForms) keeps its
// slices, counter samples and flows, and its drops, through Perfetto →
// Chrome JSON → Perfetto, and each Perfetto output passes the checker.
// Chrome JSON keeps the flows between slices only: the Chrome reader binds
// a bind_id on an instant ("ph":"i") to nothing, so the flows with an
// instant end (9 and 11 here) do not come back from it.
func TestForeignPerfettoThroughChrome(t *testing.T) {
	src, err := formats.Perfetto.Decode(bytes.NewReader(pftest.ForeignForms()), "foreign.pftrace")
	if err != nil {
		t.Fatal(err)
	}
	// 8 slices; 9 instants; 4 counter samples; flows 7 (v1), 9 (v2), 11
	// (_old), the one-ended 13 dropped.
	spans, ctrs, flows, spanFlows := counts(src)
	if spans != 8 || ctrs != 4 || flows != 3 || spanFlows != 1 {
		t.Fatalf("read as %d spans, %d counter samples, %d flows (%d between spans); want 8, 4, 3 (1)", spans, ctrs, flows, spanFlows)
	}
	through := func(s *event.Snapshot, f *formats.Format, name string) *event.Snapshot {
		t.Helper()
		var buf bytes.Buffer
		if err := f.Write(&buf, s, false); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if f == formats.Perfetto {
			path := filepath.Join(t.TempDir(), name+".pftrace")
			if err := formats.WriteFile(path, f, s); err != nil {
				t.Fatal(err)
			}
			conformance.Export(t, name, path, s)
		}
		out, err := f.Decode(bytes.NewReader(buf.Bytes()), name+f.SessionExt)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		return out
	}
	pf := through(src, formats.Perfetto, "foreign-perfetto")
	chrome := through(pf, formats.Chrome, "foreign-chrome")
	back := through(chrome, formats.Perfetto, "foreign-chrome-perfetto")
	if _, _, gf, _ := counts(pf); gf != flows {
		t.Errorf("Perfetto: %d flows, want %d", gf, flows)
	}
	for name, s := range map[string]*event.Snapshot{"Perfetto": pf, "Perfetto → Chrome JSON": chrome, "Perfetto → Chrome JSON → Perfetto": back} {
		if gs, gc, _, gsf := counts(s); gs != spans || gc != ctrs || gsf != spanFlows {
			t.Errorf("%s: %d spans, %d counter samples, %d flows between spans; want %d, %d, %d", name, gs, gc, gsf, spans, ctrs, spanFlows)
		}
		if s.Meta.Dropped() != src.Meta.Dropped() {
			t.Errorf("%s: %d dropped, want the source's %d", name, s.Meta.Dropped(), src.Meta.Dropped())
		}
	}
}
