package devmem

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
)

// current is the running tracker; nil while tracking is off. Alloc and Free
// load it once: the whole cost of the explicit API when tracking is off.
var current atomic.Pointer[tracker]

// startMu orders Start and Stop.
var startMu sync.Mutex

type tracker struct {
	opts  Options
	tab   *table
	hooks cudaHooks // nil when CUDA is not hooked
	notes []event.Note
	// unhooked says why CUDA could not be hooked in ModeAuto, for every
	// Snapshot's warnings: a profile without CUDA allocations must say
	// that it is not because the program made none.
	unhooked *event.Warning
}

// ErrTracking is returned by Start while tracking is already on.
var ErrTracking = errors.New("devmem: tracking is already on")

// ErrNotTracking is returned by Snapshot's callers (package trace) and
// Stop when tracking is off.
var ErrNotTracking = errors.New("devmem: tracking is off (start it with devmem.Start or a trace session's DeviceMemory option)")

// Start turns tracking on. With Options.CUDA ModeAuto (the zero value) it
// hooks CUDA's allocation entry points when it can and otherwise tracks
// the explicit API alone, saying why in Snapshot's notes; with ModeOn a
// failure to hook CUDA is Start's error.
func Start(o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	startMu.Lock()
	defer startMu.Unlock()
	if current.Load() != nil {
		return ErrTracking
	}
	t := &tracker{opts: o, tab: newTable(o)}
	if o.CUDA != ModeOff {
		h, err := startCUDA(o, t.tab)
		switch {
		case err == nil:
			t.hooks = h
		case o.CUDA == ModeOn:
			return fmt.Errorf("devmem: hooking CUDA's allocations: %w", err)
		default:
			text := "CUDA allocations are not tracked (" + oneLine(err) + "); the explicit API is"
			t.notes = append(t.notes, event.Note{Source: noteSource, Text: text})
			t.unhooked = &event.Warning{Source: noteSource, Code: CodeCUDANotHooked, Text: text}
		}
	}
	current.Store(t)
	return nil
}

const noteSource = "devmem"

// CodeCUDANotHooked is the code of Snapshot's warning that CUDA's
// allocations are not tracked, and why (no libcupti, no driver, a build
// without cgo), when Options.CUDA is ModeAuto and hooking failed.
const CodeCUDANotHooked = "cuda_not_hooked"

// Stop turns tracking off and forgets the table. It returns the CUDA hooks'
// error, if stopping them failed.
func Stop() error {
	startMu.Lock()
	defer startMu.Unlock()
	t := current.Swap(nil)
	if t == nil {
		return ErrNotTracking
	}
	if t.hooks != nil {
		return t.hooks.stop()
	}
	return nil
}

// Tracking reports whether tracking is on.
func Tracking() bool { return current.Load() != nil }

// HookingCUDA reports whether tracking is on with CUDA's allocation entry
// points hooked.
func HookingCUDA() bool {
	t := current.Load()
	return t != nil && t.hooks != nil
}

// Attrs describe an allocation made through the explicit API.
type Attrs struct {
	// Device is the device ordinal the memory is on; -1 for host memory
	// (the zero value is device 0).
	Device int
	// Kind says what memory it is ("device", "pinned", "managed", "pool",
	// …); "" means "device".
	Kind string
	// Tags label the allocation (MXNet's storage tags: "weights",
	// "optimizer_state", "workspace"); they are added to the tags of the
	// context (WithTags).
	Tags []string
	// Skip leaves out the innermost Skip frames of the stack beyond
	// Alloc's caller, as testing.T.Helper does for test failures: an
	// allocation helper passes 1 so that its caller, the code that wanted
	// the memory, is what profiles name (pprof's -top counts the
	// innermost frame).
	Skip int
}

// Alloc records that addr now holds bytes of memory, with the calling
// goroutine's stack, the tags of ctx (WithTags) and of a, and the path of
// the annotate spans open in ctx. addr is any value unique among the
// program's live explicit allocations: a device pointer or a handle. With
// tracking off it costs one atomic load.
func Alloc(ctx context.Context, addr, bytes uint64, a Attrs) {
	if t := current.Load(); t != nil {
		t.explicitAlloc(ctx, addr, bytes, &a)
	}
}

// Free records that the allocation at addr (made with Alloc) was freed.
// A free of an address Alloc never recorded, or one freed already, is
// counted (MemoryCounts.UnknownFrees, DoubleFrees) and otherwise ignored.
func Free(addr uint64) {
	if t := current.Load(); t != nil {
		t.explicitFree(addr)
	}
}

//go:noinline
func (t *tracker) explicitFree(addr uint64) {
	evs := t.tab.free(sourceAPI, addr, recorder.Active())
	evs.write()
}

//go:noinline
func (t *tracker) explicitAlloc(ctx context.Context, addr, bytes uint64, a *Attrs) {
	var small [DefaultStackDepth]uintptr
	pcs := small[:min(t.opts.StackDepth, len(small))]
	if t.opts.StackDepth > len(small) {
		pcs = make([]uintptr, t.opts.StackDepth)
	}
	// Skip runtime.Callers, this function and Alloc: the first frame is
	// Alloc's caller.
	n := 0
	if len(pcs) > 0 {
		n = runtime.Callers(3+max(a.Skip, 0), pcs)
	}
	kind := a.Kind
	if kind == "" {
		kind = "device"
	}
	device := a.Device
	if device < -1 {
		device = -1
	}
	al := alloc{
		src:    sourceAPI,
		addr:   addr,
		bytes:  bytes,
		step:   -1,
		device: int32(min(device, 1<<31-1)),
		kind:   kind,
	}
	al.tags = appendContextTags(nil, ctx)
	al.tags = append(al.tags, a.Tags...)
	buf := recorder.Active()
	if buf != nil && ctx != nil {
		al.span = spanPath(buf, ctx)
		if step, ok := buf.StepOf(ctx); ok {
			al.step = step
		}
	}
	evs := t.tab.alloc(&al, pcs[:n], time.Now(), buf)
	evs.write()
}

// spanPath is the path of the annotate spans of buf's session open in ctx
// ("train/step").
func spanPath(buf *recorder.Buffer, ctx context.Context) string {
	var names [16]string
	return strings.Join(buf.SpanPath(ctx, names[:0]), "/")
}

type tagsKey struct{}

// WithTags returns a context whose explicit allocations carry tags (after
// those of ctx), like MXNet's storage-tag scopes: a training loop tags
// ctx with "optimizer_state" once and every allocation under it says so.
func WithTags(ctx context.Context, tags ...string) context.Context {
	if len(tags) == 0 {
		return ctx
	}
	all := appendContextTags(nil, ctx)
	return context.WithValue(ctx, tagsKey{}, append(all, tags...))
}

func appendContextTags(dst []string, ctx context.Context) []string {
	if ctx == nil {
		return dst
	}
	if tags, ok := ctx.Value(tagsKey{}).([]string); ok {
		return append(dst, tags...)
	}
	return dst
}

// LiveBuffers lists the live allocations, largest first, or nil when
// tracking is off.
func LiveBuffers() []event.Buffer {
	m, err := Snapshot()
	if err != nil {
		return nil
	}
	return m.Buffers
}

// Snapshot returns the live allocations and the tracker's counts now, or
// ErrNotTracking.
func Snapshot() (*event.DeviceMemory, error) {
	t := current.Load()
	if t == nil {
		return nil, ErrNotTracking
	}
	m := t.tab.snapshot(time.Now())
	if t.hooks != nil {
		m.Warnings = append(m.Warnings, t.hooks.warnings()...)
	}
	if t.unhooked != nil {
		m.Warnings = append(m.Warnings, *t.unhooked)
	}
	return m, nil
}

// Notes are the facts about how tracking runs (whether CUDA is hooked, and
// why not), for a trace session to carry.
func Notes() []event.Note {
	t := current.Load()
	if t == nil {
		return nil
	}
	return append([]event.Note(nil), t.notes...)
}

// Counts returns the tracker's running totals (zero when tracking is off).
func Counts() event.MemoryCounts {
	t := current.Load()
	if t == nil {
		return event.MemoryCounts{}
	}
	t.tab.mu.Lock()
	defer t.tab.mu.Unlock()
	return t.tab.counts
}

// Warnings words what counts make a profile incomplete, as traces show
// warnings. Package trace uses it for the part of the counts a session saw.
func Warnings(c event.MemoryCounts) []event.Warning {
	return warnings(c)
}

func warnings(c event.MemoryCounts) []event.Warning {
	var w []event.Warning
	add := func(n uint64, code, text string) {
		if n > 0 {
			w = append(w, event.Warning{Source: noteSource, Code: code, Text: text})
		}
	}
	add(c.Untracked, "untracked", fmt.Sprintf("%s (%d bytes) not tracked: the tracking table was full (raise MaxBuffers, advanced key device_memory_max_buffers)", count(c.Untracked, "allocation"), c.UntrackedBytes))
	add(c.UnknownFrees, "unknown_free", count(c.UnknownFrees, "free")+" of a pointer the tracker never saw allocated (allocated before tracking started, or not tracked)")
	add(c.DoubleFrees, "double_free", count(c.DoubleFrees, "double free")+" (a pointer freed again after its free)")
	add(c.ZeroSize, "zero_size", count(c.ZeroSize, "allocation")+" of zero bytes (not tracked: they hold no memory)")
	add(c.Replaced, "replaced", count(c.Replaced, "allocation")+" at an address still live in the table: the earlier buffer's free was not seen, so it was dropped")
	return w
}

// count says "1 free" or "3 frees".
func count(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// oneLine keeps the first line of an error's text.
func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
