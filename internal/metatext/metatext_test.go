package metatext

import (
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Line
	}{
		{WarningLine(event.Warning{Source: "cupti", Code: "unavailable", Text: "GPU tracing off: a]: b"}),
			Line{Warning: &event.Warning{Source: "cupti", Code: "unavailable", Text: "GPU tracing off: a]: b"}}},
		{WarningLine(event.Warning{Source: "cupti", Text: "no code"}), Line{Warning: &event.Warning{Source: "cupti", Text: "no code"}}},
		// TSL's own warnings are text.
		{"Detected GPU events dropped", Line{Warning: &event.Warning{Text: "Detected GPU events dropped"}}},
		{"devprof warning [no closing bracket", Line{Warning: &event.Warning{Text: "devprof warning [no closing bracket"}}},
		{NoteLine(event.Note{Source: "cupti", Text: "clock"}), Line{Note: &event.Note{Source: "cupti", Text: "clock"}}},
		{DropsLine(event.Drops{Source: "recorder", Events: 7}, 100), Line{Drops: &event.Drops{Source: "recorder", Events: 7}, MaxEvents: 100}},
		{DropsLine(event.Drops{Source: "cupti", Events: 5}, 100), Line{Drops: &event.Drops{Source: "cupti", Events: 5}}},
		// Files written before drops had sources.
		{"devprof: 3 events dropped (buffer full at max_events=8)", Line{Drops: &event.Drops{Source: "recorder", Events: 3}, MaxEvents: 8}},
		// A count past int64 is no drop count.
		{"devprof drops [x]: 99999999999999999999 events dropped", Line{Warning: &event.Warning{Text: "devprof drops [x]: 99999999999999999999 events dropped"}}},
	} {
		if got := ParseLine(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseLine(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestMarkersRoundTrip(t *testing.T) {
	m := &event.Meta{MaxEvents: 10,
		Warnings: []event.Warning{{Source: "s", Code: "c", Text: "w"}, {Text: "plain"}},
		Notes:    []event.Note{{Source: "s", Text: "n"}},
		Drops:    []event.Drops{{Source: "recorder", Events: 2}, {Source: "cupti", Events: 3}}}
	var c Collector
	for _, mk := range Markers(m) {
		if !c.Take(mk.Name, mk.Args) {
			t.Fatalf("marker %q not taken back", mk.Name)
		}
	}
	if !reflect.DeepEqual(c.Warnings, m.Warnings) || !reflect.DeepEqual(c.Notes, m.Notes) || !reflect.DeepEqual(c.Drops, m.Drops) || c.MaxEvents != 10 {
		t.Errorf("collected %+v from %+v", c, m)
	}
	if got, want := DropSummary(m), "devprof: 5 events dropped (recorder: 2, buffer full at max_events=10; cupti: 3)"; got != want {
		t.Errorf("DropSummary = %q, want %q", got, want)
	}
	// An instant of the same name without a text is the program's own.
	if c.Take(WarningName, nil) {
		t.Error("a warning instant without a message was taken")
	}
}
