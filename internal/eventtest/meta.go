package eventtest

import (
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
)

// MetaSnapshot returns a small snapshot whose metadata has everything a
// writer must carry as structure: warnings with and without source and
// code (a file of another tool has only text), notes with and without a
// source, and drops of two sources.
func MetaSnapshot() *event.Snapshot {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "testhost", PID: 4242, Program: "meta.test", MaxEvents: 1000,
		Start: event.ClockAnchor{Mono: 0, Boot: 5e9, Wall: 1.7e18},
		Stop:  event.ClockAnchor{Mono: 20 * ms, Boot: 5e9 + 20*ms, Wall: 1.7e18 + 20*ms}})
	b.Span(event.Span{Name: "work", Start: ms, End: 10 * ms})
	b.Warn(event.Warning{Source: "cupti", Code: "unavailable", Text: "GPU tracing off: no NVIDIA GPU or driver usable"})
	b.Warn(event.Warning{Source: "cupti", Code: "records_dropped", Text: "5 GPU activity records dropped"})
	b.Warn(event.Warning{Text: "Detected GPU events dropped"})
	b.Note(event.Note{Source: "cupti", Text: "GPU timestamps: CUPTI's clock (CLOCK_REALTIME)"})
	b.Note(event.Note{Text: "a note without a source"})
	b.AddDrops(event.DropsRecorder, 7)
	b.AddDrops("cupti", 5)
	return b.Snapshot()
}

// CheckMeta fails tb unless got has the warnings, notes and drops of want,
// as the same structure, in the same order.
func CheckMeta(tb testing.TB, format string, got, want *event.Snapshot) {
	tb.Helper()
	g, w := &got.Meta, &want.Meta
	if !reflect.DeepEqual(g.Warnings, w.Warnings) {
		tb.Errorf("%s: warnings read back as\n%+v\nwant\n%+v", format, g.Warnings, w.Warnings)
	}
	if !reflect.DeepEqual(g.Notes, w.Notes) {
		tb.Errorf("%s: notes read back as\n%+v\nwant\n%+v", format, g.Notes, w.Notes)
	}
	if !reflect.DeepEqual(g.Drops, w.Drops) || g.Dropped() != w.Dropped() {
		tb.Errorf("%s: drops read back as %+v (total %d), want %+v (total %d)", format, g.Drops, g.Dropped(), w.Drops, w.Dropped())
	}
}
