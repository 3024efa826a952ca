package devmem_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/devprof/devprof/devmem"
)

// A program's own allocator tells devmem what it holds; LiveBuffers lists
// it, largest first, with the stack that allocated each buffer.
func ExampleAlloc() {
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		panic(err)
	}
	defer devmem.Stop()

	ctx := devmem.WithTags(context.Background(), "model")
	devmem.Alloc(ctx, 0x7f00_0000_0000, 256<<20, devmem.Attrs{Device: 0, Tags: []string{"weights"}})
	devmem.Alloc(ctx, 0x7f00_1000_0000, 64<<20, devmem.Attrs{Device: 1, Kind: "pool"})
	devmem.Alloc(ctx, 0x7f00_2000_0000, 8<<20, devmem.Attrs{Device: 0})
	devmem.Free(0x7f00_2000_0000)

	for _, b := range devmem.LiveBuffers() {
		site := b.Stack[0].Function[strings.LastIndexByte(b.Stack[0].Function, '/')+1:]
		fmt.Printf("%4d MiB  gpu:%d  %-6s %-13s %s\n", b.Bytes>>20, b.Device, b.Kind, strings.Join(b.Tags, ","), site)
	}
	c := devmem.Counts()
	fmt.Println("allocations:", c.Allocs, "frees:", c.Frees)
	// Output:
	//  256 MiB  gpu:0  device model,weights devmem_test.ExampleAlloc
	//   64 MiB  gpu:1  pool   model         devmem_test.ExampleAlloc
	// allocations: 3 frees: 1
}
