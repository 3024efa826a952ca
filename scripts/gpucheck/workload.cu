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

// The entry points below are what internal/gpucheck/cudabind binds, as a
// Go CUDA binding binds libcudart: each is one CUDA call.

// devprof_malloc allocates bytes of device memory into *p.
extern "C" int devprof_malloc(long long bytes, void **p) { return cudaMalloc(p, bytes); }

// devprof_free frees a buffer devprof_malloc returned.
extern "C" int devprof_free(void *p) { return cudaFree(p); }

// devprof_spin runs one spin kernel of ns nanoseconds and waits for it:
// the GPU is busy (utilization 100%) and draws little memory bandwidth.
extern "C" int devprof_spin(long long ns) {
	spin<<<132, 1024>>>(ns);
	cudaError_t e = cudaGetLastError();
	if (e) return e;
	return cudaDeviceSynchronize();
}

// devprof_copy_for copies bytes host-to-device and back between a pinned
// buffer and a device one, over and over, for at least ns nanoseconds of
// wall time, and returns the number of round trips in *trips.
extern "C" int devprof_copy_for(long long bytes, long long ns, long long *trips) {
	void *h, *d;
	cudaError_t e;
	if ((e = cudaMallocHost(&h, bytes))) return e;
	if ((e = cudaMalloc(&d, bytes))) { cudaFreeHost(h); return e; }
	cudaEvent_t t0, t1;
	cudaEventCreate(&t0);
	cudaEventCreate(&t1);
	cudaEventRecord(t0);
	long long n = 0;
	float ms = 0;
	while (ms * 1e6 < ns) {
		if ((e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice))) break;
		if ((e = cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost))) break;
		n++;
		cudaEventRecord(t1);
		cudaEventSynchronize(t1);
		cudaEventElapsedTime(&ms, t0, t1);
	}
	*trips = n;
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	cudaFree(d);
	cudaFreeHost(h);
	return e;
}
