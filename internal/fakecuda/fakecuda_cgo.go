//go:build cgo

package fakecuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// fakecupti_memop of fake_params.h, declared again: cgo here cannot include
// the fake's headers (their directory is not this package's), so Open
// compares sizes with the fake's fakecupti_memop_size.
typedef struct fk_memop {
	uint32_t domain;
	uint32_t cbid;
	int32_t device;
	int32_t fail;
	uint64_t bytes;
	uint64_t height;
	uint64_t ptr;
	uint64_t stream;
	uint32_t nested;
	uint32_t from_thread;
	int32_t result;
	uint32_t correlation;
	uint64_t address;
	uint64_t pitch;
} fk_memop;

typedef uint32_t (*fk_launch_fn)(const char *, uint32_t, uint32_t);
typedef int32_t (*fk_memory_fn)(fk_memop *);
typedef size_t (*fk_size_fn)(void);
typedef int32_t (*fk_device_of_fn)(uint64_t);
typedef int (*fk_count_fn)(void);
typedef int (*fk_enabled_fn)(uint32_t);
typedef size_t (*fk_fill_fn)(uint8_t *, size_t, const char *);

static uint32_t fk_launch(void *f, const char *name, uint32_t device, uint32_t stream) {
	return ((fk_launch_fn)f)(name, device, stream);
}
static int fk_enabled(void *f, uint32_t kind) { return ((fk_enabled_fn)f)(kind); }
// By value both ways: a pointer to Go memory would make every call
// allocate (cgo moves what it points to off the stack, since the C side
// calls back into Go).
static fk_memop fk_memory(void *f, fk_memop op) {
	((fk_memory_fn)f)(&op);
	return op;
}
static size_t fk_size(void *f) { return ((fk_size_fn)f)(); }
static int32_t fk_device_of(void *f, uint64_t address) { return ((fk_device_of_fn)f)(address); }
static int fk_count(void *f) { return ((fk_count_fn)f)(); }
static size_t fk_fill(void *f, uint8_t *buf, size_t cap, const char *layout) {
	return ((fk_fill_fn)f)(buf, cap, layout);
}
static void *fk_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static const char *fk_error(void) { return dlerror(); }
static void *fk_alloc(size_t n) {
	void *p = NULL;
	return posix_memalign(&p, 8, n) == 0 ? p : NULL;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Lib is the loaded fake. Loading the path cuptiwrap also loaded yields the
// very same library (dlopen shares it), so hooks act on the collector's
// session.
type Lib struct {
	launch, enabled, fill, memory, deviceOf, callbacks unsafe.Pointer
}

// Open loads the fake at path (from [Build]).
func Open(path string) (*Lib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.fk_open(cpath)
	if h == nil {
		return nil, fmt.Errorf("fakecuda: dlopen %s: %s", path, C.GoString(C.fk_error()))
	}
	l := &Lib{}
	for name, dst := range map[string]*unsafe.Pointer{
		"fakecupti_launch":            &l.launch,
		"fakecupti_enabled":           &l.enabled,
		"fakecupti_fill":              &l.fill,
		"fakecupti_memory":            &l.memory,
		"fakecupti_device_of":         &l.deviceOf,
		"fakecupti_callbacks_enabled": &l.callbacks,
	} {
		cname := C.CString(name)
		*dst = C.dlsym(h, cname)
		C.free(unsafe.Pointer(cname))
		if *dst == nil {
			return nil, fmt.Errorf("fakecuda: %s lacks %s: not the fake libcupti", path, name)
		}
	}
	cname := C.CString("fakecupti_memop_size")
	size := C.dlsym(h, cname)
	C.free(unsafe.Pointer(cname))
	if size == nil || C.fk_size(size) != C.sizeof_fk_memop {
		return nil, fmt.Errorf("fakecuda: %s disagrees with this package on struct fakecupti_memop", path)
	}
	return l, nil
}

// Launch plays a cudaLaunchKernel of kernel on device and stream from the
// calling OS thread (hold it with runtime.LockOSThread): the fake queues an
// external-correlation record for each id pushed on this thread, a runtime
// API record with this thread's id, and the kernel, all under one new
// correlation id, which it returns. They arrive at the next flush.
func (l *Lib) Launch(kernel string, device, stream uint32) uint32 {
	ck := C.CString(kernel)
	defer C.free(unsafe.Pointer(ck))
	return uint32(C.fk_launch(l.launch, ck, C.uint32_t(device), C.uint32_t(stream)))
}

// Enabled reports whether CUPTI activity kind (a CUpti_ActivityKind value)
// is enabled in the fake right now.
func (l *Lib) Enabled(kind uint32) bool {
	return C.fk_enabled(l.enabled, C.uint32_t(kind)) != 0
}

// Buffer is C memory holding activity records.
type Buffer struct {
	Ptr   unsafe.Pointer
	Valid int
}

// Free releases the buffer.
func (b Buffer) Free() { C.free(b.Ptr) }

// Fill returns a C buffer of about size bytes filled with the fake's whole
// script, repeated, in layout "11.8", "12" or "13". It also switches the
// layout the fake's cuptiActivityGetNextRecord walks with: use it only
// while no collector runs (benchmarks).
func (l *Lib) Fill(layout string, size int) (Buffer, error) {
	p := C.fk_alloc(C.size_t(size))
	if p == nil {
		return Buffer{}, fmt.Errorf("fakecuda: cannot allocate %d bytes", size)
	}
	cl := C.CString(layout)
	defer C.free(unsafe.Pointer(cl))
	n := C.fk_fill(l.fill, (*C.uint8_t)(p), C.size_t(size), cl)
	return Buffer{Ptr: p, Valid: int(n)}, nil
}

// Memory plays one CUDA allocation or free, on the calling goroutine's
// thread through cgo (unless op.FromCThread), as CUDA does under CUPTI:
// the subscriber's callback at entry and exit (for enabled callback ids)
// with the entry point's parameter struct, return value, a context that
// encodes op.Device and a new correlation id; the runtime or driver API
// record and a MEMORY2 record when those activity kinds are enabled. The
// fake hands out increasing addresses, never backed by memory.
func (l *Lib) Memory(op MemOp) MemResult {
	c := C.fk_memop{
		domain: C.uint32_t(op.Domain),
		cbid:   C.uint32_t(op.CBID),
		device: C.int32_t(op.Device),
		fail:   C.int32_t(op.Fail),
		bytes:  C.uint64_t(op.Bytes),
		height: C.uint64_t(op.Height),
		ptr:    C.uint64_t(op.Ptr),
		stream: C.uint64_t(op.Stream),
	}
	if op.Nested {
		c.nested = 1
	}
	if op.FromCThread {
		c.from_thread = 1
	}
	c = C.fk_memory(l.memory, c)
	return MemResult{Result: int32(c.result), Correlation: uint32(c.correlation),
		Address: uint64(c.address), Pitch: uint64(c.pitch)}
}

// DeviceOf returns the device of a live allocation the fake made, or -1.
func (l *Lib) DeviceOf(ptr uint64) int32 {
	return int32(C.fk_device_of(l.deviceOf, C.uint64_t(ptr)))
}

// CallbacksEnabled returns how many runtime and driver callback ids the
// subscriber has enabled in the fake right now.
func (l *Lib) CallbacksEnabled() int { return int(C.fk_count(l.callbacks)) }
