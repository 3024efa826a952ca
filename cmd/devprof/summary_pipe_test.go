package main

import (
	"errors"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// TestPipedAggregatorMatchesDirect holds the pipe that runs the
// aggregator on its own goroutine to the aggregator called directly: on
// every repository trace as summary streams it, on random snapshots fed
// as a begin/end reader feeds them, and across a Reset in the middle (a
// reader that starts over). The pipe's own check (each ID it hands out
// is the aggregator's) must never fire.
func TestPipedAggregatorMatchesDirect(t *testing.T) {
	for _, path := range summaryTraces {
		f, err := formats.Detect(path)
		if err != nil {
			t.Fatal(err)
		}
		feed := func(sink event.Sink) error { return f.StreamFile(path, sink, formats.ReadOptions{}) }
		comparePiped(t, path, feed)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		s := randomLayoutSnapshot(seed, seed%2 == 0, seed%3 == 0)
		comparePiped(t, "random", func(sink event.Sink) error { streamBeginEnd(s, sink); return nil })
		// A reader that gives up half way and starts over.
		comparePiped(t, "random, reset", func(sink event.Sink) error {
			streamBeginEnd(s, sink)
			sink.Reset()
			streamBeginEnd(s, sink)
			return nil
		})
	}
}

func comparePiped(t *testing.T, label string, feed func(event.Sink) error) {
	t.Helper()
	run := func(buffered, piped bool) (*summaryData, error) {
		a := newSummaryAggregator(buffered)
		var sink event.Sink = a
		var p *pipedAggregator
		if piped {
			p = newPipedAggregator(a)
			sink = p
		}
		err := feed(sink)
		if p != nil {
			p.close()
		}
		if err != nil {
			return nil, err
		}
		return a.result()
	}
	both := func(buffered bool) (*summaryData, *summaryData, error) {
		want, err := run(buffered, false)
		if err != nil {
			return nil, nil, err
		}
		got, err := run(buffered, true)
		return got, want, err
	}
	got, want, err := both(false)
	if errors.Is(err, errRestream) {
		got, want, err = both(true)
	}
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	compareSummary(t, label+" piped", got, want)
}
