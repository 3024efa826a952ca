package recorder

import (
	"testing"
	"time"
)

// The producer fills the queue, sleeps while takers leave it more than
// half full, refills it once one finds it half empty, and returns when
// stopped.
func TestHandoffWakesProducerAtHalf(t *testing.T) {
	h := newHandoff[int](4)
	stop, done := make(chan struct{}), make(chan struct{})
	made := make(chan int, 100)
	go func() {
		defer close(done)
		for n := 0; h.waitRoom(stop); n++ {
			h.put(n)
			made <- n
		}
	}()
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for h.waiting() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d queued, want %d", h.waiting(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(4)
	for want := 0; want < 2; want++ {
		if v, ok := h.take(); !ok || v != want {
			t.Fatalf("take: %d %v, want %d", v, ok, want)
		}
	}
	// 2 of 4 left: half, so the producer was woken and refills.
	waitFor(4)
	if v, ok := h.take(); !ok || v != 2 {
		t.Fatalf("take: %d %v, want 2", v, ok)
	}
	// 3 of 4 left: more than half, so the producer sleeps on.
	time.Sleep(20 * time.Millisecond)
	if n := h.waiting(); n != 3 {
		t.Fatalf("%d queued after one take from a full queue, want 3 (the producer was woken early)", n)
	}
	if len(made) != 6 {
		t.Fatalf("producer made %d, want 6", len(made))
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("producer did not stop")
	}
	// An empty queue says so, and asks for more.
	e := newHandoff[int](2)
	if _, ok := e.take(); ok {
		t.Fatal("take from an empty queue succeeded")
	}
	if len(e.want) != 1 {
		t.Fatal("take from an empty queue did not ask the producer for more")
	}
}
