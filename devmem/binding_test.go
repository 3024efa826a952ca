//go:build cgo

package devmem_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/fakecuda"
	"github.com/devprof/devprof/internal/fakecuda/fakebind"
)

// A program that allocates through Go CUDA bindings: embeddings through one
// (fakecuda), a scratch buffer and a cache through another (fakebind),
// the cache leaking a buffer each step.

//go:noinline
func loadEmbeddings(fk *fakecuda.Lib) uint64 { return fk.CudaMalloc(8<<20, 0) }

//go:noinline
func loadCache(t testing.TB, b *fakebind.Lib) {
	if _, err := b.Malloc(1<<20, 0); err != nil {
		t.Fatal(err)
	}
}

//go:noinline
func trainStep(t testing.TB, b *fakebind.Lib) {
	scratch, err := b.Malloc(2<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	loadCache(t, b)
	if err := b.Free(scratch); err != nil {
		t.Fatal(err)
	}
}

// bySite sums live bytes by call site.
func bySite(m *event.DeviceMemory) map[string]uint64 {
	out := map[string]uint64{}
	for i := range m.Buffers {
		b := &m.Buffers[i]
		out[b.SiteFrame().Function] += b.Total()
	}
	return out
}

// TestCallSitesPastAnyBinding: each hooked allocation's call site is the
// program's function that called a binding, whichever binding, with the
// binding's and cgo's frames still in the stack above it; so the leak is
// one site's growth, and the embeddings' site is unchanged.
func TestCallSitesPastAnyBinding(t *testing.T) {
	lib, fk := fakeCUDA(t)
	fb, err := fakebind.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	loadEmbeddings(fk)
	loadEmbeddings(fk)
	trainStep(t, fb)
	base, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		trainStep(t, fb)
	}
	after, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	const pkg = "github.com/devprof/devprof/devmem_test."
	b0, b1 := bySite(base), bySite(after)
	want0 := map[string]uint64{pkg + "loadEmbeddings": 16 << 20, pkg + "loadCache": 1 << 20}
	want1 := map[string]uint64{pkg + "loadEmbeddings": 16 << 20, pkg + "loadCache": 4 << 20}
	if !maps.Equal(b0, want0) || !maps.Equal(b1, want1) {
		t.Errorf("live bytes by call site:\nbase  %v\nafter %v\nwant  %v\nthen  %v", b0, b1, want0, want1)
	}
	for _, b := range after.Buffers {
		st := b.Stack
		if b.Glue < 1 || b.Glue >= len(st) {
			t.Errorf("%s buffer: Glue %d of %d frames", b.Site(), b.Glue, len(st))
			continue
		}
		for _, f := range st[:b.Glue] {
			if !strings.Contains(f.Function, "internal/fakecuda") {
				t.Errorf("glue frame %s is not a binding's (stack %v)", f.Function, st)
			}
		}
		if b.Site() != st[b.Glue].String() || b.Site() != b.CallStack()[0].String() {
			t.Errorf("Site %q, CallStack %v, Stack[Glue] %v", b.Site(), b.CallStack(), st[b.Glue])
		}
	}
	// fakebind's C call takes a Go pointer: cgo's closure is glue too.
	var cache event.Buffer
	for _, b := range after.Buffers {
		if strings.HasSuffix(b.SiteFrame().Function, ".loadCache") {
			cache = b
		}
	}
	if len(cache.Stack) < 3 || !strings.HasSuffix(cache.Stack[0].Function, "fakebind.(*Lib).Malloc.func1") || !strings.HasSuffix(cache.Stack[1].Function, "fakebind.(*Lib).Malloc") || cache.Glue != 2 {
		t.Errorf("the cache's stack %v, Glue %d: want fakebind's Malloc.func1 and Malloc as glue", cache.Stack, cache.Glue)
	}
}

// TestBindingsOption: packages named in Options.Bindings are glue too,
// above the binding found on its own.
func TestBindingsOption(t *testing.T) {
	lib, fk := fakeCUDA(t)
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib, Bindings: []string{"github.com/devprof/devprof/devmem_test"}}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	loadEmbeddings(fk)
	bufs := devmem.LiveBuffers()
	if len(bufs) != 1 {
		t.Fatalf("%d live buffers, want 1", len(bufs))
	}
	if site := bufs[0].SiteFrame().Function; !strings.HasPrefix(site, "testing.") {
		t.Errorf("call site %s (stack %v): want the first frame past the test package, testing's", site, bufs[0].Stack)
	}
}
