/*
 * Stand-in for CUDA's <builtin_types.h> (CUDA runtime types), which
 * cupti_callbacks.h includes but the declarations abi_check.c checks do
 * not use.
 */
#ifndef DEVPROF_ABICHECK_BUILTIN_TYPES_H
#define DEVPROF_ABICHECK_BUILTIN_TYPES_H
#endif
