package recorder

import (
	"context"
	"testing"

	"github.com/devprof/devprof/event"
)

func TestStepOf(t *testing.T) {
	b := NewBuffer(100, 3)
	other := NewBuffer(100, 3)
	ctx := context.Background()
	if _, ok := b.StepOf(ctx); ok {
		t.Error("a step in a context without spans")
	}
	step, stepRec := b.StartSpan(ctx, "train", nil, 1, event.FlagStep, 7)
	inner, innerRec := b.StartSpan(step, "forward", nil, 1, 0, 0)
	if n, ok := b.StepOf(inner); !ok || n != 7 {
		t.Errorf("StepOf(span in step 7) = %d, %v", n, ok)
	}
	// A context wrapped by others still carries its step.
	type k struct{}
	if n, ok := b.StepOf(context.WithValue(inner, k{}, 1)); !ok || n != 7 {
		t.Errorf("StepOf(wrapped) = %d, %v", n, ok)
	}
	// An inner step wins; an ended one no longer counts.
	sub, subRec := b.StartSpan(inner, "micro", nil, 1, event.FlagStep, 3)
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
