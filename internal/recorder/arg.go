package recorder

import (
	"math"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// Arg is a span's or instant's argument as annotate hands it to the
// recorder: the same key, kind and value as an event.Arg, packed into three
// fields and 32 bytes. The compiler keeps a struct that small in registers
// (SSA), so an argument built by an inlined constructor (annotate.Int) is
// stored straight into a variadic call's array. The model's 48-byte
// event.Arg is built in a stack temporary and copied with 16-byte moves that
// straddle the 8-byte stores just made: store forwarding fails and the caller
// stalls (a loop passing one Int: 14.5 against 5.9 ns a call on the 2-core
// VM).
//
// The kind travels in Ref: a number's Ref points at its kind's byte in
// argKinds (Num holds the value's bits); a non-empty string's Ref is its
// bytes and Num its length; the empty string points at ArgString's byte.
// The zero Arg (Ref nil) has kind 0, as the zero event.Arg does. Every Ref
// is a real pointer (to a static array or to the string's bytes), so the
// garbage collector sees a string value alive for as long as the Arg is.
type Arg struct {
	Key string
	Num uint64
	Ref unsafe.Pointer
}

// argKinds is the static array whose bytes stand for the kinds of
// non-string values in Arg.Ref: &argKinds[k] is kind k.
var argKinds [8]byte

// Kinds up to ArgFlow must fit argKinds.
const _ = uint(len(argKinds) - 1 - int(event.ArgFlow))

// NumArg returns the argument key = the number num (its bits) of kind k,
// which must not be event.ArgString.
func NumArg(key string, k event.ArgKind, num uint64) Arg {
	return Arg{Key: key, Num: num, Ref: unsafe.Pointer(&argKinds[k&7])}
}

// StringArg returns the argument key = the string v.
func StringArg(key, v string) Arg {
	if len(v) == 0 {
		return Arg{Key: key, Ref: unsafe.Pointer(&argKinds[event.ArgString])}
	}
	return Arg{Key: key, Num: uint64(len(v)), Ref: unsafe.Pointer(unsafe.StringData(v))}
}

// IsInt reports whether a is an event.ArgInt (one comparison: beginning
// a span checks it to take StartSpanInt's path).
func (a *Arg) IsInt() bool { return a.Ref == unsafe.Pointer(&argKinds[event.ArgInt]) }

// Kind returns a's kind.
func (a *Arg) Kind() event.ArgKind {
	if off := uintptr(a.Ref) - uintptr(unsafe.Pointer(&argKinds[0])); off < uintptr(len(argKinds)) {
		return event.ArgKind(off)
	}
	if a.Ref == nil {
		return 0
	}
	return event.ArgString
}

// Str returns a string argument's value ("" for other kinds).
func (a *Arg) Str() string {
	if a.Kind() != event.ArgString || a.Num == 0 {
		return ""
	}
	return unsafe.String((*byte)(a.Ref), int(min(a.Num, math.MaxInt)))
}

// Event returns a as the event model holds it.
func (a *Arg) Event() event.Arg {
	k := a.Kind()
	if k == event.ArgString {
		return event.Arg{Key: a.Key, Kind: k, Str: a.Str()}
	}
	return event.Arg{Key: a.Key, Kind: k, Num: a.Num}
}
