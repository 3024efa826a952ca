//go:build cgo

package nvmlsource

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_t)(unsigned int);
typedef int (*cu_count_t)(int *);
typedef int (*cu_get_t)(int *, int);
typedef int (*cu_uuid_t)(unsigned char *, int);
typedef int (*cu_attr_t)(int *, int, int);

// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
#define DEVPROF_CU_SM_COUNT 16

// devprof_cuda_devices lists the CUDA driver's devices in ordinal order:
// 16 UUID bytes and the SM count of each, at most max. It returns how many
// it listed, -1 when libcuda cannot be loaded, or -(100+CUresult) when a
// call fails. The library stays loaded: the program uses it anyway.
static int devprof_cuda_devices(unsigned char *uuids, int *sms, int max) {
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
	if (!h) return -1;
	cu_init_t init = (cu_init_t)dlsym(h, "cuInit");
	cu_count_t count = (cu_count_t)dlsym(h, "cuDeviceGetCount");
	cu_get_t get = (cu_get_t)dlsym(h, "cuDeviceGet");
	cu_uuid_t uuid = (cu_uuid_t)dlsym(h, "cuDeviceGetUuid_v2");
	if (!uuid) uuid = (cu_uuid_t)dlsym(h, "cuDeviceGetUuid");
	cu_attr_t attr = (cu_attr_t)dlsym(h, "cuDeviceGetAttribute");
	if (!init || !count || !get || !uuid || !attr) return -1;
	int r = init(0);
	if (r) return -(100 + r);
	int n = 0;
	if ((r = count(&n))) return -(100 + r);
	if (n > max) n = max;
	for (int i = 0; i < n; i++) {
		int dev = 0;
		if ((r = get(&dev, i))) return -(100 + r);
		if ((r = uuid(uuids + 16 * i, dev))) return -(100 + r);
		sms[i] = 0;
		attr(&sms[i], DEVPROF_CU_SM_COUNT, dev);
	}
	return n;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/devprof/devprof/internal/nvmlhook"
)

// maxCUDADevices bounds the devices read from the CUDA driver.
const maxCUDADevices = 64

// cudaDevices lists the devices the CUDA driver enumerates, in CUDA ordinal
// order (the order CUPTI's device ids follow, after CUDA_VISIBLE_DEVICES
// and CUDA_DEVICE_ORDER), with the UUIDs NVML also reports, so that NVML's
// devices can be matched to them.
func cudaDevices() ([]nvmlhook.CUDADevice, error) {
	if _, hook := nvmlhook.Get(); hook != nil {
		return hook()
	}
	uuids := make([]byte, 16*maxCUDADevices)
	sms := make([]C.int, maxCUDADevices)
	n := int(C.devprof_cuda_devices((*C.uchar)(unsafe.Pointer(&uuids[0])), &sms[0], maxCUDADevices))
	switch {
	case n == -1:
		return nil, fmt.Errorf("libcuda.so.1 not loadable")
	case n < 0:
		return nil, fmt.Errorf("CUDA driver error %d", -n-100)
	}
	out := make([]nvmlhook.CUDADevice, n)
	for i := range out {
		out[i] = nvmlhook.CUDADevice{Ordinal: i, UUID: formatUUID(uuids[16*i : 16*i+16]), SMs: int(sms[i])}
	}
	return out, nil
}

// formatUUID spells 16 UUID bytes as NVML does.
func formatUUID(b []byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
