//go:build cgo

package devmem_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
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

// TestDoGivesHookedAllocationsTheirContext: CUDA allocations made under
// Do carry its context's tags and annotate spans, nested Do the
// innermost's; not those of another goroutine, nor after Do returns.
func TestDoGivesHookedAllocationsTheirContext(t *testing.T) {
	lib, fk := fakeCUDA(t)
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	tagsOf := map[uint64][]string{}
	spanOf := map[uint64]string{}
	s := eventtest.Record(t, 1000, func(ctx context.Context) {
		ctx = devmem.WithTags(ctx, "weights")
		ctx, span := annotate.Begin(ctx, "load")
		var inner, outer, other, after uint64
		devmem.Do(ctx, func(ctx context.Context) {
			devmem.Do(devmem.WithTags(ctx, "fp16"), func(context.Context) { inner = loadEmbeddings(fk) })
			outer = loadEmbeddings(fk)
			done := make(chan struct{})
			go func() { other = loadEmbeddings(fk); close(done) }()
			<-done
		})
		span.End()
		after = loadEmbeddings(fk)
		for _, b := range devmem.LiveBuffers() {
			tagsOf[b.Address], spanOf[b.Address] = b.Tags, b.Span
		}
		for name, w := range map[string]struct {
			addr uint64
			tags []string
			span string
		}{"inner": {inner, []string{"weights", "fp16"}, "load"}, "outer": {outer, []string{"weights"}, "load"}, "other goroutine": {other, nil, ""}, "after": {after, nil, ""}} {
			if !slices.Equal(tagsOf[w.addr], w.tags) || spanOf[w.addr] != w.span {
				t.Errorf("%s allocation: tags %q, span %q; want %q, %q", name, tagsOf[w.addr], spanOf[w.addr], w.tags, w.span)
			}
		}
	})
	tagged := 0
	for _, e := range memEvents(t, s) {
		if e.args[event.ArgTags] == "weights,fp16" && e.args[event.ArgSpan] == "load" {
			tagged++
		}
	}
	if tagged != 1 {
		t.Errorf("%d trace events of the inner allocation with its tags and span, want 1", tagged)
	}
}

// BenchmarkCUDAAllocInDo is a tracked cudaMalloc and cudaFree under Do:
// the goroutine's id is read from its stack at each hooked call.
func BenchmarkCUDAAllocInDo(b *testing.B) {
	lib, fk := fakeCUDA(b)
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib}); err != nil {
		b.Fatal(err)
	}
	defer devmem.Stop()
	b.ReportAllocs()
	devmem.Do(devmem.WithTags(context.Background(), "weights"), func(context.Context) {
		for b.Loop() {
			fk.CudaFree(fk.CudaMalloc(1<<20, 0))
		}
	})
}
