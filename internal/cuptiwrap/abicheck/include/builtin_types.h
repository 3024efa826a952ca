/*
 * Stand-in for CUDA's <builtin_types.h> (CUDA runtime types), which
 * cupti_callbacks.h includes. It declares only the runtime handles of the
 * parameter structs abi_check.c checks; as in CUDA's driver_types.h they
 * are the driver's handles.
 */
#ifndef DEVPROF_ABICHECK_BUILTIN_TYPES_H
#define DEVPROF_ABICHECK_BUILTIN_TYPES_H
typedef struct CUstream_st *cudaStream_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
#endif
