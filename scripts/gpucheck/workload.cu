// A CUDA workload of known shape for scripts/gpu-check: one call of
// devprof_workload launches one saxpy (grid n/256, block 256), one spin
// kernel that busy-waits the GPU's nanosecond clock (%globaltimer) for
// spin_ns, and copies `bytes` host-to-device and back, then synchronizes.
// internal/gpucheck compares what devprof recorded with exactly this.
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float *x, float *y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}

__device__ unsigned long long globaltimer() {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void spin(long long ns) {
	unsigned long long start = globaltimer();
	while (globaltimer() - start < (unsigned long long)ns) {
	}
}

static float *x, *y;
static void *host, *dev;
static int have_n;
static long long have_bytes;

// devprof_workload returns a cudaError_t (0 on success).
extern "C" int devprof_workload(int n, long long spin_ns, long long bytes) {
	cudaError_t e;
	if (n != have_n) {
		if ((e = cudaMalloc(&x, n * sizeof(float)))) return e;
		if ((e = cudaMalloc(&y, n * sizeof(float)))) return e;
		have_n = n;
	}
	if (bytes != have_bytes) {
		if ((e = cudaMallocHost(&host, bytes))) return e;
		if ((e = cudaMalloc(&dev, bytes))) return e;
		have_bytes = bytes;
	}
	saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
	spin<<<1, 1>>>(spin_ns);
	if ((e = cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice))) return e;
	if ((e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost))) return e;
	return cudaDeviceSynchronize();
}

__global__ void tiny(float *p) { p[threadIdx.x] += 1.0f; }

// devprof_launch_loop is a launch-bound step: `launches` tiny kernels
// back to back, then one synchronize (launches + 1 CUDA calls), the shape
// whose slow-down under tracing gpu-check compares with the peers'.
extern "C" int devprof_launch_loop(int launches) {
	static float *buf;
	cudaError_t e;
	if (!buf && (e = cudaMalloc(&buf, 256 * sizeof(float)))) return e;
	for (int i = 0; i < launches; i++) tiny<<<1, 256>>>(buf);
	if ((e = cudaGetLastError())) return e;
	return cudaDeviceSynchronize();
}

// devprof_alloc_free allocates bytes of device memory and frees it (the
// device-memory check expects every such pair to be matched, and nothing
// of it to stay live).
extern "C" int devprof_alloc_free(long long bytes) {
	void *p;
	cudaError_t e;
	if ((e = cudaMalloc(&p, bytes))) return e;
	return cudaFree(p);
}
