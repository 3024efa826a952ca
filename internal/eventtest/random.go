package eventtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/devprof/devprof/event"
)

// RandomArgsSnapshot is a trace for holding a writer's fast path to its
// general one: spans and instants on three lanes with no to three
// arguments of every kind (negative ints, bools stored as non-zero numbers
// other than 1, NaN, repeated and one-off strings, durations, flows),
// repeated keys, steps, an unfinished span, zero-length spans, and names
// seen once or many times. The same seed gives the same trace.
func RandomArgsSnapshot(seed uint64) *event.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := event.NewBuilder(event.Meta{Host: "random", PID: 1, Program: "random.test",
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
