//go:build cgo

package fakecuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef uint32_t (*fk_launch_fn)(const char *, uint32_t, uint32_t);
typedef int (*fk_enabled_fn)(uint32_t);
typedef size_t (*fk_fill_fn)(uint8_t *, size_t, const char *);

static uint32_t fk_launch(void *f, const char *name, uint32_t device, uint32_t stream) {
	return ((fk_launch_fn)f)(name, device, stream);
}
static int fk_enabled(void *f, uint32_t kind) { return ((fk_enabled_fn)f)(kind); }
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
	launch, enabled, fill unsafe.Pointer
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
		"fakecupti_launch":  &l.launch,
		"fakecupti_enabled": &l.enabled,
		"fakecupti_fill":    &l.fill,
	} {
		cname := C.CString(name)
		*dst = C.dlsym(h, cname)
		C.free(unsafe.Pointer(cname))
		if *dst == nil {
			return nil, fmt.Errorf("fakecuda: %s lacks %s: not the fake libcupti", path, name)
		}
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
