package annotate

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// An Arg must stay small enough for the compiler to build in registers:
// at most 32 bytes and four fields (the limits of what it keeps in SSA
// form). Past them every Begin with an argument pays a copy and a
// store-forwarding stall again.
func TestArgStaysRegisterSized(t *testing.T) {
	if n := unsafe.Sizeof(Arg{}); n > 32 {
		t.Errorf("Arg is %d bytes, want at most 32", n)
	}
	inner := reflect.TypeOf(Arg{}).Field(0).Type
	if reflect.TypeOf(Arg{}).NumField() != 1 || inner.NumField() > 4 {
		t.Errorf("Arg has %d fields holding %d, want one holding at most 4", reflect.TypeOf(Arg{}).NumField(), inner.NumField())
	}
}

// Every constructor's argument reads back, through EventArg and through
// a recorded span and instant, as the event.Arg it stands for.
func TestArgConstructorsMatchTheModel(t *testing.T) {
	long := strings.Repeat("x", 1<<16)
	sub := long[100:105] // a string pointing into another's bytes
	cases := []struct {
		arg  Arg
		want event.Arg
	}{
		{Int("i", -3), event.Arg{Key: "i", Kind: event.ArgInt, Num: uint64(math.MaxUint64 - 2)}},
		{Int64("i64", math.MinInt64), event.Arg{Key: "i64", Kind: event.ArgInt, Num: 1 << 63}},
		{Uint64("u", math.MaxUint64), event.Arg{Key: "u", Kind: event.ArgUint, Num: math.MaxUint64}},
		{Float64("f", -0.5), event.Arg{Key: "f", Kind: event.ArgFloat, Num: math.Float64bits(-0.5)}},
		{Float64("nan", math.NaN()), event.Arg{Key: "nan", Kind: event.ArgFloat, Num: math.Float64bits(math.NaN())}},
		{Bool("t", true), event.Arg{Key: "t", Kind: event.ArgBool, Num: 1}},
		{Bool("f", false), event.Arg{Key: "f", Kind: event.ArgBool}},
		{String("s", "héllo"), event.Arg{Key: "s", Kind: event.ArgString, Str: "héllo"}},
		{String("empty", ""), event.Arg{Key: "empty", Kind: event.ArgString}},
		{String("sub", sub), event.Arg{Key: "sub", Kind: event.ArgString, Str: "xxxxx"}},
		{Duration("d", -time.Second), event.Arg{Key: "d", Kind: event.ArgDuration, Num: uint64(math.MaxUint64 - 999_999_999)}},
		{Flow(42), event.Arg{Kind: event.ArgFlow, Num: 42}},
		{Arg{}, event.Arg{}},
	}
	for _, c := range cases {
		if got := c.arg.EventArg(); got != c.want {
			t.Errorf("%q: EventArg = %+v, want %+v", c.want.Key, got, c.want)
		}
		if c.arg.Key() != c.want.Key {
			t.Errorf("Key() = %q, want %q", c.arg.Key(), c.want.Key)
		}
	}
	var args []Arg
	for _, c := range cases[:len(cases)-2] { // neither a flow (not an argument) nor kind 0
		args = append(args, c.arg)
	}
	s := record(t, 100, 2, func() {
		ctx := context.Background()
		for _, a := range args {
			_, sp := Begin(ctx, "one", a) // one argument: the record's inline slots
			sp.End()
		}
		_, sp := Begin(ctx, "all", args...) // more than a record holds
		sp.End()
		Instant(ctx, "instant", args...)
	})
	var all, inst int
	one := 0
	for _, r := range s.Events {
		got := s.Args(r)
		switch s.Name(r) {
		case "one":
			if len(got) != 1 || got[0] != cases[one].want {
				t.Errorf("span %d recorded %+v, want [%+v]", one, got, cases[one].want)
			}
			one++
		case "all", "instant":
			if s.Name(r) == "all" {
				all++
			} else {
				inst++
			}
			if len(got) != len(args) {
				t.Fatalf("%s recorded %d args, want %d", s.Name(r), len(got), len(args))
			}
			for i := range got {
				if got[i] != cases[i].want {
					t.Errorf("%s arg %d = %+v, want %+v", s.Name(r), i, got[i], cases[i].want)
				}
			}
		}
	}
	if one != len(args) || all != 1 || inst != 1 {
		t.Errorf("recorded %d one-arg spans, %d all-arg spans, %d instants; want %d, 1, 1", one, all, inst, len(args))
	}
}

// A string argument's bytes are kept alive by the Arg alone: its Ref is
// the only pointer to them once the caller's string is gone.
func TestStringArgKeepsItsBytes(t *testing.T) {
	args := make([]Arg, 64)
	for i := range args {
		args[i] = String("k", strings.Repeat(string(rune('a'+i%26)), 1000+i)) // fresh heap strings
	}
	for range 3 {
		runtime.GC()
	}
	_ = make([]byte, 1<<20) // reuse freed memory, if any was wrongly freed
	for i, a := range args {
		want := strings.Repeat(string(rune('a'+i%26)), 1000+i)
		if got := a.EventArg().Str; got != want {
			t.Fatalf("arg %d: %d bytes %.8q..., want %d bytes %.8q...", i, len(got), got, len(want), want)
		}
	}
}

// FuzzArgMatchesTheModel: any key and value, through any constructor,
// reads back through EventArg as the event.Arg it stands for.
func FuzzArgMatchesTheModel(f *testing.F) {
	f.Add("batch", "", uint8(0), uint64(32))
	f.Add("", "value", uint8(5), uint64(0))
	f.Add("k\x00ey", "\xff\xfe", uint8(5), uint64(1))
	f.Add("lr", "", uint8(3), math.Float64bits(math.Inf(-1)))
	f.Fuzz(func(t *testing.T, key, str string, kind uint8, num uint64) {
		var a Arg
		var want event.Arg
		switch kind % 8 {
		case 0:
			a, want = Int(key, int(num)), event.Arg{Key: key, Kind: event.ArgInt, Num: uint64(int64(int(num)))}
		case 1:
			a, want = Int64(key, int64(num)), event.Arg{Key: key, Kind: event.ArgInt, Num: num}
		case 2:
			a, want = Uint64(key, num), event.Arg{Key: key, Kind: event.ArgUint, Num: num}
		case 3:
			a, want = Float64(key, math.Float64frombits(num)), event.Arg{Key: key, Kind: event.ArgFloat, Num: num}
		case 4:
			a, want = Bool(key, num&1 == 1), event.Arg{Key: key, Kind: event.ArgBool, Num: num & 1}
		case 5:
			a, want = String(key, str), event.Arg{Key: key, Kind: event.ArgString, Str: str}
		case 6:
			a, want = Duration(key, time.Duration(num)), event.Arg{Key: key, Kind: event.ArgDuration, Num: num}
		default:
			a, want = Flow(num), event.Arg{Kind: event.ArgFlow, Num: num}
		}
		// event.Arg holds a float's bits, so a NaN compares equal to itself.
		if got := a.EventArg(); got != want {
			t.Fatalf("EventArg = %+v, want %+v", got, want)
		}
		if a.Key() != want.Key {
			t.Fatalf("Key() = %q, want %q", a.Key(), want.Key)
		}
	})
}
