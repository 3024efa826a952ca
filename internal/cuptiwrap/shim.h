/*
 * Declarations shared by devprof's CUPTI shim (shim.c), the Go side of
 * package cuptiwrap (through cgo) and the ABI check (abicheck/abi_check.c).
 *
 * Nothing here comes from a CUDA or CUPTI header: devprof must build on
 * machines without CUDA, so the few types, enum values and record offsets it
 * needs are declared by hand. abicheck/abi_check.c compiles this file next to
 * the real <cupti.h> (when libcupti-dev is installed) and fails if any value
 * below disagrees with NVIDIA's declarations.
 */
#ifndef DEVPROF_CUPTIWRAP_SHIM_H
#define DEVPROF_CUPTIWRAP_SHIM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The C types CUPTI's entry points use. In normal builds they are plain
 * integers and void pointers, which have the same size and calling
 * convention as CUPTI's enums and opaque handles on every Linux ABI. The ABI
 * check defines DPC_ABI_CHECK and substitutes the real types, so that every
 * function-pointer typedef below must be *exactly* compatible with the real
 * prototype for the check to compile.
 */
#ifdef DPC_ABI_CHECK
typedef CUptiResult dpc_result;
typedef CUpti_ActivityKind dpc_kind;
typedef CUcontext dpc_context;
typedef CUpti_SubscriberHandle dpc_subscriber;
typedef CUpti_CallbackDomain dpc_domain;
typedef CUpti_ExternalCorrelationKind dpc_extkind;
typedef CUpti_ActivityThreadIdType dpc_tidtype;
typedef CUpti_Activity dpc_record;
typedef CUpti_CallbackId dpc_cbid;
#else
typedef int dpc_result;
typedef uint32_t dpc_kind;
typedef void *dpc_context;
typedef void *dpc_subscriber;
typedef uint32_t dpc_domain;
typedef uint32_t dpc_extkind;
typedef uint32_t dpc_tidtype;
typedef void dpc_record;
typedef uint32_t dpc_cbid;
#endif

/* Callback shapes CUPTI calls into. */
typedef void (*dpc_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*dpc_complete_fn)(dpc_context ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                size_t valid_size);
typedef void (*dpc_callback_fn)(void *userdata, dpc_domain domain, uint32_t cbid, const void *cbdata);
typedef uint64_t (*dpc_timestamp_fn)(void);

/* The entry points devprof resolves with dlsym. */
typedef dpc_result (*dpc_fn_get_version)(uint32_t *version);
typedef dpc_result (*dpc_fn_get_result_string)(dpc_result result, const char **str);
typedef dpc_result (*dpc_fn_get_timestamp)(uint64_t *timestamp);
typedef dpc_result (*dpc_fn_subscribe)(dpc_subscriber *subscriber, dpc_callback_fn callback, void *userdata);
typedef dpc_result (*dpc_fn_unsubscribe)(dpc_subscriber subscriber);
typedef dpc_result (*dpc_fn_register_callbacks)(dpc_request_fn requested, dpc_complete_fn completed);
typedef dpc_result (*dpc_fn_enable)(dpc_kind kind);
typedef dpc_result (*dpc_fn_disable)(dpc_kind kind);
typedef dpc_result (*dpc_fn_flush_all)(uint32_t flag);
typedef dpc_result (*dpc_fn_flush_period)(uint32_t time_ms);
typedef dpc_result (*dpc_fn_get_next_record)(uint8_t *buffer, size_t valid_size, dpc_record **record);
typedef dpc_result (*dpc_fn_get_num_dropped)(dpc_context ctx, uint32_t stream, size_t *dropped);
typedef dpc_result (*dpc_fn_push_external)(dpc_extkind kind, uint64_t id);
typedef dpc_result (*dpc_fn_pop_external)(dpc_extkind kind, uint64_t *last_id);
typedef dpc_result (*dpc_fn_set_thread_id_type)(dpc_tidtype type);
typedef dpc_result (*dpc_fn_register_timestamp)(dpc_timestamp_fn fn);
typedef dpc_result (*dpc_fn_get_callback_name)(dpc_domain domain, uint32_t cbid, const char **name);
typedef dpc_result (*dpc_fn_enable_callback)(uint32_t enable, dpc_subscriber subscriber, dpc_domain domain,
                                             dpc_cbid cbid);
typedef dpc_result (*dpc_fn_get_device_id)(dpc_context ctx, uint32_t *device);

/* The resolved table. Optional entries are NULL when the library lacks them. */
typedef struct dpc_lib {
	void *handle;
	dpc_fn_get_version get_version;
	dpc_fn_get_result_string get_result_string;
	dpc_fn_get_timestamp get_timestamp;
	dpc_fn_subscribe subscribe;
	dpc_fn_unsubscribe unsubscribe;
	dpc_fn_register_callbacks register_callbacks;
	dpc_fn_enable enable;
	dpc_fn_disable disable;
	dpc_fn_flush_all flush_all;
	dpc_fn_get_next_record get_next_record;
	dpc_fn_get_num_dropped get_num_dropped;
	dpc_fn_push_external push_external;
	dpc_fn_pop_external pop_external;
	dpc_fn_set_thread_id_type set_thread_id_type;
	/* optional */
	dpc_fn_flush_period flush_period;
	dpc_fn_register_timestamp register_timestamp;
	dpc_fn_get_callback_name get_callback_name;
	/* optional for activity, required by the memory hooks */
	dpc_fn_enable_callback enable_callback;
	dpc_fn_get_device_id get_device_id;
} dpc_lib;

/* CUptiResult values devprof reacts to. */
enum {
	DPC_SUCCESS = 0,
	DPC_ERROR_INVALID_PARAMETER = 1,
	DPC_ERROR_INVALID_DEVICE = 2,
	DPC_ERROR_MAX_LIMIT_REACHED = 12,
	DPC_ERROR_NOT_COMPATIBLE = 14,
	DPC_ERROR_NOT_INITIALIZED = 15,
	DPC_ERROR_QUEUE_EMPTY = 18,
	DPC_ERROR_INVALID_KIND = 21,
	DPC_ERROR_NOT_SUPPORTED = 27,
	DPC_ERROR_INSUFFICIENT_PRIVILEGES = 35,
	DPC_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
	DPC_ERROR_UNKNOWN = 999
};

/* CUpti_ActivityKind values devprof enables or parses. */
enum {
	DPC_KIND_MEMCPY = 1,
	DPC_KIND_MEMSET = 2,
	DPC_KIND_KERNEL = 3,
	DPC_KIND_DRIVER = 4,
	DPC_KIND_RUNTIME = 5,
	DPC_KIND_CONCURRENT_KERNEL = 10,
	DPC_KIND_OVERHEAD = 17,
	DPC_KIND_MEMCPY2 = 22,
	DPC_KIND_SYNCHRONIZATION = 38,
	DPC_KIND_EXTERNAL_CORRELATION = 39,
	DPC_KIND_MEMORY2 = 49
};

/* Other enum values. */
enum {
	DPC_CB_DOMAIN_DRIVER_API = 1,
	DPC_CB_DOMAIN_RUNTIME_API = 2,
	DPC_EXTERNAL_KIND_CUSTOM0 = 3,
	DPC_THREAD_ID_TYPE_SYSTEM = 1,
	DPC_FLUSH_FORCED = 1,
	DPC_OBJECT_KIND_PROCESS = 1,
	DPC_OBJECT_KIND_THREAD = 2,
	DPC_OBJECT_KIND_DEVICE = 3,
	DPC_OBJECT_KIND_CONTEXT = 4,
	DPC_OBJECT_KIND_STREAM = 5,
	DPC_API_ENTER = 0, /* CUpti_ApiCallbackSite */
	DPC_API_EXIT = 1,
	DPC_MEMORY_KIND_PINNED = 2, /* CUpti_ActivityMemoryKind */
	DPC_MEMORY_KIND_DEVICE = 3,
	DPC_MEMORY_KIND_MANAGED = 5
};

/*
 * Callback ids of the CUDA entry points the memory hooks follow
 * (CUpti_runtime_api_trace_cbid, CUpti_driver_api_trace_cbid). NVIDIA only
 * appends to these enums, so a value never changes between CUDA releases;
 * an older library simply lacks the newer ones.
 */
enum {
	DPC_CBID_cudaMalloc_v3020 = 20,
	DPC_CBID_cudaMallocPitch_v3020 = 21,
	DPC_CBID_cudaFree_v3020 = 22,
	DPC_CBID_cudaMallocHost_v3020 = 25,
	DPC_CBID_cudaFreeHost_v3020 = 26,
	DPC_CBID_cudaHostAlloc_v3020 = 27,
	DPC_CBID_cudaMallocManaged_v6000 = 206,
	DPC_CBID_cudaMallocAsync_v11020 = 373,
	DPC_CBID_cudaMallocAsync_ptsz_v11020 = 374,
	DPC_CBID_cudaFreeAsync_v11020 = 375,
	DPC_CBID_cudaFreeAsync_ptsz_v11020 = 376,
	DPC_CBID_cudaMallocFromPoolAsync_v11020 = 391,
	DPC_CBID_cudaMallocFromPoolAsync_ptsz_v11020 = 392,

	DPC_CBID_cuMemAlloc = 29,
	DPC_CBID_cuMemAllocPitch = 31,
	DPC_CBID_cuMemFree = 33,
	DPC_CBID_cuMemAllocHost = 37,
	DPC_CBID_cuMemFreeHost = 38,
	DPC_CBID_cuMemHostAlloc = 39,
	DPC_CBID_cuMemAlloc_v2 = 243,
	DPC_CBID_cuMemAllocPitch_v2 = 244,
	DPC_CBID_cuMemFree_v2 = 245,
	DPC_CBID_cuMemAllocHost_v2 = 294,
	DPC_CBID_cuMemAllocManaged = 371,
	DPC_CBID_cuMemAllocAsync = 598,
	DPC_CBID_cuMemAllocAsync_ptsz = 599,
	DPC_CBID_cuMemFreeAsync = 600,
	DPC_CBID_cuMemFreeAsync_ptsz = 601,
	DPC_CBID_cuMemAllocFromPoolAsync = 611,
	DPC_CBID_cuMemAllocFromPoolAsync_ptsz = 612,

	DPC_HOOK_CBID_LIMIT = 640 /* above every cbid listed: sizes the lookup table */
};

/* CUpti_CallbackData, the cbdata of runtime and driver API callbacks. */
#define DPC_CBDATA_SITE 0            /* uint32 enum CUpti_ApiCallbackSite */
#define DPC_CBDATA_FUNCTION_NAME 8   /* const char * */
#define DPC_CBDATA_PARAMS 16         /* const void *: the entry point's <name>_params struct */
#define DPC_CBDATA_RETURN_VALUE 24   /* void *: cudaError_t / CUresult, valid at exit */
#define DPC_CBDATA_CONTEXT 40        /* CUcontext */
#define DPC_CBDATA_CORRELATION 64    /* uint32 */

/*
 * Where the hooked entry points' parameter structs (generated_cuda_meta.h,
 * generated_cuda_runtime_api_meta.h) keep the fields the hooks read. The
 * structs come in a few shapes; abi_check.c checks every struct against the
 * shape shim.c reads it as.
 *
 * Allocations: the out pointer (void ** or CUdeviceptr *) first, the size
 * next; async ones add the stream after the size, pool ones the pool and
 * then the stream. The CUDA 3.x driver calls (cuMemAlloc, cuMemAllocPitch,
 * cuMemFree, cuMemAllocHost without _v2) take 32-bit CUdeviceptr_v1 and
 * unsigned int sizes.
 */
#define DPC_PARAM_OUT 0              /* pointer to where the new address is written */
#define DPC_PARAM_SIZE 8             /* size_t (unsigned int in the v1 driver calls) */
#define DPC_PARAM_ASYNC_STREAM 16    /* cudaStream_t / CUstream of *MallocAsync / cuMemAllocAsync */
#define DPC_PARAM_POOL_STREAM 24     /* the stream of *FromPoolAsync, after the pool */
/* Pitched allocations: out pointer, then a pointer to the pitch written back, width, height. */
#define DPC_PARAM_PITCH_OUT 8        /* size_t * (unsigned int * in v1) */
#define DPC_PARAM_PITCH_HEIGHT 24    /* size_t */
#define DPC_PARAM_PITCH_V1_HEIGHT 20 /* unsigned int, after the unsigned int width at 16 */
/* Frees: the pointer first (void *, CUdeviceptr, or CUdeviceptr_v1), then the stream of the async ones. */
#define DPC_PARAM_FREE_PTR 0
#define DPC_PARAM_FREE_STREAM 8

/*
 * Record offsets devprof reads. Every one is inside the prefix that all
 * struct versions CUDA 11.x..13.x libcupti writes share, except where the
 * name says which layout introduced it (the parser reads those only when
 * the loaded library writes that layout).
 */
/* CUpti_ActivityKernel4..11 (CONCURRENT_KERNEL / KERNEL) */
#define DPC_KERNEL_REGISTERS 6    /* uint16 */
#define DPC_KERNEL_START 16       /* uint64 */
#define DPC_KERNEL_END 24         /* uint64 */
#define DPC_KERNEL_DEVICE 40      /* uint32 */
#define DPC_KERNEL_CONTEXT 44     /* uint32 */
#define DPC_KERNEL_STREAM 48      /* uint32 */
#define DPC_KERNEL_GRID_X 52      /* int32 x3 */
#define DPC_KERNEL_BLOCK_X 64     /* int32 x3 */
#define DPC_KERNEL_STATIC_SHARED 76  /* int32 */
#define DPC_KERNEL_DYNAMIC_SHARED 80 /* int32 */
#define DPC_KERNEL_CORRELATION 92 /* uint32 */
#define DPC_KERNEL_NAME 104       /* const char * */
#define DPC_KERNEL5_GRAPH_ID 156  /* uint32, Kernel5+ */
#define DPC_KERNEL10_DEVICE_LAUNCHED 208 /* uint8, Kernel10+ (CUDA 13) */

/* CUpti_ActivityMemcpy..Memcpy6 (MEMCPY) */
#define DPC_MEMCPY_COPY_KIND 4    /* uint8 */
#define DPC_MEMCPY_SRC_KIND 5     /* uint8 */
#define DPC_MEMCPY_DST_KIND 6     /* uint8 */
#define DPC_MEMCPY_BYTES 8        /* uint64 */
#define DPC_MEMCPY_START 16
#define DPC_MEMCPY_END 24
#define DPC_MEMCPY_DEVICE 32
#define DPC_MEMCPY_CONTEXT 36
#define DPC_MEMCPY_STREAM 40
#define DPC_MEMCPY_CORRELATION 44
#define DPC_MEMCPY4_GRAPH_ID 72   /* uint32, Memcpy4+ */
#define DPC_MEMCPY6_DEVICE_LAUNCHED 84 /* uint8, CUDA 13 Memcpy6 */

/* CUpti_ActivityMemcpyPtoP..PtoP4 (MEMCPY2) */
#define DPC_PTOP_COPY_KIND 4
#define DPC_PTOP_SRC_KIND 5
#define DPC_PTOP_DST_KIND 6
#define DPC_PTOP_BYTES 8
#define DPC_PTOP_START 16
#define DPC_PTOP_END 24
#define DPC_PTOP_DEVICE 32
#define DPC_PTOP_CONTEXT 36
#define DPC_PTOP_STREAM 40
#define DPC_PTOP_SRC_DEVICE 44
#define DPC_PTOP_DST_DEVICE 52
#define DPC_PTOP_CORRELATION 60

/* CUpti_ActivityMemset..Memset4 (MEMSET) */
#define DPC_MEMSET_VALUE 4        /* uint32 */
#define DPC_MEMSET_BYTES 8
#define DPC_MEMSET_START 16
#define DPC_MEMSET_END 24
#define DPC_MEMSET_DEVICE 32
#define DPC_MEMSET_CONTEXT 36
#define DPC_MEMSET_STREAM 40
#define DPC_MEMSET_CORRELATION 44
#define DPC_MEMSET_MEMORY_KIND 50 /* uint16 */
#define DPC_MEMSET3_GRAPH_ID 72   /* uint32, Memset3+ */
#define DPC_MEMSET4_DEVICE_LAUNCHED 84 /* uint8, CUDA 13 Memset4 */

/* CUpti_ActivityMemory2..Memory4 (MEMORY2) */
#define DPC_MEMORY_OPERATION 4    /* uint32 enum */
#define DPC_MEMORY_KIND 8         /* uint32 enum */
#define DPC_MEMORY_CORRELATION 12
#define DPC_MEMORY_ADDRESS 16     /* uint64 */
#define DPC_MEMORY_BYTES 24
#define DPC_MEMORY_TIMESTAMP 32
#define DPC_MEMORY_PROCESS 48
#define DPC_MEMORY_DEVICE 52
#define DPC_MEMORY_CONTEXT 56
#define DPC_MEMORY_STREAM 60

/* CUpti_ActivityAPI (RUNTIME / DRIVER) */
#define DPC_API_CBID 4
#define DPC_API_START 8
#define DPC_API_END 16
#define DPC_API_PROCESS 24
#define DPC_API_THREAD 28
#define DPC_API_CORRELATION 32
#define DPC_API_RETURN 36

/* CUpti_ActivitySynchronization (and Synchronization2) */
#define DPC_SYNC_TYPE 4
#define DPC_SYNC_START 8
#define DPC_SYNC_END 16
#define DPC_SYNC_CORRELATION 24
#define DPC_SYNC_CONTEXT 28
#define DPC_SYNC_STREAM 32

/* CUpti_ActivityExternalCorrelation */
#define DPC_EXT_KIND 4
#define DPC_EXT_ID 8              /* uint64 */
#define DPC_EXT_CORRELATION 16

/* CUpti_ActivityOverhead; the object id is a 12-byte union. */
#define DPC_OVERHEAD_KIND 4
#define DPC_OVERHEAD_OBJECT_KIND 8
#define DPC_OVERHEAD_OBJECT_ID 12 /* pid/tid or device/context/stream, uint32 each */
#define DPC_OVERHEAD_START 24
#define DPC_OVERHEAD_END 32

#ifndef DPC_ABI_CHECK
/* ---- shim.c ---- */

/* A completed buffer handed from CUPTI to Go. */
typedef struct dpc_item {
	uint8_t *buffer;
	size_t valid;
} dpc_item;

/* Buffer counters, read by Go for Stats. */
typedef struct dpc_counters {
	int64_t requested;  /* request callbacks */
	int64_t declined;   /* requests answered with NULL (pool cap) */
	int64_t completed;  /* completed callbacks with records */
	int64_t empty;      /* completed callbacks with no records */
	int64_t allocated;  /* buffers allocated so far this session */
	int64_t stale;      /* buffers of an earlier session completed late */
} dpc_counters;

void *dpc_dlopen(const char *path, char **err);
dpc_lib *dpc_bind(void *handle, char *missing_required, size_t req_len, char *missing_optional,
                  size_t opt_len);
char *dpc_loaded_path(void *handle);
void dpc_dlclose(void *handle);

dpc_result dpc_get_version(const dpc_lib *lib, uint32_t *version);
const char *dpc_result_string(const dpc_lib *lib, dpc_result code);
dpc_result dpc_get_timestamp(const dpc_lib *lib, uint64_t *ts);
dpc_result dpc_subscribe(const dpc_lib *lib, dpc_subscriber *out);
dpc_result dpc_unsubscribe(const dpc_lib *lib, dpc_subscriber sub);
dpc_result dpc_register_callbacks(const dpc_lib *lib);
dpc_result dpc_enable(const dpc_lib *lib, uint32_t kind);
dpc_result dpc_disable(const dpc_lib *lib, uint32_t kind);
dpc_result dpc_flush_all(const dpc_lib *lib, uint32_t flag);
dpc_result dpc_flush_period(const dpc_lib *lib, uint32_t ms);
dpc_result dpc_num_dropped(const dpc_lib *lib, uint64_t *dropped);
dpc_result dpc_push_external(const dpc_lib *lib, uint64_t id);
dpc_result dpc_pop_external(const dpc_lib *lib, uint64_t *id);
dpc_result dpc_set_thread_id_type(const dpc_lib *lib, uint32_t type);
dpc_result dpc_callback_name(const dpc_lib *lib, uint32_t domain, uint32_t cbid, const char **name);

/* Walk state for one buffer; lives in C memory so Go passes no pointers in. */
#define DPC_WALK_CHUNK 512
typedef struct dpc_walker {
	uint8_t *buffer;
	size_t valid;
	dpc_record *cursor; /* NULL before the first record */
	dpc_result status;  /* why the last walk stopped early; MAX_LIMIT_REACHED at the end */
	void *records[DPC_WALK_CHUNK];
} dpc_walker;

int dpc_walk(const dpc_lib *lib, dpc_walker *w);

int dpc_session_open(size_t buffer_size, int max_buffers, int prealloc);
void dpc_session_close(void);
int dpc_wait(int timeout_ms, dpc_item *out, int max);
void dpc_wake(void);
void dpc_release(uint8_t *buffer);
void dpc_read_counters(dpc_counters *out);

/* ---- memory hooks ---- */

/* One allocation or free, handed to Go (dpcGoMemoryHook) on the calling thread. */
typedef struct dpc_memcall {
	uint64_t address;
	uint64_t bytes;
	uint64_t stream;
	uint32_t correlation;
	int32_t device;
	uint16_t api; /* index into the hook table (dpc_hook_entry) */
	uint8_t free;
	uint8_t kind;
	uint8_t async;
} dpc_memcall;

/* Hook counters, read by Go for HookStats. */
typedef struct dpc_hook_counters {
	int64_t calls;      /* handed to Go */
	int64_t failed;     /* hooked calls that returned an error */
	int64_t nested;     /* driver calls inside a hooked runtime call on the same thread */
	int64_t null_frees; /* frees of NULL (no-ops in CUDA) */
} dpc_hook_counters;

int dpc_hook_count(void);
void dpc_hook_entry(int i, uint32_t *domain, uint32_t *cbid, const char **name);
dpc_result dpc_enable_callback(const dpc_lib *lib, uint32_t enable, dpc_subscriber sub, uint32_t domain,
                               uint32_t cbid);
void dpc_hooks_on(const dpc_lib *lib);
void dpc_hooks_off(void);
void dpc_hooks_quiesce(void);
int dpc_hooks_in_handler(void);
void dpc_hooks_abandon(void);
void dpc_hooks_read(dpc_hook_counters *out);
#endif

#endif
