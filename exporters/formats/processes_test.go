package formats_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
)

// TestKinetoThroughEveryFormat: the real PyTorch profiler trace keeps its
// processes, threads, spans and two-ended flows through Perfetto and back
// to Chrome JSON (issue 19), and through XSpace and back to Chrome JSON,
// where its flows between host threads (Kineto's CPU op -> GPU kernel
// arrows: the GPU is a process of threads in a Chrome trace) are xprof's
// flow stats.
func TestKinetoThroughEveryFormat(t *testing.T) {
	src, err := formats.Chrome.ReadFile(filepath.Join("..", "..", "testdata", "real-gpu", "kineto-h100-libwork.json.gz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	procs, threads, spans, flows := eventtest.ConversionFacts(src, false)
	if len(procs) != 21 || len(flows) != 2500 {
		t.Fatalf("the fixture reads as %d processes and %d flows, want its 21 processes and 2,500 two-ended flows", len(procs), len(flows))
	}
	through := func(s *event.Snapshot, f *formats.Format) *event.Snapshot {
		t.Helper()
		var buf bytes.Buffer
		if err := f.Write(&buf, s, false); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out, err := f.Decode(bytes.NewReader(buf.Bytes()), "kineto"+f.SessionExt)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		return out
	}
	same := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d, want %d", what, len(got), len(want))
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %q, want %q", what, got[i], want[i])
				return
			}
		}
	}
	// The converted file goes to the Perfetto checker too (scripts/test):
	// the official schema and trace_processor's rules, every slice and flow.
	pfPath := filepath.Join(t.TempDir(), "kineto.pftrace")
	if err := formats.WriteFile(pfPath, formats.Perfetto, src); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "kineto-converted", pfPath, src)
	pf := through(src, formats.Perfetto)
	back := through(pf, formats.Chrome)
	// Threads keep their tids: the GPU's "stream 13 " is tid 13 under pid 0.
	for name, s := range map[string]*event.Snapshot{"source": src, "Perfetto": pf, "Perfetto → Chrome JSON": back, "Chrome JSON": through(src, formats.Chrome)} {
		found := false
		for _, tr := range s.Tracks {
			if tr.Kind == event.TrackHostThread && tr.Name == "stream 13 " {
				found = true
				if tr.ID != 13 || s.ProcessOf(tr).PID != 0 {
					t.Errorf("%s: stream 13 is tid %d of pid %d, want tid 13 of pid 0", name, tr.ID, s.ProcessOf(tr).PID)
				}
			}
		}
		if !found {
			t.Errorf("%s: no thread \"stream 13 \"", name)
		}
	}
	// PyTorch's global instants stay on their processes ("Traces", "")
	// through every format.
	owners := eventtest.OwnerFacts(src, false)
	if len(owners) != 2 {
		t.Errorf("the fixture's instants and counters on no span: %q, want its two global instants", owners)
	}
	for name, s := range map[string]*event.Snapshot{"Perfetto": pf, "Perfetto → Chrome JSON": back, "XSpace": through(src, formats.XPlane)} {
		same(name+" owners", eventtest.OwnerFacts(s, false), owners)
	}
	for name, s := range map[string]*event.Snapshot{"Perfetto": pf, "Perfetto → Chrome JSON": back} {
		p, th, sp, fl := eventtest.ConversionFacts(s, false)
		same(name+" processes", p, procs)
		same(name+" threads", th, threads)
		same(name+" spans", sp, spans)
		same(name+" flows", fl, flows)
		if s.Meta.Dropped() != src.Meta.Dropped() {
			t.Errorf("%s: %d dropped, want the source's %d (its one-ended flows)", name, s.Meta.Dropped(), src.Meta.Dropped())
		}
	}
	// XSpace has a plane for each process with threads, none for a
	// process that is only named (Kineto's python3 "GPU n" metadata).
	xs := through(src, formats.XPlane)
	withThreads, _, _, _ := eventtest.ConversionFacts(src, true)
	p, th, sp, fl := eventtest.ConversionFacts(xs, true)
	same("XSpace processes", p, withThreads)
	same("XSpace threads", th, threads)
	same("XSpace spans", sp, spans)
	same("XSpace flows", fl, flows)
	// (Back in Chrome JSON the two loose instants sit on a thread of
	// their own, XSpace's "Instants" line; the threads are not compared.)
	xsBack := through(xs, formats.Chrome)
	_, _, sp, fl = eventtest.ConversionFacts(xsBack, true)
	same("XSpace → Chrome JSON spans", sp, spans)
	same("XSpace → Chrome JSON flows", fl, flows)
}
