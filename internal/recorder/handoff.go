package recorder

// handoff passes what a producer goroutine prepares ahead (a buffer's
// chunks, blocks of span contexts) to the writers that take it,
// and wakes the producer only once the queue is half empty instead of at
// every take. A wake-up is paid on the taker's thread (the runtime starts
// an idle thread for the producer: a futex call): once per chunk it was
// ~2 ns of every flight-recorder span on the 2-core VM (a chunk there is
// 1024 records).
type handoff[T any] struct {
	ready chan T
	want  chan struct{} // holds one wake-up asked for and not yet seen
}

func newHandoff[T any](n int) *handoff[T] {
	return &handoff[T]{ready: make(chan T, n), want: make(chan struct{}, 1)}
}

// take returns a prepared item, or false when none is ready.
func (h *handoff[T]) take() (T, bool) {
	select {
	case v := <-h.ready:
		if len(h.ready) <= cap(h.ready)/2 {
			h.wake()
		}
		return v, true
	default:
		h.wake()
		var zero T
		return zero, false
	}
}

func (h *handoff[T]) wake() {
	select {
	case h.want <- struct{}{}:
	default: // one is pending already
	}
}

// waitRoom is the producer's: it returns true once the queue has room for
// an item (sleeping while it is full until a taker wakes it), false when
// stop is closed. The producer is the only sender, so the put that
// follows never blocks.
func (h *handoff[T]) waitRoom(stop <-chan struct{}) bool {
	for len(h.ready) == cap(h.ready) {
		select {
		case <-h.want:
		case <-stop:
			return false
		}
	}
	select {
	case <-stop:
		return false
	default:
		return true
	}
}

// waitWanted is the producer's, for one that makes nothing until it is
// needed: it returns true once a taker has asked (a take found the queue
// empty, or left it half empty), false when stop is closed.
func (h *handoff[T]) waitWanted(stop <-chan struct{}) bool {
	select {
	case <-h.want:
		return true
	case <-stop:
		return false
	}
}

// put queues v; call it after waitRoom.
func (h *handoff[T]) put(v T) { h.ready <- v }

// waiting returns how many items are queued.
func (h *handoff[T]) waiting() int { return len(h.ready) }
