//go:build cgo

/*
 * devprof's C side of CUPTI: loading libcupti with dlopen, the activity
 * buffer pool, the queue of completed buffers the Go drain goroutine
 * empties, and the callback of the memory hooks.
 *
 * CUPTI calls the two buffer callbacks on its own threads (or inside
 * cuptiActivityFlushAll on the caller's thread). They must never enter Go:
 * a cgo callback from a foreign thread costs microseconds and would tie
 * CUPTI's internal locks to the Go scheduler. So they only move pointers
 * between a free list and a queue under one mutex, and no Go pointer is
 * ever stored here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"
#include "_cgo_export.h"

/* ---- loading ---- */

void *dpc_dlopen(const char *path, char **err) {
	*err = NULL;
	dlerror();
	/*
	 * RTLD_NOW: a library with unresolvable dependencies fails here, where
	 * the error can name it, not at some later call. RTLD_LOCAL: two
	 * different libcupti builds (say the system one and a test double) must
	 * not interpose on each other's symbols.
	 */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		*err = strdup(e != NULL ? e : "dlopen failed without a reason");
	}
	return h;
}

char *dpc_loaded_path(void *handle) {
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || lm->l_name == NULL) {
		return NULL;
	}
	return strdup(lm->l_name);
}

void dpc_dlclose(void *handle) { dlclose(handle); }

struct dpc_sym {
	const char *name;
	size_t offset;
	int required;
};

#define DPC_SYM(field, sym, req) {sym, offsetof(dpc_lib, field), req}

static const struct dpc_sym dpc_syms[] = {
	DPC_SYM(get_version, "cuptiGetVersion", 1),
	DPC_SYM(get_result_string, "cuptiGetResultString", 1),
	DPC_SYM(get_timestamp, "cuptiGetTimestamp", 1),
	DPC_SYM(subscribe, "cuptiSubscribe", 1),
	DPC_SYM(unsubscribe, "cuptiUnsubscribe", 1),
	DPC_SYM(register_callbacks, "cuptiActivityRegisterCallbacks", 1),
	DPC_SYM(enable, "cuptiActivityEnable", 1),
	DPC_SYM(disable, "cuptiActivityDisable", 1),
	DPC_SYM(flush_all, "cuptiActivityFlushAll", 1),
	DPC_SYM(get_next_record, "cuptiActivityGetNextRecord", 1),
	DPC_SYM(get_num_dropped, "cuptiActivityGetNumDroppedRecords", 1),
	DPC_SYM(push_external, "cuptiActivityPushExternalCorrelationId", 1),
	DPC_SYM(pop_external, "cuptiActivityPopExternalCorrelationId", 1),
	DPC_SYM(set_thread_id_type, "cuptiSetThreadIdType", 1),
	DPC_SYM(flush_period, "cuptiActivityFlushPeriod", 0),
	DPC_SYM(register_timestamp, "cuptiActivityRegisterTimestampCallback", 0),
	DPC_SYM(get_callback_name, "cuptiGetCallbackName", 0),
	/* Every CUPTI since CUDA 4 has these two; only the memory hooks need them. */
	DPC_SYM(enable_callback, "cuptiEnableCallback", 0),
	DPC_SYM(get_device_id, "cuptiGetDeviceId", 0),
};

static void dpc_append(char *dst, size_t len, const char *name) {
	size_t used = strlen(dst);
	if (used + strlen(name) + 2 >= len) {
		return;
	}
	if (used > 0) {
		strcat(dst, " ");
	}
	strcat(dst, name);
}

/*
 * Resolves the function table. The space-separated names of missing
 * symbols go to the two out buffers; the table is returned either way so
 * the caller decides (it frees it with free() when unusable).
 */
dpc_lib *dpc_bind(void *handle, char *missing_required, size_t req_len, char *missing_optional,
                  size_t opt_len) {
	dpc_lib *lib = calloc(1, sizeof *lib);
	if (lib == NULL) {
		return NULL;
	}
	lib->handle = handle;
	missing_required[0] = 0;
	missing_optional[0] = 0;
	for (size_t i = 0; i < sizeof dpc_syms / sizeof dpc_syms[0]; i++) {
		void *p = dlsym(handle, dpc_syms[i].name);
		if (p == NULL) {
			if (dpc_syms[i].required) {
				dpc_append(missing_required, req_len, dpc_syms[i].name);
			} else {
				dpc_append(missing_optional, opt_len, dpc_syms[i].name);
			}
		}
		memcpy((char *)lib + dpc_syms[i].offset, &p, sizeof p);
	}
	return lib;
}

/* ---- thin calls through the table (cgo cannot call function pointers) ---- */

dpc_result dpc_get_version(const dpc_lib *lib, uint32_t *version) { return lib->get_version(version); }

const char *dpc_result_string(const dpc_lib *lib, dpc_result code) {
	const char *s = NULL;
	if (lib->get_result_string(code, &s) != DPC_SUCCESS) {
		return NULL;
	}
	return s;
}

dpc_result dpc_get_timestamp(const dpc_lib *lib, uint64_t *ts) { return lib->get_timestamp(ts); }

static void dpc_callback(void *userdata, dpc_domain domain, uint32_t cbid, const void *cbdata);

/*
 * The process's one subscriber (package Go code shares it between the
 * Collector and the memory hooks). The Collector alone enables no callback,
 * so for it subscribing only tells whether another CUPTI client (Nsight,
 * compute-sanitizer, a framework's profiler) already owns the process.
 */
dpc_result dpc_subscribe(const dpc_lib *lib, dpc_subscriber *out) {
	return lib->subscribe(out, dpc_callback, NULL);
}

dpc_result dpc_unsubscribe(const dpc_lib *lib, dpc_subscriber sub) { return lib->unsubscribe(sub); }

dpc_result dpc_enable(const dpc_lib *lib, uint32_t kind) { return lib->enable(kind); }

dpc_result dpc_disable(const dpc_lib *lib, uint32_t kind) { return lib->disable(kind); }

dpc_result dpc_flush_all(const dpc_lib *lib, uint32_t flag) { return lib->flush_all(flag); }

dpc_result dpc_flush_period(const dpc_lib *lib, uint32_t ms) {
	if (lib->flush_period == NULL) {
		return DPC_ERROR_NOT_SUPPORTED;
	}
	return lib->flush_period(ms);
}

dpc_result dpc_num_dropped(const dpc_lib *lib, uint64_t *dropped) {
	size_t n = 0;
	dpc_result r = lib->get_num_dropped(NULL, 0, &n);
	*dropped = (uint64_t)n;
	return r;
}

dpc_result dpc_push_external(const dpc_lib *lib, uint64_t id) {
	return lib->push_external(DPC_EXTERNAL_KIND_CUSTOM0, id);
}

dpc_result dpc_pop_external(const dpc_lib *lib, uint64_t *id) {
	return lib->pop_external(DPC_EXTERNAL_KIND_CUSTOM0, id);
}

dpc_result dpc_set_thread_id_type(const dpc_lib *lib, uint32_t type) { return lib->set_thread_id_type(type); }

dpc_result dpc_callback_name(const dpc_lib *lib, uint32_t domain, uint32_t cbid, const char **name) {
	*name = NULL;
	if (lib->get_callback_name == NULL) {
		return DPC_ERROR_NOT_SUPPORTED;
	}
	return lib->get_callback_name(domain, cbid, name);
}

/*
 * Collects up to DPC_WALK_CHUNK record addresses, continuing from
 * w->cursor, so Go pays one cgo call per chunk instead of one per record.
 * The stride always comes from the library's own cuptiActivityGetNextRecord:
 * record sizes differ between CUPTI versions. Returns the count; 0 with
 * w->status set means the buffer is done.
 */
int dpc_walk(const dpc_lib *lib, dpc_walker *w) {
	int n = 0;
	w->status = DPC_SUCCESS;
	while (n < DPC_WALK_CHUNK) {
		dpc_result r = lib->get_next_record(w->buffer, w->valid, &w->cursor);
		if (r != DPC_SUCCESS) {
			w->status = r;
			break;
		}
		w->records[n++] = w->cursor;
	}
	return n;
}

/* ---- buffer pool and completed queue ---- */

/*
 * Every buffer carries a small header in front of the part CUPTI sees, so a
 * buffer that comes back after its session ended (kernel tracing stays
 * enabled after Stop, see Collector.Stop) is recognized and freed instead of
 * being put into a later session's pool with the wrong size.
 */
#define DPC_HEADER 64

struct dpc_header {
	uint64_t generation;
	uint64_t size;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
	uint64_t generation;
	size_t size;
	int max;
	int allocated;
	uint8_t **free_list;
	int nfree;
	dpc_item *queue;
	int qhead, qlen;
	int wake;
	dpc_counters counters;
} dpc_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t dpc_cv_once = PTHREAD_ONCE_INIT;

/* The condition variable waits on CLOCK_MONOTONIC so wall-clock jumps do not stretch a wait. */
static void dpc_cv_init(void) {
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&dpc_pool.cv, &a);
	pthread_condattr_destroy(&a);
}

static struct dpc_header *dpc_header_of(uint8_t *buffer) { return (struct dpc_header *)(buffer - DPC_HEADER); }

static uint8_t *dpc_alloc(size_t size, uint64_t generation) {
	void *p = NULL;
	if (posix_memalign(&p, DPC_HEADER, DPC_HEADER + size) != 0) {
		return NULL;
	}
	struct dpc_header *h = p;
	h->generation = generation;
	h->size = size;
	return (uint8_t *)p + DPC_HEADER;
}

static void dpc_free(uint8_t *buffer) { free(dpc_header_of(buffer)); }

static void dpc_on_request(uint8_t **buffer, size_t *size, size_t *max_records) {
	*buffer = NULL;
	*size = 0;
	*max_records = 0; /* fill the buffer */
	pthread_mutex_lock(&dpc_pool.mu);
	if (!dpc_pool.open) {
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	dpc_pool.counters.requested++;
	size_t want = dpc_pool.size;
	uint64_t gen = dpc_pool.generation;
	if (dpc_pool.nfree > 0) {
		*buffer = dpc_pool.free_list[--dpc_pool.nfree];
		*size = want;
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	if (dpc_pool.allocated >= dpc_pool.max) {
		/* Past the cap CUPTI gets no buffer: it drops records and counts them. */
		dpc_pool.counters.declined++;
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	dpc_pool.allocated++;
	dpc_pool.counters.allocated++;
	pthread_mutex_unlock(&dpc_pool.mu);

	/* Allocate outside the lock: the drain side must not wait on malloc. */
	uint8_t *b = dpc_alloc(want, gen);
	if (b == NULL) {
		pthread_mutex_lock(&dpc_pool.mu);
		if (dpc_pool.generation == gen) {
			dpc_pool.allocated--;
			dpc_pool.counters.declined++;
		}
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	*buffer = b;
	*size = want;
}

static void dpc_on_complete(dpc_context ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
	(void)ctx;
	(void)stream;
	(void)size;
	if (buffer == NULL) {
		return;
	}
	pthread_mutex_lock(&dpc_pool.mu);
	if (!dpc_pool.open || dpc_header_of(buffer)->generation != dpc_pool.generation) {
		dpc_pool.counters.stale += dpc_pool.open ? 1 : 0;
		pthread_mutex_unlock(&dpc_pool.mu);
		dpc_free(buffer);
		return;
	}
	if (valid == 0) {
		dpc_pool.counters.empty++;
		dpc_pool.free_list[dpc_pool.nfree++] = buffer;
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	dpc_pool.counters.completed++;
	/* The queue holds at most every buffer this session allocated: it cannot overflow. */
	int tail = (dpc_pool.qhead + dpc_pool.qlen) % dpc_pool.max;
	dpc_pool.queue[tail].buffer = buffer;
	dpc_pool.queue[tail].valid = valid;
	dpc_pool.qlen++;
	pthread_cond_signal(&dpc_pool.cv);
	pthread_mutex_unlock(&dpc_pool.mu);
}

dpc_result dpc_register_callbacks(const dpc_lib *lib) {
	return lib->register_callbacks(dpc_on_request, dpc_on_complete);
}

/* Returns 0, or -1 when memory for the pool's bookkeeping is missing. */
int dpc_session_open(size_t buffer_size, int max_buffers, int prealloc) {
	pthread_once(&dpc_cv_once, dpc_cv_init);
	uint8_t **free_list = calloc((size_t)max_buffers, sizeof *free_list);
	dpc_item *queue = calloc((size_t)max_buffers, sizeof *queue);
	if (free_list == NULL || queue == NULL) {
		free(free_list);
		free(queue);
		return -1;
	}
	pthread_mutex_lock(&dpc_pool.mu);
	dpc_pool.generation++;
	dpc_pool.size = buffer_size;
	dpc_pool.max = max_buffers;
	dpc_pool.allocated = 0;
	dpc_pool.free_list = free_list;
	dpc_pool.nfree = 0;
	dpc_pool.queue = queue;
	dpc_pool.qhead = 0;
	dpc_pool.qlen = 0;
	dpc_pool.wake = 0;
	memset(&dpc_pool.counters, 0, sizeof dpc_pool.counters);
	/*
	 * A few buffers up front: the first requests arrive inside the
	 * application's first CUDA calls, whose latency they would add to.
	 */
	for (int i = 0; i < prealloc && i < max_buffers; i++) {
		uint8_t *b = dpc_alloc(buffer_size, dpc_pool.generation);
		if (b == NULL) {
			break;
		}
		dpc_pool.free_list[dpc_pool.nfree++] = b;
		dpc_pool.allocated++;
		dpc_pool.counters.allocated++;
	}
	dpc_pool.open = 1;
	pthread_mutex_unlock(&dpc_pool.mu);
	return 0;
}

/*
 * Ends the session: pooled and still-queued buffers are freed; buffers CUPTI
 * still holds are freed when it hands them back.
 */
void dpc_session_close(void) {
	pthread_mutex_lock(&dpc_pool.mu);
	if (!dpc_pool.open) {
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	dpc_pool.open = 0;
	for (int i = 0; i < dpc_pool.nfree; i++) {
		dpc_free(dpc_pool.free_list[i]);
	}
	for (int i = 0; i < dpc_pool.qlen; i++) {
		dpc_free(dpc_pool.queue[(dpc_pool.qhead + i) % dpc_pool.max].buffer);
	}
	free(dpc_pool.free_list);
	free(dpc_pool.queue);
	dpc_pool.free_list = NULL;
	dpc_pool.queue = NULL;
	dpc_pool.nfree = 0;
	dpc_pool.qlen = 0;
	dpc_pool.wake = 1;
	pthread_cond_broadcast(&dpc_pool.cv);
	pthread_mutex_unlock(&dpc_pool.mu);
}

/*
 * Blocks until a completed buffer is queued, dpc_wake is called or
 * timeout_ms passes; then takes up to max queued buffers. The Go drain
 * goroutine calls this in a loop: blocking in C costs it an OS thread but
 * no latency and no polling.
 */
int dpc_wait(int timeout_ms, dpc_item *out, int max) {
	pthread_mutex_lock(&dpc_pool.mu);
	if (dpc_pool.open && dpc_pool.qlen == 0 && !dpc_pool.wake && timeout_ms > 0) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (dpc_pool.open && dpc_pool.qlen == 0 && !dpc_pool.wake) {
			if (pthread_cond_timedwait(&dpc_pool.cv, &dpc_pool.mu, &until) == ETIMEDOUT) {
				break;
			}
		}
	}
	dpc_pool.wake = 0;
	int n = 0;
	while (dpc_pool.open && n < max && dpc_pool.qlen > 0) {
		out[n++] = dpc_pool.queue[dpc_pool.qhead];
		dpc_pool.qhead = (dpc_pool.qhead + 1) % dpc_pool.max;
		dpc_pool.qlen--;
	}
	pthread_mutex_unlock(&dpc_pool.mu);
	return n;
}

void dpc_wake(void) {
	pthread_mutex_lock(&dpc_pool.mu);
	dpc_pool.wake = 1;
	pthread_cond_broadcast(&dpc_pool.cv);
	pthread_mutex_unlock(&dpc_pool.mu);
}

/* Gives a parsed buffer back to the pool (or frees it if its session is over). */
void dpc_release(uint8_t *buffer) {
	pthread_mutex_lock(&dpc_pool.mu);
	if (dpc_pool.open && dpc_header_of(buffer)->generation == dpc_pool.generation &&
	    dpc_pool.nfree < dpc_pool.max) {
		dpc_pool.free_list[dpc_pool.nfree++] = buffer;
		pthread_mutex_unlock(&dpc_pool.mu);
		return;
	}
	pthread_mutex_unlock(&dpc_pool.mu);
	dpc_free(buffer);
}

void dpc_read_counters(dpc_counters *out) {
	pthread_mutex_lock(&dpc_pool.mu);
	*out = dpc_pool.counters;
	pthread_mutex_unlock(&dpc_pool.mu);
}


/* ---- memory hooks ---- */

/*
 * CUPTI calls dpc_callback on the thread making the CUDA call, at its entry
 * and at its exit, for each callback id enabled with cuptiEnableCallback:
 * only the allocation and free entry points below, and only while hooks
 * run. At a successful exit the callback reads the call's parameters and
 * hands one dpc_memcall to Go on that same thread, which is how the Go
 * handler sees the Go stack that made the call.
 */

enum { DPC_HOOK_ALLOC, DPC_HOOK_PITCH, DPC_HOOK_FREE };

struct dpc_hook {
	uint32_t domain;
	uint32_t cbid;
	const char *name; /* as API records name it: CUPTI's name less a _vNNNN tag */
	uint8_t op;       /* DPC_HOOK_* */
	uint8_t kind;     /* CUpti_ActivityMemoryKind */
	uint8_t ptr32;    /* the device pointer is a 32-bit CUdeviceptr_v1 */
	uint8_t size32;   /* sizes are unsigned int */
	int8_t stream;    /* offset of the stream parameter, -1 for none */
};

#define RT DPC_CB_DOMAIN_RUNTIME_API
#define DRV DPC_CB_DOMAIN_DRIVER_API
#define DEV DPC_MEMORY_KIND_DEVICE
#define PIN DPC_MEMORY_KIND_PINNED
#define MAN DPC_MEMORY_KIND_MANAGED
/* Widths (ptr32, size32): the CUDA 3.x driver calls without _v2 are V1 (32-bit pointers and sizes). */
#define WIDE 0, 0
#define V1 1, 1
#define V1_SIZE 0, 1
#define HOOK_(dom, id, name, op, kind, ptr32, size32, stream) {dom, DPC_CBID_##id, name, op, kind, ptr32, size32, stream}
#define HOOK(...) HOOK_(__VA_ARGS__) /* expands WIDE and V1 into their two values first */

static const struct dpc_hook dpc_hooks_table[] = {
	HOOK(RT, cudaMalloc_v3020, "cudaMalloc", DPC_HOOK_ALLOC, DEV, WIDE, -1),
	HOOK(RT, cudaMallocPitch_v3020, "cudaMallocPitch", DPC_HOOK_PITCH, DEV, WIDE, -1),
	HOOK(RT, cudaFree_v3020, "cudaFree", DPC_HOOK_FREE, DEV, WIDE, -1),
	HOOK(RT, cudaMallocHost_v3020, "cudaMallocHost", DPC_HOOK_ALLOC, PIN, WIDE, -1),
	HOOK(RT, cudaFreeHost_v3020, "cudaFreeHost", DPC_HOOK_FREE, PIN, WIDE, -1),
	HOOK(RT, cudaHostAlloc_v3020, "cudaHostAlloc", DPC_HOOK_ALLOC, PIN, WIDE, -1),
	HOOK(RT, cudaMallocManaged_v6000, "cudaMallocManaged", DPC_HOOK_ALLOC, MAN, WIDE, -1),
	HOOK(RT, cudaMallocAsync_v11020, "cudaMallocAsync", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_ASYNC_STREAM),
	HOOK(RT, cudaMallocAsync_ptsz_v11020, "cudaMallocAsync_ptsz", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_ASYNC_STREAM),
	HOOK(RT, cudaFreeAsync_v11020, "cudaFreeAsync", DPC_HOOK_FREE, DEV, WIDE, DPC_PARAM_FREE_STREAM),
	HOOK(RT, cudaFreeAsync_ptsz_v11020, "cudaFreeAsync_ptsz", DPC_HOOK_FREE, DEV, WIDE, DPC_PARAM_FREE_STREAM),
	HOOK(RT, cudaMallocFromPoolAsync_v11020, "cudaMallocFromPoolAsync", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_POOL_STREAM),
	HOOK(RT, cudaMallocFromPoolAsync_ptsz_v11020, "cudaMallocFromPoolAsync_ptsz", DPC_HOOK_ALLOC, DEV, WIDE,
	     DPC_PARAM_POOL_STREAM),
	HOOK(DRV, cuMemAlloc, "cuMemAlloc", DPC_HOOK_ALLOC, DEV, V1, -1),
	HOOK(DRV, cuMemAllocPitch, "cuMemAllocPitch", DPC_HOOK_PITCH, DEV, V1, -1),
	HOOK(DRV, cuMemFree, "cuMemFree", DPC_HOOK_FREE, DEV, V1, -1),
	/* v1 cuMemAllocHost writes a full void *; only its size is 32-bit. */
	HOOK(DRV, cuMemAllocHost, "cuMemAllocHost", DPC_HOOK_ALLOC, PIN, V1_SIZE, -1),
	HOOK(DRV, cuMemFreeHost, "cuMemFreeHost", DPC_HOOK_FREE, PIN, WIDE, -1),
	HOOK(DRV, cuMemHostAlloc, "cuMemHostAlloc", DPC_HOOK_ALLOC, PIN, WIDE, -1),
	HOOK(DRV, cuMemAlloc_v2, "cuMemAlloc_v2", DPC_HOOK_ALLOC, DEV, WIDE, -1),
	HOOK(DRV, cuMemAllocPitch_v2, "cuMemAllocPitch_v2", DPC_HOOK_PITCH, DEV, WIDE, -1),
	HOOK(DRV, cuMemFree_v2, "cuMemFree_v2", DPC_HOOK_FREE, DEV, WIDE, -1),
	HOOK(DRV, cuMemAllocHost_v2, "cuMemAllocHost_v2", DPC_HOOK_ALLOC, PIN, WIDE, -1),
	HOOK(DRV, cuMemAllocManaged, "cuMemAllocManaged", DPC_HOOK_ALLOC, MAN, WIDE, -1),
	HOOK(DRV, cuMemAllocAsync, "cuMemAllocAsync", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_ASYNC_STREAM),
	HOOK(DRV, cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_ASYNC_STREAM),
	HOOK(DRV, cuMemFreeAsync, "cuMemFreeAsync", DPC_HOOK_FREE, DEV, WIDE, DPC_PARAM_FREE_STREAM),
	HOOK(DRV, cuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz", DPC_HOOK_FREE, DEV, WIDE, DPC_PARAM_FREE_STREAM),
	HOOK(DRV, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", DPC_HOOK_ALLOC, DEV, WIDE, DPC_PARAM_POOL_STREAM),
	HOOK(DRV, cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync_ptsz", DPC_HOOK_ALLOC, DEV, WIDE,
	     DPC_PARAM_POOL_STREAM),
};

#undef RT
#undef DRV
#undef DEV
#undef PIN
#undef MAN
#undef HOOK
#undef HOOK_
#undef WIDE
#undef V1
#undef V1_SIZE

#define DPC_NHOOKS ((int)(sizeof dpc_hooks_table / sizeof dpc_hooks_table[0]))

/* (domain, cbid) -> table index + 1; 0 for ids the hooks do not follow. */
static uint8_t dpc_hook_index[2][DPC_HOOK_CBID_LIMIT];
static pthread_once_t dpc_hook_index_once = PTHREAD_ONCE_INIT;

static void dpc_hook_index_init(void) {
	for (int i = 0; i < DPC_NHOOKS; i++) {
		dpc_hook_index[dpc_hooks_table[i].domain - 1][dpc_hooks_table[i].cbid] = (uint8_t)(i + 1);
	}
}

int dpc_hook_count(void) { return DPC_NHOOKS; }

void dpc_hook_entry(int i, uint32_t *domain, uint32_t *cbid, const char **name) {
	*domain = dpc_hooks_table[i].domain;
	*cbid = dpc_hooks_table[i].cbid;
	*name = dpc_hooks_table[i].name;
}

dpc_result dpc_enable_callback(const dpc_lib *lib, uint32_t enable, dpc_subscriber sub, uint32_t domain,
                               uint32_t cbid) {
	return lib->enable_callback(enable, sub, domain, cbid);
}

static struct {
	atomic_int on;
	/* Bumped by every dpc_hooks_on, so per-thread nesting state left over
	 * from an earlier run (a call in flight when it stopped) is ignored. */
	atomic_uint_fast64_t generation;
	/* Threads between the check of `on` and the return from Go: Stop
	 * waits for none to be left, so no handler runs after it returns. */
	atomic_int inflight;
	_Atomic(dpc_fn_get_device_id) get_device_id;
	atomic_int_fast64_t calls, failed, nested, null_frees;
} dpc_hooks;

static _Thread_local struct {
	uint64_t generation;
	int depth;      /* hooked runtime calls entered and not yet exited */
	int in_handler; /* Go handlers running on this thread */
} dpc_tls;

void dpc_hooks_on(const dpc_lib *lib) {
	pthread_once(&dpc_hook_index_once, dpc_hook_index_init);
	atomic_store(&dpc_hooks.get_device_id, lib->get_device_id);
	atomic_store(&dpc_hooks.calls, 0);
	atomic_store(&dpc_hooks.failed, 0);
	atomic_store(&dpc_hooks.nested, 0);
	atomic_store(&dpc_hooks.null_frees, 0);
	atomic_fetch_add(&dpc_hooks.generation, 1);
	atomic_store(&dpc_hooks.on, 1);
}

void dpc_hooks_off(void) { atomic_store(&dpc_hooks.on, 0); }

/* Waits until no thread is inside the Go handler (or about to enter it). */
void dpc_hooks_quiesce(void) {
	while (atomic_load(&dpc_hooks.inflight) != 0) {
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
}

int dpc_hooks_in_handler(void) { return dpc_tls.in_handler; }

/*
 * Undoes the bookkeeping of one handler call whose C frames a Go panic is
 * about to skip: without it Stop would wait for that call forever.
 */
void dpc_hooks_abandon(void) {
	dpc_tls.in_handler--;
	atomic_fetch_sub(&dpc_hooks.inflight, 1);
}

void dpc_hooks_read(dpc_hook_counters *out) {
	out->calls = atomic_load(&dpc_hooks.calls);
	out->failed = atomic_load(&dpc_hooks.failed);
	out->nested = atomic_load(&dpc_hooks.nested);
	out->null_frees = atomic_load(&dpc_hooks.null_frees);
}

static uint64_t dpc_read_u64(const uint8_t *p) {
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint32_t dpc_read_u32(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static const void *dpc_read_ptr(const uint8_t *p) {
	const void *v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* Reads the facts of a successful call from its parameters; 0 if there is nothing to report. */
static int dpc_hook_read(const struct dpc_hook *h, const uint8_t *params, dpc_memcall *c) {
	if (h->op == DPC_HOOK_FREE) {
		c->free = 1;
		c->address = h->ptr32 ? dpc_read_u32(params + DPC_PARAM_FREE_PTR) : dpc_read_u64(params + DPC_PARAM_FREE_PTR);
	} else {
		const uint8_t *out = dpc_read_ptr(params + DPC_PARAM_OUT);
		if (out == NULL) {
			return 0;
		}
		c->address = h->ptr32 ? dpc_read_u32(out) : dpc_read_u64(out);
		if (h->op == DPC_HOOK_PITCH) {
			const uint8_t *pitch = dpc_read_ptr(params + DPC_PARAM_PITCH_OUT);
			if (pitch == NULL) {
				return 0;
			}
			if (h->size32) {
				c->bytes = (uint64_t)dpc_read_u32(pitch) * dpc_read_u32(params + DPC_PARAM_PITCH_V1_HEIGHT);
			} else {
				c->bytes = dpc_read_u64(pitch) * dpc_read_u64(params + DPC_PARAM_PITCH_HEIGHT);
			}
		} else {
			c->bytes = h->size32 ? dpc_read_u32(params + DPC_PARAM_SIZE) : dpc_read_u64(params + DPC_PARAM_SIZE);
		}
	}
	if (h->stream >= 0) {
		c->async = 1;
		c->stream = dpc_read_u64(params + h->stream);
	}
	c->kind = h->kind;
	return 1;
}

static void dpc_callback(void *userdata, dpc_domain domain, uint32_t cbid, const void *cbdata) {
	(void)userdata;
	if (!atomic_load_explicit(&dpc_hooks.on, memory_order_relaxed) || cbdata == NULL ||
	    (domain != DPC_CB_DOMAIN_RUNTIME_API && domain != DPC_CB_DOMAIN_DRIVER_API) || cbid >= DPC_HOOK_CBID_LIMIT) {
		return;
	}
	int index = dpc_hook_index[domain - 1][cbid];
	if (index == 0) {
		return;
	}
	const struct dpc_hook *h = &dpc_hooks_table[index - 1];
	const uint8_t *d = cbdata;
	uint32_t site = dpc_read_u32(d + DPC_CBDATA_SITE);

	/*
	 * The runtime implements cudaMalloc and its kin by calling the driver,
	 * and CUPTI reports those inner calls too: a driver allocation inside
	 * a hooked runtime call on the same thread is the same allocation.
	 */
	uint64_t gen = atomic_load_explicit(&dpc_hooks.generation, memory_order_relaxed);
	if (dpc_tls.generation != gen) {
		dpc_tls.generation = gen;
		dpc_tls.depth = 0;
	}
	if (domain == DPC_CB_DOMAIN_RUNTIME_API) {
		if (site == DPC_API_ENTER) {
			dpc_tls.depth++;
			return;
		}
		if (dpc_tls.depth > 0) {
			dpc_tls.depth--;
		}
	} else {
		if (site == DPC_API_ENTER) {
			return;
		}
		if (dpc_tls.depth > 0) {
			atomic_fetch_add_explicit(&dpc_hooks.nested, 1, memory_order_relaxed);
			return;
		}
	}
	if (site != DPC_API_EXIT) {
		return;
	}

	/* Sequentially consistent with dpc_hooks_off + dpc_hooks_quiesce: either
	 * Stop sees this thread in flight, or this thread sees the hooks off. */
	atomic_fetch_add(&dpc_hooks.inflight, 1);
	if (!atomic_load(&dpc_hooks.on)) {
		atomic_fetch_sub(&dpc_hooks.inflight, 1);
		return;
	}
	const int32_t *ret = dpc_read_ptr(d + DPC_CBDATA_RETURN_VALUE);
	if (ret != NULL && *ret != 0) {
		atomic_fetch_add_explicit(&dpc_hooks.failed, 1, memory_order_relaxed);
		atomic_fetch_sub(&dpc_hooks.inflight, 1);
		return;
	}
	dpc_memcall c;
	memset(&c, 0, sizeof c);
	const uint8_t *params = dpc_read_ptr(d + DPC_CBDATA_PARAMS);
	if (params == NULL || !dpc_hook_read(h, params, &c)) {
		atomic_fetch_sub(&dpc_hooks.inflight, 1);
		return;
	}
	if (c.free && c.address == 0) {
		atomic_fetch_add_explicit(&dpc_hooks.null_frees, 1, memory_order_relaxed);
		atomic_fetch_sub(&dpc_hooks.inflight, 1);
		return;
	}
	c.api = (uint16_t)(index - 1);
	c.correlation = dpc_read_u32(d + DPC_CBDATA_CORRELATION);
	c.device = -1;
	dpc_fn_get_device_id get_device_id = atomic_load_explicit(&dpc_hooks.get_device_id, memory_order_relaxed);
	uint32_t device = 0;
	if (get_device_id != NULL &&
	    get_device_id((dpc_context)dpc_read_ptr(d + DPC_CBDATA_CONTEXT), &device) == DPC_SUCCESS) {
		c.device = (int32_t)device;
	}
	atomic_fetch_add_explicit(&dpc_hooks.calls, 1, memory_order_relaxed);
	dpc_tls.in_handler++;
	dpcGoMemoryHook(&c);
	dpc_tls.in_handler--;
	atomic_fetch_sub(&dpc_hooks.inflight, 1);
}
