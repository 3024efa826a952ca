package devmem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/internal/fakecuda"
)

// fakeCUDA builds the fake libcupti, with no scripted workload, and opens
// it to play CUDA calls.
func fakeCUDA(t testing.TB) (string, *fakecuda.Lib) {
	t.Helper()
	if !haveCgo {
		t.Skip("CUDA hooks need cgo: build with CGO_ENABLED=1 and a C compiler")
	}
	for _, k := range []string{"FAKECUPTI_LAYOUT", "FAKECUPTI_BASE", "FAKECUPTI_DROPPED", "FAKECUPTI_FAIL", "FAKECUPTI_VERSION", "FAKECUPTI_BUFFER_LIMIT", "FAKECUPTI_CBID_LIMIT"} {
		t.Setenv(k, "")
	}
	t.Setenv("FAKECUPTI_SCRIPT", "0")
	path := fakecuda.Build(t)
	fk, err := fakecuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, fk
}

//go:noinline
func loadModel(fk *fakecuda.Lib) uint64 { return fk.CudaMalloc(3<<20, 1) }

func TestCUDAAllocationsCarryGoStacks(t *testing.T) {
	lib, fk := fakeCUDA(t)
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	if !devmem.HookingCUDA() {
		t.Fatal("HookingCUDA() = false after Start with ModeOn")
	}
	weights := loadModel(fk)
	async := fk.CudaMallocAsync(1<<20, 0, 7)
	pinned := fk.CudaMallocHost(4096, 0)
	managed := fk.CudaMallocManaged(8192, 0)
	drv := fk.CuMemAlloc(512, 0)
	freed := fk.CudaMalloc(100, 0)
	if fk.CudaFree(freed) != 0 || fk.CuMemFree(drv) != 0 || fk.CudaFreeAsync(async, 7) != 0 {
		t.Fatal("a fake free failed")
	}
	if fk.CudaMallocFailing(1<<30, 0) == 0 {
		t.Fatal("the failing allocation succeeded")
	}
	nested := fk.CudaMallocNested(256, 0)
	fromC := fk.CudaMallocFromCThread(128, 0)
	if weights == 0 || pinned == 0 || managed == 0 || nested == 0 || fromC == 0 {
		t.Fatal("a fake allocation failed")
	}

	m, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[uint64]event.Buffer{}
	for _, b := range m.Buffers {
		byAddr[b.Address] = b
	}
	want := []struct {
		addr   uint64
		bytes  uint64
		device int
		kind   string
		api    string
	}{
		{weights, 3 << 20, 1, "device", "cudaMalloc"},
		{pinned, 4096, 0, "pinned", "cudaMallocHost"},
		{managed, 8192, 0, "managed", "cudaMallocManaged"},
		{nested, 256, 0, "device", "cudaMalloc"},
		{fromC, 128, 0, "device", "cudaMalloc"},
	}
	if len(m.Buffers) != len(want) {
		t.Errorf("%d live buffers, want %d: %+v", len(m.Buffers), len(want), m.Buffers)
	}
	for _, w := range want {
		b, ok := byAddr[w.addr]
		if !ok {
			t.Errorf("no live buffer at %#x (%s)", w.addr, w.api)
			continue
		}
		if b.Bytes != w.bytes || b.Device != w.device || b.Kind != w.kind || b.API != w.api || b.Source != "cuda" {
			t.Errorf("buffer %#x = %d bytes gpu %d %s %s %s, want %d gpu %d %s %s cuda", w.addr, b.Bytes, b.Device, b.Kind, b.API, b.Source, w.bytes, w.device, w.kind, w.api)
		}
	}
	// The Go stack of the goroutine that called CUDA through cgo: the
	// tracker's, cuptiwrap's and cgo's frames are gone, so it starts in
	// the program's cgo wrapper, and the code that wanted the memory
	// follows.
	st := byAddr[weights].Stack
	if len(st) < 3 || !strings.Contains(st[0].Function, "internal/fakecuda.") {
		t.Fatalf("stack of the cudaMalloc = %v, want the fake's wrapper innermost", st)
	}
	var names []string
	for _, f := range st {
		names = append(names, f.Function)
		if strings.Contains(f.Function, "cuptiwrap.") || strings.Contains(f.Function, "devmem.") || strings.Contains(f.Function, "runtime.cgo") {
			t.Errorf("plumbing frame %s left in the stack", f.Function)
		}
	}
	joined := strings.Join(names, "\n")
	if i, j := strings.Index(joined, "devmem_test.loadModel"), strings.Index(joined, "devmem_test.TestCUDAAllocationsCarryGoStacks"); i < 0 || j < i {
		t.Errorf("stack lacks loadModel then the test:\n%s", joined)
	}
	if b := byAddr[async]; ok(b) {
		t.Errorf("the freed async buffer is live: %+v", b)
	}
	if b := byAddr[weights]; b.Correlation == 0 || b.Stream != 0 {
		t.Errorf("cudaMalloc's correlation %d, stream %d: want a correlation id and no stream", b.Correlation, b.Stream)
	}
	if st := byAddr[fromC].Stack; len(st) != 0 {
		t.Errorf("an allocation from a thread C made has Go frames: %v", st)
	}
	if m.Counts.Allocs != 8 || m.Counts.Frees != 3 || m.Counts.UnknownFrees != 0 {
		t.Errorf("counts %+v, want 8 allocations and 3 frees", m.Counts)
	}
	failed := false
	for _, w := range m.Warnings {
		failed = failed || w.Code == "cuda_failed"
	}
	if !failed {
		t.Errorf("warnings %v lack the failed cudaMalloc", m.Warnings)
	}
}

func ok(b event.Buffer) bool { return b.Bytes != 0 }

//go:noinline
func allocAsync(fk *fakecuda.Lib) uint64 { return fk.CudaMallocAsync(1<<20, 1, 9) }

func TestCUDAStreamOrdered(t *testing.T) {
	lib, fk := fakeCUDA(t)
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	p := allocAsync(fk)
	bufs := devmem.LiveBuffers()
	if len(bufs) != 1 || bufs[0].Address != p || bufs[0].Stream != 9 || bufs[0].Device != 1 || bufs[0].API != "cudaMallocAsync" || bufs[0].Correlation == 0 {
		t.Fatalf("live buffers %+v, want the cudaMallocAsync on stream 9, device 1", bufs)
	}
	if fk.CudaFreeAsync(p, 9) != 0 || len(devmem.LiveBuffers()) != 0 {
		t.Errorf("cudaFreeAsync left %+v live", devmem.LiveBuffers())
	}
}

func TestCUDAModes(t *testing.T) {
	t.Setenv("FAKECUPTI_SCRIPT", "0")
	missing := t.TempDir() + "/libcupti-missing.so"
	err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: missing})
	var le *cuptiwrap.LoadError
	switch {
	case !haveCgo:
		if !errors.Is(err, cuptiwrap.ErrNeedsCgo) {
			t.Errorf("ModeOn without cgo: %v, want cuptiwrap.ErrNeedsCgo", err)
		}
	case !errors.As(err, &le):
		t.Errorf("ModeOn with no libcupti: %v, want a *cuptiwrap.LoadError", err)
	}
	if devmem.Tracking() {
		devmem.Stop()
		t.Fatal("tracking on after a failed Start")
	}
	if err := devmem.Start(devmem.Options{Library: missing}); err != nil {
		t.Fatalf("ModeAuto with no libcupti: %v, want tracking of the explicit API", err)
	}
	defer devmem.Stop()
	if devmem.HookingCUDA() {
		t.Error("HookingCUDA with no libcupti")
	}
	notes := devmem.Notes()
	if len(notes) != 1 || !strings.Contains(notes[0].Text, "CUDA allocations are not tracked") {
		t.Errorf("notes %v, want one saying why CUDA is not tracked", notes)
	}
	// The profile says it too: without it, a profile with no CUDA
	// allocation reads as a program that made none.
	m, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var why []event.Warning
	for _, w := range m.Warnings {
		if w.Code == devmem.CodeCUDANotHooked {
			why = append(why, w)
		}
	}
	if len(why) != 1 || len(notes) != 1 || why[0].Text != notes[0].Text {
		t.Errorf("Snapshot's warnings %v: want one %s saying what the note says (%v)", m.Warnings, devmem.CodeCUDANotHooked, notes)
	}
	devmem.Stop()
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	if m, _ := devmem.Snapshot(); len(m.Warnings) != 0 {
		t.Errorf("with ModeOff (CUDA left alone on purpose), warnings %v", m.Warnings)
	}
}

// BenchmarkCUDAAlloc is what tracking adds to one cudaMalloc and its
// cudaFree (the fake's own calls cost a few hundred ns; a real cudaMalloc
// costs microseconds).
func BenchmarkCUDAAlloc(b *testing.B) {
	for _, c := range []struct {
		name  string
		track bool
		depth int
	}{{"untracked", false, 0}, {"tracked", true, 0}, {"tracked-nostacks", true, -1}} {
		b.Run(c.name, func(b *testing.B) {
			lib, fk := fakeCUDA(b)
			if c.track {
				if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOn, Library: lib, StackDepth: c.depth}); err != nil {
					b.Fatal(err)
				}
				defer devmem.Stop()
			}
			b.ReportAllocs()
			for b.Loop() {
				fk.CudaFree(fk.CudaMalloc(1<<20, 0))
			}
		})
	}
}
