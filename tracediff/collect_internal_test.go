package tracediff

import (
	"testing"

	"github.com/devprof/devprof/event"
)

// TestStackBounded: spans that overlap on a track without nesting
// (async slices) do not grow its stack past the bound, and spans that
// never end (which must be kept) do not make each span pay for a trim
// of them: 200,000 of each run in linear time and end counted.
func TestStackBounded(t *testing.T) {
	c := NewCollector(event.Meta{}, Options{})
	tr := c.Track(event.Track{Kind: event.TrackHostThread, ID: 1})
	const n = 200_000
	for i := range int64(n) {
		// Each overlaps the next: none ends before the next starts.
		c.Span(event.Span{Name: "async", Start: i, End: i + 2 + n, Track: tr})
	}
	if got := len(c.stacks[tr].spans); got > maxStack+1 {
		t.Errorf("%d spans held on a track of overlapping spans, bound %d", got, maxStack)
	}
	open := c.Track(event.Track{Kind: event.TrackHostThread, ID: 2})
	for i := range int64(n) {
		c.Span(event.Span{Name: "open", Start: i, Track: open, Unfinished: true})
	}
	p := c.Profile()
	if d := p.Names["async"]; d.Count != n {
		t.Errorf("async: %d counted, want %d", d.Count, n)
	}
	if d := p.Names["open"]; d.Unfinished != n || d.Count != 0 {
		t.Errorf("open: %d unfinished, %d counted; want %d and 0", d.Unfinished, d.Count, n)
	}
}
