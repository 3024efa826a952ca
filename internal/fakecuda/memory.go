package fakecuda

// The callback domains of CUDA entry points (CUpti_CallbackDomain).
const (
	DomainDriver  = 1
	DomainRuntime = 2
)

// MemOp is one CUDA allocation or free for [Lib.Memory] to play.
type MemOp struct {
	// Domain and CBID name the entry point: DomainRuntime or DomainDriver
	// and its CUPTI callback id (cupti_runtime_cbid.h,
	// cupti_driver_cbid.h), e.g. 2, 20 for cudaMalloc_v3020. The fake
	// plays every entry point cuptiwrap's memory hooks follow.
	Domain, CBID uint32
	// Device is the device ordinal the fake encodes in the call's context
	// (cuptiGetDeviceId decodes it); -1 plays a call without a context.
	Device int32
	// Fail, if nonzero, makes the call fail with that CUDA error, doing
	// nothing.
	Fail int32
	// Bytes is the size to allocate (the width in bytes for pitched
	// allocations, whose pitch the fake rounds up to 512).
	Bytes uint64
	// Height is the height of pitched allocations.
	Height uint64
	// Ptr is what a free frees (0 plays a free of NULL).
	Ptr uint64
	// Stream is the stream handle of the async entry points.
	Stream uint64
	// Nested makes a runtime call do its work through its driver
	// counterpart (cudaMalloc through cuMemAlloc_v2, …) on the same
	// thread, whose callbacks CUPTI reports inside the runtime call's.
	Nested bool
	// FromCThread makes the call from a thread the fake creates (and
	// joins): a CUDA call with no Go frames below it.
	FromCThread bool
}

// MemResult is what a played call did.
type MemResult struct {
	// Result is the call's return value: 0 success, 1 an invalid pointer
	// freed, 2 out of memory, Fail if set; -1 when the fake does not know
	// the entry point.
	Result int32
	// Correlation is the CUPTI correlation id the callbacks, the API record
	// and the MEMORY2 record carry (for a nested call: the runtime call's).
	Correlation uint32
	// Address is the pointer allocated (0 for frees).
	Address uint64
	// Pitch is the pitch of a pitched allocation.
	Pitch uint64
}

// Callback ids of the entry points the helpers below play
// (cupti_runtime_cbid.h, cupti_driver_cbid.h).
const (
	cbidCudaMalloc        = 20  // cudaMalloc_v3020
	cbidCudaFree          = 22  // cudaFree_v3020
	cbidCudaMallocHost    = 25  // cudaMallocHost_v3020
	cbidCudaFreeHost      = 26  // cudaFreeHost_v3020
	cbidCudaMallocManaged = 206 // cudaMallocManaged_v6000
	cbidCudaMallocAsync   = 373 // cudaMallocAsync_v11020
	cbidCudaFreeAsync     = 375 // cudaFreeAsync_v11020
	cbidCuMemAllocV2      = 243 // cuMemAlloc_v2
	cbidCuMemFreeV2       = 245 // cuMemFree_v2
)

// cudaErrorMemoryAllocation is what CudaMallocFailing's call returns.
const cudaErrorMemoryAllocation = 2

// The helpers below play one common call each through [Lib.Memory], from
// the calling goroutine through cgo, as a Go program calling CUDA would:
// an allocation returns its address (0 if it failed), a free its CUDA
// result (0 success). A free runs in the context of the device the fake
// allocated the pointer on.

// CudaMalloc plays cudaMalloc of bytes on device.
func (l *Lib) CudaMalloc(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMalloc, Device: device, Bytes: bytes}).Address
}

// CudaFree plays cudaFree(ptr).
func (l *Lib) CudaFree(ptr uint64) int32 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaFree, Device: l.DeviceOf(ptr), Ptr: ptr}).Result
}

// CudaMallocAsync plays cudaMallocAsync of bytes on device, ordered on stream.
func (l *Lib) CudaMallocAsync(bytes uint64, device int32, stream uint64) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMallocAsync, Device: device, Bytes: bytes, Stream: stream}).Address
}

// CudaFreeAsync plays cudaFreeAsync(ptr, stream).
func (l *Lib) CudaFreeAsync(ptr, stream uint64) int32 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaFreeAsync, Device: l.DeviceOf(ptr), Ptr: ptr, Stream: stream}).Result
}

// CudaMallocHost plays cudaMallocHost (pinned host memory) of bytes, with
// device's context current.
func (l *Lib) CudaMallocHost(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMallocHost, Device: device, Bytes: bytes}).Address
}

// CudaFreeHost plays cudaFreeHost(ptr).
func (l *Lib) CudaFreeHost(ptr uint64) int32 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaFreeHost, Device: l.DeviceOf(ptr), Ptr: ptr}).Result
}

// CudaMallocManaged plays cudaMallocManaged of bytes on device.
func (l *Lib) CudaMallocManaged(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMallocManaged, Device: device, Bytes: bytes}).Address
}

// CuMemAlloc plays the driver's cuMemAlloc (cuMemAlloc_v2, which cuda.h
// maps cuMemAlloc to) of bytes on device.
func (l *Lib) CuMemAlloc(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainDriver, CBID: cbidCuMemAllocV2, Device: device, Bytes: bytes}).Address
}

// CuMemFree plays the driver's cuMemFree (cuMemFree_v2).
func (l *Lib) CuMemFree(ptr uint64) int32 {
	return l.Memory(MemOp{Domain: DomainDriver, CBID: cbidCuMemFreeV2, Device: l.DeviceOf(ptr), Ptr: ptr}).Result
}

// CudaMallocFailing plays a cudaMalloc of bytes on device that fails with
// cudaErrorMemoryAllocation (2), which it returns.
func (l *Lib) CudaMallocFailing(bytes uint64, device int32) int32 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMalloc, Device: device, Bytes: bytes,
		Fail: cudaErrorMemoryAllocation}).Result
}

// CudaMallocNested plays cudaMalloc of bytes on device the way the runtime
// does it: through cuMemAlloc_v2 on the same thread, whose callbacks come
// inside cudaMalloc's.
func (l *Lib) CudaMallocNested(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMalloc, Device: device, Bytes: bytes, Nested: true}).Address
}

// CudaMallocFromCThread plays cudaMalloc of bytes on device from a thread
// C created: no Go frames are below the CUDA call.
func (l *Lib) CudaMallocFromCThread(bytes uint64, device int32) uint64 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaMalloc, Device: device, Bytes: bytes, FromCThread: true}).Address
}

// CudaFreeFromCThread plays cudaFree(ptr) from a thread C created.
func (l *Lib) CudaFreeFromCThread(ptr uint64) int32 {
	return l.Memory(MemOp{Domain: DomainRuntime, CBID: cbidCudaFree, Device: l.DeviceOf(ptr), Ptr: ptr, FromCThread: true}).Result
}
