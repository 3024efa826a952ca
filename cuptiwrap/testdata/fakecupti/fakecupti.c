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
 *                      cuptiSubscribe) | subscribe_limit (12 from it)
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
	E_NOT_INITIALIZED = 15,
	E_QUEUE_EMPTY = 18,
	E_INVALID_KIND = 21,
	E_INSUFFICIENT_PRIVILEGES = 35,
	E_MULTIPLE_SUBSCRIBERS = 39,
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
static uint32_t next_correlation = 100000;

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
	api(K_DRIVER, 600, 27, 4243, 126, 1);
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
	(void)callback;
	(void)userdata;
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
	enabled |= 1ull << kind;
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
	enabled &= ~(1ull << kind);
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
	return E_INVALID_PARAMETER;
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
	pthread_mutex_lock(&mu);
	uint32_t corr = next_correlation++;
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
