package trace_test

import (
	"bytes"
	"testing"

	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/eventtest"
)

// TestMetaSameInEveryFormat writes one snapshot in all three formats and
// reads each back: every output carries the same warnings, notes and
// per-source drops (a session's GPU-off warning and clock note included).
func TestMetaSameInEveryFormat(t *testing.T) {
	s := eventtest.MetaSnapshot()
	var pf, xs, js bytes.Buffer
	if err := perfetto.Write(&pf, s, perfetto.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := xplane.Write(&xs, s); err != nil {
		t.Fatal(err)
	}
	if err := chrome.Write(&js, s); err != nil {
		t.Fatal(err)
	}
	tr, err := perfetto.ReadTrace(&pf)
	if err != nil {
		t.Fatal(err)
	}
	eventtest.CheckMeta(t, "perfetto", tr.Snapshot(), s)
	x, err := xplane.Read(&xs)
	if err != nil {
		t.Fatal(err)
	}
	eventtest.CheckMeta(t, "xplane", x, s)
	c, err := chrome.Read(&js)
	if err != nil {
		t.Fatal(err)
	}
	eventtest.CheckMeta(t, "chrome", c, s)
}
