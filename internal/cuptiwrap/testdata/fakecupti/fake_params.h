/*
 * What the fake libcupti hands a subscriber's callback for the CUDA
 * allocation and free calls it plays: CUpti_CallbackData and the entry
 * points' parameter structs, declared here on their own (devprof's shim.h
 * only lists the offsets it reads). abicheck/abi_check.c checks each
 * against NVIDIA's headers.
 *
 * The parameter structs come in a few shapes, shared by the entry points
 * whose generated <name>_params structs have the same layout.
 */
#ifndef FAKECUPTI_PARAMS_H
#define FAKECUPTI_PARAMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct fk_callback_data {
	uint32_t callback_site; /* 0 enter, 1 exit */
	const char *function_name;
	const void *function_params;
	void *function_return_value; /* int32_t cudaError_t / CUresult */
	const char *symbol_name;
	void *context;
	uint32_t context_uid;
	uint64_t *correlation_data;
	uint32_t correlation_id;
} fk_callback_data;

/* cudaMalloc, cudaMallocHost, cudaHostAlloc, cudaMallocManaged,
 * cuMemAlloc_v2, cuMemAllocHost_v2, cuMemHostAlloc, cuMemAllocManaged
 * (flags only where the entry point has them). */
typedef struct fk_alloc_params {
	void *out; /* void ** or CUdeviceptr * */
	size_t size;
	unsigned int flags;
} fk_alloc_params;

/* cuMemAlloc and cuMemAllocHost of CUDA 3.x: unsigned int size (and for
 * cuMemAlloc a 32-bit CUdeviceptr_v1 written through out). */
typedef struct fk_alloc_v1_params {
	void *out;
	unsigned int size;
} fk_alloc_v1_params;

/* cudaMallocPitch (no element size), cuMemAllocPitch_v2. */
typedef struct fk_pitch_params {
	void *out;
	size_t *pitch;
	size_t width;
	size_t height;
	unsigned int element_size;
} fk_pitch_params;

/* cuMemAllocPitch of CUDA 3.x. */
typedef struct fk_pitch_v1_params {
	uint32_t *out;
	unsigned int *pitch;
	unsigned int width;
	unsigned int height;
	unsigned int element_size;
} fk_pitch_v1_params;

/* cudaMallocAsync(_ptsz), cuMemAllocAsync(_ptsz). */
typedef struct fk_alloc_async_params {
	void *out;
	size_t size;
	void *stream;
} fk_alloc_async_params;

/* cudaMallocFromPoolAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz). */
typedef struct fk_alloc_pool_params {
	void *out;
	size_t size;
	void *pool;
	void *stream;
} fk_alloc_pool_params;

/* cudaFree, cudaFreeHost, cuMemFree_v2, cuMemFreeHost, and the async
 * frees with their stream. */
typedef struct fk_free_params {
	uint64_t ptr; /* void * or CUdeviceptr */
	void *stream;
} fk_free_params;

/* cuMemFree of CUDA 3.x. */
typedef struct fk_free_v1_params {
	uint32_t ptr;
} fk_free_v1_params;

/*
 * The test hook fakecupti_memory's argument: one allocation or free to
 * play. internal/fakecuda declares the same struct (and checks its size
 * with fakecupti_memop_size).
 */
typedef struct fakecupti_memop {
	uint32_t domain; /* 1 driver, 2 runtime */
	uint32_t cbid;
	int32_t device;  /* encoded in the context; -1: no context */
	int32_t fail;    /* nonzero: the call fails with this error, allocating nothing */
	uint64_t bytes;  /* allocation size; width in bytes for pitched ones */
	uint64_t height; /* pitched allocations */
	uint64_t ptr;    /* what a free frees */
	uint64_t stream;
	uint32_t nested;       /* a runtime call: do the work through its driver counterpart */
	uint32_t from_thread;  /* make the call from a thread the fake creates */
	/* results */
	int32_t result;
	uint32_t correlation;
	uint64_t address;
	uint64_t pitch;
} fakecupti_memop;

#endif
