package devmem

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// A CUDA allocation reaches the tracker inside CUDA's call, through CUPTI,
// with no context: only the goroutine that called CUDA is known (the hook
// runs on it, inside its cgo call). Go has no goroutine-local storage, and
// the goroutine labels runtime/pprof sets cannot be read back, so Do keeps
// its own table from goroutine to context, which the hook reads by the
// goroutine's id only while some Do is running: otherwise the hook pays one
// atomic load.

// scopes maps a goroutine's id to the context Do gave it; active counts
// the goroutines in it.
var (
	scopes sync.Map // uint64 → context.Context
	active atomic.Int32
)

// Do calls f(ctx), and the CUDA allocations f's goroutine makes through
// any binding meanwhile carry ctx's tags (WithTags) and the path of the
// annotate spans open in ctx, as Alloc's do with their context: a training
// loop wraps a phase once, as with runtime/pprof.Do, and every cudaMalloc
// under it says so. Calls nest: the innermost Do's ctx applies. Goroutines
// f starts are not covered (wrap their work in Do too). With tracking off
// Do is f(ctx).
func Do(ctx context.Context, f func(ctx context.Context)) {
	if current.Load() == nil {
		f(ctx)
		return
	}
	id := goroutineID()
	prev, nested := scopes.Swap(id, ctx)
	if !nested {
		active.Add(1)
	}
	defer func() {
		if nested {
			scopes.Store(id, prev)
		} else {
			scopes.Delete(id)
			active.Add(-1)
		}
	}()
	f(ctx)
}

// scopeContext returns the context Do gave the calling goroutine, or nil.
func scopeContext() context.Context {
	if active.Load() == 0 {
		return nil
	}
	if ctx, ok := scopes.Load(goroutineID()); ok {
		return ctx.(context.Context)
	}
	return nil
}

// goroutineID reads the calling goroutine's id from the first line of
// its stack trace, "goroutine 42 [running]:": the one way Go says it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
