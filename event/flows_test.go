package event_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// flowsOf is AppendFlows the long way: the ArgFlow arguments of
// AppendArgs.
func flowsOf(s *event.Snapshot, r *event.Record) []uint64 {
	var ids []uint64
	for _, a := range s.Args(r) {
		if a.Kind == event.ArgFlow {
			ids = append(ids, a.Num)
		}
	}
	return ids
}

// TestAppendFlowsMatchesArgs checks AppendFlows against AppendArgs on
// records with no, inline and overflow arguments, flows among them at
// every position, as a Builder and as the recorder store them.
func TestAppendFlowsMatchesArgs(t *testing.T) {
	argSets := [][]annotate.Arg{nil}
	for n := 1; n <= 7; n++ {
		for flowAt := -1; flowAt < n; flowAt++ {
			var args []annotate.Arg
			for i := range n {
				if i == flowAt || (flowAt >= 0 && i == n-1) {
					args = append(args, annotate.Flow(uint64(100*n+i)))
				} else {
					args = append(args, annotate.Int(fmt.Sprint("k", i), i))
				}
			}
			argSets = append(argSets, args)
		}
	}
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 1 << 20}})
	for i, args := range argSets {
		var model []event.Arg
		for _, a := range args {
			model = append(model, a.EventArg())
		}
		b.Span(event.Span{Name: "s", Start: int64(10 * i), End: int64(10*i + 5), Args: model})
	}
	recorded := eventtest.Record(t, 1<<12, func(ctx context.Context) {
		for _, args := range argSets {
			_, sp := annotate.Begin(ctx, "s", args...)
			sp.End()
		}
	})
	for name, s := range map[string]*event.Snapshot{"builder": b.Snapshot(), "recorder": recorded} {
		if len(s.Events) != len(argSets) {
			t.Fatalf("%s: %d events, want %d", name, len(s.Events), len(argSets))
		}
		withFlows := 0
		var buf []uint64
		for _, r := range s.Events {
			buf = s.AppendFlows(buf[:0], r)
			want := flowsOf(s, r)
			if !slices.Equal(buf, want) {
				t.Errorf("%s: record %d (%d args): AppendFlows %v, want %v", name, r.ID(), r.NArgs(), buf, want)
			}
			if len(want) > 0 {
				withFlows++
			}
		}
		if withFlows < len(argSets)/2 {
			t.Errorf("%s: only %d records carry flows: the test lost its arguments", name, withFlows)
		}
	}
}

// AppendFlows gives a record's flow ids alone, for code that pairs flow
// ends over every record of a large trace.
func ExampleSnapshot_AppendFlows() {
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 100}})
	b.Span(event.Span{Name: "launch", Start: 10, End: 20, Args: []event.Arg{
		{Key: "batch", Kind: event.ArgInt, Num: 32}, {Kind: event.ArgFlow, Num: 7}}})
	s := b.Snapshot()
	var ids []uint64
	for _, r := range s.Events {
		ids = s.AppendFlows(ids[:0], r)
		fmt.Println(s.Name(r), ids)
	}
	// Output:
	// launch [7]
}

// TestAppendArgRefsMatchesArgs checks AppendArgRefs against AppendArgs:
// each ref, its ids resolved, is the argument AppendArgs gives, on records
// with no, inline and continued arguments of every kind.
func TestAppendArgRefsMatchesArgs(t *testing.T) {
	kinds := []annotate.Arg{
		annotate.Int("i", -1), annotate.String("s", "value"), annotate.Flow(9), annotate.Uint64("u", 3),
		annotate.Float64("f", 0.5), annotate.Bool("b", true), annotate.String("empty", ""), annotate.Duration("d", 7),
	}
	var argSets [][]annotate.Arg
	for n := 0; n <= len(kinds); n++ {
		argSets = append(argSets, kinds[:n], kinds[len(kinds)-n:])
	}
	recorded := eventtest.Record(t, 1<<12, func(ctx context.Context) {
		for _, args := range argSets {
			_, sp := annotate.Begin(ctx, "s", args...)
			sp.End()
		}
	})
	if len(recorded.Events) != len(argSets) {
		t.Fatalf("%d events, want %d", len(recorded.Events), len(argSets))
	}
	var refs []event.ArgRef
	for _, r := range recorded.Events {
		want := recorded.Args(r)
		refs = recorded.AppendArgRefs(refs[:0], r)
		if len(refs) != len(want) {
			t.Fatalf("record %d: %d refs, want %d", r.ID(), len(refs), len(want))
		}
		for i, ref := range refs {
			if n := uint32(recorded.NumStrings()); ref.Key >= n || ref.Kind == event.ArgString && ref.Num >= uint64(n) {
				t.Errorf("record %d arg %d: ids %d/%d outside NumStrings %d", r.ID(), i, ref.Key, ref.Num, n)
			}
			got := event.Arg{Key: recorded.String(ref.Key), Kind: ref.Kind, Num: ref.Num}
			if ref.Kind == event.ArgString {
				got.Str, got.Num = recorded.String(uint32(ref.Num)), 0
			}
			if got != want[i] {
				t.Errorf("record %d arg %d: ref resolves to %+v, want %+v", r.ID(), i, got, want[i])
			}
		}
	}
}

// AppendArgRefs leaves keys and string values as string ids: a writer
// that interns strings itself resolves each id once, not once a record.
func ExampleSnapshot_AppendArgRefs() {
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 100}})
	for i := range 3 {
		b.Span(event.Span{Name: "op", Start: int64(10 * i), End: int64(10*i + 5), Args: []event.Arg{
			{Key: "mode", Kind: event.ArgString, Str: "train"}, {Key: "layer", Kind: event.ArgInt, Num: uint64(i)}}})
	}
	s := b.Snapshot()
	names := map[uint32]string{} // what a writer would intern
	var refs []event.ArgRef
	for _, r := range s.Events {
		refs = s.AppendArgRefs(refs[:0], r)
		for i, a := range refs {
			if _, ok := names[a.Key]; !ok {
				names[a.Key] = s.String(a.Key)
			}
			if i > 0 {
				fmt.Print(" ")
			}
			if a.Kind == event.ArgString {
				fmt.Printf("%s=%s", names[a.Key], s.String(uint32(a.Num)))
			} else {
				fmt.Printf("%s=%d", names[a.Key], a.Num)
			}
		}
		fmt.Println()
	}
	fmt.Println(len(names), "keys resolved")
	// Output:
	// mode=train layer=0
	// mode=train layer=1
	// mode=train layer=2
	// 2 keys resolved
}
