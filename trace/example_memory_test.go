package trace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/trace"
)

// Save who holds device memory now, as jax.profiler's
// save_device_memory_profile does; `go tool pprof -top FILE` reads it, and
// `-diff_base=EARLIER.pb.gz` finds what grew.
func ExampleSaveDeviceMemoryProfile() {
	if err := devmem.Start(devmem.Options{}); err != nil { // CUDA's allocations too, when it can
		panic(err)
	}
	defer devmem.Stop()

	ctx := devmem.WithTags(context.Background(), "kv-cache")
	devmem.Alloc(ctx, 0x7f00_0000_0000, 512<<20, devmem.Attrs{Device: 0}) // your allocator's buffer

	path := filepath.Join(os.TempDir(), "memory.pb.gz")
	if err := trace.SaveDeviceMemoryProfile(path); err != nil {
		panic(err)
	}
	defer os.Remove(path)

	m, err := pprof.ReadFile(path) // what devprof memory and go tool pprof read
	if err != nil {
		panic(err)
	}
	bytes, buffers := m.Live()
	fmt.Printf("%d MiB in %d buffer tagged %v\n", bytes>>20, buffers, m.Buffers[0].Tags)
	// Output: 512 MiB in 1 buffer tagged [kv-cache]
}
