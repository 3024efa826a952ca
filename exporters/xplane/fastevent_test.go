package xplane

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/devprof/devprof/event"
)

// fastEventSnapshot is a trace whose host spans take both of events'
// paths: no to three arguments of every kind (negative ints, bools stored
// as other non-zero numbers, NaN, repeated and one-off strings, durations,
// flows), steps, unfinished spans, zero-length spans and instants, names
// seen once or many times, on several lanes.
func fastEventSnapshot(seed uint64) *event.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 11))
	b := event.NewBuilder(event.Meta{Host: "fast", PID: 1, Program: "fast.test",
		Start: event.ClockAnchor{Mono: 0, Boot: 5_000, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 1 << 40, Boot: 5_000 + 1<<40, Wall: 1_795_000_000_000_000_000 + 1<<40}})
	names := []string{"fwd", "bwd", "op", "io"}
	keys := []string{"batch", "layer", "lr", "ok", "mode"}
	arg := func() event.Arg {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(9) {
		case 0:
			return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(-rng.Int64N(1 << 40))}
		case 1:
			return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(rng.IntN(300))}
		case 2:
			return event.Arg{Key: k, Kind: event.ArgUint, Num: rng.Uint64()}
		case 3:
			return event.Arg{Key: k, Kind: event.ArgBool, Num: uint64(rng.IntN(3))}
		case 4:
			return event.Arg{Key: k, Kind: event.ArgFloat, Num: math.Float64bits([]float64{0.5, -1e300, math.NaN()}[rng.IntN(3)])}
		case 5:
			return event.Arg{Key: k, Kind: event.ArgString, Str: []string{"train", "eval", ""}[rng.IntN(3)]}
		case 6:
			return event.Arg{Key: k, Kind: event.ArgString, Str: fmt.Sprint("once-", rng.IntN(1<<30))}
		case 7:
			return event.Arg{Key: k, Kind: event.ArgDuration, Num: uint64(rng.IntN(5_000))}
		default:
			return event.Arg{Kind: event.ArgFlow, Num: uint64(1 + rng.IntN(20))}
		}
	}
	for lane := range 3 {
		t := int64(1_000 + lane)
		for i := range 400 {
			var args []event.Arg
			for range rng.IntN(4) {
				args = append(args, arg())
			}
			name := names[rng.IntN(len(names))]
			if rng.IntN(20) == 0 {
				name = fmt.Sprint("rare-", i)
			}
			d := int64(rng.IntN(900))
			id := b.Span(event.Span{Name: name, Start: t, End: t + d, Args: args, Step: rng.IntN(15) == 0, StepNum: int64(i),
				Unfinished: i == 399 && lane == 0})
			if rng.IntN(4) == 0 {
				b.Instant("tick", t+d/2, 0, id, []event.Arg{arg()})
			}
			t += d + int64(rng.IntN(50))
		}
	}
	return b.Snapshot()
}

// eventFast writes exactly the bytes of the general path, and takes most
// of the spans it can.
func TestEventFastMatchesGeneralPath(t *testing.T) {
	for seed := range uint64(4) {
		s := fastEventSnapshot(seed)
		write := func(fast bool) ([]byte, int) {
			t.Helper()
			noFastEvent = !fast
			defer func() { noFastEvent = false }()
			var buf bytes.Buffer
			x, err := write(&buf, s)
			if err != nil {
				t.Fatal(err)
			}
			return buf.Bytes(), x.fastEvents
		}
		general, none := write(false)
		fast, taken := write(true)
		if none != 0 {
			t.Fatalf("seed %d: %d fast events with the fast path off", seed, none)
		}
		if !bytes.Equal(fast, general) {
			n := 0
			for n < min(len(fast), len(general)) && fast[n] == general[n] {
				n++
			}
			t.Fatalf("seed %d: the fast path's output differs at byte %d of %d (general %d bytes)", seed, n, len(fast), len(general))
		}
		t.Logf("seed %d: %d of the spans took the fast path", seed, taken)
		if taken < 300 {
			t.Errorf("seed %d: only %d spans took the fast path", seed, taken)
		}
		if _, err := Read(bytes.NewReader(fast)); err != nil {
			t.Fatalf("seed %d: reading the output back: %v", seed, err)
		}
	}
}
