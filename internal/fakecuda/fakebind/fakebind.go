//go:build cgo

// Package fakebind is a second Go binding of the fake libcupti's CUDA
// allocator (package fakecuda is the first), shaped as bindings whose C
// calls take Go pointers are: Malloc returns the pointer through an out
// parameter, so cgo wraps its C call in a closure (Malloc.func1) that
// checks the pointer, where fakecuda's calls pass structs by value. Tests
// allocate through both to check that profiles name the code that called
// a binding, whichever binding it was.
package fakebind

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The fake's struct fakecupti_memop (internal/cuptiwrap/testdata/fakecupti/fake_params.h);
// Open checks its size against the fake's.
typedef struct fb_memop {
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
} fb_memop;

typedef int32_t (*fb_memory_fn)(fb_memop *);
typedef int32_t (*fb_device_of_fn)(uint64_t);
typedef size_t (*fb_size_fn)(void);

static void *fb_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static const char *fb_error(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
static size_t fb_size(void *f) { return ((fb_size_fn)f)(); }

// cudaMalloc_v3020 and cudaFree_v3020 in CUPTI's runtime domain.
static int32_t fb_malloc(void *f, uint64_t bytes, int32_t device, uint64_t *ptr) {
	fb_memop op;
	memset(&op, 0, sizeof op);
	op.domain = 2;
	op.cbid = 20;
	op.device = device;
	op.bytes = bytes;
	((fb_memory_fn)f)(&op);
	*ptr = op.address;
	return op.result;
}
static int32_t fb_free(void *f, void *device_of, uint64_t ptr) {
	fb_memop op;
	memset(&op, 0, sizeof op);
	op.domain = 2;
	op.cbid = 22;
	op.device = ((fb_device_of_fn)device_of)(ptr);
	op.ptr = ptr;
	((fb_memory_fn)f)(&op);
	return op.result;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Lib is the fake libcupti, loaded a second time (dlopen hands back the
// same library, with the hooks fakecuda's users installed).
type Lib struct {
	memory, deviceOf unsafe.Pointer
}

// Open loads the fake libcupti at path (fakecuda.Build's).
func Open(path string) (*Lib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.fb_open(cpath)
	if h == nil {
		return nil, fmt.Errorf("fakebind: dlopen %s: %s", path, C.GoString(C.fb_error()))
	}
	sym := func(name string) unsafe.Pointer {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		return C.dlsym(h, cname)
	}
	l := &Lib{memory: sym("fakecupti_memory"), deviceOf: sym("fakecupti_device_of")}
	size := sym("fakecupti_memop_size")
	if l.memory == nil || l.deviceOf == nil || size == nil {
		return nil, fmt.Errorf("fakebind: %s is not the fake libcupti", path)
	}
	if C.fb_size(size) != C.sizeof_fb_memop {
		return nil, fmt.Errorf("fakebind: %s disagrees with this package on struct fakecupti_memop", path)
	}
	return l, nil
}

// Malloc allocates bytes on device (cudaMalloc).
func (l *Lib) Malloc(bytes uint64, device int) (uint64, error) {
	var p C.uint64_t
	if rc := C.fb_malloc(l.memory, C.uint64_t(bytes), C.int32_t(device), &p); rc != 0 {
		return 0, fmt.Errorf("cudaMalloc of %d bytes: CUDA error %d", bytes, int(rc))
	}
	return uint64(p), nil
}

// Free frees a pointer Malloc returned (cudaFree).
func (l *Lib) Free(p uint64) error {
	if rc := C.fb_free(l.memory, l.deviceOf, C.uint64_t(p)); rc != 0 {
		return fmt.Errorf("cudaFree(%#x): CUDA error %d", p, int(rc))
	}
	return nil
}
