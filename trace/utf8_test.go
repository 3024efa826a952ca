package trace_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/xplanepb"
	"github.com/devprof/devprof/trace"
)

// Strings that are not valid UTF-8 (bytes from a file name, say) must
// never cost a file: xprof's converter returns nothing for an XSpace with
// one, and JSON readers reject it. Every output carries U+FFFD instead,
// and reads back that way.
func TestInvalidUTF8BecomesReplacementChar(t *testing.T) {
	const bad = "load \xff\xfe.bin"
	want := strings.ToValidUTF8(bad, "\uFFFD")
	s := mustStart(t, t.TempDir(), trace.Options{ChromeTrace: true, DeviceTracerLevel: trace.Off, ProgramName: "prog\xc3"})
	ctx, sp := annotate.Begin(context.Background(), bad, annotate.String("file", bad), annotate.String(bad, "key"))
	annotate.Instant(ctx, "mark\x80")
	sp.End()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	out := s.Outputs()
	snap := s.Snapshot()
	conformance.Export(t, "invalid-utf8", out.Perfetto, snap)
	conformance.ExportXPlane(t, "invalid-utf8", out.XPlane, snap)

	// The XSpace parses with a strict proto3 decoder (which rejects
	// invalid UTF-8 in string fields, as xprof's does).
	raw, err := os.ReadFile(out.XPlane)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(raw, &xplanepb.XSpace{}); err != nil {
		t.Fatalf("XSpace does not parse: %v", err)
	}
	// Chrome JSON is valid JSON.
	js := gunzip(t, out.Chrome)
	if !utf8.Valid(js) || !json.Valid(js) {
		t.Fatal("Chrome JSON is not valid UTF-8 JSON")
	}
	// Every format reads back with the replacement characters.
	for name, read := range map[string]func() (*event.Snapshot, error){
		"perfetto": func() (*event.Snapshot, error) { return perfetto.ReadFile(out.Perfetto) },
		"xplane":   func() (*event.Snapshot, error) { return xplane.ReadFile(out.XPlane) },
		"chrome":   func() (*event.Snapshot, error) { return chrome.ReadFile(out.Chrome) },
	} {
		got, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		joined := strings.Join(stringsOf(got), "|")
		if !utf8.ValidString(joined) || !strings.Contains(joined, want) || !strings.Contains(joined, "mark\uFFFD") {
			t.Errorf("%s read back %q, want %q and mark\\uFFFD", name, joined, want)
		}
	}
}

// stringsOf returns the event names, argument keys and string values of
// a snapshot.
func stringsOf(s *event.Snapshot) []string {
	var out []string
	for _, r := range s.Events {
		out = append(out, s.Name(r))
		for _, a := range s.Args(r) {
			out = append(out, a.Key, a.Str)
		}
	}
	return out
}
