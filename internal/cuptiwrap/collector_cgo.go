//go:build cgo

package cuptiwrap

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"maps"
	"sync"
	"time"
	"unsafe"
)

// enableOrder lists the activity kinds a Collector enables. CONCURRENT_KERNEL
// comes last: it is the one kind that cannot be disabled again safely (see
// Stop), so a failure enabling any other kind must happen before it is on.
var enableOrder = []struct {
	kind C.uint32_t
	name string
	k    Kind
}{
	{C.DPC_KIND_MEMCPY, "MEMCPY", KindMemcpy},
	{C.DPC_KIND_MEMCPY2, "MEMCPY2", KindMemcpyPeer},
	{C.DPC_KIND_MEMSET, "MEMSET", KindMemset},
	{C.DPC_KIND_MEMORY2, "MEMORY2", KindMemory},
	{C.DPC_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", KindSync},
	{C.DPC_KIND_DRIVER, "DRIVER", KindDriver},
	{C.DPC_KIND_RUNTIME, "RUNTIME", KindRuntime},
	{C.DPC_KIND_OVERHEAD, "OVERHEAD", KindOverhead},
	{C.DPC_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", KindExternalCorrelation},
	{C.DPC_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", KindKernel},
}

// kernelDisableSafe is the first API version whose cuptiActivityDisable
// (CONCURRENT_KERNEL) cannot deadlock: CUDA 13.0 Update 1 fixed it (XLA
// never disables the kind for the same reason).
const kernelDisableSafe = 130001

// prealloc is how many buffers a session allocates up front.
const prealloc = 2

// maxWait bounds one wait of the drain goroutine in C, so it notices a Go
// ticker flush that is due even when CUPTI is silent.
const maxWait = 100 * time.Millisecond

// active is the running Collector: CUPTI has one set of activity buffers
// per process.
var active struct {
	sync.Mutex
	c *Collector
}

// Collector collects CUPTI activity records and hands them to a sink. Create
// one with [Start]; its methods are safe for concurrent use, but must not be
// called from the sink (they wait for the goroutine the sink runs on).
type Collector struct {
	opts Options
	lib  *library
	sink func([]Record)

	subscribed bool // holds the process's subscriber (see subscribe)
	enabled    []C.uint32_t
	period     bool // CUPTI's periodic flush is on
	goTicker   bool // the drain goroutine flushes every opts.FlushPeriod
	info       LibraryInfo

	parser *parser
	items  *C.dpc_item // C array of opts.MaxBuffers
	nitems int

	flushReq chan chan struct{}
	stopReq  chan struct{}
	done     chan struct{}
	buffers  int64 // owned by the drain goroutine until done is closed

	// mu orders Flush and the external-correlation calls (readers)
	// against Stop (writer).
	mu       sync.RWMutex
	stopped  bool
	stopOnce sync.Once
	stats    Stats
	stopErr  error
}

// Start loads libcupti, enables activity collection and starts the
// goroutine that feeds sink. sink runs on that one goroutine, one call at a
// time; the batch slice is reused once it returns, so it must copy what it
// keeps (the strings in a Record may be kept as they are).
//
// The library is Options.Library if set, else $DEVPROF_CUPTI_LIB if set
// (either is then the only place tried); otherwise the first that loads of
// libcupti.so.13, .12, .11.8 … .11.0, libcupti.so on the loader's path,
// then the CUDA toolkit directories under $CUDA_HOME, $CUDA_PATH and
// /usr/local/cuda (extras/CUPTI/lib64, targets/<arch>-linux/lib) and the
// pip wheels of an active $VIRTUAL_ENV or $CONDA_PREFIX. If none loads, the
// error is a [*LoadError] (errors.Is [ErrLibraryNotFound]) listing them.
//
// CUPTI's own failures come back as [*Error]: on a machine without a
// usable NVIDIA driver that is CUPTI_ERROR_NOT_INITIALIZED (errors.Is
// [ErrNoDevice]); see also [ErrPermission] and [ErrProfilerConflict].
func Start(opts Options, sink func(batch []Record)) (*Collector, error) {
	if sink == nil {
		return nil, errors.New("cuptiwrap: Start needs a sink function")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	active.Lock()
	defer active.Unlock()
	if active.c != nil {
		return nil, ErrAlreadyStarted
	}
	lib, err := load(opts.Library)
	if err != nil {
		return nil, err
	}
	info, err := lib.describe()
	if err != nil {
		return nil, err
	}
	c := &Collector{
		opts:     opts,
		lib:      lib,
		sink:     sink,
		info:     info,
		flushReq: make(chan chan struct{}, 1),
		stopReq:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := c.begin(); err != nil {
		return nil, err
	}
	active.c = c
	go c.drain()
	return c, nil
}

// begin sets up CUPTI; on failure it undoes what it did.
func (c *Collector) begin() (err error) {
	l := c.lib
	if C.dpc_session_open(C.size_t(c.opts.BufferSize), C.int(c.opts.MaxBuffers), prealloc) != 0 {
		return errors.New("cuptiwrap: out of memory setting up the buffer pool")
	}
	defer func() {
		if err != nil {
			c.undo()
		}
	}()
	// Subscribing first tells "another profiler owns CUPTI" apart from
	// other failures, before any activity state changes. Running memory
	// hooks already hold the subscriber: then this only joins it.
	if _, err := subscribe(l); err != nil {
		return err
	}
	c.subscribed = true
	if err := l.check("cuptiActivityRegisterCallbacks", C.dpc_register_callbacks(l.c), ""); err != nil {
		return err
	}
	// API records then carry the Linux TID, which is what host spans use.
	if err := l.check("cuptiSetThreadIdType", C.dpc_set_thread_id_type(l.c, C.DPC_THREAD_ID_TYPE_SYSTEM), "SYSTEM"); err != nil {
		return err
	}
	for _, e := range enableOrder {
		r := C.dpc_enable(l.c, e.kind)
		switch r {
		case C.DPC_SUCCESS:
			c.enabled = append(c.enabled, e.kind)
			continue
		case C.DPC_ERROR_INVALID_KIND, C.DPC_ERROR_NOT_SUPPORTED, C.DPC_ERROR_NOT_COMPATIBLE:
			// An older CUPTI without this kind: collect the rest.
			c.info.UnavailableKinds = append(c.info.UnavailableKinds, e.k)
			continue
		}
		return l.check("cuptiActivityEnable", r, "kind "+e.name)
	}
	// Reset CUPTI's dropped counter: drops from before this session (for
	// example while a previous one's kernel tracing stayed on) are not ours.
	var ignored C.uint64_t
	C.dpc_num_dropped(l.c, &ignored)
	if c.opts.FlushPeriod > 0 {
		ms := c.opts.FlushPeriod.Milliseconds()
		if ms > 1<<31 {
			ms = 1 << 31
		}
		if l.c.flush_period != nil && C.dpc_flush_period(l.c, C.uint32_t(ms)) == C.DPC_SUCCESS {
			c.period = true
		} else {
			c.goTicker = true
		}
	}
	c.parser = newParser(l, c.info.Layout, c.opts.MaxRecords, c.sink)
	c.nitems = c.opts.MaxBuffers
	c.items = (*C.dpc_item)(C.calloc(C.size_t(c.nitems), C.sizeof_dpc_item))
	return nil
}

// undo turns off what begin turned on, for a failed Start.
func (c *Collector) undo() {
	c.disableKinds()
	if c.subscribed {
		unsubscribe()
		c.subscribed = false
	}
	C.dpc_session_close()
}

// disableKinds disables the enabled kinds, except CONCURRENT_KERNEL on
// libraries where that can deadlock: there kernel tracing stays on after
// Stop, and the buffers CUPTI asks for from then on get NULL (dropped).
func (c *Collector) disableKinds() error {
	var first error
	for _, k := range c.enabled {
		if k == C.DPC_KIND_CONCURRENT_KERNEL && c.info.APIVersion < kernelDisableSafe {
			continue
		}
		if err := c.lib.check("cuptiActivityDisable", C.dpc_disable(c.lib.c, k), ""); err != nil && first == nil {
			first = err
		}
	}
	c.enabled = nil
	return first
}

// drain is the collector's goroutine: it waits in C for completed buffers
// (a condition variable, so no polling), parses them, feeds the sink and
// gives the buffers back. It also runs the Go ticker flush and answers
// Flush and Stop.
func (c *Collector) drain() {
	defer close(c.done)
	wait := maxWait
	if c.goTicker && c.opts.FlushPeriod < wait {
		wait = c.opts.FlushPeriod
	}
	waitMS := C.int(wait.Milliseconds())
	next := time.Now().Add(c.opts.FlushPeriod)
	for {
		c.process(int(C.dpc_wait(waitMS, c.items, C.int(c.nitems))))
		if c.goTicker && !time.Now().Before(next) {
			// Flushing here, not on a separate goroutine, keeps all
			// periodic CUPTI calls off the threads Stop uses.
			C.dpc_flush_all(c.lib.c, 0)
			next = time.Now().Add(c.opts.FlushPeriod)
		}
		for {
			select {
			case req := <-c.flushReq:
				c.drainQueued()
				close(req)
				continue
			case <-c.stopReq:
				c.drainQueued()
				return
			default:
			}
			break
		}
	}
}

// drainQueued processes every buffer queued so far without waiting.
func (c *Collector) drainQueued() {
	for {
		n := int(C.dpc_wait(0, c.items, C.int(c.nitems)))
		if n == 0 {
			return
		}
		c.process(n)
	}
}

// process parses n buffers from c.items and returns them to the pool.
func (c *Collector) process(n int) {
	if n == 0 {
		return
	}
	for _, it := range unsafe.Slice(c.items, n) {
		c.parser.parseBuffer(unsafe.Pointer(it.buffer), uintptr(it.valid))
		C.dpc_release(it.buffer)
		c.buffers++
	}
	c.parser.flush()
}

// Flush makes CUPTI complete every buffer (a forced flush) and returns once
// the sink has seen all records completed so far.
func (c *Collector) Flush() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.stopped {
		return ErrStopped
	}
	err := c.lib.check("cuptiActivityFlushAll", C.dpc_flush_all(c.lib.c, C.DPC_FLUSH_FORCED), "forced")
	req := make(chan struct{})
	c.flushReq <- req
	C.dpc_wake()
	<-req
	return err
}

// Stop ends collection: it disables the activity kinds, forces a flush,
// waits until the sink has seen every record, and reports. Calling it again
// returns the same result. The error, if any, is the first CUPTI failure
// during the stop; the Stats are valid either way.
func (c *Collector) Stop() (Stats, error) {
	c.stopOnce.Do(c.stop)
	s := c.stats
	s.PerKind = maps.Clone(c.stats.PerKind)
	return s, c.stopErr
}

func (c *Collector) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()

	l := c.lib
	var errs []error
	if c.period {
		C.dpc_flush_period(l.c, 0)
	}
	errs = append(errs, c.disableKinds())
	// No lock of ours is held here: CUPTI calls the completion callback
	// from inside the flush.
	errs = append(errs, l.check("cuptiActivityFlushAll", C.dpc_flush_all(l.c, C.DPC_FLUSH_FORCED), "forced"))
	close(c.stopReq)
	C.dpc_wake()
	<-c.done

	var dropped C.uint64_t
	if C.dpc_num_dropped(l.c, &dropped) != C.DPC_SUCCESS {
		dropped = 0
	}
	if c.subscribed {
		errs = append(errs, unsubscribe())
		c.subscribed = false
	}
	var counters C.dpc_counters
	C.dpc_read_counters(&counters)
	C.dpc_session_close()
	C.free(unsafe.Pointer(c.items))
	c.items = nil

	p := c.parser
	c.stats = Stats{
		Delivered:        p.delivered,
		CUPTIDropped:     int64(dropped),
		OverLimit:        p.overLimit,
		Dropped:          int64(dropped) + p.overLimit,
		Buffers:          c.buffers,
		DeclinedBuffers:  int64(counters.declined),
		AllocatedBuffers: int64(counters.allocated),
		Unknown:          p.unknown,
		WalkErrors:       p.walkErrors,
		PerKind:          make(map[Kind]int64),
	}
	for k, n := range p.perKind {
		if n > 0 {
			c.stats.PerKind[Kind(k)] = n
		}
	}
	p.close()
	c.stopErr = errors.Join(errs...)

	active.Lock()
	if active.c == c {
		active.c = nil
	}
	active.Unlock()
}

// Timestamp returns CUPTI's current time (cuptiGetTimestamp), in the domain
// of Record.Start and End: pair it with a host clock reading to line the
// two up.
func (c *Collector) Timestamp() (uint64, error) { return c.lib.timestamp() }

// Library describes the loaded libcupti.
func (c *Collector) Library() LibraryInfo {
	info := c.info
	info.MissingOptional = append([]string(nil), c.info.MissingOptional...)
	info.UnavailableKinds = append([]Kind(nil), c.info.UnavailableKinds...)
	return info
}

// PushExternalCorrelation pushes id (kind CUSTOM0) on the calling OS
// thread's external-correlation stack: CUDA API calls this thread makes
// until the matching pop produce a [KindExternalCorrelation] record with
// this id and their CorrelationID. The caller must hold the thread with
// runtime.LockOSThread across push, CUDA calls and pop.
func (c *Collector) PushExternalCorrelation(id uint64) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.stopped {
		return ErrStopped
	}
	return c.lib.check("cuptiActivityPushExternalCorrelationId", C.dpc_push_external(c.lib.c, C.uint64_t(id)), "CUSTOM0")
}

// PopExternalCorrelation pops the calling OS thread's top CUSTOM0 id and
// returns it.
func (c *Collector) PopExternalCorrelation() (uint64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.stopped {
		return 0, ErrStopped
	}
	var id C.uint64_t
	if err := c.lib.check("cuptiActivityPopExternalCorrelationId", C.dpc_pop_external(c.lib.c, &id), "CUSTOM0"); err != nil {
		return 0, err
	}
	return uint64(id), nil
}
