package chrome_test

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
)

// TestSliceInSeveralFlows: a slice that is in two flows keeps both
// through Chrome JSON (one as the event's bind_id, the other in the v1
// s/t/f form), and so does every slice of those flows.
func TestSliceInSeveralFlows(t *testing.T) {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "flows", Program: "p", PID: 1,
		Start: event.ClockAnchor{Mono: 0, Wall: 1.7e18}, Stop: event.ClockAnchor{Mono: 100 * ms, Wall: 1.7e18 + 100*ms}})
	proc := b.Process(event.Process{PID: 50, Name: "other"})
	th := b.Track(event.Track{Kind: event.TrackHostThread, Process: proc, ID: 3, Name: "worker"})
	flows := func(ids ...uint64) []event.Arg {
		var a []event.Arg
		for _, id := range ids {
			a = append(a, event.Arg{Kind: event.ArgFlow, Num: id})
		}
		return a
	}
	b.Span(event.Span{Name: "a", Start: 0, End: 10 * ms, Track: th, Args: flows(1)})
	hub := b.Span(event.Span{Name: "hub", Start: 20 * ms, End: 40 * ms, Track: th, Args: flows(1, 2, 3)})
	b.Span(event.Span{Name: "inner", Start: 25 * ms, End: 30 * ms, Parent: hub, Track: th, Args: flows(4)})
	b.Span(event.Span{Name: "b", Start: 50 * ms, End: 60 * ms, Track: th, Args: flows(2, 4)})
	b.Span(event.Span{Name: "c", Start: 70 * ms, End: 80 * ms, Track: th, Args: flows(3)})
	b.Span(event.Span{Name: "d", Start: 85 * ms, End: 90 * ms, Args: flows(3)})
	src := b.Snapshot()

	var buf bytes.Buffer
	if err := chrome.Write(&buf, src); err != nil {
		t.Fatal(err)
	}
	got, err := chrome.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := flowChains(src)
	if g := flowChains(got); !slices.Equal(g, want) {
		t.Errorf("flows %q, want %q\n%s", g, want, buf.String())
	}
	if got.Meta.Dropped() != 0 {
		t.Errorf("%d dropped", got.Meta.Dropped())
	}
}

// flowChains lists each flow as its slices' names in time order.
func flowChains(s *event.Snapshot) []string {
	by := map[uint64][]*event.Record{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				by[a.Num] = append(by[a.Num], r)
			}
		}
	}
	var out []string
	for _, rs := range by {
		slices.SortFunc(rs, func(a, b *event.Record) int { return cmp.Compare(a.Start, b.Start) })
		var names []string
		for _, r := range rs {
			names = append(names, s.Name(r))
		}
		out = append(out, strings.Join(names, " -> "))
	}
	slices.Sort(out)
	return out
}
