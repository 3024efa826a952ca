/*
 * A stand-in libcupti for devprof's tests: it exports the CUPTI entry points
 * devprof calls and, through the real activity-buffer protocol (request
 * callback, records written at CUDA's own offsets and sizes, completion
 * callback, cuptiActivityGetNextRecord), produces a fixed, scripted
 * workload. The Go tests expect exactly that script (cuptiwrap's
 * workload_test.go describes the same records).
 *
 * Build: cc -shared -fPIC -O1 -o libcupti-fake.so fakecupti.c -lpthread
 * (-DFAKECUPTI_MINIMAL leaves out the optional entry points, as an old
 * CUPTI would.)
 *
 * Environment, read when a session starts (cuptiActivityRegisterCallbacks)
 * or, for the version, at each cuptiGetVersion:
 *   FAKECUPTI_LAYOUT   11.8 (default) | 12 | 13: record layouts of CUDA 11.8
 *                      (Kernel8 200 B, Memcpy5 88, Memory3 120, Sync 40),
 *                      12.8 (Kernel9 208, Memcpy6 96, Memory4 128, Sync2 56)
 *                      or 13.0 (Kernel10 216, + isDeviceLaunched bytes)
 *   FAKECUPTI_VERSION  overrides cuptiGetVersion (18 / 26 / 130000 by layout)
 *   FAKECUPTI_BASE     base timestamp of the script (default: now)
 *   FAKECUPTI_DROPPED  records to report through GetNumDroppedRecords
 *   FAKECUPTI_SCRIPT   0 plays no script: only what fakecupti_launch adds
 *   FAKECUPTI_BUFFER_LIMIT  bytes of each buffer the fake fills (default
 *                      1000), so the small script spans several buffers
 *   FAKECUPTI_FAIL     not_initialized (15 from every tracing call, like the
 *                      real library without a driver) | privileges (35 from
 *                      cuptiActivityEnable) | multiple_subscribers (39 from
 *                      cuptiSubscribe) | subscribe_limit (12 from it) |
 *                      enable_callback (999 from cuptiEnableCallback)
 *   FAKECUPTI_CBID_LIMIT  callback ids at or above this are unknown to
 *                      cuptiEnableCallback (1: invalid parameter), as in a
 *                      CUPTI older than the entry points they name
 *
 * Callbacks: cuptiSubscribe keeps the subscriber's callback, and
 * cuptiEnableCallback turns on runtime (2) and driver (1) callback ids. The
 * test hook fakecupti_memory plays one CUDA allocation or free the way CUDA
 * does (see "memory calls" below): the callback at entry and at exit with
 * the entry point's real parameter struct, plus, when those kinds are
 * enabled, its API record and a MEMORY2 record under the same correlation
 * id.
 *
 * Delivery: script phase A is written at the first periodic flush
 * (cuptiActivityFlushPeriod's worker thread) or, without one, at the first
 * cuptiActivityFlushAll; phase B only at a forced flush, as records still
 * in flight. Every flush completes the partly filled buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_params.h"
#include "fake_records.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*complete_fn)(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid);
typedef void (*callback_fn)(void *userdata, uint32_t domain, uint32_t cbid, const void *cbdata);

enum { LAYOUT_11_8, LAYOUT_12, LAYOUT_13 };

enum {
	OK = 0,
	E_INVALID_PARAMETER = 1,
	E_MAX_LIMIT_REACHED = 12,
	E_INVALID_DEVICE = 2,
	E_NOT_INITIALIZED = 15,
	E_QUEUE_EMPTY = 18,
	E_INVALID_KIND = 21,
	E_INSUFFICIENT_PRIVILEGES = 35,
	E_MULTIPLE_SUBSCRIBERS = 39,
	E_UNKNOWN = 999,
};

enum {
	K_MEMCPY = 1,
	K_MEMSET = 2,
	K_KERNEL = 3,
	K_DRIVER = 4,
	K_RUNTIME = 5,
	K_CONCURRENT_KERNEL = 10,
	K_OVERHEAD = 17,
	K_MEMCPY2 = 22,
	K_SYNCHRONIZATION = 38,
	K_EXTERNAL_CORRELATION = 39,
	K_MEMORY2 = 49,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static request_fn on_request;
static complete_fn on_complete;
static int layout = LAYOUT_11_8;
static uint64_t enabled; /* bit per kind < 64 */
/*
 * Kinds enabled at any time this session. The script's records count as
 * having happened while the session collected, so a kind disabled before
 * the final flush still gets its records delivered, as with CUPTI.
 */
static uint64_t session_kinds;
static int scripting; /* put() filters by session_kinds, not enabled */
static int subscribed;
static int thread_id_system;
static uint64_t base;
static int phase_a_done, phase_b_done;
static uint64_t dropped_script, dropped_pending;
static size_t buffer_limit = 1000;
static uint32_t next_correlation = 100000; /* atomic */

/* The subscriber's callback and the callback ids it enabled (atomics). */
#define FK_CBID_LIMIT 1024
static callback_fn cb_fn;
static void *cb_userdata;
static uint64_t cb_enabled[2][FK_CBID_LIMIT / 64]; /* [domain-1] */

static uint8_t *cur;
static size_t cur_size, cur_used;

#ifndef FAKECUPTI_MINIMAL
static pthread_cond_t worker_cv = PTHREAD_COND_INITIALIZER;
static uint32_t period_ms;
static int worker_running;
#endif

/* Set by fakecupti_fill: records go to this flat buffer instead. */
static uint8_t *fill_buf;
static size_t fill_cap, fill_used;

static __thread uint64_t ext_stack[5][64];
static __thread int ext_depth[5];

static int env_int(const char *name, long long *out) {
	const char *v = getenv(name);
	if (v == NULL || *v == 0) {
		return 0;
	}
	*out = strtoll(v, NULL, 0);
	return 1;
}

static int layout_from(const char *v) {
	if (v != NULL && strcmp(v, "12") == 0) {
		return LAYOUT_12;
	}
	if (v != NULL && strcmp(v, "13") == 0) {
		return LAYOUT_13;
	}
	return LAYOUT_11_8;
}

static int fail_code(const char *mode) {
	const char *v = getenv("FAKECUPTI_FAIL");
	return v != NULL && strcmp(v, mode) == 0;
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* This fake's own idea of each record's size: the walk must not depend on devprof's. */
static size_t record_size(uint32_t kind, int lay) {
	switch (kind) {
	case K_KERNEL:
	case K_CONCURRENT_KERNEL:
		return lay == LAYOUT_11_8 ? 200 : lay == LAYOUT_12 ? 208 : 216;
	case K_MEMCPY:
		return lay == LAYOUT_11_8 ? 88 : 96;
	case K_MEMCPY2:
		return 96;
	case K_MEMSET:
		return 88;
	case K_MEMORY2:
		return lay == LAYOUT_11_8 ? 120 : 128;
	case K_DRIVER:
	case K_RUNTIME:
		return 40;
	case K_SYNCHRONIZATION:
		return lay == LAYOUT_11_8 ? 40 : 56;
	case K_EXTERNAL_CORRELATION:
		return 24;
	case K_OVERHEAD:
		return 40;
	}
	return 0;
}

/* ---- buffers (mu held) ---- */

static void complete_current(void) {
	if (cur == NULL) {
		return;
	}
	uint8_t *b = cur;
	size_t size = cur_size, used = cur_used;
	cur = NULL;
	cur_size = cur_used = 0;
	on_complete(NULL, 0, b, size, used);
}

static void request_buffer(void) {
	uint8_t *b = NULL;
	size_t size = 0, max_records = 0;
	on_request(&b, &size, &max_records);
	if (b == NULL) {
		return;
	}
	if (((uintptr_t)b & 7) != 0) {
		fprintf(stderr, "fakecupti: buffer %p is not 8-byte aligned; CUPTI requires it\n", (void *)b);
		abort();
	}
	if (size < 256) {
		fprintf(stderr, "fakecupti: buffer of %zu bytes is too small\n", size);
		abort();
	}
	cur = b;
	cur_size = size;
	cur_used = 0;
}

/* Writes one record (the first `size` bytes of rec) if its kind is enabled. */
static void put(const void *rec, uint32_t kind) {
	size_t size = record_size(kind, layout);
	if (fill_buf != NULL) {
		if (fill_used + size <= fill_cap) {
			memcpy(fill_buf + fill_used, rec, size);
			fill_used += size;
		}
		return;
	}
	uint64_t mask = scripting ? session_kinds : enabled;
	if (kind >= 64 || !(mask & (1ull << kind)) || on_request == NULL) {
		return;
	}
	size_t limit = buffer_limit;
	if (cur != NULL && cur_size < limit) {
		limit = cur_size;
	}
	if (cur != NULL && cur_used + size > limit) {
		complete_current();
	}
	if (cur == NULL) {
		request_buffer();
	}
	if (cur == NULL) {
		dropped_pending++; /* no buffer: the record is lost, as in CUPTI */
		return;
	}
	memcpy(cur + cur_used, rec, size);
	cur_used += size;
}

/* ---- the script ---- */

static const char *const kernel_names[] = {
	"_Z6matmulPKfS0_Pfi",
	"_Z4reluPfi",
	"_Z7softmaxPKfPfi",
	"_Z9layernormPKfPfi",
};

/* Every field starts as 0xEE so a parser reading a field the record does not have gets garbage. */
#define POISON(x) memset(&(x), 0xEE, sizeof(x))

static uint64_t slot(int n) { return base + 10000ull * (uint64_t)n; }

static void api(uint32_t kind, uint32_t cbid, int n, uint32_t tid, uint32_t corr, uint32_t ret) {
	fk_api a;
	POISON(a);
	a.kind = kind;
	a.cbid = cbid;
	a.start = slot(n) + 100;
	a.end = slot(n) + 500;
	a.process_id = (uint32_t)getpid();
	a.thread_id = tid;
	a.correlation_id = corr;
	a.return_value = ret;
	put(&a, kind);
}

static void external(uint32_t ext_kind, uint64_t id, uint32_t corr) {
	fk_external e;
	POISON(e);
	e.kind = K_EXTERNAL_CORRELATION;
	e.external_kind = ext_kind;
	e.external_id = id;
	e.correlation_id = corr;
	put(&e, K_EXTERNAL_CORRELATION);
}

static void kernel(int i) {
	uint32_t corr = 100 + (uint32_t)i;
	uint32_t tid = (i % 2 == 0) ? 4242 : 4243;
	if (i == 0) {
		external(3, 9000, corr); /* CUSTOM0 */
		external(4, 7000, corr); /* CUSTOM1 */
	}
	if (i == 1) {
		external(3, 9001, corr);
	}
	if (i % 2 == 0) {
		api(K_RUNTIME, 211, i, tid, corr, 0); /* cudaLaunchKernel_v7000 */
	} else {
		api(K_DRIVER, 307, i, tid, corr, 0); /* cuLaunchKernel */
	}
	fk_kernel k;
	POISON(k);
	k.kind = K_CONCURRENT_KERNEL;
	k.cache_config = 0x21;
	k.registers_per_thread = (uint16_t)(16 + 2 * i);
	k.start = slot(i) + 1000;
	k.end = slot(i) + 3000 + 100 * (uint64_t)i;
	k.completed = k.end;
	k.device_id = (uint32_t)(i % 2);
	k.context_id = k.device_id + 1;
	k.stream_id = 10 + (uint32_t)((i / 2) % 2);
	k.grid[0] = i + 1;
	k.grid[1] = 2;
	k.grid[2] = 1;
	k.block[0] = 32 * (i + 1);
	k.block[1] = 4;
	k.block[2] = 1;
	k.static_shared = 256 * i;
	k.dynamic_shared = 1024 * (i % 3);
	k.correlation_id = corr;
	k.grid_id = i;
	k.name = kernel_names[i % 4];
	k.graph_id = (i == 5) ? 77 : 0;
	if (layout == LAYOUT_13) {
		k.is_device_launched = (i == 7);
	}
	put(&k, K_CONCURRENT_KERNEL);
}

static void memcpy_rec(int n, uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t bytes, uint32_t device,
                       uint32_t stream, uint32_t corr, uint32_t graph_id, int device_launched) {
	fk_memcpy m;
	POISON(m);
	m.kind = K_MEMCPY;
	m.copy_kind = copy_kind;
	m.src_kind = src;
	m.dst_kind = dst;
	m.flags = 1;
	m.bytes = bytes;
	m.start = slot(n) + 1000;
	m.end = slot(n) + 1000 + bytes / 16;
	m.device_id = device;
	m.context_id = device + 1;
	m.stream_id = stream;
	m.correlation_id = corr;
	m.graph_id = graph_id;
	if (layout == LAYOUT_13) {
		m.is_device_launched = (uint8_t)device_launched;
		memset(m.pad2, 0, sizeof m.pad2);
	}
	put(&m, K_MEMCPY);
}

static void overhead(int n, uint32_t kind, uint32_t object_kind, uint32_t a, uint32_t b, uint32_t c) {
	fk_overhead o;
	POISON(o);
	o.kind = K_OVERHEAD;
	o.overhead_kind = kind;
	o.object_kind = object_kind;
	if (object_kind <= 2) {
		o.object_id.pt.process_id = a;
		o.object_id.pt.thread_id = b;
	} else {
		o.object_id.dcs.device_id = a;
		o.object_id.dcs.context_id = b;
		o.object_id.dcs.stream_id = c;
	}
	o.start = slot(n) + 200;
	o.end = slot(n) + 700;
	put(&o, K_OVERHEAD);
}

static void memory(int n, uint32_t op, uint32_t corr) {
	fk_memory m;
	POISON(m);
	m.kind = K_MEMORY2;
	m.operation = op;
	m.memory_kind = 3; /* DEVICE */
	m.correlation_id = corr;
	m.address = 0x7f0000100000ull;
	m.bytes = 1 << 20;
	m.timestamp = slot(n) + 1000;
	m.process_id = (uint32_t)getpid();
	m.device_id = 0;
	m.context_id = 1;
	m.stream_id = 0;
	m.name = NULL;
	m.is_async = 0;
	put(&m, K_MEMORY2);
}

static void sync_rec(int n, uint32_t type, uint32_t corr, uint32_t ctx, uint32_t stream) {
	fk_sync s;
	POISON(s);
	s.kind = K_SYNCHRONIZATION;
	s.type = type;
	s.start = slot(n) + 1000;
	s.end = slot(n) + 5000;
	s.correlation_id = corr;
	s.context_id = ctx;
	s.stream_id = stream;
	s.cuda_event_id = 0xffffffffu;
	put(&s, K_SYNCHRONIZATION);
}

static void phase_a(void) {
	uint32_t pid = (uint32_t)getpid();
	for (int i = 0; i < 6; i++) {
		kernel(i);
	}
	/* 20: host-to-device copy */
	api(K_RUNTIME, 41, 20, 4242, 120, 0); /* cudaMemcpyAsync_v3020 */
	memcpy_rec(20, 1, 2, 3, 1 << 20, 0, 10, 120, 0, 0);
	/* 21: device-to-host copy through the driver API */
	api(K_DRIVER, 279, 21, 4243, 121, 0); /* cuMemcpyDtoHAsync_v2 */
	memcpy_rec(21, 2, 3, 1, 4096, 1, 11, 121, 0, 0);
	/* 22: peer copy device 0 -> device 1 */
	api(K_RUNTIME, 41, 22, 4242, 122, 0);
	{
		fk_ptop p;
		POISON(p);
		p.kind = K_MEMCPY2;
		p.copy_kind = 10;
		p.src_kind = 3;
		p.dst_kind = 3;
		p.flags = 1;
		p.bytes = 65536;
		p.start = slot(22) + 1000;
		p.end = slot(22) + 4000;
		p.device_id = 0;
		p.context_id = 1;
		p.stream_id = 10;
		p.src_device_id = 0;
		p.src_context_id = 1;
		p.dst_device_id = 1;
		p.dst_context_id = 2;
		p.correlation_id = 122;
		put(&p, K_MEMCPY2);
	}
	/* 23: memset */
	api(K_RUNTIME, 51, 23, 4242, 123, 0); /* cudaMemsetAsync_v3020 */
	{
		fk_memset m;
		POISON(m);
		m.kind = K_MEMSET;
		m.value = 0xAB;
		m.bytes = 2048;
		m.start = slot(23) + 1000;
		m.end = slot(23) + 1500;
		m.device_id = 1;
		m.context_id = 2;
		m.stream_id = 11;
		m.correlation_id = 123;
		m.flags = 1;
		m.memory_kind = 3;
		m.graph_id = 0;
		if (layout == LAYOUT_13) {
			m.is_device_launched = 0;
			memset(m.pad2, 0, sizeof m.pad2);
		}
		put(&m, K_MEMSET);
	}
	/* 24: allocation */
	api(K_RUNTIME, 20, 24, 4242, 124, 0); /* cudaMalloc_v3020 */
	memory(24, 1, 124);
	/* 25: stream synchronize */
	api(K_RUNTIME, 131, 25, 4243, 125, 0); /* cudaStreamSynchronize_v3020 */
	sync_rec(25, 3, 125, 1, 10);
	/* 26: CUPTI's own buffer-flush overhead on thread 4242 */
	overhead(26, 1u << 16, 2, pid, 4242, 0);
	/* 27: a driver call the fake has no name for, failing with 1 */
	api(K_DRIVER, 549, 27, 4243, 126, 1); /* cuMemCreate */
}

static void phase_b(void) {
	for (int i = 6; i < 10; i++) {
		kernel(i);
	}
	/* 30: device-to-device copy inside CUDA graph 78 (device-launched on CUDA 13) */
	api(K_RUNTIME, 41, 30, 4242, 130, 0);
	memcpy_rec(30, 8, 3, 3, 8192, 1, 10, 130, 78, 1);
	/* 31: free */
	api(K_RUNTIME, 22, 31, 4242, 131, 0); /* cudaFree_v3020 */
	memory(31, 2, 131);
	/* 32: context synchronize through the driver */
	api(K_DRIVER, 17, 32, 4243, 132, 0); /* cuCtxSynchronize */
	sync_rec(32, 4, 132, 2, 0xffffffffu);
	/* 33: driver JIT compile overhead on device 1 */
	overhead(33, 1, 3, 1, 2, 0);
}

/* ---- periodic flush ---- */
#ifndef FAKECUPTI_MINIMAL

static void *worker(void *arg) {
	(void)arg;
	pthread_mutex_lock(&mu);
	while (period_ms > 0) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)period_ms * 1000000ull;
		until.tv_sec += (time_t)(ns / 1000000000ull);
		until.tv_nsec = (long)(ns % 1000000000ull);
		int r = 0;
		uint32_t p = period_ms;
		while (period_ms == p && r != ETIMEDOUT) {
			r = pthread_cond_timedwait(&worker_cv, &mu, &until);
		}
		if (r != ETIMEDOUT || period_ms == 0 || on_request == NULL) {
			continue;
		}
		if (!phase_a_done && session_kinds != 0) {
			phase_a_done = 1;
			scripting = 1;
			phase_a();
			scripting = 0;
		}
		if (cur != NULL && cur_used > 0) {
			complete_current();
		}
	}
	worker_running = 0;
	pthread_mutex_unlock(&mu);
	return NULL;
}
#endif

/* ---- memory calls: CUDA allocations and frees, played for the callback API ---- */

enum { S_ALLOC, S_ALLOC_V1, S_PITCH, S_PITCH_V1, S_ASYNC, S_POOL, S_FREE, S_FREE_V1 };

enum { M_PINNED = 2, M_DEVICE = 3, M_MANAGED = 5 }; /* CUpti_ActivityMemoryKind */

struct fk_entry {
	uint32_t domain, cbid;
	const char *function; /* CUpti_CallbackData.functionName */
	const char *cbname;   /* cuptiGetCallbackName */
	int shape;            /* S_*: which params struct */
	uint32_t memory_kind;
	int ptr32;            /* writes a 32-bit CUdeviceptr_v1 */
	uint32_t driver;      /* a runtime call's driver counterpart (cbid) */
};

/* Callback ids as in cupti_runtime_cbid.h and cupti_driver_cbid.h. */
static const struct fk_entry entries[] = {
	{2, 20, "cudaMalloc", "cudaMalloc_v3020", S_ALLOC, M_DEVICE, 0, 243},
	{2, 21, "cudaMallocPitch", "cudaMallocPitch_v3020", S_PITCH, M_DEVICE, 0, 244},
	{2, 22, "cudaFree", "cudaFree_v3020", S_FREE, M_DEVICE, 0, 245},
	{2, 25, "cudaMallocHost", "cudaMallocHost_v3020", S_ALLOC, M_PINNED, 0, 294},
	{2, 26, "cudaFreeHost", "cudaFreeHost_v3020", S_FREE, M_PINNED, 0, 38},
	{2, 27, "cudaHostAlloc", "cudaHostAlloc_v3020", S_ALLOC, M_PINNED, 0, 39},
	{2, 206, "cudaMallocManaged", "cudaMallocManaged_v6000", S_ALLOC, M_MANAGED, 0, 371},
	{2, 373, "cudaMallocAsync", "cudaMallocAsync_v11020", S_ASYNC, M_DEVICE, 0, 598},
	{2, 374, "cudaMallocAsync_ptsz", "cudaMallocAsync_ptsz_v11020", S_ASYNC, M_DEVICE, 0, 599},
	{2, 375, "cudaFreeAsync", "cudaFreeAsync_v11020", S_FREE, M_DEVICE, 0, 600},
	{2, 376, "cudaFreeAsync_ptsz", "cudaFreeAsync_ptsz_v11020", S_FREE, M_DEVICE, 0, 601},
	{2, 391, "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_v11020", S_POOL, M_DEVICE, 0, 611},
	{2, 392, "cudaMallocFromPoolAsync_ptsz", "cudaMallocFromPoolAsync_ptsz_v11020", S_POOL, M_DEVICE, 0, 612},
	{1, 29, "cuMemAlloc", "cuMemAlloc", S_ALLOC_V1, M_DEVICE, 1, 0},
	{1, 31, "cuMemAllocPitch", "cuMemAllocPitch", S_PITCH_V1, M_DEVICE, 1, 0},
	{1, 33, "cuMemFree", "cuMemFree", S_FREE_V1, M_DEVICE, 1, 0},
	{1, 37, "cuMemAllocHost", "cuMemAllocHost", S_ALLOC_V1, M_PINNED, 0, 0},
	{1, 38, "cuMemFreeHost", "cuMemFreeHost", S_FREE, M_PINNED, 0, 0},
	{1, 39, "cuMemHostAlloc", "cuMemHostAlloc", S_ALLOC, M_PINNED, 0, 0},
	{1, 243, "cuMemAlloc_v2", "cuMemAlloc_v2", S_ALLOC, M_DEVICE, 0, 0},
	{1, 244, "cuMemAllocPitch_v2", "cuMemAllocPitch_v2", S_PITCH, M_DEVICE, 0, 0},
	{1, 245, "cuMemFree_v2", "cuMemFree_v2", S_FREE, M_DEVICE, 0, 0},
	{1, 294, "cuMemAllocHost_v2", "cuMemAllocHost_v2", S_ALLOC, M_PINNED, 0, 0},
	{1, 371, "cuMemAllocManaged", "cuMemAllocManaged", S_ALLOC, M_MANAGED, 0, 0},
	{1, 598, "cuMemAllocAsync", "cuMemAllocAsync", S_ASYNC, M_DEVICE, 0, 0},
	{1, 599, "cuMemAllocAsync_ptsz", "cuMemAllocAsync_ptsz", S_ASYNC, M_DEVICE, 0, 0},
	{1, 600, "cuMemFreeAsync", "cuMemFreeAsync", S_FREE, M_DEVICE, 0, 0},
	{1, 601, "cuMemFreeAsync_ptsz", "cuMemFreeAsync_ptsz", S_FREE, M_DEVICE, 0, 0},
	{1, 611, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", S_POOL, M_DEVICE, 0, 0},
	{1, 612, "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz", S_POOL, M_DEVICE, 0, 0},
};

#define NENTRIES (sizeof entries / sizeof entries[0])

static const struct fk_entry *find_entry(uint32_t domain, uint32_t cbid) {
	for (size_t i = 0; i < NENTRIES; i++) {
		if (entries[i].domain == domain && entries[i].cbid == cbid) {
			return &entries[i];
		}
	}
	return NULL;
}

static int is_async(const struct fk_entry *e) {
	return e->shape == S_ASYNC || e->shape == S_POOL || strstr(e->function, "FreeAsync") != NULL;
}

/*
 * A context handle encodes the device ordinal (cuptiGetDeviceId decodes
 * it); the handles are never dereferenced.
 */
#define CONTEXT_BASE 0xC7000000u
static void *context_of(int32_t device) {
	return device < 0 ? NULL : (void *)(uintptr_t)(CONTEXT_BASE + ((uint32_t)device << 8));
}

/* Live allocations (mu held): the fake hands out increasing addresses,
 * below 4 GiB for the 32-bit v1 driver calls. */
struct fk_alloc {
	uint64_t address, bytes;
	uint32_t memory_kind;
	int32_t device;
};
static struct fk_alloc *live;
static size_t nlive, live_cap;
static uint64_t next_address = 0x200000000ull, next_address32 = 0x10000000ull;

static _Thread_local uint32_t outer_correlation; /* of the outermost call on this thread */
static _Thread_local int call_depth;

static uint32_t tid_now(void) {
	return thread_id_system ? (uint32_t)syscall(SYS_gettid) : (uint32_t)pthread_self();
}

/* Whether activity kind is enabled now; a hint that spares building
 * records nobody collects (put decides for good, under mu). */
static int kind_on(uint32_t kind) { return (__atomic_load_n(&enabled, __ATOMIC_RELAXED) >> kind) & 1; }

/* A MEMORY2 record (mu held). Its correlation id is the outermost call's:
 * the one its callback and API record carry. */
static void memory_record(uint32_t op, const struct fk_alloc *a, int async, uint64_t stream) {
	if (!kind_on(K_MEMORY2)) {
		return;
	}
	fk_memory m;
	POISON(m);
	m.kind = K_MEMORY2;
	m.operation = op;
	m.memory_kind = a->memory_kind;
	m.correlation_id = outer_correlation;
	m.address = a->address;
	m.bytes = a->bytes;
	m.timestamp = now_ns();
	m.pc = 0;
	m.process_id = (uint32_t)getpid();
	m.device_id = a->device < 0 ? 0 : (uint32_t)a->device;
	m.context_id = m.device_id + 1;
	m.stream_id = (uint32_t)stream;
	m.name = NULL;
	m.is_async = (uint32_t)async;
	memset(&m.pool, 0, sizeof m.pool);
	m.source = NULL;
	put(&m, K_MEMORY2);
}

/* Returns the new address, or 0 when out of (fake) memory. */
static uint64_t fake_alloc(uint64_t bytes, uint32_t memory_kind, int32_t device, int ptr32, int async,
                           uint64_t stream) {
	uint64_t step = (bytes + 511) / 512 * 512 + 512;
	pthread_mutex_lock(&mu);
	uint64_t *next = ptr32 ? &next_address32 : &next_address;
	if (ptr32 && *next + step > 0xF0000000ull) {
		pthread_mutex_unlock(&mu);
		return 0;
	}
	if (nlive == live_cap) {
		size_t cap = live_cap ? 2 * live_cap : 64;
		struct fk_alloc *grown = realloc(live, cap * sizeof *live);
		if (grown == NULL) {
			pthread_mutex_unlock(&mu);
			return 0;
		}
		live = grown;
		live_cap = cap;
	}
	struct fk_alloc a = {*next, bytes, memory_kind, device};
	*next += step;
	live[nlive++] = a;
	memory_record(1, &a, async, stream);
	pthread_mutex_unlock(&mu);
	return a.address;
}

/* Returns 0, or 1 (invalid value) for a pointer the fake did not hand out. */
static int32_t fake_free(uint64_t address, int async, uint64_t stream) {
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].address == address) {
			struct fk_alloc a = live[i];
			live[i] = live[--nlive];
			memory_record(2, &a, async, stream);
			pthread_mutex_unlock(&mu);
			return 0;
		}
	}
	pthread_mutex_unlock(&mu);
	return 1;
}

static int callback_enabled(uint32_t domain, uint32_t cbid) {
	if (domain < 1 || domain > 2 || cbid >= FK_CBID_LIMIT) {
		return 0;
	}
	return (__atomic_load_n(&cb_enabled[domain - 1][cbid / 64], __ATOMIC_ACQUIRE) >> (cbid % 64)) & 1;
}

/* Calls the subscriber, as CUPTI does, with no lock of the fake held. */
static void callback(uint32_t domain, uint32_t cbid, const fk_callback_data *d) {
	callback_fn f = __atomic_load_n(&cb_fn, __ATOMIC_ACQUIRE);
	if (f != NULL && callback_enabled(domain, cbid)) {
		f(__atomic_load_n(&cb_userdata, __ATOMIC_ACQUIRE), domain, cbid, d);
	}
}

static int32_t play(const struct fk_entry *e, fakecupti_memop *op) {
	uint32_t corr = __atomic_fetch_add(&next_correlation, 1, __ATOMIC_RELAXED);
	if (call_depth++ == 0) {
		outer_correlation = corr;
	}
	union {
		fk_alloc_params alloc;
		fk_alloc_v1_params alloc_v1;
		fk_pitch_params pitch;
		fk_pitch_v1_params pitch_v1;
		fk_alloc_async_params async;
		fk_alloc_pool_params pool;
		fk_free_params free;
		fk_free_v1_params free_v1;
	} p;
	memset(&p, 0, sizeof p);
	uint64_t out = 0;
	uint32_t out32 = 0;
	size_t pitch = 0;
	unsigned int pitch32 = 0;
	void *outp = e->ptr32 ? (void *)&out32 : (void *)&out;
	switch (e->shape) {
	case S_ALLOC:
		p.alloc.out = outp;
		p.alloc.size = op->bytes;
		break;
	case S_ALLOC_V1:
		p.alloc_v1.out = outp;
		p.alloc_v1.size = (unsigned int)op->bytes;
		break;
	case S_PITCH:
		p.pitch.out = outp;
		p.pitch.pitch = &pitch;
		p.pitch.width = op->bytes;
		p.pitch.height = op->height;
		p.pitch.element_size = 4;
		break;
	case S_PITCH_V1:
		p.pitch_v1.out = &out32;
		p.pitch_v1.pitch = &pitch32;
		p.pitch_v1.width = (unsigned int)op->bytes;
		p.pitch_v1.height = (unsigned int)op->height;
		p.pitch_v1.element_size = 4;
		break;
	case S_ASYNC:
		p.async.out = outp;
		p.async.size = op->bytes;
		p.async.stream = (void *)(uintptr_t)op->stream;
		break;
	case S_POOL:
		p.pool.out = outp;
		p.pool.size = op->bytes;
		p.pool.pool = (void *)(uintptr_t)0x9000;
		p.pool.stream = (void *)(uintptr_t)op->stream;
		break;
	case S_FREE:
		p.free.ptr = op->ptr;
		p.free.stream = (void *)(uintptr_t)op->stream;
		break;
	case S_FREE_V1:
		p.free_v1.ptr = (uint32_t)op->ptr;
		break;
	}
	int32_t ret = 0;
	uint64_t correlation_data = 0;
	fk_callback_data d = {
		.callback_site = 0,
		.function_name = e->function,
		.function_params = &p,
		.function_return_value = &ret,
		.symbol_name = NULL,
		.context = context_of(op->device),
		.context_uid = op->device < 0 ? 0 : (uint32_t)op->device + 1,
		.correlation_data = &correlation_data,
		.correlation_id = corr,
	};
	callback(e->domain, e->cbid, &d);
	uint64_t start = kind_on(e->domain == 2 ? K_RUNTIME : K_DRIVER) ? now_ns() : 0;

	int freeing = e->shape == S_FREE || e->shape == S_FREE_V1;
	int async = is_async(e);
	const struct fk_entry *inner = op->nested && e->domain == 2 ? find_entry(1, e->driver) : NULL;
	if (op->fail != 0) {
		ret = op->fail;
	} else if (inner != NULL) {
		/* The runtime does the work through the driver, on this thread. */
		fakecupti_memop in = *op;
		in.domain = 1;
		in.cbid = e->driver;
		in.nested = 0;
		ret = play(inner, &in);
		out = in.address;
		pitch = (size_t)in.pitch;
	} else if (freeing) {
		if (op->ptr != 0) { /* freeing NULL is a no-op */
			ret = fake_free(e->ptr32 ? (uint32_t)op->ptr : op->ptr, async, op->stream);
		}
	} else {
		uint64_t bytes = op->bytes;
		if (e->shape == S_PITCH || e->shape == S_PITCH_V1) {
			uint64_t row = (op->bytes + 511) / 512 * 512;
			bytes = row * op->height;
			pitch = (size_t)row;
			pitch32 = (unsigned int)row;
		} else if (e->shape == S_ALLOC_V1) {
			bytes = (unsigned int)op->bytes;
		}
		uint64_t a = fake_alloc(bytes, e->memory_kind, op->device, e->ptr32, async, op->stream);
		if (a == 0) {
			ret = 2; /* cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY */
		}
		out = a;
		out32 = (uint32_t)a;
	}

	uint32_t api_kind = e->domain == 2 ? K_RUNTIME : K_DRIVER;
	if (kind_on(api_kind)) {
		fk_api a;
		POISON(a);
		a.kind = api_kind;
		a.cbid = e->cbid;
		a.start = start;
		a.end = now_ns();
		a.process_id = (uint32_t)getpid();
		a.thread_id = tid_now();
		a.correlation_id = corr;
		a.return_value = (uint32_t)ret;
		pthread_mutex_lock(&mu);
		put(&a, api_kind);
		pthread_mutex_unlock(&mu);
	}

	d.callback_site = 1;
	callback(e->domain, e->cbid, &d);
	call_depth--;

	op->result = ret;
	op->correlation = corr;
	op->address = freeing ? 0 : (e->ptr32 ? out32 : out);
	op->pitch = e->shape == S_PITCH_V1 ? pitch32 : pitch;
	return ret;
}

/* ---- exported CUPTI entry points ---- */

EXPORT int cuptiGetVersion(uint32_t *version) {
	long long v;
	if (env_int("FAKECUPTI_VERSION", &v)) {
		*version = (uint32_t)v;
		return OK;
	}
	switch (layout_from(getenv("FAKECUPTI_LAYOUT"))) {
	case LAYOUT_12:
		*version = 26; /* CUDA 12.8 */
		break;
	case LAYOUT_13:
		*version = 130000;
		break;
	default:
		*version = 18;
	}
	return OK;
}

EXPORT int cuptiGetResultString(int result, const char **str) {
	switch (result) {
	case OK:
		*str = "CUPTI_SUCCESS";
		return OK;
	case E_NOT_INITIALIZED:
		*str = "CUPTI_ERROR_NOT_INITIALIZED";
		return OK;
	case 43:
		*str = "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED";
		return OK;
	}
	*str = NULL;
	return E_INVALID_PARAMETER;
}

EXPORT int cuptiGetTimestamp(uint64_t *timestamp) {
	*timestamp = now_ns();
	return OK;
}

EXPORT int cuptiSubscribe(void **subscriber, callback_fn callback, void *userdata) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (fail_code("multiple_subscribers")) {
		return E_MULTIPLE_SUBSCRIBERS;
	}
	if (fail_code("subscribe_limit")) {
		return E_MAX_LIMIT_REACHED;
	}
	pthread_mutex_lock(&mu);
	if (subscribed) {
		pthread_mutex_unlock(&mu);
		return E_MULTIPLE_SUBSCRIBERS; /* one subscriber per process */
	}
	subscribed = 1;
	__atomic_store_n(&cb_userdata, userdata, __ATOMIC_RELEASE);
	__atomic_store_n(&cb_fn, callback, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
	*subscriber = (void *)&subscribed;
	return OK;
}

EXPORT int cuptiUnsubscribe(void *subscriber) {
	if (subscriber != (void *)&subscribed) {
		return E_INVALID_PARAMETER;
	}
	pthread_mutex_lock(&mu);
	subscribed = 0;
	__atomic_store_n(&cb_fn, NULL, __ATOMIC_RELEASE);
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < FK_CBID_LIMIT / 64; i++) {
			__atomic_store_n(&cb_enabled[d][i], 0, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityRegisterCallbacks(request_fn requested, complete_fn completed) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (requested == NULL || completed == NULL) {
		return E_INVALID_PARAMETER;
	}
	long long v;
	pthread_mutex_lock(&mu);
	complete_current(); /* a buffer of an earlier session goes back to its owner */
	on_request = requested;
	on_complete = completed;
	layout = layout_from(getenv("FAKECUPTI_LAYOUT"));
	base = env_int("FAKECUPTI_BASE", &v) ? (uint64_t)v : now_ns();
	dropped_script = env_int("FAKECUPTI_DROPPED", &v) ? (uint64_t)v : 0;
	buffer_limit = env_int("FAKECUPTI_BUFFER_LIMIT", &v) ? (size_t)v : 1000;
	phase_a_done = phase_b_done = env_int("FAKECUPTI_SCRIPT", &v) && v == 0;
	dropped_pending = 0;
	session_kinds = enabled;
	pthread_mutex_unlock(&mu);
	return OK;
}

static int known_kind(uint32_t kind) { return record_size(kind, LAYOUT_11_8) != 0; }

EXPORT int cuptiActivityEnable(uint32_t kind) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (fail_code("privileges")) {
		return E_INSUFFICIENT_PRIVILEGES;
	}
	if (!known_kind(kind)) {
		return E_INVALID_KIND;
	}
	pthread_mutex_lock(&mu);
	__atomic_fetch_or(&enabled, 1ull << kind, __ATOMIC_RELAXED); /* kind_on reads it without mu */
	session_kinds |= 1ull << kind;
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityDisable(uint32_t kind) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (!known_kind(kind)) {
		return E_INVALID_KIND;
	}
	pthread_mutex_lock(&mu);
	__atomic_fetch_and(&enabled, ~(1ull << kind), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityFlushAll(uint32_t flag) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	pthread_mutex_lock(&mu);
	if (on_request != NULL && session_kinds != 0) {
		scripting = 1;
		if (!phase_a_done) {
			phase_a_done = 1;
			phase_a();
		}
		if ((flag & 1) && !phase_b_done) {
			phase_b_done = 1;
			phase_b();
			dropped_pending += dropped_script;
		}
		scripting = 0;
	}
	if (on_request != NULL && cur != NULL && cur_used > 0) {
		complete_current();
	}
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record) {
	size_t off = 0;
	if (*record != NULL) {
		uint8_t *r = *record;
		off = (size_t)(r - buffer) + record_size(*(uint32_t *)r, layout);
	}
	if (off + 8 > valid) {
		return E_MAX_LIMIT_REACHED;
	}
	size_t size = record_size(*(uint32_t *)(buffer + off), layout);
	if (size == 0) {
		return E_INVALID_KIND;
	}
	if (off + size > valid) {
		return E_MAX_LIMIT_REACHED;
	}
	*record = buffer + off;
	return OK;
}

EXPORT int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped) {
	(void)ctx;
	(void)stream;
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	pthread_mutex_lock(&mu);
	*dropped = (size_t)dropped_pending;
	dropped_pending = 0;
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityPushExternalCorrelationId(uint32_t kind, uint64_t id) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (kind < 1 || kind > 5) {
		return E_INVALID_PARAMETER;
	}
	if (ext_depth[kind - 1] == 64) {
		return E_MAX_LIMIT_REACHED;
	}
	ext_stack[kind - 1][ext_depth[kind - 1]++] = id;
	return OK;
}

EXPORT int cuptiActivityPopExternalCorrelationId(uint32_t kind, uint64_t *last) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (kind < 1 || kind > 5) {
		return E_INVALID_PARAMETER;
	}
	if (ext_depth[kind - 1] == 0) {
		return E_QUEUE_EMPTY;
	}
	uint64_t id = ext_stack[kind - 1][--ext_depth[kind - 1]];
	if (last != NULL) {
		*last = id;
	}
	return OK;
}

EXPORT int cuptiSetThreadIdType(uint32_t type) {
	if (type > 1) {
		return E_INVALID_PARAMETER;
	}
	thread_id_system = (type == 1);
	return OK;
}

#ifndef FAKECUPTI_MINIMAL
EXPORT int cuptiActivityFlushPeriod(uint32_t ms) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	pthread_mutex_lock(&mu);
	period_ms = ms;
	pthread_cond_broadcast(&worker_cv);
	if (ms > 0 && !worker_running) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) == 0) {
			pthread_detach(t);
			worker_running = 1;
		}
	}
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cuptiActivityRegisterTimestampCallback(uint64_t (*fn)(void)) {
	return fn == NULL ? E_INVALID_PARAMETER : OK;
}

EXPORT int cuptiGetCallbackName(uint32_t domain, uint32_t cbid, const char **name) {
	static const struct {
		uint32_t domain, cbid;
		const char *name;
	} names[] = {
		{2, 20, "cudaMalloc_v3020"},
		{2, 22, "cudaFree_v3020"},
		{2, 41, "cudaMemcpyAsync_v3020"},
		{2, 51, "cudaMemsetAsync_v3020"},
		{2, 131, "cudaStreamSynchronize_v3020"},
		{2, 211, "cudaLaunchKernel_v7000"},
		{1, 17, "cuCtxSynchronize"},
		{1, 279, "cuMemcpyDtoHAsync_v2"},
		{1, 307, "cuLaunchKernel"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].domain == domain && names[i].cbid == cbid) {
			*name = names[i].name;
			return OK;
		}
	}
	const struct fk_entry *e = find_entry(domain, cbid);
	if (e != NULL) {
		*name = e->cbname;
		return OK;
	}
	return E_INVALID_PARAMETER;
}

static uint32_t cbid_limit(void) {
	long long v;
	return env_int("FAKECUPTI_CBID_LIMIT", &v) && v >= 0 && v < FK_CBID_LIMIT ? (uint32_t)v : FK_CBID_LIMIT;
}

EXPORT int cuptiEnableCallback(uint32_t enable, void *subscriber, uint32_t domain, uint32_t cbid) {
	if (fail_code("not_initialized")) {
		return E_NOT_INITIALIZED;
	}
	if (fail_code("enable_callback")) {
		return E_UNKNOWN;
	}
	if (subscriber != (void *)&subscribed || (domain != 1 && domain != 2) || cbid == 0 || cbid >= cbid_limit()) {
		return E_INVALID_PARAMETER;
	}
	pthread_mutex_lock(&mu);
	int ok = subscribed;
	if (ok) {
		uint64_t bit = 1ull << (cbid % 64);
		if (enable) {
			__atomic_fetch_or(&cb_enabled[domain - 1][cbid / 64], bit, __ATOMIC_RELEASE);
		} else {
			__atomic_fetch_and(&cb_enabled[domain - 1][cbid / 64], ~bit, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&mu);
	return ok ? OK : E_INVALID_PARAMETER;
}

EXPORT int cuptiGetDeviceId(void *context, uint32_t *device) {
	if (device == NULL) {
		return E_INVALID_PARAMETER;
	}
	uintptr_t c = (uintptr_t)context;
	if (c < CONTEXT_BASE || (c & 0xff) != 0) {
		return E_INVALID_DEVICE; /* no context: the fake has no current one either */
	}
	*device = (uint32_t)((c - CONTEXT_BASE) >> 8);
	return OK;
}
#endif

/* ---- test hooks (not CUPTI) ---- */

/* Kernel names passed to fakecupti_launch, kept for the process's life like CUPTI's. */
static const char *launch_names[256];
static int nlaunch_names;

static const char *intern(const char *s) {
	for (int i = 0; i < nlaunch_names; i++) {
		if (strcmp(launch_names[i], s) == 0) {
			return launch_names[i];
		}
	}
	if (nlaunch_names == 256) {
		return "fakecupti_too_many_names";
	}
	launch_names[nlaunch_names] = strdup(s);
	return launch_names[nlaunch_names++];
}

/*
 * Simulates the calling thread launching a kernel through cudaLaunchKernel:
 * one external-correlation record per external kind pushed on this thread,
 * the runtime API record and the kernel, all with one new correlation id,
 * which is returned.
 */
EXPORT uint32_t fakecupti_launch(const char *name, uint32_t device, uint32_t stream) {
	uint32_t tid = thread_id_system ? (uint32_t)syscall(SYS_gettid) : (uint32_t)pthread_self();
	uint64_t t = now_ns();
	uint32_t corr = __atomic_fetch_add(&next_correlation, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mu);
	for (int k = 0; k < 5; k++) {
		if (ext_depth[k] > 0) {
			external((uint32_t)k + 1, ext_stack[k][ext_depth[k] - 1], corr);
		}
	}
	fk_api a;
	POISON(a);
	a.kind = K_RUNTIME;
	a.cbid = 211;
	a.start = t;
	a.end = t + 500;
	a.process_id = (uint32_t)getpid();
	a.thread_id = tid;
	a.correlation_id = corr;
	a.return_value = 0;
	put(&a, K_RUNTIME);
	fk_kernel k;
	POISON(k);
	k.kind = K_CONCURRENT_KERNEL;
	k.registers_per_thread = 32;
	k.start = t + 1000;
	k.end = t + 3000;
	k.completed = k.end;
	k.device_id = device;
	k.context_id = device + 1;
	k.stream_id = stream;
	k.grid[0] = k.grid[1] = k.grid[2] = 1;
	k.block[0] = 128;
	k.block[1] = k.block[2] = 1;
	k.static_shared = 0;
	k.dynamic_shared = 0;
	k.correlation_id = corr;
	k.name = intern(name);
	k.graph_id = 0;
	k.is_device_launched = 0;
	put(&k, K_CONCURRENT_KERNEL);
	pthread_mutex_unlock(&mu);
	return corr;
}

/* Reports whether an activity kind is enabled right now. */
EXPORT int fakecupti_enabled(uint32_t kind) {
	pthread_mutex_lock(&mu);
	int on = kind < 64 && (enabled & (1ull << kind)) != 0;
	pthread_mutex_unlock(&mu);
	return on;
}

/*
 * For benchmarks: fills buf with the whole script, repeated, in the given
 * layout ("11.8", "12", "13") and returns the bytes used. It also sets the
 * layout cuptiActivityGetNextRecord walks with, so it must not run while a
 * session is collecting.
 */
EXPORT size_t fakecupti_fill(uint8_t *buf, size_t cap, const char *lay) {
	pthread_mutex_lock(&mu);
	layout = layout_from(lay);
	base = 1700000000000000000ull;
	fill_buf = buf;
	fill_cap = cap;
	fill_used = 0;
	size_t before;
	do {
		before = fill_used;
		phase_a();
		phase_b();
	} while (fill_used > before && fill_cap - fill_used >= 256);
	size_t used = fill_used;
	fill_buf = NULL;
	pthread_mutex_unlock(&mu);
	return used;
}


static void *memory_thread(void *arg) {
	fakecupti_memop *op = arg;
	play(find_entry(op->domain, op->cbid), op);
	return NULL;
}

/*
 * Plays one CUDA allocation or free on the calling thread (or, with
 * from_thread, on a thread created for it and joined): see
 * fakecupti_memop in fake_params.h. Returns the call's result (0 success,
 * -1 for an entry point the fake does not know).
 */
EXPORT int32_t fakecupti_memory(fakecupti_memop *op) {
	if (find_entry(op->domain, op->cbid) == NULL) {
		op->result = -1;
		return -1;
	}
	if (op->from_thread) {
		pthread_t t;
		if (pthread_create(&t, NULL, memory_thread, op) != 0) {
			op->result = -1;
			return -1;
		}
		pthread_join(t, NULL);
		return op->result;
	}
	return play(find_entry(op->domain, op->cbid), op);
}

/* The size of fakecupti_memop, so callers can check they agree on it. */
EXPORT size_t fakecupti_memop_size(void) { return sizeof(fakecupti_memop); }

/* The device of a live allocation, or -1. */
EXPORT int32_t fakecupti_device_of(uint64_t address) {
	int32_t device = -1;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].address == address) {
			device = live[i].device;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return device;
}

/* How many callback ids the subscriber has enabled, in both domains. */
EXPORT int fakecupti_callbacks_enabled(void) {
	int n = 0;
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < FK_CBID_LIMIT / 64; i++) {
			n += __builtin_popcountll(__atomic_load_n(&cb_enabled[d][i], __ATOMIC_ACQUIRE));
		}
	}
	return n;
}
