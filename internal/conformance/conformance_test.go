package conformance_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/conformance"
)

// TestExpectKeepsRepeatedKeysApartAsTheWritersDo: an event whose args
// repeat a key (JAX's stats do) is written with the repeats renamed "k
// (2)", … (event.UniqueKeys); the manifest must expect exactly that, not
// one "k" holding the last value. Under scripts/test the trace and its
// manifest also go to the Perfetto checker, which compares args exactly.
func TestExpectKeepsRepeatedKeysApartAsTheWritersDo(t *testing.T) {
	b := event.NewBuilder(event.Meta{Host: "h", PID: 7, Program: "repeated-keys", Stop: event.ClockAnchor{Mono: 1000}})
	b.Span(event.Span{Name: "s", Start: 100, End: 200, Args: []event.Arg{
		{Key: "_src", Kind: event.ArgString, Str: "a.py:1"},
		{Key: "n", Kind: event.ArgInt, Num: 1},
		{Key: "_src", Kind: event.ArgString, Str: "b.py:2"},
		{Key: "_src", Kind: event.ArgString, Str: "c.py:3"},
	}})
	b.Instant("i", 300, 0, 0, []event.Arg{{Key: "k", Kind: event.ArgInt, Num: 1}, {Key: "k", Kind: event.ArgInt, Num: 2}})
	s := b.Snapshot()

	m := conformance.Expect(s, "repeated-keys.pftrace")
	if len(m.Spans) != 1 || len(m.Instants) == 0 {
		t.Fatalf("manifest has %d spans and %d instants", len(m.Spans), len(m.Instants))
	}
	want := map[string]conformance.Arg{
		"_src": {Type: "string", Value: "a.py:1"}, "n": {Type: "int", Value: int64(1)},
		"_src (2)": {Type: "string", Value: "b.py:2"}, "_src (3)": {Type: "string", Value: "c.py:3"},
	}
	if !reflect.DeepEqual(m.Spans[0].Args, want) {
		t.Errorf("span args %v, want %v", m.Spans[0].Args, want)
	}
	wantI := map[string]conformance.Arg{"k": {Type: "int", Value: int64(1)}, "k (2)": {Type: "int", Value: int64(2)}}
	if got := m.Instants[0].Args; !reflect.DeepEqual(got, wantI) {
		t.Errorf("instant args %v, want %v", got, wantI)
	}

	path := filepath.Join(t.TempDir(), "repeated-keys.pftrace")
	if err := formats.WriteFile(path, formats.Perfetto, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "repeated-keys", path, s)
}
