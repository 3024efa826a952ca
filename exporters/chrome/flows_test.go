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
		slices.SortFunc(rs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
		var names []string
		for _, r := range rs {
			names = append(names, s.Name(r))
		}
		out = append(out, strings.Join(names, " -> "))
	}
	slices.Sort(out)
	return out
}

// TestFlowsOnInstants: a bind_id on an instant ("ph":"i") binds it to
// its flow as on a complete event, so a flow that begins, passes or ends
// at an instant keeps that end; the model's flows on instants survive a
// round trip through Chrome JSON.
func TestFlowsOnInstants(t *testing.T) {
	in := `[{"ph":"X","name":"send","pid":1,"tid":1,"ts":0,"dur":10,"bind_id":"7","flow_out":true},
	  {"ph":"i","s":"t","name":"hop","pid":1,"tid":2,"ts":20,"bind_id":"7","flow_in":true,"flow_out":true},
	  {"ph":"X","name":"recv","pid":2,"tid":3,"ts":30,"dur":5,"bind_id":"7","flow_in":true},
	  {"ph":"i","s":"t","name":"lone","pid":1,"tid":1,"ts":40,"bind_id":"9","flow_out":true},
	  {"ph":"X","name":"start","pid":1,"tid":1,"ts":50,"dur":5,"bind_id":"8","flow_out":true},
	  {"ph":"I","name":"land","pid":2,"tid":3,"ts":60,"bind_id":"8","flow_in":true}]`
	s, err := chrome.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"send -> hop -> recv", "start -> land"}
	if g := flowChains(s); !slices.Equal(g, want) {
		t.Errorf("flows %q, want %q", g, want)
	}
	// "lone" begins a flow nothing continues: one end, dropped and counted.
	if d := s.Meta.Dropped(); d != 1 {
		t.Errorf("%d dropped, want 1 (the one-ended flow of \"lone\")", d)
	}
	var buf bytes.Buffer
	if err := chrome.Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	back, err := chrome.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g := flowChains(back); !slices.Equal(g, want) {
		t.Errorf("after a round trip: flows %q, want %q\n%s", g, want, buf.String())
	}
}
