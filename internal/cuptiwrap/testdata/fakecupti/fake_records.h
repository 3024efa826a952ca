/*
 * Activity record layouts the fake libcupti writes, declared as whole structs
 * in field order, independently of devprof's shim.h (which only lists the
 * offsets devprof reads). Each struct holds the newest version the fake
 * knows; a record of an older version is the struct's first N bytes, since
 * CUPTI versions only ever append fields.
 *
 * Offsets and sizes: CUDA 11.8 ones were measured against the real headers
 * (and are re-checked by cuptiwrap/abicheck/abi_check.c); the CUDA 12.x/13.x
 * additions (Kernel9 @200..208, Kernel10 @208..216, Memcpy6 copyCount @88,
 * Memory4 source @120, Synchronization2 @40..56, isDeviceLaunched @84 of
 * Memcpy6/Memset4 in 13.0) come from the CUPTI fact sheet (cudarc bindings,
 * CUPTI release notes) and cannot be checked here.
 */
#ifndef FAKECUPTI_RECORDS_H
#define FAKECUPTI_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#define FK_ALIGNED __attribute__((aligned(8)))

typedef struct FK_ALIGNED fk_kernel {
	uint32_t kind;
	uint8_t cache_config;
	uint8_t shared_memory_config;
	uint16_t registers_per_thread;
	uint32_t partitioned_cache_requested;
	uint32_t partitioned_cache_executed;
	uint64_t start;
	uint64_t end;
	uint64_t completed;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	int32_t grid[3];
	int32_t block[3];
	int32_t static_shared;
	int32_t dynamic_shared;
	uint32_t local_per_thread;
	uint32_t local_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name;
	void *reserved0;
	uint64_t queued;
	uint64_t submitted;
	uint8_t launch_type;
	uint8_t carveout_requested_set;
	uint8_t carveout_requested;
	uint8_t padding;
	uint32_t shared_executed;
	uint64_t graph_node_id;        /* Kernel5 */
	uint32_t shmem_limit_config;
	uint32_t graph_id;
	void *access_policy_window;    /* Kernel6 */
	uint32_t channel_id;           /* Kernel7 */
	uint32_t channel_type;
	uint32_t cluster[3];           /* Kernel8 */
	uint32_t cluster_policy;
	uint64_t local_total_v2;       /* sizeof Kernel8 = 200 */
	uint32_t max_potential_cluster; /* Kernel9 (CUDA 12) */
	uint32_t max_active_clusters;  /* sizeof Kernel9 = 208 */
	uint8_t is_device_launched;    /* Kernel10 (CUDA 13) */
	uint8_t padding3[7];           /* sizeof Kernel10 = 216 */
} fk_kernel;

typedef struct FK_ALIGNED fk_memcpy {
	uint32_t kind;
	uint8_t copy_kind;
	uint8_t src_kind;
	uint8_t dst_kind;
	uint8_t flags;
	uint64_t bytes;
	uint64_t start;
	uint64_t end;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	uint32_t runtime_correlation_id;
	uint32_t pad;
	void *reserved0;
	uint64_t graph_node_id; /* Memcpy3 */
	uint32_t graph_id;      /* Memcpy4 */
	uint32_t channel_id;    /* Memcpy5 */
	uint32_t channel_type;
	uint8_t is_device_launched; /* CUDA 13 only; pad2 (uint32) before */
	uint8_t pad2[3];        /* sizeof Memcpy5 = 88 */
	uint64_t copy_count;    /* Memcpy6: sizeof 96 */
} fk_memcpy;

typedef struct FK_ALIGNED fk_ptop {
	uint32_t kind;
	uint8_t copy_kind;
	uint8_t src_kind;
	uint8_t dst_kind;
	uint8_t flags;
	uint64_t bytes;
	uint64_t start;
	uint64_t end;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t src_device_id;
	uint32_t src_context_id;
	uint32_t dst_device_id;
	uint32_t dst_context_id;
	uint32_t correlation_id;
	void *reserved0;
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint32_t channel_id;
	uint32_t channel_type;
	uint32_t pad; /* sizeof PtoP4 = 96 */
} fk_ptop;

typedef struct FK_ALIGNED fk_memset {
	uint32_t kind;
	uint32_t value;
	uint64_t bytes;
	uint64_t start;
	uint64_t end;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	uint16_t flags;
	uint16_t memory_kind;
	uint32_t pad;
	void *reserved0;
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint32_t channel_id;
	uint32_t channel_type;
	uint8_t is_device_launched; /* CUDA 13 only */
	uint8_t pad2[3];            /* sizeof Memset4 = 88 */
} fk_memset;

typedef struct FK_ALIGNED fk_memory {
	uint32_t kind;
	uint32_t operation;
	uint32_t memory_kind;
	uint32_t correlation_id;
	uint64_t address;
	uint64_t bytes;
	uint64_t timestamp;
	uint64_t pc;
	uint32_t process_id;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	const char *name;
	uint32_t is_async;
	uint32_t pad1;
	struct {
		uint32_t pool_type;
		uint32_t pad2;
		uint64_t address;
		uint64_t release_threshold;
		uint64_t size_or_pid;
		uint64_t utilized_size;
	} pool;             /* sizeof Memory3 = 120 */
	const char *source; /* Memory4 (CUDA 12.6+): sizeof 128 */
} fk_memory;

typedef struct FK_ALIGNED fk_api {
	uint32_t kind;
	uint32_t cbid;
	uint64_t start;
	uint64_t end;
	uint32_t process_id;
	uint32_t thread_id;
	uint32_t correlation_id;
	uint32_t return_value; /* sizeof 40 */
} fk_api;

typedef struct FK_ALIGNED fk_sync {
	uint32_t kind;
	uint32_t type;
	uint64_t start;
	uint64_t end;
	uint32_t correlation_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t cuda_event_id; /* sizeof Synchronization = 40 */
	uint64_t cuda_event_sync_id; /* Synchronization2 (CUDA 12.8+) */
	uint32_t return_value;
	uint32_t pad;           /* sizeof 56 */
} fk_sync;

typedef struct FK_ALIGNED fk_external {
	uint32_t kind;
	uint32_t external_kind;
	uint64_t external_id;
	uint32_t correlation_id;
	uint32_t reserved; /* sizeof 24 */
} fk_external;

typedef struct FK_ALIGNED fk_overhead {
	uint32_t kind;
	uint32_t overhead_kind;
	uint32_t object_kind;
	union {
		struct {
			uint32_t process_id;
			uint32_t thread_id;
		} pt;
		struct {
			uint32_t device_id;
			uint32_t context_id;
			uint32_t stream_id;
		} dcs;
	} object_id;
	uint64_t start;
	uint64_t end; /* sizeof 40 */
} fk_overhead;

/* The fact sheet's numbers, so a typo in the structs above cannot hide. */
_Static_assert(offsetof(fk_kernel, correlation_id) == 92, "kernel correlationId");
_Static_assert(offsetof(fk_kernel, name) == 104, "kernel name");
_Static_assert(offsetof(fk_kernel, shared_executed) == 140, "kernel sharedMemoryExecuted");
_Static_assert(offsetof(fk_kernel, graph_id) == 156, "kernel graphId");
_Static_assert(offsetof(fk_kernel, channel_id) == 168, "kernel channelID");
_Static_assert(offsetof(fk_kernel, local_total_v2) == 192, "kernel localMemoryTotal_v2");
_Static_assert(offsetof(fk_kernel, max_potential_cluster) == 200, "Kernel9 field");
_Static_assert(offsetof(fk_kernel, is_device_launched) == 208, "Kernel10 field");
_Static_assert(sizeof(fk_kernel) == 216, "Kernel10 size");
_Static_assert(offsetof(fk_memcpy, correlation_id) == 44, "memcpy correlationId");
_Static_assert(offsetof(fk_memcpy, graph_id) == 72, "memcpy graphId");
_Static_assert(offsetof(fk_memcpy, is_device_launched) == 84, "memcpy isDeviceLaunched");
_Static_assert(offsetof(fk_memcpy, copy_count) == 88, "Memcpy6 copyCount");
_Static_assert(sizeof(fk_memcpy) == 96, "Memcpy6 size");
_Static_assert(offsetof(fk_ptop, correlation_id) == 60, "peer correlationId");
_Static_assert(sizeof(fk_ptop) == 96, "PtoP4 size");
_Static_assert(offsetof(fk_memset, memory_kind) == 50, "memset memoryKind");
_Static_assert(offsetof(fk_memset, is_device_launched) == 84, "memset isDeviceLaunched");
_Static_assert(sizeof(fk_memset) == 88, "Memset4 size");
_Static_assert(offsetof(fk_memory, name) == 64, "memory name");
_Static_assert(offsetof(fk_memory, pool) == 80, "memory pool config");
_Static_assert(offsetof(fk_memory, source) == 120, "Memory4 source");
_Static_assert(sizeof(fk_memory) == 128, "Memory4 size");
_Static_assert(sizeof(fk_api) == 40, "API size");
_Static_assert(offsetof(fk_sync, cuda_event_sync_id) == 40, "Synchronization2 field");
_Static_assert(sizeof(fk_sync) == 56, "Synchronization2 size");
_Static_assert(sizeof(fk_external) == 24, "ExternalCorrelation size");
_Static_assert(offsetof(fk_overhead, start) == 24, "overhead start");
_Static_assert(sizeof(fk_overhead) == 40, "Overhead size");

#endif
