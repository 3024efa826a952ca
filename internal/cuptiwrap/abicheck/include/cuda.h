/*
 * Stand-in for CUDA's <cuda.h>, for compiling the real CUPTI headers
 * (Debian's libcupti-dev) without the CUDA toolkit (nvidia-cuda-dev: a
 * 774 MB package). Only abi_check.c uses it, and only for type-checking:
 * it declares just the driver types the CUPTI headers name, and those the
 * parameter structs abi_check.c checks use. Handles are
 * opaque struct pointers and enums ints, as in the real header, so sizes
 * and calling conventions match; the enumerators listed are placeholders.
 */
#ifndef DEVPROF_ABICHECK_CUDA_H
#define DEVPROF_ABICHECK_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define CUDA_VERSION 11080

typedef int CUdevice;
/* Device pointers: 32-bit in the CUDA 3.x entry points, 64-bit since (LP64). */
typedef unsigned int CUdeviceptr_v1;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUuuid_st {
	char bytes[16];
} CUuuid;
/* Only pointed to by the kernel records (pAccessPolicyWindow). */
typedef struct CUaccessPolicyWindow_st CUaccessPolicyWindow;
typedef enum CUgraphNodeType_enum { DEVPROF_ABICHECK_CU_GRAPH_NODE_TYPE = 0 } CUgraphNodeType;
typedef enum CUdevice_attribute_enum { DEVPROF_ABICHECK_CU_DEVICE_ATTRIBUTE = 1 } CUdevice_attribute;
typedef enum cudaError_enum { DEVPROF_ABICHECK_CUDA_SUCCESS = 0 } CUresult;

#endif
