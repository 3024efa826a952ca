//go:build cgo

package cuptiwrap

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// hookAPI is one entry point of shim.c's hook table.
type hookAPI struct {
	domain, cbid C.uint32_t
	name         string
}

// hookTable is shim.c's table, read once: its index is dpc_memcall.api, and
// its names are the constant strings MemoryCall.API points to.
var hookTable = sync.OnceValue(func() []hookAPI {
	n := int(C.dpc_hook_count())
	t := make([]hookAPI, n)
	for i := range t {
		var name *C.char
		C.dpc_hook_entry(C.int(i), &t[i].domain, &t[i].cbid, &name)
		t[i].name = C.GoString(name)
	}
	return t
})

// hookRun is what the C callback's calls into Go need: swapped in and out
// whole, so a call sees one run's handler and table or nothing.
type hookRun struct {
	handler func(*MemoryCall)
	table   []hookAPI
}

var activeRun atomic.Pointer[hookRun]

// calls recycles MemoryCall values: CUDA calls on several threads run
// handlers at once, so each needs its own, and a pool hands them out
// without allocating once warm.
var calls = sync.Pool{New: func() any { return new(MemoryCall) }}

// dpcGoMemoryHook is called by shim.c's CUPTI callback, on the thread that
// made the CUDA call, for every successful allocation or free while hooks
// run.
//
//export dpcGoMemoryHook
func dpcGoMemoryHook(c *C.dpc_memcall) {
	run := activeRun.Load()
	if run == nil {
		return // Stop waits for calls in flight, so this is only a call racing Start's setup
	}
	m := calls.Get().(*MemoryCall)
	*m = MemoryCall{
		Free:        c.free != 0,
		Address:     uint64(c.address),
		Bytes:       uint64(c.bytes),
		Kind:        uint8(c.kind),
		Device:      int32(c.device),
		Stream:      uint64(c.stream),
		Async:       c.async != 0,
		Correlation: uint32(c.correlation),
		API:         run.table[c.api].name,
	}
	// A panic (or runtime.Goexit) in the handler unwinds past shim.c's
	// frames without running them: undo their bookkeeping here, or Stop
	// would wait for this call forever.
	returned := false
	defer func() {
		if !returned {
			C.dpc_hooks_abandon()
		}
	}()
	run.handler(m)
	returned = true
	*m = MemoryCall{}
	calls.Put(m)
}

// hooks guards the one running MemoryHooks; it also serializes
// cuptiEnableCallback, which CUPTI requires of a subscriber.
var hooks struct {
	sync.Mutex
	running *MemoryHooks
}

// MemoryHooks reports CUDA allocations and frees to a handler as they
// happen. Create it with [StartMemoryHooks]; its methods are safe for
// concurrent use, but Stop must not be called from the handler.
type MemoryHooks struct {
	lib      *library
	sub      C.dpc_subscriber
	enabled  []hookAPI // callback ids turned on, to turn off at Stop
	unhooked []string  // set by StartMemoryHooks, then only read

	// mu guards the result of Stop apart from the hooks lock, which Stop
	// holds while it waits for handlers: a handler may call Stats.
	mu      sync.Mutex
	stopped bool
	stopErr error
	final   HookStats
}

// StartMemoryHooks starts reporting every CUDA allocation and free the
// process makes through the runtime (cudaMalloc, cudaMallocPitch,
// cudaMallocHost, cudaHostAlloc, cudaMallocManaged, cudaMallocAsync,
// cudaMallocFromPoolAsync and their frees) or the driver (cuMemAlloc,
// cuMemAllocPitch, cuMemAllocHost, cuMemHostAlloc, cuMemAllocManaged,
// cuMemAllocAsync, cuMemAllocFromPoolAsync, their _v2 and _ptsz variants
// and their frees), through CUPTI's callback API.
//
// handler is called on the thread that made the CUDA call, after the call
// returned success and before it returns to its caller. When that call
// came from Go through cgo, the handler runs on the very goroutine that
// made it, so runtime.Callers in the handler sees the Go frames that
// allocated; from a thread C created it runs on a goroutine of its own.
// Calls on different threads run the handler concurrently. The
// *MemoryCall is reused once the handler returns: copy what you keep. The
// handler must be quick (it delays the CUDA call), must not panic, and
// must not call Stop or wait for a goroutine that does. Failed calls and
// frees of NULL are counted, not reported (see [HookStats]); a driver
// call inside a runtime one (cudaMalloc calls cuMemAlloc_v2) is reported
// once, as the runtime call.
//
// The hooks share the process's one CUPTI subscriber with a [Collector]:
// both may run at once and start and stop in any order, but with the same
// libcupti. Only one MemoryHooks runs at a time ([ErrHooksRunning]). The
// errors are [Start]'s: [*LoadError] when no library loads, [*Error] from
// CUPTI (errors.Is [ErrNoDevice] without a usable driver,
// [ErrProfilerConflict] when another CUPTI client owns the process), and
// [ErrHooksUnsupported] for a library without the callback API.
func StartMemoryHooks(o HookOptions, handler func(*MemoryCall)) (*MemoryHooks, error) {
	if handler == nil {
		return nil, errors.New("cuptiwrap: StartMemoryHooks needs a handler function")
	}
	hooks.Lock()
	defer hooks.Unlock()
	if hooks.running != nil {
		return nil, ErrHooksRunning
	}
	lib, err := load(o.Library)
	if err != nil {
		return nil, err
	}
	var missing []string
	if lib.c.enable_callback == nil {
		missing = append(missing, "cuptiEnableCallback")
	}
	if lib.c.get_device_id == nil {
		missing = append(missing, "cuptiGetDeviceId")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s lacks %v; collect activity without memory hooks, or load a complete libcupti",
			ErrHooksUnsupported, lib.info.Path, missing)
	}
	sub, err := subscribe(lib)
	if err != nil {
		return nil, err
	}
	h := &MemoryHooks{lib: lib, sub: sub}
	table := hookTable()
	activeRun.Store(&hookRun{handler: handler, table: table})
	C.dpc_hooks_on(lib.c)
	for _, a := range table {
		r := C.dpc_enable_callback(lib.c, 1, sub, a.domain, a.cbid)
		switch r {
		case C.DPC_SUCCESS:
			h.enabled = append(h.enabled, a)
		case C.DPC_ERROR_INVALID_PARAMETER:
			// CUPTI's answer for a callback id it does not know: a
			// library older than this entry point.
			h.unhooked = append(h.unhooked, a.name)
		default:
			err := lib.check("cuptiEnableCallback", r, a.name)
			h.shutdown()
			return nil, err
		}
	}
	if len(h.enabled) == 0 {
		h.shutdown()
		return nil, fmt.Errorf("%w: %s accepts none of the allocation callback ids", ErrHooksUnsupported, lib.info.Path)
	}
	hooks.running = h
	return h, nil
}

// shutdown turns the hooks off and waits until no handler runs; it
// returns the final counts. Called with hooks locked.
func (h *MemoryHooks) shutdown() (HookStats, error) {
	C.dpc_hooks_off()
	var errs []error
	for _, a := range h.enabled {
		r := C.dpc_enable_callback(h.lib.c, 0, h.sub, a.domain, a.cbid)
		errs = append(errs, h.lib.check("cuptiEnableCallback", r, "disabling "+a.name))
	}
	h.enabled = nil
	// Handlers already past the check of the C flag finish first: after
	// this none runs.
	C.dpc_hooks_quiesce()
	activeRun.Store(nil)
	final := h.counters()
	errs = append(errs, unsubscribe())
	return final, errors.Join(errs...)
}

// counters reads the C side's counts.
func (h *MemoryHooks) counters() HookStats {
	var c C.dpc_hook_counters
	C.dpc_hooks_read(&c)
	return HookStats{
		Calls:     int64(c.calls),
		Failed:    int64(c.failed),
		Nested:    int64(c.nested),
		NullFrees: int64(c.null_frees),
		Unhooked:  slices.Clone(h.unhooked),
	}
}

// Stop turns the hooks off. Once it returns, the handler is not called
// again and no call of it is still running. Calling it again returns the
// same result. It must not be called from the handler (it would wait for
// itself): there it returns an error and does nothing.
func (h *MemoryHooks) Stop() error {
	if C.dpc_hooks_in_handler() != 0 {
		return errors.New("cuptiwrap: MemoryHooks.Stop called from the memory handler, which Stop waits for: call it from another goroutine")
	}
	hooks.Lock()
	defer hooks.Unlock()
	h.mu.Lock()
	stopped, err := h.stopped, h.stopErr
	h.mu.Unlock()
	if stopped {
		return err
	}
	final, err := h.shutdown()
	if hooks.running == h {
		hooks.running = nil
	}
	h.mu.Lock()
	h.stopped, h.stopErr, h.final = true, err, final
	h.mu.Unlock()
	return err
}

// Stats returns the counts so far; after Stop, the final ones.
func (h *MemoryHooks) Stats() HookStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		s := h.final
		s.Unhooked = slices.Clone(s.Unhooked)
		return s
	}
	return h.counters()
}
