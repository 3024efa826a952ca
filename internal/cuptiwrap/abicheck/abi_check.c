/*
 * Compile-time check of devprof's hand-written CUPTI declarations against
 * NVIDIA's real headers (Debian's libcupti-dev, CUDA 11.8):
 *
 *   cc -fsyntax-only -I cuptiwrap/abicheck/include cuptiwrap/abicheck/abi_check.c
 *
 * It compiles only if every record offset and field width in ../shim.h,
 * every enum value devprof uses, every function-pointer type devprof calls
 * through, the callback data and CUDA API parameter structs the memory
 * hooks read, and the test double's record and parameter structs all agree
 * with <cupti.h>. cuptiwrap's TestABIAgainstRealHeaders runs it;
 * scripts/cupti-deps installs the headers. (include/ holds stand-ins for
 * the CUDA headers <cupti.h> pulls in; see include/cuda.h.)
 *
 * The parameter structs live in generated_cuda_meta.h and
 * generated_cuda_runtime_api_meta.h, which cannot be compiled without the
 * whole CUDA toolkit's headers (hundreds of types). So the test copies the
 * typedef of each *_params struct named in this file, verbatim, out of the
 * real headers into dpc_real_params.h in a directory it adds with -I; by
 * hand:
 *
 *   go test ./internal/cuptiwrap -run TestABIAgainstRealHeaders -v
 *
 * (the field types they use, such as CUdeviceptr and cudaStream_t, are
 * declared in include/).
 *
 * What it cannot check: the CUDA 12.x/13.x layouts (Kernel9/10, Memcpy6,
 * Memory4, Synchronization2), which Debian does not ship.
 */
#include <stddef.h>

#include <cupti.h>

#include "dpc_real_params.h" /* copied from the real generated_*_meta.h by the test */

#define DPC_ABI_CHECK 1
#include "../shim.h"
#include "../testdata/fakecupti/fake_params.h"
#include "../testdata/fakecupti/fake_records.h"

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

/* devprof reads `field` of `type` at offset `mine` as a `width`-byte value. */
#define READS(type, field, mine, width)                                                      \
	_Static_assert(offsetof(type, field) == (mine), #type "." #field " is not at " #mine); \
	_Static_assert(FIELD_SIZE(type, field) == (width), #type "." #field " is not " #width " bytes")

#define SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " != " #b)

/* ---- records: the newest 11.8 struct and, for the shared prefix, the oldest one CUDA 11 writes ---- */

#define KERNEL_PREFIX(T)                                             \
	READS(T, registersPerThread, DPC_KERNEL_REGISTERS, 2);         \
	READS(T, start, DPC_KERNEL_START, 8);                          \
	READS(T, end, DPC_KERNEL_END, 8);                              \
	READS(T, deviceId, DPC_KERNEL_DEVICE, 4);                      \
	READS(T, contextId, DPC_KERNEL_CONTEXT, 4);                    \
	READS(T, streamId, DPC_KERNEL_STREAM, 4);                      \
	READS(T, gridX, DPC_KERNEL_GRID_X, 4);                         \
	READS(T, gridY, DPC_KERNEL_GRID_X + 4, 4);                     \
	READS(T, gridZ, DPC_KERNEL_GRID_X + 8, 4);                     \
	READS(T, blockX, DPC_KERNEL_BLOCK_X, 4);                       \
	READS(T, blockY, DPC_KERNEL_BLOCK_X + 4, 4);                   \
	READS(T, blockZ, DPC_KERNEL_BLOCK_X + 8, 4);                   \
	READS(T, staticSharedMemory, DPC_KERNEL_STATIC_SHARED, 4);     \
	READS(T, dynamicSharedMemory, DPC_KERNEL_DYNAMIC_SHARED, 4);   \
	READS(T, correlationId, DPC_KERNEL_CORRELATION, 4);            \
	READS(T, name, DPC_KERNEL_NAME, sizeof(void *))

KERNEL_PREFIX(CUpti_ActivityKernel4);
KERNEL_PREFIX(CUpti_ActivityKernel8);
READS(CUpti_ActivityKernel5, graphId, DPC_KERNEL5_GRAPH_ID, 4);
READS(CUpti_ActivityKernel8, graphId, DPC_KERNEL5_GRAPH_ID, 4);
/* Kernel10's isDeviceLaunched comes right after Kernel9 = Kernel8 + 8 bytes. */
_Static_assert(sizeof(CUpti_ActivityKernel8) + 8 == DPC_KERNEL10_DEVICE_LAUNCHED, "Kernel10 field");
_Static_assert(sizeof(CUpti_ActivityKernel8) == 200, "Kernel8 size");

#define MEMCPY_PREFIX(T)                                    \
	READS(T, copyKind, DPC_MEMCPY_COPY_KIND, 1);          \
	READS(T, srcKind, DPC_MEMCPY_SRC_KIND, 1);            \
	READS(T, dstKind, DPC_MEMCPY_DST_KIND, 1);            \
	READS(T, bytes, DPC_MEMCPY_BYTES, 8);                 \
	READS(T, start, DPC_MEMCPY_START, 8);                 \
	READS(T, end, DPC_MEMCPY_END, 8);                     \
	READS(T, deviceId, DPC_MEMCPY_DEVICE, 4);             \
	READS(T, contextId, DPC_MEMCPY_CONTEXT, 4);           \
	READS(T, streamId, DPC_MEMCPY_STREAM, 4);             \
	READS(T, correlationId, DPC_MEMCPY_CORRELATION, 4)

MEMCPY_PREFIX(CUpti_ActivityMemcpy);
MEMCPY_PREFIX(CUpti_ActivityMemcpy5);
READS(CUpti_ActivityMemcpy4, graphId, DPC_MEMCPY4_GRAPH_ID, 4);
READS(CUpti_ActivityMemcpy5, graphId, DPC_MEMCPY4_GRAPH_ID, 4);
/* CUDA 13 turns this reserved word into isDeviceLaunched + padding. */
READS(CUpti_ActivityMemcpy5, pad2, DPC_MEMCPY6_DEVICE_LAUNCHED, 4);
_Static_assert(sizeof(CUpti_ActivityMemcpy5) == 88, "Memcpy5 size");

#define PTOP_PREFIX(T)                                   \
	READS(T, copyKind, DPC_PTOP_COPY_KIND, 1);         \
	READS(T, srcKind, DPC_PTOP_SRC_KIND, 1);           \
	READS(T, dstKind, DPC_PTOP_DST_KIND, 1);           \
	READS(T, bytes, DPC_PTOP_BYTES, 8);                \
	READS(T, start, DPC_PTOP_START, 8);                \
	READS(T, end, DPC_PTOP_END, 8);                    \
	READS(T, deviceId, DPC_PTOP_DEVICE, 4);            \
	READS(T, contextId, DPC_PTOP_CONTEXT, 4);          \
	READS(T, streamId, DPC_PTOP_STREAM, 4);            \
	READS(T, srcDeviceId, DPC_PTOP_SRC_DEVICE, 4);     \
	READS(T, dstDeviceId, DPC_PTOP_DST_DEVICE, 4);     \
	READS(T, correlationId, DPC_PTOP_CORRELATION, 4)

PTOP_PREFIX(CUpti_ActivityMemcpyPtoP);
PTOP_PREFIX(CUpti_ActivityMemcpyPtoP4);
_Static_assert(sizeof(CUpti_ActivityMemcpyPtoP4) == 96, "MemcpyPtoP4 size");

#define MEMSET_PREFIX(T)                                   \
	READS(T, value, DPC_MEMSET_VALUE, 4);                \
	READS(T, bytes, DPC_MEMSET_BYTES, 8);                \
	READS(T, start, DPC_MEMSET_START, 8);                \
	READS(T, end, DPC_MEMSET_END, 8);                    \
	READS(T, deviceId, DPC_MEMSET_DEVICE, 4);            \
	READS(T, contextId, DPC_MEMSET_CONTEXT, 4);          \
	READS(T, streamId, DPC_MEMSET_STREAM, 4);            \
	READS(T, correlationId, DPC_MEMSET_CORRELATION, 4);  \
	READS(T, memoryKind, DPC_MEMSET_MEMORY_KIND, 2)

MEMSET_PREFIX(CUpti_ActivityMemset);
MEMSET_PREFIX(CUpti_ActivityMemset4);
READS(CUpti_ActivityMemset3, graphId, DPC_MEMSET3_GRAPH_ID, 4);
READS(CUpti_ActivityMemset4, graphId, DPC_MEMSET3_GRAPH_ID, 4);
READS(CUpti_ActivityMemset4, pad2, DPC_MEMSET4_DEVICE_LAUNCHED, 4);
_Static_assert(sizeof(CUpti_ActivityMemset4) == 88, "Memset4 size");

#define MEMORY_PREFIX(T)                                          \
	READS(T, memoryOperationType, DPC_MEMORY_OPERATION, 4);     \
	READS(T, memoryKind, DPC_MEMORY_KIND, 4);                   \
	READS(T, correlationId, DPC_MEMORY_CORRELATION, 4);         \
	READS(T, address, DPC_MEMORY_ADDRESS, 8);                   \
	READS(T, bytes, DPC_MEMORY_BYTES, 8);                       \
	READS(T, timestamp, DPC_MEMORY_TIMESTAMP, 8);               \
	READS(T, processId, DPC_MEMORY_PROCESS, 4);                 \
	READS(T, deviceId, DPC_MEMORY_DEVICE, 4);                   \
	READS(T, contextId, DPC_MEMORY_CONTEXT, 4);                 \
	READS(T, streamId, DPC_MEMORY_STREAM, 4)

MEMORY_PREFIX(CUpti_ActivityMemory2);
MEMORY_PREFIX(CUpti_ActivityMemory3);
_Static_assert(sizeof(CUpti_ActivityMemory3) == 120, "Memory3 size");

READS(CUpti_ActivityAPI, cbid, DPC_API_CBID, 4);
READS(CUpti_ActivityAPI, start, DPC_API_START, 8);
READS(CUpti_ActivityAPI, end, DPC_API_END, 8);
READS(CUpti_ActivityAPI, processId, DPC_API_PROCESS, 4);
READS(CUpti_ActivityAPI, threadId, DPC_API_THREAD, 4);
READS(CUpti_ActivityAPI, correlationId, DPC_API_CORRELATION, 4);
READS(CUpti_ActivityAPI, returnValue, DPC_API_RETURN, 4);
_Static_assert(sizeof(CUpti_ActivityAPI) == 40, "API size");

READS(CUpti_ActivitySynchronization, type, DPC_SYNC_TYPE, 4);
READS(CUpti_ActivitySynchronization, start, DPC_SYNC_START, 8);
READS(CUpti_ActivitySynchronization, end, DPC_SYNC_END, 8);
READS(CUpti_ActivitySynchronization, correlationId, DPC_SYNC_CORRELATION, 4);
READS(CUpti_ActivitySynchronization, contextId, DPC_SYNC_CONTEXT, 4);
READS(CUpti_ActivitySynchronization, streamId, DPC_SYNC_STREAM, 4);
_Static_assert(sizeof(CUpti_ActivitySynchronization) == 40, "Synchronization size");

READS(CUpti_ActivityExternalCorrelation, externalKind, DPC_EXT_KIND, 4);
READS(CUpti_ActivityExternalCorrelation, externalId, DPC_EXT_ID, 8);
READS(CUpti_ActivityExternalCorrelation, correlationId, DPC_EXT_CORRELATION, 4);
_Static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24, "ExternalCorrelation size");

READS(CUpti_ActivityOverhead, overheadKind, DPC_OVERHEAD_KIND, 4);
READS(CUpti_ActivityOverhead, objectKind, DPC_OVERHEAD_OBJECT_KIND, 4);
READS(CUpti_ActivityOverhead, objectId, DPC_OVERHEAD_OBJECT_ID, 12);
READS(CUpti_ActivityOverhead, start, DPC_OVERHEAD_START, 8);
READS(CUpti_ActivityOverhead, end, DPC_OVERHEAD_END, 8);
READS(CUpti_ActivityObjectKindId, pt.processId, 0, 4);
READS(CUpti_ActivityObjectKindId, pt.threadId, 4, 4);
READS(CUpti_ActivityObjectKindId, dcs.deviceId, 0, 4);
READS(CUpti_ActivityObjectKindId, dcs.contextId, 4, 4);
READS(CUpti_ActivityObjectKindId, dcs.streamId, 8, 4);
_Static_assert(sizeof(CUpti_ActivityOverhead) == 40, "Overhead size");

/* Every record kind is the CUpti_Activity header's first word. */
READS(CUpti_Activity, kind, 0, 4);

/* ---- the test double writes the same 11.8 layouts ---- */

#define FAKE_MATCHES(F, ff, R, rf) \
	_Static_assert(offsetof(F, ff) == offsetof(R, rf), #F "." #ff " vs " #R "." #rf)

FAKE_MATCHES(fk_kernel, registers_per_thread, CUpti_ActivityKernel8, registersPerThread);
FAKE_MATCHES(fk_kernel, start, CUpti_ActivityKernel8, start);
FAKE_MATCHES(fk_kernel, device_id, CUpti_ActivityKernel8, deviceId);
FAKE_MATCHES(fk_kernel, grid, CUpti_ActivityKernel8, gridX);
FAKE_MATCHES(fk_kernel, block, CUpti_ActivityKernel8, blockX);
FAKE_MATCHES(fk_kernel, static_shared, CUpti_ActivityKernel8, staticSharedMemory);
FAKE_MATCHES(fk_kernel, correlation_id, CUpti_ActivityKernel8, correlationId);
FAKE_MATCHES(fk_kernel, name, CUpti_ActivityKernel8, name);
FAKE_MATCHES(fk_kernel, queued, CUpti_ActivityKernel8, queued);
FAKE_MATCHES(fk_kernel, graph_id, CUpti_ActivityKernel8, graphId);
FAKE_MATCHES(fk_kernel, channel_id, CUpti_ActivityKernel8, channelID);
FAKE_MATCHES(fk_kernel, cluster, CUpti_ActivityKernel8, clusterX);
FAKE_MATCHES(fk_kernel, local_total_v2, CUpti_ActivityKernel8, localMemoryTotal_v2);
FAKE_MATCHES(fk_memcpy, correlation_id, CUpti_ActivityMemcpy5, correlationId);
FAKE_MATCHES(fk_memcpy, reserved0, CUpti_ActivityMemcpy5, reserved0);
FAKE_MATCHES(fk_memcpy, graph_id, CUpti_ActivityMemcpy5, graphId);
FAKE_MATCHES(fk_memcpy, channel_type, CUpti_ActivityMemcpy5, channelType);
FAKE_MATCHES(fk_ptop, src_device_id, CUpti_ActivityMemcpyPtoP4, srcDeviceId);
FAKE_MATCHES(fk_ptop, dst_context_id, CUpti_ActivityMemcpyPtoP4, dstContextId);
FAKE_MATCHES(fk_ptop, correlation_id, CUpti_ActivityMemcpyPtoP4, correlationId);
FAKE_MATCHES(fk_ptop, channel_type, CUpti_ActivityMemcpyPtoP4, channelType);
FAKE_MATCHES(fk_memset, memory_kind, CUpti_ActivityMemset4, memoryKind);
FAKE_MATCHES(fk_memset, graph_id, CUpti_ActivityMemset4, graphId);
FAKE_MATCHES(fk_memory, timestamp, CUpti_ActivityMemory3, timestamp);
FAKE_MATCHES(fk_memory, name, CUpti_ActivityMemory3, name);
FAKE_MATCHES(fk_memory, pool, CUpti_ActivityMemory3, memoryPoolConfig);
FAKE_MATCHES(fk_api, return_value, CUpti_ActivityAPI, returnValue);
FAKE_MATCHES(fk_sync, cuda_event_id, CUpti_ActivitySynchronization, cudaEventId);
FAKE_MATCHES(fk_external, correlation_id, CUpti_ActivityExternalCorrelation, correlationId);
FAKE_MATCHES(fk_overhead, object_id, CUpti_ActivityOverhead, objectId);
FAKE_MATCHES(fk_overhead, end, CUpti_ActivityOverhead, end);
_Static_assert(offsetof(fk_kernel, max_potential_cluster) == sizeof(CUpti_ActivityKernel8), "fake Kernel8 size");
_Static_assert(offsetof(fk_memcpy, copy_count) == sizeof(CUpti_ActivityMemcpy5), "fake Memcpy5 size");
_Static_assert(offsetof(fk_memory, source) == sizeof(CUpti_ActivityMemory3), "fake Memory3 size");
_Static_assert(offsetof(fk_sync, cuda_event_sync_id) == sizeof(CUpti_ActivitySynchronization), "fake Sync size");
_Static_assert(sizeof(fk_ptop) == sizeof(CUpti_ActivityMemcpyPtoP4), "fake PtoP4 size");
_Static_assert(sizeof(fk_memset) == sizeof(CUpti_ActivityMemset4), "fake Memset4 size");
_Static_assert(sizeof(fk_api) == sizeof(CUpti_ActivityAPI), "fake API size");
_Static_assert(sizeof(fk_external) == sizeof(CUpti_ActivityExternalCorrelation), "fake external size");
_Static_assert(sizeof(fk_overhead) == sizeof(CUpti_ActivityOverhead), "fake overhead size");

/* ---- enum values ---- */

SAME(DPC_SUCCESS, CUPTI_SUCCESS);
SAME(DPC_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER);
SAME(DPC_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(DPC_ERROR_NOT_COMPATIBLE, CUPTI_ERROR_NOT_COMPATIBLE);
SAME(DPC_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
SAME(DPC_ERROR_QUEUE_EMPTY, CUPTI_ERROR_QUEUE_EMPTY);
SAME(DPC_ERROR_INVALID_KIND, CUPTI_ERROR_INVALID_KIND);
SAME(DPC_ERROR_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED);
SAME(DPC_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
SAME(DPC_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(DPC_ERROR_UNKNOWN, CUPTI_ERROR_UNKNOWN);

SAME(DPC_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
SAME(DPC_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
SAME(DPC_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
SAME(DPC_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
SAME(DPC_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
SAME(DPC_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(DPC_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD);
SAME(DPC_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMCPY2);
SAME(DPC_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
SAME(DPC_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
SAME(DPC_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY2);

SAME(DPC_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(DPC_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_RUNTIME_API);
SAME(DPC_EXTERNAL_KIND_CUSTOM0, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
SAME(DPC_THREAD_ID_TYPE_SYSTEM, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
SAME(DPC_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME(DPC_OBJECT_KIND_PROCESS, CUPTI_ACTIVITY_OBJECT_PROCESS);
SAME(DPC_OBJECT_KIND_THREAD, CUPTI_ACTIVITY_OBJECT_THREAD);
SAME(DPC_OBJECT_KIND_DEVICE, CUPTI_ACTIVITY_OBJECT_DEVICE);
SAME(DPC_OBJECT_KIND_CONTEXT, CUPTI_ACTIVITY_OBJECT_CONTEXT);
SAME(DPC_OBJECT_KIND_STREAM, CUPTI_ACTIVITY_OBJECT_STREAM);

/* The name tables in types.go index by these values. */
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 2);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, 3);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, 4);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, 5);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, 6);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, 7);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 8);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, 9);
SAME(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, 10);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 1);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 2);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 3);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, 4);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 5);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, 6);
SAME(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, 7);
SAME(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 1);
SAME(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 2);
SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1);
SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 2);
SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3);
SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 4);
SAME(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, 1);
SAME(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 1 << 16);
SAME(CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, 2 << 16);
SAME(CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, 3 << 16);
SAME(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 4);
SAME(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 5);

/* ---- memory hooks: callback ids ---- */

#define RUNTIME_CBID(name)                                                 \
	SAME(DPC_CBID_##name, CUPTI_RUNTIME_TRACE_CBID_##name);                \
	_Static_assert(DPC_CBID_##name < DPC_HOOK_CBID_LIMIT, #name " limit")
#define DRIVER_CBID(name)                                                  \
	SAME(DPC_CBID_##name, CUPTI_DRIVER_TRACE_CBID_##name);                 \
	_Static_assert(DPC_CBID_##name < DPC_HOOK_CBID_LIMIT, #name " limit")

RUNTIME_CBID(cudaMalloc_v3020);
RUNTIME_CBID(cudaMallocPitch_v3020);
RUNTIME_CBID(cudaFree_v3020);
RUNTIME_CBID(cudaMallocHost_v3020);
RUNTIME_CBID(cudaFreeHost_v3020);
RUNTIME_CBID(cudaHostAlloc_v3020);
RUNTIME_CBID(cudaMallocManaged_v6000);
RUNTIME_CBID(cudaMallocAsync_v11020);
RUNTIME_CBID(cudaMallocAsync_ptsz_v11020);
RUNTIME_CBID(cudaFreeAsync_v11020);
RUNTIME_CBID(cudaFreeAsync_ptsz_v11020);
RUNTIME_CBID(cudaMallocFromPoolAsync_v11020);
RUNTIME_CBID(cudaMallocFromPoolAsync_ptsz_v11020);
DRIVER_CBID(cuMemAlloc);
DRIVER_CBID(cuMemAllocPitch);
DRIVER_CBID(cuMemFree);
DRIVER_CBID(cuMemAllocHost);
DRIVER_CBID(cuMemFreeHost);
DRIVER_CBID(cuMemHostAlloc);
DRIVER_CBID(cuMemAlloc_v2);
DRIVER_CBID(cuMemAllocPitch_v2);
DRIVER_CBID(cuMemFree_v2);
DRIVER_CBID(cuMemAllocHost_v2);
DRIVER_CBID(cuMemAllocManaged);
DRIVER_CBID(cuMemAllocAsync);
DRIVER_CBID(cuMemAllocAsync_ptsz);
DRIVER_CBID(cuMemFreeAsync);
DRIVER_CBID(cuMemFreeAsync_ptsz);
DRIVER_CBID(cuMemAllocFromPoolAsync);
DRIVER_CBID(cuMemAllocFromPoolAsync_ptsz);

SAME(DPC_API_ENTER, CUPTI_API_ENTER);
SAME(DPC_API_EXIT, CUPTI_API_EXIT);
SAME(DPC_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
SAME(DPC_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
SAME(DPC_MEMORY_KIND_MANAGED, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
SAME(DPC_ERROR_INVALID_DEVICE, CUPTI_ERROR_INVALID_DEVICE);

/* ---- memory hooks: what the callback reads ---- */

READS(CUpti_CallbackData, callbackSite, DPC_CBDATA_SITE, 4);
READS(CUpti_CallbackData, functionName, DPC_CBDATA_FUNCTION_NAME, sizeof(void *));
READS(CUpti_CallbackData, functionParams, DPC_CBDATA_PARAMS, sizeof(void *));
READS(CUpti_CallbackData, functionReturnValue, DPC_CBDATA_RETURN_VALUE, sizeof(void *));
READS(CUpti_CallbackData, context, DPC_CBDATA_CONTEXT, sizeof(void *));
READS(CUpti_CallbackData, correlationId, DPC_CBDATA_CORRELATION, 4);
/* The return value is read as an int32: both cudaError_t and CUresult are enums. */
_Static_assert(sizeof(CUresult) == 4, "CUresult");

/* `field` of `type` points to a `width`-byte value the hooks read. */
#define POINTS_TO(type, field, width) \
	_Static_assert(sizeof(*((type *)0)->field) == (width), #type "." #field " does not point to " #width " bytes")

/* An allocation: out pointer to a `outw`-byte address, size of `sizew` bytes. */
#define ALLOC(T, out, size, outw, sizew)             \
	READS(T, out, DPC_PARAM_OUT, sizeof(void *));   \
	POINTS_TO(T, out, outw);                         \
	READS(T, size, DPC_PARAM_SIZE, sizew)
#define PITCH(T, out, pitch, w)                        \
	READS(T, out, DPC_PARAM_OUT, sizeof(void *));     \
	POINTS_TO(T, out, w);                              \
	READS(T, pitch, DPC_PARAM_PITCH_OUT, sizeof(void *)); \
	POINTS_TO(T, pitch, w)

ALLOC(cudaMalloc_v3020_params, devPtr, size, 8, 8);
PITCH(cudaMallocPitch_v3020_params, devPtr, pitch, 8);
READS(cudaMallocPitch_v3020_params, height, DPC_PARAM_PITCH_HEIGHT, 8);
READS(cudaFree_v3020_params, devPtr, DPC_PARAM_FREE_PTR, 8);
ALLOC(cudaMallocHost_v3020_params, ptr, size, 8, 8);
READS(cudaFreeHost_v3020_params, ptr, DPC_PARAM_FREE_PTR, 8);
ALLOC(cudaHostAlloc_v3020_params, pHost, size, 8, 8);
ALLOC(cudaMallocManaged_v6000_params, devPtr, size, 8, 8);
ALLOC(cudaMallocAsync_v11020_params, devPtr, size, 8, 8);
READS(cudaMallocAsync_v11020_params, hStream, DPC_PARAM_ASYNC_STREAM, 8);
ALLOC(cudaMallocAsync_ptsz_v11020_params, devPtr, size, 8, 8);
READS(cudaMallocAsync_ptsz_v11020_params, hStream, DPC_PARAM_ASYNC_STREAM, 8);
READS(cudaFreeAsync_v11020_params, devPtr, DPC_PARAM_FREE_PTR, 8);
READS(cudaFreeAsync_v11020_params, hStream, DPC_PARAM_FREE_STREAM, 8);
READS(cudaFreeAsync_ptsz_v11020_params, devPtr, DPC_PARAM_FREE_PTR, 8);
READS(cudaFreeAsync_ptsz_v11020_params, hStream, DPC_PARAM_FREE_STREAM, 8);
ALLOC(cudaMallocFromPoolAsync_v11020_params, ptr, size, 8, 8);
READS(cudaMallocFromPoolAsync_v11020_params, stream, DPC_PARAM_POOL_STREAM, 8);
ALLOC(cudaMallocFromPoolAsync_ptsz_v11020_params, ptr, size, 8, 8);
READS(cudaMallocFromPoolAsync_ptsz_v11020_params, stream, DPC_PARAM_POOL_STREAM, 8);

ALLOC(cuMemAlloc_params, dptr, bytesize, 4, 4); /* CUdeviceptr_v1 */
PITCH(cuMemAllocPitch_params, dptr, pPitch, 4);
READS(cuMemAllocPitch_params, Height, DPC_PARAM_PITCH_V1_HEIGHT, 4);
READS(cuMemFree_params, dptr, DPC_PARAM_FREE_PTR, 4);
ALLOC(cuMemAllocHost_params, pp, bytesize, 8, 4); /* void *, unsigned int size */
READS(cuMemFreeHost_params, p, DPC_PARAM_FREE_PTR, 8);
ALLOC(cuMemHostAlloc_params, pp, bytesize, 8, 8);
ALLOC(cuMemAlloc_v2_params, dptr, bytesize, 8, 8);
PITCH(cuMemAllocPitch_v2_params, dptr, pPitch, 8);
READS(cuMemAllocPitch_v2_params, Height, DPC_PARAM_PITCH_HEIGHT, 8);
READS(cuMemFree_v2_params, dptr, DPC_PARAM_FREE_PTR, 8);
ALLOC(cuMemAllocHost_v2_params, pp, bytesize, 8, 8);
ALLOC(cuMemAllocManaged_params, dptr, bytesize, 8, 8);
ALLOC(cuMemAllocAsync_params, dptr, bytesize, 8, 8);
READS(cuMemAllocAsync_params, hStream, DPC_PARAM_ASYNC_STREAM, 8);
ALLOC(cuMemAllocAsync_ptsz_params, dptr, bytesize, 8, 8);
READS(cuMemAllocAsync_ptsz_params, hStream, DPC_PARAM_ASYNC_STREAM, 8);
READS(cuMemFreeAsync_params, dptr, DPC_PARAM_FREE_PTR, 8);
READS(cuMemFreeAsync_params, hStream, DPC_PARAM_FREE_STREAM, 8);
READS(cuMemFreeAsync_ptsz_params, dptr, DPC_PARAM_FREE_PTR, 8);
READS(cuMemFreeAsync_ptsz_params, hStream, DPC_PARAM_FREE_STREAM, 8);
ALLOC(cuMemAllocFromPoolAsync_params, dptr, bytesize, 8, 8);
READS(cuMemAllocFromPoolAsync_params, hStream, DPC_PARAM_POOL_STREAM, 8);
ALLOC(cuMemAllocFromPoolAsync_ptsz_params, dptr, bytesize, 8, 8);
READS(cuMemAllocFromPoolAsync_ptsz_params, hStream, DPC_PARAM_POOL_STREAM, 8);

/* ---- the test double plays the same callback data and parameters ---- */

/* Same offset and width. */
#define FAKE_FIELD(F, ff, R, rf)  \
	FAKE_MATCHES(F, ff, R, rf); \
	_Static_assert(FIELD_SIZE(F, ff) == FIELD_SIZE(R, rf), #F "." #ff " vs " #R "." #rf " width")

FAKE_FIELD(fk_callback_data, callback_site, CUpti_CallbackData, callbackSite);
FAKE_FIELD(fk_callback_data, function_name, CUpti_CallbackData, functionName);
FAKE_FIELD(fk_callback_data, function_params, CUpti_CallbackData, functionParams);
FAKE_FIELD(fk_callback_data, function_return_value, CUpti_CallbackData, functionReturnValue);
FAKE_FIELD(fk_callback_data, symbol_name, CUpti_CallbackData, symbolName);
FAKE_FIELD(fk_callback_data, context, CUpti_CallbackData, context);
FAKE_FIELD(fk_callback_data, context_uid, CUpti_CallbackData, contextUid);
FAKE_FIELD(fk_callback_data, correlation_data, CUpti_CallbackData, correlationData);
FAKE_FIELD(fk_callback_data, correlation_id, CUpti_CallbackData, correlationId);
_Static_assert(sizeof(fk_callback_data) == sizeof(CUpti_CallbackData), "fake callback data size");

/* Macro parameters are the real struct's field names. */
#define FAKE_ALLOC(R, r_out, r_size)                 \
	FAKE_FIELD(fk_alloc_params, out, R, r_out);      \
	FAKE_FIELD(fk_alloc_params, size, R, r_size)
FAKE_ALLOC(cudaMalloc_v3020_params, devPtr, size);
FAKE_ALLOC(cudaMallocHost_v3020_params, ptr, size);
FAKE_ALLOC(cudaHostAlloc_v3020_params, pHost, size);
FAKE_ALLOC(cudaMallocManaged_v6000_params, devPtr, size);
FAKE_ALLOC(cuMemHostAlloc_params, pp, bytesize);
FAKE_ALLOC(cuMemAlloc_v2_params, dptr, bytesize);
FAKE_ALLOC(cuMemAllocHost_v2_params, pp, bytesize);
FAKE_ALLOC(cuMemAllocManaged_params, dptr, bytesize);
FAKE_FIELD(fk_alloc_params, flags, cudaHostAlloc_v3020_params, flags);
FAKE_FIELD(fk_alloc_params, flags, cudaMallocManaged_v6000_params, flags);
FAKE_FIELD(fk_alloc_params, flags, cuMemHostAlloc_params, Flags);
FAKE_FIELD(fk_alloc_params, flags, cuMemAllocManaged_params, flags);

FAKE_FIELD(fk_alloc_v1_params, out, cuMemAlloc_params, dptr);
FAKE_FIELD(fk_alloc_v1_params, size, cuMemAlloc_params, bytesize);
FAKE_FIELD(fk_alloc_v1_params, out, cuMemAllocHost_params, pp);
FAKE_FIELD(fk_alloc_v1_params, size, cuMemAllocHost_params, bytesize);

FAKE_FIELD(fk_pitch_params, out, cudaMallocPitch_v3020_params, devPtr);
FAKE_FIELD(fk_pitch_params, pitch, cudaMallocPitch_v3020_params, pitch);
FAKE_FIELD(fk_pitch_params, width, cudaMallocPitch_v3020_params, width);
FAKE_FIELD(fk_pitch_params, height, cudaMallocPitch_v3020_params, height);
FAKE_FIELD(fk_pitch_params, out, cuMemAllocPitch_v2_params, dptr);
FAKE_FIELD(fk_pitch_params, pitch, cuMemAllocPitch_v2_params, pPitch);
FAKE_FIELD(fk_pitch_params, width, cuMemAllocPitch_v2_params, WidthInBytes);
FAKE_FIELD(fk_pitch_params, height, cuMemAllocPitch_v2_params, Height);
FAKE_FIELD(fk_pitch_params, element_size, cuMemAllocPitch_v2_params, ElementSizeBytes);
FAKE_FIELD(fk_pitch_v1_params, out, cuMemAllocPitch_params, dptr);
FAKE_FIELD(fk_pitch_v1_params, pitch, cuMemAllocPitch_params, pPitch);
FAKE_FIELD(fk_pitch_v1_params, width, cuMemAllocPitch_params, WidthInBytes);
FAKE_FIELD(fk_pitch_v1_params, height, cuMemAllocPitch_params, Height);
FAKE_FIELD(fk_pitch_v1_params, element_size, cuMemAllocPitch_params, ElementSizeBytes);

#define FAKE_ASYNC(R, r_out, r_size, r_stream)              \
	FAKE_FIELD(fk_alloc_async_params, out, R, r_out);       \
	FAKE_FIELD(fk_alloc_async_params, size, R, r_size);     \
	FAKE_FIELD(fk_alloc_async_params, stream, R, r_stream)
FAKE_ASYNC(cudaMallocAsync_v11020_params, devPtr, size, hStream);
FAKE_ASYNC(cudaMallocAsync_ptsz_v11020_params, devPtr, size, hStream);
FAKE_ASYNC(cuMemAllocAsync_params, dptr, bytesize, hStream);
FAKE_ASYNC(cuMemAllocAsync_ptsz_params, dptr, bytesize, hStream);

#define FAKE_POOL(R, r_out, r_size, r_pool, r_stream)      \
	FAKE_FIELD(fk_alloc_pool_params, out, R, r_out);       \
	FAKE_FIELD(fk_alloc_pool_params, size, R, r_size);     \
	FAKE_FIELD(fk_alloc_pool_params, pool, R, r_pool);     \
	FAKE_FIELD(fk_alloc_pool_params, stream, R, r_stream)
FAKE_POOL(cudaMallocFromPoolAsync_v11020_params, ptr, size, memPool, stream);
FAKE_POOL(cudaMallocFromPoolAsync_ptsz_v11020_params, ptr, size, memPool, stream);
FAKE_POOL(cuMemAllocFromPoolAsync_params, dptr, bytesize, pool, hStream);
FAKE_POOL(cuMemAllocFromPoolAsync_ptsz_params, dptr, bytesize, pool, hStream);

FAKE_FIELD(fk_free_params, ptr, cudaFree_v3020_params, devPtr);
FAKE_FIELD(fk_free_params, ptr, cudaFreeHost_v3020_params, ptr);
FAKE_FIELD(fk_free_params, ptr, cuMemFree_v2_params, dptr);
FAKE_FIELD(fk_free_params, ptr, cuMemFreeHost_params, p);
FAKE_FIELD(fk_free_params, ptr, cudaFreeAsync_v11020_params, devPtr);
FAKE_FIELD(fk_free_params, stream, cudaFreeAsync_v11020_params, hStream);
FAKE_FIELD(fk_free_params, ptr, cudaFreeAsync_ptsz_v11020_params, devPtr);
FAKE_FIELD(fk_free_params, stream, cudaFreeAsync_ptsz_v11020_params, hStream);
FAKE_FIELD(fk_free_params, ptr, cuMemFreeAsync_params, dptr);
FAKE_FIELD(fk_free_params, stream, cuMemFreeAsync_params, hStream);
FAKE_FIELD(fk_free_params, ptr, cuMemFreeAsync_ptsz_params, dptr);
FAKE_FIELD(fk_free_params, stream, cuMemFreeAsync_ptsz_params, hStream);
FAKE_FIELD(fk_free_v1_params, ptr, cuMemFree_params, dptr);

/* ---- types and function signatures ---- */

/*
 * Under DPC_ABI_CHECK shim.h uses the real types; the normal build's
 * integer and void * substitutes must have the same size.
 */
_Static_assert(sizeof(CUptiResult) == sizeof(int), "CUptiResult");
_Static_assert(sizeof(CUpti_ActivityKind) == sizeof(uint32_t), "CUpti_ActivityKind");
_Static_assert(sizeof(CUpti_CallbackDomain) == sizeof(uint32_t), "CUpti_CallbackDomain");
_Static_assert(sizeof(CUpti_ExternalCorrelationKind) == sizeof(uint32_t), "CUpti_ExternalCorrelationKind");
_Static_assert(sizeof(CUpti_ActivityThreadIdType) == sizeof(uint32_t), "CUpti_ActivityThreadIdType");
_Static_assert(sizeof(CUcontext) == sizeof(void *), "CUcontext");
_Static_assert(sizeof(CUpti_SubscriberHandle) == sizeof(void *), "CUpti_SubscriberHandle");
_Static_assert(sizeof(CUpti_CallbackId) == sizeof(uint32_t), "CUpti_CallbackId");

#define SAME_TYPE(mine, real) _Static_assert(__builtin_types_compatible_p(mine, real), #mine " does not match " #real)

SAME_TYPE(dpc_request_fn, CUpti_BuffersCallbackRequestFunc);
SAME_TYPE(dpc_complete_fn, CUpti_BuffersCallbackCompleteFunc);
SAME_TYPE(dpc_callback_fn, CUpti_CallbackFunc);
SAME_TYPE(dpc_timestamp_fn, CUpti_TimestampCallbackFunc);

SAME_TYPE(dpc_fn_get_version, __typeof__(&cuptiGetVersion));
SAME_TYPE(dpc_fn_get_result_string, __typeof__(&cuptiGetResultString));
SAME_TYPE(dpc_fn_get_timestamp, __typeof__(&cuptiGetTimestamp));
SAME_TYPE(dpc_fn_subscribe, __typeof__(&cuptiSubscribe));
SAME_TYPE(dpc_fn_unsubscribe, __typeof__(&cuptiUnsubscribe));
SAME_TYPE(dpc_fn_register_callbacks, __typeof__(&cuptiActivityRegisterCallbacks));
SAME_TYPE(dpc_fn_enable, __typeof__(&cuptiActivityEnable));
SAME_TYPE(dpc_fn_disable, __typeof__(&cuptiActivityDisable));
SAME_TYPE(dpc_fn_flush_all, __typeof__(&cuptiActivityFlushAll));
SAME_TYPE(dpc_fn_flush_period, __typeof__(&cuptiActivityFlushPeriod));
SAME_TYPE(dpc_fn_get_next_record, __typeof__(&cuptiActivityGetNextRecord));
SAME_TYPE(dpc_fn_get_num_dropped, __typeof__(&cuptiActivityGetNumDroppedRecords));
SAME_TYPE(dpc_fn_push_external, __typeof__(&cuptiActivityPushExternalCorrelationId));
SAME_TYPE(dpc_fn_pop_external, __typeof__(&cuptiActivityPopExternalCorrelationId));
SAME_TYPE(dpc_fn_set_thread_id_type, __typeof__(&cuptiSetThreadIdType));
SAME_TYPE(dpc_fn_register_timestamp, __typeof__(&cuptiActivityRegisterTimestampCallback));
SAME_TYPE(dpc_fn_get_callback_name, __typeof__(&cuptiGetCallbackName));
SAME_TYPE(dpc_fn_enable_callback, __typeof__(&cuptiEnableCallback));
SAME_TYPE(dpc_fn_get_device_id, __typeof__(&cuptiGetDeviceId));
