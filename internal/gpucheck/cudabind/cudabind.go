//go:build cgo

// Package cudabind is a small Go binding of CUDA's allocator, shaped as Go
// CUDA bindings are (a cgo call per CUDA call, the Go API a thin layer
// above it), so that a real-GPU check sees the stacks a user's program
// has: their Go code, the binding's Go function, its cgo wrapper, and
// below them CUDA. It binds the allocation entry points of the gpu-check
// workload library (scripts/gpucheck/workload.cu), each one CUDA call,
// loaded with dlopen, so that it builds without CUDA.
package cudabind

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int (*malloc_fn)(long long, void **);
typedef int (*free_fn)(void *);
typedef int (*spin_fn)(long long);
typedef int (*copy_fn)(long long, long long, long long *);

static void *cb_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *cb_sym(void *h, const char *name) { return dlsym(h, name); }
static const char *cb_error(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
static int cb_malloc(void *f, long long bytes, uintptr_t *p) {
	void *q = 0;
	int rc = ((malloc_fn)f)(bytes, &q);
	*p = (uintptr_t)q;
	return rc;
}
static int cb_free(void *f, uintptr_t p) { return ((free_fn)f)((void *)p); }
static int cb_spin(void *f, long long ns) { return ((spin_fn)f)(ns); }
static int cb_copy(void *f, long long bytes, long long ns, long long *trips) { return ((copy_fn)f)(bytes, ns, trips); }
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Lib is the loaded workload library.
type Lib struct {
	malloc, free, spin, copyFor unsafe.Pointer
}

// Error is a cudaError_t a call returned.
type Error struct {
	Call string
	Code int
}

func (e *Error) Error() string { return fmt.Sprintf("%s: CUDA error %d", e.Call, e.Code) }

// Open loads the workload library at path.
func Open(path string) (*Lib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.cb_open(cpath)
	if h == nil {
		return nil, fmt.Errorf("loading %s: %s", path, C.GoString(C.cb_error()))
	}
	var l Lib
	for _, s := range []struct {
		name string
		p    *unsafe.Pointer
	}{{"devprof_malloc", &l.malloc}, {"devprof_free", &l.free}, {"devprof_spin", &l.spin}, {"devprof_copy_for", &l.copyFor}} {
		cname := C.CString(s.name)
		*s.p = C.cb_sym(h, cname)
		C.free(unsafe.Pointer(cname))
		if *s.p == nil {
			return nil, fmt.Errorf("%s has no %s (rebuild it from scripts/gpucheck/workload.cu)", path, s.name)
		}
	}
	return &l, nil
}

// Malloc allocates bytes of device memory (cudaMalloc).
func (l *Lib) Malloc(bytes int64) (uintptr, error) {
	var p C.uintptr_t
	if rc := C.cb_malloc(l.malloc, C.longlong(bytes), &p); rc != 0 {
		return 0, &Error{"cudaMalloc", int(rc)}
	}
	return uintptr(p), nil
}

// Free frees a buffer Malloc returned (cudaFree).
func (l *Lib) Free(p uintptr) error {
	if rc := C.cb_free(l.free, C.uintptr_t(p)); rc != 0 {
		return &Error{"cudaFree", int(rc)}
	}
	return nil
}

// Spin keeps every SM busy for d and waits for it.
func (l *Lib) Spin(d time.Duration) error {
	if rc := C.cb_spin(l.spin, C.longlong(d.Nanoseconds())); rc != 0 {
		return &Error{"spin", int(rc)}
	}
	return nil
}

// CopyFor copies bytes to the device and back, over and over, for at
// least d, and returns the round trips made.
func (l *Lib) CopyFor(bytes int64, d time.Duration) (int64, error) {
	var trips C.longlong
	if rc := C.cb_copy(l.copyFor, C.longlong(bytes), C.longlong(d.Nanoseconds()), &trips); rc != 0 {
		return int64(trips), &Error{"copy", int(rc)}
	}
	return int64(trips), nil
}
