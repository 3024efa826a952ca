package devmem_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/recorder"
)

// track runs fn with tracking on (CUDA off: these tests are about the
// table and the explicit API) and returns the snapshot taken after it.
func track(t *testing.T, o devmem.Options, fn func()) *event.DeviceMemory {
	t.Helper()
	o.CUDA = devmem.ModeOff
	if err := devmem.Start(o); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := devmem.Stop(); err != nil {
			t.Error(err)
		}
	}()
	fn()
	m, err := devmem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

//go:noinline
func loadWeights(ctx context.Context, addr uint64) {
	devmem.Alloc(ctx, addr, 4<<20, devmem.Attrs{Device: 1, Tags: []string{"weights"}})
}

func TestExplicitAllocations(t *testing.T) {
	m := track(t, devmem.Options{}, func() {
		ctx := devmem.WithTags(context.Background(), "model")
		loadWeights(ctx, 0x1000)
		devmem.Alloc(ctx, 0x2000, 100, devmem.Attrs{Device: -1, Kind: "pinned"})
		devmem.Alloc(ctx, 0x3000, 7, devmem.Attrs{})
		devmem.Free(0x3000)
	})
	if len(m.Buffers) != 2 {
		t.Fatalf("%d live buffers, want 2: %+v", len(m.Buffers), m.Buffers)
	}
	w := m.Buffers[0] // largest first
	if w.Address != 0x1000 || w.Bytes != 4<<20 || w.Count != 1 || w.Device != 1 || w.Kind != "device" || w.Source != "api" {
		t.Errorf("weights buffer = %+v", w)
	}
	if strings.Join(w.Tags, ",") != "model,weights" {
		t.Errorf("tags = %q, want the context's then the call's", w.Tags)
	}
	if len(w.Stack) == 0 || !strings.HasSuffix(w.Stack[0].Function, "devmem_test.loadWeights") || !strings.HasSuffix(w.Stack[0].File, "devmem_test.go") {
		t.Errorf("innermost frame = %+v, want loadWeights", w.Stack)
	}
	if len(w.Stack) < 2 || !strings.HasSuffix(w.Stack[1].Function, "TestExplicitAllocations.func1") {
		t.Errorf("caller frame = %+v, want the test's closure", w.Stack)
	}
	if w.Time.IsZero() || w.Age(m.Time) < 0 {
		t.Errorf("time = %v", w.Time)
	}
	p := m.Buffers[1]
	if p.Device != -1 || p.Kind != "pinned" || p.Bytes != 100 {
		t.Errorf("pinned buffer = %+v", p)
	}
	if bytes, n := m.Live(); bytes != 4<<20+100 || n != 2 {
		t.Errorf("Live() = %d bytes in %d, want %d in 2", bytes, n, 4<<20+100)
	}
	want := event.MemoryCounts{Allocs: 3, Frees: 1}
	if m.Counts != want || len(m.Warnings) != 0 {
		t.Errorf("counts = %+v, warnings %v; want %+v and none", m.Counts, m.Warnings, want)
	}
}

func TestSpanPath(t *testing.T) {
	var m *event.DeviceMemory
	eventtest.Record(t, 1000, func(ctx context.Context) {
		m = track(t, devmem.Options{}, func() {
			ctx, step := annotate.Step(ctx, "train", 3)
			ctx, fwd := annotate.Begin(ctx, "forward")
			devmem.Alloc(ctx, 1, 10, devmem.Attrs{})
			fwd.End()
			devmem.Alloc(ctx, 2, 20, devmem.Attrs{}) // forward ended: not in the path
			step.End()
		})
	})
	got := map[uint64]string{}
	for _, b := range m.Buffers {
		got[b.Address] = b.Span
	}
	if got[1] != "train/forward" || got[2] != "train" {
		t.Errorf("span paths = %v, want 1: train/forward, 2: train", got)
	}
}

func TestBadInputIsCountedNotFatal(t *testing.T) {
	m := track(t, devmem.Options{MaxBuffers: 2}, func() {
		ctx := context.Background()
		devmem.Alloc(ctx, 1, 10, devmem.Attrs{})
		devmem.Alloc(ctx, 2, 20, devmem.Attrs{})
		devmem.Alloc(ctx, 3, 30, devmem.Attrs{}) // table full
		devmem.Free(3)                           // so its free is unknown
		devmem.Free(99)                          // never allocated
		devmem.Free(2)
		devmem.Free(2)                           // double free
		devmem.Alloc(ctx, 4, 0, devmem.Attrs{})  // zero size
		devmem.Alloc(ctx, 1, 50, devmem.Attrs{}) // 1's free was missed
	})
	want := event.MemoryCounts{Allocs: 4, Frees: 1, Untracked: 1, UntrackedBytes: 30, UnknownFrees: 2, DoubleFrees: 1, ZeroSize: 1, Replaced: 1}
	if m.Counts != want {
		t.Errorf("counts = %+v\nwant     %+v", m.Counts, want)
	}
	if bytes, n := m.Live(); bytes != 50 || n != 1 {
		t.Errorf("live = %d bytes in %d buffers, want 50 in 1 (address 1's new buffer)", bytes, n)
	}
	codes := map[string]bool{}
	for _, w := range m.Warnings {
		codes[w.Code] = true
		if w.Source != "devmem" || w.Text == "" {
			t.Errorf("warning %+v", w)
		}
	}
	for _, c := range []string{"untracked", "unknown_free", "double_free", "zero_size", "replaced"} {
		if !codes[c] {
			t.Errorf("no %s warning in %v", c, m.Warnings)
		}
	}
}

func TestFreedAddressReused(t *testing.T) {
	m := track(t, devmem.Options{}, func() {
		devmem.Alloc(context.Background(), 1, 10, devmem.Attrs{})
		devmem.Free(1)
		devmem.Alloc(context.Background(), 1, 10, devmem.Attrs{}) // allocators reuse addresses
		devmem.Free(1)
		devmem.Free(1)
	})
	if m.Counts.DoubleFrees != 1 || m.Counts.UnknownFrees != 0 || len(m.Buffers) != 0 {
		t.Errorf("counts %+v, %d live", m.Counts, len(m.Buffers))
	}
}

func TestNoStacks(t *testing.T) {
	m := track(t, devmem.Options{StackDepth: -1}, func() {
		devmem.Alloc(context.Background(), 1, 10, devmem.Attrs{})
	})
	if len(m.Buffers) != 1 || m.Buffers[0].Stack != nil {
		t.Errorf("buffers %+v, want one without a stack", m.Buffers)
	}
}

func TestConcurrentTotals(t *testing.T) {
	const workers, each = 8, 500
	m := track(t, devmem.Options{}, func() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base := uint64(w) << 32
				for i := range uint64(each) {
					devmem.Alloc(context.Background(), base+i, 8, devmem.Attrs{Device: w % 2})
					if i%2 == 0 {
						devmem.Free(base + i)
					}
				}
			}()
		}
		wg.Wait()
	})
	if bytes, n := m.Live(); n != workers*each/2 || bytes != 8*workers*each/2 {
		t.Errorf("live %d bytes in %d buffers, want %d in %d", bytes, n, 8*workers*each/2, workers*each/2)
	}
}

func TestOffIsFree(t *testing.T) {
	if devmem.Tracking() {
		t.Fatal("tracking on at test start")
	}
	ctx := context.Background()
	a := devmem.Attrs{Tags: []string{"x"}}
	if n := testing.AllocsPerRun(100, func() {
		devmem.Alloc(ctx, 1, 10, a)
		devmem.Free(1)
	}); n != 0 {
		t.Errorf("Alloc+Free with tracking off allocate %v times", n)
	}
	if _, err := devmem.Snapshot(); !errors.Is(err, devmem.ErrNotTracking) {
		t.Errorf("Snapshot while off: %v", err)
	}
	if devmem.LiveBuffers() != nil {
		t.Error("LiveBuffers while off is not nil")
	}
	if err := devmem.Stop(); !errors.Is(err, devmem.ErrNotTracking) {
		t.Errorf("Stop while off: %v", err)
	}
}

func TestStartTwiceAndOptions(t *testing.T) {
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); err != nil {
		t.Fatal(err)
	}
	defer devmem.Stop()
	if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff}); !errors.Is(err, devmem.ErrTracking) {
		t.Errorf("second Start: %v", err)
	}
	for _, o := range []devmem.Options{{MaxBuffers: -1}, {StackDepth: 5000}, {CUDA: 7}} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", o)
		}
	}
}

func BenchmarkAlloc(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B) {
		b.ReportAllocs()
		for i := range uint64(b.N) {
			devmem.Alloc(ctx, i, 256, devmem.Attrs{})
			devmem.Free(i)
		}
	}
	b.Run("off", run)
	// With a session, every allocation and free is also an event of its
	// trace; sessions are renewed every chunk iterations (off the clock) so
	// that no event is dropped for a full buffer, which would cost less.
	session := func(b *testing.B) {
		b.ReportAllocs()
		const chunk = 1 << 16
		for done := 0; done < b.N; {
			n := min(chunk, b.N-done)
			b.StopTimer()
			buf := recorder.NewBuffer(int64(n)*8, 2)
			if !recorder.Activate(buf) {
				b.Fatal("another buffer is active")
			}
			b.StartTimer()
			for i := range uint64(n) {
				devmem.Alloc(ctx, i, 256, devmem.Attrs{})
				devmem.Free(i)
			}
			b.StopTimer()
			recorder.Deactivate(buf)
			if d := buf.Dropped(); d > 0 {
				b.Fatalf("%d events dropped", d)
			}
			b.StartTimer()
			done += n
		}
	}
	for _, c := range []struct {
		name  string
		depth int
		run   func(*testing.B)
	}{{"stacks", 0, run}, {"nostacks", -1, run}, {"session", 0, session}, {"session-nostacks", -1, session}} {
		b.Run(c.name, func(b *testing.B) {
			if err := devmem.Start(devmem.Options{CUDA: devmem.ModeOff, StackDepth: c.depth}); err != nil {
				b.Fatal(err)
			}
			defer devmem.Stop()
			c.run(b)
		})
	}
}

//go:noinline
func helperAlloc(ctx context.Context, addr uint64) {
	devmem.Alloc(ctx, addr, 10, devmem.Attrs{Skip: 1})
}

//go:noinline
func wantsMemory(ctx context.Context) { helperAlloc(ctx, 1) }

func TestSkipHelperFrames(t *testing.T) {
	m := track(t, devmem.Options{}, func() { wantsMemory(context.Background()) })
	if len(m.Buffers) != 1 || len(m.Buffers[0].Stack) == 0 || !strings.HasSuffix(m.Buffers[0].Stack[0].Function, "devmem_test.wantsMemory") {
		t.Errorf("stack %+v, want wantsMemory innermost (Skip: 1 leaves out helperAlloc)", m.Buffers)
	}
}
