/*
 * Stand-in that shadows libcupti-dev's generated_cuda_meta.h: the real one
 * declares the parameter structs of every CUDA API function and needs the
 * CUDA toolkit's headers. devprof reads no API parameters, so <cupti.h>
 * can go without it.
 */
