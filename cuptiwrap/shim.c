//go:build cgo

/*
 * devprof's C side of CUPTI: loading libcupti with dlopen, the activity
 * buffer pool, and the queue of completed buffers the Go drain goroutine
 * empties.
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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

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

/*
 * devprof subscribes only to learn whether another CUPTI client (Nsight,
 * compute-sanitizer, a framework's profiler) already owns the process; it
 * enables no callback domain, so this never runs.
 */
static void dpc_unused_callback(void *userdata, dpc_domain domain, uint32_t cbid, const void *cbdata) {
	(void)userdata;
	(void)domain;
	(void)cbid;
	(void)cbdata;
}

dpc_result dpc_subscribe(const dpc_lib *lib, dpc_subscriber *out) {
	return lib->subscribe(out, dpc_unused_callback, NULL);
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
