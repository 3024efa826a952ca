//go:build cgo

package cuptiwrap

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/fakecuda"
)

// entryPoint is one CUDA entry point the hooks follow, written out from
// cupti_runtime_cbid.h / cupti_driver_cbid.h and the CUDA API (not from
// shim.c's table), with what its MemoryCall must say.
type entryPoint struct {
	api     string
	domain  uint32
	cbid    uint32
	kind    uint8 // 3 device, 2 pinned, 5 managed
	free    bool
	async   bool
	pitched bool
	v1      bool // CUDA 3.x driver call: 32-bit device pointer
}

const (
	memPinned  = 2
	memDevice  = 3
	memManaged = 5
)

var entryPoints = []entryPoint{
	{api: "cudaMalloc", domain: 2, cbid: 20, kind: memDevice},
	{api: "cudaMallocPitch", domain: 2, cbid: 21, kind: memDevice, pitched: true},
	{api: "cudaFree", domain: 2, cbid: 22, kind: memDevice, free: true},
	{api: "cudaMallocHost", domain: 2, cbid: 25, kind: memPinned},
	{api: "cudaFreeHost", domain: 2, cbid: 26, kind: memPinned, free: true},
	{api: "cudaHostAlloc", domain: 2, cbid: 27, kind: memPinned},
	{api: "cudaMallocManaged", domain: 2, cbid: 206, kind: memManaged},
	{api: "cudaMallocAsync", domain: 2, cbid: 373, kind: memDevice, async: true},
	{api: "cudaMallocAsync_ptsz", domain: 2, cbid: 374, kind: memDevice, async: true},
	{api: "cudaFreeAsync", domain: 2, cbid: 375, kind: memDevice, free: true, async: true},
	{api: "cudaFreeAsync_ptsz", domain: 2, cbid: 376, kind: memDevice, free: true, async: true},
	{api: "cudaMallocFromPoolAsync", domain: 2, cbid: 391, kind: memDevice, async: true},
	{api: "cudaMallocFromPoolAsync_ptsz", domain: 2, cbid: 392, kind: memDevice, async: true},
	{api: "cuMemAlloc", domain: 1, cbid: 29, kind: memDevice, v1: true},
	{api: "cuMemAllocPitch", domain: 1, cbid: 31, kind: memDevice, pitched: true, v1: true},
	{api: "cuMemFree", domain: 1, cbid: 33, kind: memDevice, free: true, v1: true},
	{api: "cuMemAllocHost", domain: 1, cbid: 37, kind: memPinned},
	{api: "cuMemFreeHost", domain: 1, cbid: 38, kind: memPinned, free: true},
	{api: "cuMemHostAlloc", domain: 1, cbid: 39, kind: memPinned},
	{api: "cuMemAlloc_v2", domain: 1, cbid: 243, kind: memDevice},
	{api: "cuMemAllocPitch_v2", domain: 1, cbid: 244, kind: memDevice, pitched: true},
	{api: "cuMemFree_v2", domain: 1, cbid: 245, kind: memDevice, free: true},
	{api: "cuMemAllocHost_v2", domain: 1, cbid: 294, kind: memPinned},
	{api: "cuMemAllocManaged", domain: 1, cbid: 371, kind: memManaged},
	{api: "cuMemAllocAsync", domain: 1, cbid: 598, kind: memDevice, async: true},
	{api: "cuMemAllocAsync_ptsz", domain: 1, cbid: 599, kind: memDevice, async: true},
	{api: "cuMemFreeAsync", domain: 1, cbid: 600, kind: memDevice, free: true, async: true},
	{api: "cuMemFreeAsync_ptsz", domain: 1, cbid: 601, kind: memDevice, free: true, async: true},
	{api: "cuMemAllocFromPoolAsync", domain: 1, cbid: 611, kind: memDevice, async: true},
	{api: "cuMemAllocFromPoolAsync_ptsz", domain: 1, cbid: 612, kind: memDevice, async: true},
}

// callLog keeps copies of what the handler was given.
type callLog struct {
	mu    sync.Mutex
	calls []MemoryCall
}

func (l *callLog) handler(m *MemoryCall) {
	l.mu.Lock()
	l.calls = append(l.calls, *m)
	l.mu.Unlock()
}

// take returns the calls so far and forgets them.
func (l *callLog) take() []MemoryCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// hooksFake builds the fake (no script: only what a test plays) and opens
// it for playing calls.
func hooksFake(t *testing.T) (string, *fakecuda.Lib) {
	t.Helper()
	path := useFake(t, "12", 0)
	t.Setenv("FAKECUPTI_SCRIPT", "0")
	fk, err := fakecuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, fk
}

func startHooks(t *testing.T, lib string, handler func(*MemoryCall)) *MemoryHooks {
	t.Helper()
	h, err := StartMemoryHooks(HookOptions{Library: lib}, handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	return h
}

// TestHookTableMatchesEntryPoints: shim.c follows exactly the entry points
// listed above, under the same callback ids and names.
func TestHookTableMatchesEntryPoints(t *testing.T) {
	var got, want []string
	for _, a := range hookTable() {
		got = append(got, fmt.Sprintf("%d/%d %s", a.domain, a.cbid, a.name))
	}
	for _, e := range entryPoints {
		want = append(want, fmt.Sprintf("%d/%d %s", e.domain, e.cbid, e.api))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("hook table\n%v\nwant\n%v", got, want)
	}
}

// TestMemoryHooksEntryPoints plays every entry point once and checks every
// fact of its MemoryCall against what the fake did.
func TestMemoryHooksEntryPoints(t *testing.T) {
	lib, fk := hooksFake(t)
	var log callLog
	h := startHooks(t, lib, log.handler)
	if n := fk.CallbacksEnabled(); n != len(entryPoints) {
		t.Errorf("%d callback ids enabled, want %d", n, len(entryPoints))
	}
	var lastCorrelation uint32
	for i, e := range entryPoints {
		t.Run(e.api, func(t *testing.T) {
			device := int32(i % 4)
			stream := uint64(0)
			if e.async {
				stream = 0x5000 + uint64(i)
			}
			want := MemoryCall{Free: e.free, Kind: e.kind, Device: device, Stream: stream, Async: e.async, API: e.api}
			var res fakecuda.MemResult
			if e.free {
				// Something to free, allocated the matching way.
				alloc := fakecuda.MemOp{Domain: 2, CBID: 20, Device: device, Bytes: 4096} // cudaMalloc
				switch {
				case e.v1:
					alloc = fakecuda.MemOp{Domain: 1, CBID: 29, Device: device, Bytes: 4096} // cuMemAlloc
				case e.kind == memPinned:
					alloc.CBID = 25 // cudaMallocHost
				}
				a := fk.Memory(alloc)
				if a.Result != 0 || a.Address == 0 || (e.v1 && a.Address >= 1<<32) {
					t.Fatalf("allocating something to free: %+v", a)
				}
				log.take()
				res = fk.Memory(fakecuda.MemOp{Domain: e.domain, CBID: e.cbid, Device: device, Ptr: a.Address, Stream: stream})
				want.Address = a.Address
			} else {
				bytes := uint64(1000 + 10*i)
				res = fk.Memory(fakecuda.MemOp{Domain: e.domain, CBID: e.cbid, Device: device, Bytes: bytes, Height: 3, Stream: stream})
				want.Address = res.Address
				want.Bytes = bytes
				if e.pitched {
					if res.Pitch < bytes {
						t.Fatalf("pitch %d below the width %d", res.Pitch, bytes)
					}
					want.Bytes = res.Pitch * 3
				}
				if res.Address == 0 || (e.v1 && res.Address >= 1<<32) {
					t.Fatalf("the fake allocated at %#x", res.Address)
				}
			}
			if res.Result != 0 {
				t.Fatalf("the call failed: %+v", res)
			}
			if res.Correlation <= lastCorrelation {
				t.Errorf("correlation id %d after %d: CUPTI's only increase", res.Correlation, lastCorrelation)
			}
			lastCorrelation = res.Correlation
			want.Correlation = res.Correlation
			got := log.take()
			if len(got) != 1 || got[0] != want {
				t.Errorf("handler got %+v\nwant [%+v]", got, want)
			}
		})
	}
	st := h.Stats()
	if st.Calls != int64(len(entryPoints)+countFrees()) || st.Failed != 0 || st.Nested != 0 || st.NullFrees != 0 || len(st.Unhooked) != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func countFrees() int {
	n := 0
	for _, e := range entryPoints {
		if e.free {
			n++
		}
	}
	return n
}

// TestMemoryHooksSkip: failed calls, frees of NULL and a call without a
// context.
func TestMemoryHooksSkip(t *testing.T) {
	lib, fk := hooksFake(t)
	var log callLog
	h := startHooks(t, lib, log.handler)

	if r := fk.CudaMallocFailing(1<<20, 0); r != 2 {
		t.Fatalf("CudaMallocFailing = %d", r)
	}
	if r := fk.CudaFree(0x1234); r != 1 {
		t.Fatalf("freeing a pointer never allocated = %d, want 1 (invalid value)", r)
	}
	for _, op := range []fakecuda.MemOp{
		{Domain: 2, CBID: 22},               // cudaFree(NULL)
		{Domain: 2, CBID: 375, Stream: 7},   // cudaFreeAsync(NULL, 7)
		{Domain: 1, CBID: 33},               // cuMemFree(0)
		{Domain: 1, CBID: 38},               // cuMemFreeHost(NULL)
		{Domain: 1, CBID: 601, Stream: 0x2}, // cuMemFreeAsync_ptsz(0)
	} {
		if r := fk.Memory(op); r.Result != 0 {
			t.Fatalf("free of NULL %+v = %+v", op, r)
		}
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("handler got %+v, want nothing", got)
	}
	st := h.Stats()
	if st.Calls != 0 || st.Failed != 2 || st.NullFrees != 5 || st.Nested != 0 {
		t.Errorf("Stats = %+v, want 2 failed and 5 null frees", st)
	}

	// No context: CUPTI cannot say which device.
	r := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 20, Device: -1, Bytes: 512})
	if got := log.take(); len(got) != 1 || got[0].Device != -1 || got[0].Address != r.Address {
		t.Errorf("call without a context: %+v", got)
	}
}

// TestMemoryHooksNested: the runtime allocating through the driver on the
// same thread is one MemoryCall, the runtime call; the driver called
// directly afterwards is reported again.
func TestMemoryHooksNested(t *testing.T) {
	lib, fk := hooksFake(t)
	var log callLog
	h := startHooks(t, lib, log.handler)

	a := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 20, Device: 1, Bytes: 8192, Nested: true})
	f := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 22, Device: 1, Ptr: a.Address, Nested: true})
	p := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 21, Device: 2, Bytes: 100, Height: 5, Nested: true})
	d := fk.Memory(fakecuda.MemOp{Domain: 1, CBID: 243, Device: 1, Bytes: 64})
	if a.Result != 0 || f.Result != 0 || p.Result != 0 || d.Result != 0 || a.Address == 0 || p.Pitch == 0 {
		t.Fatalf("calls: %+v %+v %+v %+v", a, f, p, d)
	}
	want := []MemoryCall{
		{Address: a.Address, Bytes: 8192, Kind: memDevice, Device: 1, Correlation: a.Correlation, API: "cudaMalloc"},
		{Free: true, Address: a.Address, Kind: memDevice, Device: 1, Correlation: f.Correlation, API: "cudaFree"},
		{Address: p.Address, Bytes: p.Pitch * 5, Kind: memDevice, Device: 2, Correlation: p.Correlation, API: "cudaMallocPitch"},
		{Address: d.Address, Bytes: 64, Kind: memDevice, Device: 1, Correlation: d.Correlation, API: "cuMemAlloc_v2"},
	}
	if got := log.take(); !slices.Equal(got, want) {
		t.Errorf("handler got\n%+v\nwant\n%+v", got, want)
	}
	if st := h.Stats(); st.Calls != 4 || st.Nested != 3 {
		t.Errorf("Stats = %+v, want 4 calls and 3 nested", st)
	}
}

// TestMemoryHooksSeeTheGoStack: a CUDA call made from Go through cgo runs
// the handler on the calling goroutine, so runtime.Callers sees the test
// function that allocated.
func TestMemoryHooksSeeTheGoStack(t *testing.T) {
	lib, fk := hooksFake(t)
	var frames []string
	h := startHooks(t, lib, func(m *MemoryCall) {
		var pcs [64]uintptr
		n := runtime.Callers(1, pcs[:])
		fs := runtime.CallersFrames(pcs[:n])
		for {
			f, more := fs.Next()
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
	})
	ptr := fk.CudaMalloc(1<<20, 0)
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime.CallersFrames from the handler:\n\t%s", strings.Join(frames, "\n\t"))
	me := slices.Index(frames, "github.com/devprof/devprof/internal/cuptiwrap.TestMemoryHooksSeeTheGoStack")
	malloc := slices.Index(frames, "github.com/devprof/devprof/internal/fakecuda.(*Lib).CudaMalloc")
	hook := slices.Index(frames, "github.com/devprof/devprof/internal/cuptiwrap.dpcGoMemoryHook")
	if ptr == 0 || me < 0 || malloc < 0 || hook < 0 || !(hook < malloc && malloc < me) {
		t.Errorf("the handler's stack lacks dpcGoMemoryHook … fakecuda.(*Lib).CudaMalloc … this test, in that order")
	}
}

// TestMemoryHooksFromCThread: a CUDA call from a thread C created runs the
// handler too, on a goroutine of its own with no Go frames below.
func TestMemoryHooksFromCThread(t *testing.T) {
	lib, fk := hooksFake(t)
	var log callLog
	var frames []string
	startHooks(t, lib, func(m *MemoryCall) {
		var pcs [64]uintptr
		n := runtime.Callers(1, pcs[:])
		fs := runtime.CallersFrames(pcs[:n])
		frames = frames[:0]
		for {
			f, more := fs.Next()
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
		log.handler(m)
	})
	ptr := fk.CudaMallocFromCThread(4096, 3)
	got := log.take()
	if ptr == 0 || len(got) != 1 || got[0].Address != ptr || got[0].Device != 3 || got[0].API != "cudaMalloc" {
		t.Fatalf("handler got %+v for %#x", got, ptr)
	}
	// frames[0] is the handler, a closure named after this test.
	if len(frames) < 2 || !slices.Contains(frames, "github.com/devprof/devprof/internal/cuptiwrap.dpcGoMemoryHook") ||
		slices.ContainsFunc(frames[1:], func(f string) bool { return strings.Contains(f, "fakecuda") || strings.Contains(f, "Test") }) {
		t.Errorf("stack of a call from a C thread:\n\t%s", strings.Join(frames, "\n\t"))
	}
	if r := fk.CudaFreeFromCThread(ptr); r != 0 {
		t.Fatalf("CudaFreeFromCThread = %d", r)
	}
	if got := log.take(); len(got) != 1 || !got[0].Free || got[0].Address != ptr || got[0].Device != 3 {
		t.Errorf("handler got %+v for the free", got)
	}
}

// TestMemoryHooksWithCollector: hooks and a Collector share the one
// subscriber, start and stop in either order, and the callback, the API
// record and the MEMORY2 record of one call carry the same correlation id.
func TestMemoryHooksWithCollector(t *testing.T) {
	for _, hooksFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooksFirst=%v", hooksFirst), func(t *testing.T) {
			lib, fk := hooksFake(t)
			var log callLog
			var sink sinkLog
			var h *MemoryHooks
			var c *Collector
			startC := func() {
				var err error
				if c, err = Start(Options{Library: lib, FlushPeriod: -1}, sink.sink); err != nil {
					t.Fatal(err)
				}
			}
			startH := func() {
				var err error
				if h, err = StartMemoryHooks(HookOptions{Library: lib}, log.handler); err != nil {
					t.Fatal(err)
				}
			}
			if hooksFirst {
				startH()
				startC()
			} else {
				startC()
				startH()
			}
			ptr := fk.CudaMalloc(3<<20, 1)
			async := fk.CudaMallocAsync(4096, 0, 0x77)
			nested := fk.CudaMallocNested(512, 2)
			fk.CudaFree(ptr)
			fk.CudaFreeAsync(async, 0x77)
			calls := log.take()
			if len(calls) != 5 {
				t.Fatalf("handler got %d calls, want 5: %+v", len(calls), calls)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			recs := sink.snapshot()
			for _, m := range calls {
				var api, mem []Record
				for _, r := range recs {
					if r.CorrelationID != m.Correlation {
						continue
					}
					switch r.Kind {
					case KindRuntime:
						api = append(api, r)
					case KindMemory:
						mem = append(mem, r)
					}
				}
				op := uint8(1)
				if m.Free {
					op = 2
				}
				if len(api) != 1 || api[0].Name != m.API || api[0].ReturnValue != 0 {
					t.Errorf("%+v: runtime API records %+v", m, api)
				}
				if len(mem) != 1 || mem[0].Address != m.Address || mem[0].MemoryOp != op || mem[0].MemoryKind != m.Kind ||
					(!m.Free && mem[0].Bytes != m.Bytes) || mem[0].DeviceID != uint32(m.Device) {
					t.Errorf("%+v: MEMORY2 records %+v", m, mem)
				}
			}
			if calls[2].Address != nested || calls[2].API != "cudaMalloc" {
				t.Errorf("nested call %+v", calls[2])
			}

			// Stop them in the other order than they started; the one
			// left keeps working.
			if hooksFirst {
				if err := h.Stop(); err != nil {
					t.Fatal(err)
				}
				fk.CudaMalloc(100, 0)
				if got := log.take(); len(got) != 0 {
					t.Errorf("handler called after Stop: %+v", got)
				}
				if err := c.Flush(); err != nil {
					t.Fatal(err)
				}
				mustStop(t, c)
			} else {
				mustStop(t, c)
				p := fk.CudaMalloc(100, 0)
				if got := log.take(); len(got) != 1 || got[0].Address != p {
					t.Errorf("hooks after the Collector stopped: %+v", got)
				}
				if err := h.Stop(); err != nil {
					t.Fatal(err)
				}
			}
			// Both gone: the subscriber is free again for either.
			if n := fk.CallbacksEnabled(); n != 0 {
				t.Errorf("%d callback ids still enabled", n)
			}
			c2, err := Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
			if err != nil {
				t.Fatalf("Start after both stopped: %v", err)
			}
			mustStop(t, c2)
		})
	}
}

// TestMemoryHooksStop: Stop turns the callbacks off, waits for a handler
// still running, is idempotent, and refuses to run from the handler.
func TestMemoryHooksStop(t *testing.T) {
	lib, fk := hooksFake(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var inHandler error
	var h *MemoryHooks
	h = startHooks(t, lib, func(m *MemoryCall) {
		switch m.Bytes {
		case 777:
			close(entered)
			<-release
		case 778:
			inHandler = h.Stop()
		}
	})
	fk.CudaMalloc(778, 0)
	if inHandler == nil || !strings.Contains(inHandler.Error(), "called from the memory handler") {
		t.Errorf("Stop from the handler = %v", inHandler)
	}
	if st := h.Stats(); st.Calls != 1 {
		t.Fatalf("Stop from the handler stopped the hooks: %+v", st)
	}

	done := make(chan struct{})
	go func() {
		fk.CudaMalloc(777, 0)
		close(done)
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- h.Stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a handler was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	<-done
	if n := fk.CallbacksEnabled(); n != 0 {
		t.Errorf("%d callback ids enabled after Stop", n)
	}
	fk.CudaMalloc(777, 0) // the handler would close entered again and panic, were it called
	if err := h.Stop(); err != nil {
		t.Errorf("second Stop = %v", err)
	}
	if st := h.Stats(); st.Calls != 2 {
		t.Errorf("Stats after Stop = %+v, want the 2 calls made while running", st)
	}
}

// TestMemoryHooksStopUnderLoad: with CUDA calls on many goroutines, no
// handler runs once Stop has returned.
func TestMemoryHooksStopUnderLoad(t *testing.T) {
	lib, fk := hooksFake(t)
	var stopped atomic.Bool
	var late, seen atomic.Int64
	h := startHooks(t, lib, func(*MemoryCall) {
		seen.Add(1)
		if stopped.Load() {
			late.Add(1)
		}
	})
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for {
				select {
				case <-quit:
					return
				default:
				}
				p := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 20, Device: int32(i % 2), Bytes: 256})
				fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 22, Device: int32(i % 2), Ptr: p.Address})
			}
		})
	}
	for seen.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped.Store(true)
	time.Sleep(20 * time.Millisecond)
	close(quit)
	wg.Wait()
	if n := late.Load(); n != 0 {
		t.Errorf("%d handler calls after Stop returned", n)
	}
	if st := h.Stats(); st.Calls != seen.Load() {
		t.Errorf("Stats.Calls = %d, handler saw %d", st.Calls, seen.Load())
	}
}

// TestMemoryHooksPanic: a handler that panics unwinds through CUDA's
// frames to the Go code that made the call; the hooks' bookkeeping must
// survive it, so Stop still returns.
func TestMemoryHooksPanic(t *testing.T) {
	lib, fk := hooksFake(t)
	h := startHooks(t, lib, func(m *MemoryCall) {
		if m.Bytes == 13 {
			panic("boom")
		}
	})
	recovered := make(chan any)
	go func() {
		// The panic also skips the fake's own per-thread bookkeeping:
		// let this thread end with the goroutine.
		runtime.LockOSThread()
		defer func() { recovered <- recover() }()
		fk.CudaMalloc(13, 0)
	}()
	if r := <-recovered; r != "boom" {
		t.Fatalf("recovered %v", r)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hangs after a handler panicked")
	}
}

func TestMemoryHooksSecondStart(t *testing.T) {
	lib, fk := hooksFake(t)
	var log callLog
	h := startHooks(t, lib, log.handler)
	if h2, err := StartMemoryHooks(HookOptions{Library: lib}, func(*MemoryCall) {}); !errors.Is(err, ErrHooksRunning) || h2 != nil {
		t.Fatalf("second StartMemoryHooks = %v, %v", h2, err)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	h = startHooks(t, lib, log.handler)
	p := fk.CudaMalloc(10, 0)
	if got := log.take(); len(got) != 1 || got[0].Address != p {
		t.Errorf("hooks started again: %+v", got)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryHooksErrors(t *testing.T) {
	t.Run("no handler", func(t *testing.T) {
		if _, err := StartMemoryHooks(HookOptions{}, nil); err == nil {
			t.Error("StartMemoryHooks without a handler succeeded")
		}
	})
	t.Run("no library", func(t *testing.T) {
		_, err := StartMemoryHooks(HookOptions{Library: "/nonexistent/libcupti.so.99"}, func(*MemoryCall) {})
		var le *LoadError
		if !errors.Is(err, ErrLibraryNotFound) || !errors.As(err, &le) || !le.Explicit {
			t.Errorf("err = %v", err)
		}
	})
	for _, tc := range []struct {
		mode     string
		op       string
		code     int
		sentinel error
	}{
		{"not_initialized", "cuptiSubscribe", 15, ErrNoDevice},
		{"multiple_subscribers", "cuptiSubscribe", 39, ErrProfilerConflict},
		{"subscribe_limit", "cuptiSubscribe", 12, ErrProfilerConflict},
		{"enable_callback", "cuptiEnableCallback", 999, nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			lib, fk := hooksFake(t)
			t.Setenv("FAKECUPTI_FAIL", tc.mode)
			h, err := StartMemoryHooks(HookOptions{Library: lib}, func(*MemoryCall) {})
			var ce *Error
			if h != nil || !errors.As(err, &ce) || ce.Op != tc.op || ce.Code != tc.code ||
				(tc.sentinel != nil && !errors.Is(err, tc.sentinel)) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("StartMemoryHooks = %v, %#v", h, err)
			}
			// Nothing left behind: no callback, no subscriber, no hooks.
			t.Setenv("FAKECUPTI_FAIL", "")
			if n := fk.CallbacksEnabled(); n != 0 {
				t.Errorf("%d callback ids left enabled", n)
			}
			c, err := Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
			if err != nil {
				t.Fatalf("Start after a failed StartMemoryHooks: %v", err)
			}
			mustStop(t, c)
			h = startHooks(t, lib, func(*MemoryCall) {})
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("minimal library", func(t *testing.T) {
		useFake(t, "11.8", 0)
		minimal := fakecuda.BuildVariant(t, fakecuda.Minimal)
		_, err := StartMemoryHooks(HookOptions{Library: minimal}, func(*MemoryCall) {})
		if !errors.Is(err, ErrHooksUnsupported) || !strings.Contains(err.Error(), "cuptiEnableCallback") ||
			!strings.Contains(err.Error(), "cuptiGetDeviceId") {
			t.Fatalf("StartMemoryHooks on a library without the callback API: %v", err)
		}
	})
	t.Run("different libraries", func(t *testing.T) {
		lib, _ := hooksFake(t)
		minimal := fakecuda.BuildVariant(t, fakecuda.Minimal)
		startHooks(t, lib, func(*MemoryCall) {})
		c, err := Start(Options{Library: minimal, FlushPeriod: -1}, func([]Record) {})
		if err == nil {
			c.Stop()
			t.Fatal("a Collector on another libcupti started beside the hooks")
		}
		if !strings.Contains(err.Error(), lib) || !strings.Contains(err.Error(), minimal) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestMemoryHooksOlderLibrary: callback ids a library does not know (a
// CUPTI older than the entry point) are listed, and the rest still work.
func TestMemoryHooksOlderLibrary(t *testing.T) {
	lib, fk := hooksFake(t)
	t.Setenv("FAKECUPTI_CBID_LIMIT", "300")
	var log callLog
	h := startHooks(t, lib, log.handler)
	var want []string
	for _, e := range entryPoints {
		if e.cbid >= 300 {
			want = append(want, e.api)
		}
	}
	if got := h.Stats().Unhooked; !slices.Equal(got, want) {
		t.Errorf("Unhooked = %v, want %v", got, want)
	}
	fk.CudaMallocAsync(100, 0, 1)
	p := fk.CudaMalloc(100, 0)
	if got := log.take(); len(got) != 1 || got[0].Address != p {
		t.Errorf("handler got %+v", got)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := h.Stats().Unhooked; !slices.Equal(got, want) {
		t.Errorf("Unhooked after Stop = %v", got)
	}

	t.Setenv("FAKECUPTI_CBID_LIMIT", "1")
	if _, err := StartMemoryHooks(HookOptions{Library: lib}, log.handler); !errors.Is(err, ErrHooksUnsupported) {
		t.Errorf("StartMemoryHooks with no callback id known: %v", err)
	}
}

// TestMemoryHookAllocations: once warm, an allocation and a free through
// the hooks allocate nothing in Go beyond what the program itself does.
func TestMemoryHookAllocations(t *testing.T) {
	lib, fk := hooksFake(t)
	var n int
	startHooks(t, lib, func(*MemoryCall) { n++ })
	pair := func() {
		p := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 20, Bytes: 1 << 20})
		fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 22, Ptr: p.Address})
	}
	pair()
	allocs := testing.AllocsPerRun(200, pair)
	// The race detector makes sync.Pool drop a quarter of what is put
	// back, on purpose; without it nothing may be allocated.
	limit := 0.0
	if raceEnabled {
		limit = 1
	}
	if allocs > limit || n != 2*201+2 {
		t.Errorf("%.2f allocations per allocation+free (limit %.0f), %d handler calls", allocs, limit, n)
	}
}

// BenchmarkMemoryHook is what the hooks cost per allocation: one
// cudaMalloc and one cudaFree through the fake from Go (cgo), with hooks
// off, on with an empty handler, and on with a handler that takes the Go
// stack as a memory profiler would.
func BenchmarkMemoryHook(b *testing.B) {
	path := fakecuda.Build(b)
	b.Setenv("FAKECUPTI_SCRIPT", "0")
	b.Setenv("FAKECUPTI_FAIL", "")
	b.Setenv("FAKECUPTI_CBID_LIMIT", "")
	fk, err := fakecuda.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	var sink uintptr
	for _, bc := range []struct {
		name    string
		handler func(*MemoryCall)
	}{
		{"off", nil},
		{"empty", func(*MemoryCall) {}},
		{"callers", func(*MemoryCall) {
			var pcs [64]uintptr
			n := runtime.Callers(2, pcs[:])
			sink += pcs[n-1]
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.handler != nil {
				h, err := StartMemoryHooks(HookOptions{Library: path}, bc.handler)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Stop()
			}
			b.ReportAllocs()
			for b.Loop() {
				p := fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 20, Bytes: 1 << 20})
				fk.Memory(fakecuda.MemOp{Domain: 2, CBID: 22, Ptr: p.Address})
			}
		})
	}
	_ = sink
}
