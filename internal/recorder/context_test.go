package recorder

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
)

func TestStepOf(t *testing.T) {
	b := NewBuffer(100, 3)
	other := NewBuffer(100, 3)
	ctx := context.Background()
	if _, ok := b.StepOf(ctx); ok {
		t.Error("a step in a context without spans")
	}
	step, stepRec, _ := b.StartSpan(ctx, "train", nil, 1, event.FlagStep, 7, false)
	inner, innerRec, _ := b.StartSpan(step, "forward", nil, 1, 0, 0, false)
	if n, ok := b.StepOf(inner); !ok || n != 7 {
		t.Errorf("StepOf(span in step 7) = %d, %v", n, ok)
	}
	// A context wrapped by others still carries its step.
	type k struct{}
	if n, ok := b.StepOf(context.WithValue(inner, k{}, 1)); !ok || n != 7 {
		t.Errorf("StepOf(wrapped) = %d, %v", n, ok)
	}
	// An inner step wins; an ended one no longer counts.
	sub, subRec, _ := b.StartSpan(inner, "micro", nil, 1, event.FlagStep, 3, false)
	if n, _ := b.StepOf(sub); n != 3 {
		t.Errorf("StepOf(inner step 3) = %d", n)
	}
	subRec.EndSpan(sub.EndToken(), Now())
	if n, _ := b.StepOf(sub); n != 7 {
		t.Errorf("StepOf after the inner step ended = %d, want 7", n)
	}
	// Another session's spans are not this one's.
	if _, ok := other.StepOf(inner); ok {
		t.Error("another buffer sees this session's step")
	}
	innerRec.EndSpan(inner.EndToken(), Now())
	stepRec.EndSpan(step.EndToken(), Now())
	if _, ok := b.StepOf(inner); ok {
		t.Error("a step that ended still counts")
	}
}

// Span contexts live apart from the records, in blocks each shard hands
// out one at a time: an instant and a leaf span take none, every other
// span its own, and a context keeps answering for its span (its ID, its
// parent, the values of the context it was begun in) after its block was
// used up and replaced and the shard moved on, and after collections.
func TestContextsLiveApartFromRecords(t *testing.T) {
	b := NewBuffer(1<<16, 3)
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	for i := range 3 * ctxBlockLen {
		b.Put(&Entry{Kind: event.KindInstant, Level: 1}, "instant", nil)
		if c, r, _ := b.StartSpan(base, "leaf", nil, 1, 0, 0, true); c != nil || r == nil {
			t.Fatalf("leaf %d: context %p, record %p", i, c, r)
		}
		if c, r, _ := b.StartSpanInt(base, "leaf", "i", int64(i), 1, true); c != nil || r == nil {
			t.Fatalf("leaf (int) %d: context %p, record %p", i, c, r)
		}
	}
	for i := range b.shards {
		if b.shards[i].ctxs.Load() != nil {
			t.Fatalf("shard %d made a block of contexts for instants and leaf spans", i)
		}
	}

	const n = 3*ctxBlockLen + 7
	type span struct {
		c      *SpanContext
		id     uint64
		parent uint64
	}
	spans := make([]span, 0, n)
	seen := map[*SpanContext]bool{}
	parent := base
	for i := range n {
		if i%10 == 0 {
			parent = base // chains of ten, so that parents span blocks
		}
		var c *SpanContext
		var r *Record
		if i%2 == 0 {
			c, r, _ = b.StartSpan(parent, "s", nil, 1, 0, 0, false)
		} else {
			c, r, _ = b.StartSpanInt(parent, "s", "i", int64(i), 1, false)
		}
		if c == nil || seen[c] {
			t.Fatalf("span %d: context %p (nil, or handed out before)", i, c)
		}
		seen[c] = true
		spans = append(spans, span{c, r.ID, r.Parent})
		parent = c
	}
	runtime.GC()
	runtime.GC()
	for i, s := range spans {
		if s.c.ID() != s.id || s.c.Value(key{}) != "v" || SpanFromContext(s.c) != s.c {
			t.Fatalf("span %d: context says ID %d (want %d), value %v", i, s.c.ID(), s.id, s.c.Value(key{}))
		}
		if p := SpanFromContext(s.c.parent); (p == nil) != (s.parent == 0) || (p != nil && p.ID() != s.parent) {
			t.Fatalf("span %d: parent context %v, record's parent %d", i, p, s.parent)
		}
	}
}

// The context prefetcher makes nothing for a session whose spans hand out
// no context, and starts once a span asks for a block.
func TestContextBlocksMadeOnlyWhenAsked(t *testing.T) {
	b := NewBuffer(1<<20, 3)
	if b.ctxSpares == nil {
		t.Fatal("a buffer this size has no prefetcher")
	}
	if !Activate(b) {
		t.Fatal("another buffer is active")
	}
	defer Deactivate(b)
	for i := range 4 * ctxBlockLen {
		b.Put(&Entry{Kind: event.KindInstant, Level: 1}, "instant", nil)
		b.StartSpanInt(context.Background(), "leaf", "i", int64(i), 1, true)
	}
	time.Sleep(20 * time.Millisecond) // time enough for a producer that did not wait
	if n := b.ctxSpares.waiting(); n != 0 {
		t.Fatalf("%d blocks of contexts made for a session with no span that has one", n)
	}
	b.StartSpanInt(context.Background(), "span", "i", 0, 1, false)
	for deadline := time.Now().Add(5 * time.Second); b.ctxSpares.waiting() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no block of contexts made after a span asked for one")
		}
		time.Sleep(time.Millisecond)
	}
}
