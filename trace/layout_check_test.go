package trace_test

import (
	"testing"

	"github.com/devprof/devprof/event"
)

// checkLayoutNests asserts that every row of the layout nests properly and
// that every span sits directly under its parent unless marked displaced.
func checkLayoutNests(t *testing.T, s *event.Snapshot) {
	t.Helper()
	l := s.Layout()
	placed := 0
	for _, row := range l.Rows {
		var stack []event.Placed
		for _, p := range row.Spans {
			placed++
			for len(stack) > 0 && stack[len(stack)-1].End <= p.Start() {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				if p.End > top.End {
					t.Fatalf("row %q: %q [%d,%d] overlaps %q [%d,%d]", row.Name, s.Name(p.Record), p.Start(), p.End, s.Name(top.Record), top.Start(), top.End)
				}
				if top.ID() != p.Parent() {
					t.Fatalf("row %q: %q sits under %q, its parent is %d", row.Name, s.Name(p.Record), s.Name(top.Record), p.Parent())
				}
				if p.Displaced {
					t.Fatalf("%q marked displaced but sits under its parent", s.Name(p.Record))
				}
			} else if p.Parent() != 0 && s.Lookup(p.Parent()) != nil && !p.Displaced {
				t.Fatalf("%q is a row root but has parent %d and is not marked displaced", s.Name(p.Record), p.Parent())
			}
			stack = append(stack, p)
		}
	}
	spans := 0
	for _, r := range s.Events {
		if r.Kind() == event.KindSpan {
			spans++
		}
	}
	if placed != spans {
		t.Fatalf("layout placed %d of %d spans", placed, spans)
	}
}
