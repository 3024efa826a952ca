// Package nvmlhook lets tests drive the NVML source (sources/nvml) without
// a GPU: a test sets Library to a go-nvml mock (a nvml.Interface, from
// github.com/NVIDIA/go-nvml/pkg/nvml/mock) and CUDA to the devices the CUDA
// driver would list, and sessions started while they are set use them
// instead of libnvidia-ml and libcuda. Nothing but tests sets them; they
// are typed loosely so that this package builds without cgo, as go-nvml
// does not.
package nvmlhook

import "sync"

// CUDADevice is one device as the CUDA driver enumerates it.
type CUDADevice struct {
	Ordinal int    // the CUDA ordinal, which CUPTI's device ids are
	UUID    string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML spells it
	SMs     int    // streaming multiprocessors
}

var (
	mu      sync.Mutex
	library any
	cuda    func() ([]CUDADevice, error)
)

// Set installs a library (an nvml.Interface) and a CUDA enumeration for
// the sessions started until the returned function is called.
func Set(lib any, devices func() ([]CUDADevice, error)) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	oldLib, oldCUDA := library, cuda
	library, cuda = lib, devices
	return func() {
		mu.Lock()
		defer mu.Unlock()
		library, cuda = oldLib, oldCUDA
	}
}

// Get returns what Set installed (nil, nil when nothing is).
func Get() (lib any, devices func() ([]CUDADevice, error)) {
	mu.Lock()
	defer mu.Unlock()
	return library, cuda
}
