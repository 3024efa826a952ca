/*
 * Stand-in that shadows libcupti-dev's generated_cuda_runtime_api_meta.h: the real one
 * declares the parameter structs of every CUDA API function and needs the
 * CUDA toolkit's headers. abi_check.c gets the few it checks from the
 * real file another way (see dpc_real_params.h there).
 */
