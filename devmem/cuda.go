package devmem

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/internal/recorder"
)

// cudaHooks is the tracker's hold on CUDA's allocation entry points.
type cudaHooks interface {
	stop() error
	warnings() []event.Warning
}

type cuptiHooks struct {
	h *cuptiwrap.MemoryHooks
}

// startCUDA hooks CUDA's allocations and frees into tab. The handler runs
// on the thread that made the CUDA call, inside it: it takes the stack and
// a short lock, and never calls CUDA.
func startCUDA(o Options, tab *table) (cudaHooks, error) {
	depth := o.StackDepth
	h, err := cuptiwrap.StartMemoryHooks(cuptiwrap.HookOptions{Library: o.Library}, func(c *cuptiwrap.MemoryCall) {
		buf := recorder.Active()
		if c.Free {
			evs := tab.free(sourceCUDA, c.Address, buf)
			evs.write()
			return
		}
		var small [DefaultStackDepth]uintptr
		pcs := small[:min(depth, len(small))]
		if depth > len(small) {
			pcs = make([]uintptr, depth)
		}
		n := 0
		if len(pcs) > 0 {
			// The frames between here and the Go code that called CUDA
			// (this closure, cuptiwrap's export, cgo's callback) are
			// dropped when the stack is resolved.
			n = runtime.Callers(2, pcs)
		}
		a := alloc{
			src:    sourceCUDA,
			addr:   c.Address,
			bytes:  c.Bytes,
			device: c.Device,
			stream: c.Stream,
			step:   -1,
			corr:   c.Correlation,
			kind:   cudaKind(c.Kind),
			api:    c.API,
		}
		if ctx := scopeContext(); ctx != nil {
			a.tags = appendContextTags(nil, ctx)
			if buf != nil {
				a.span = spanPath(buf, ctx)
				if step, ok := buf.StepOf(ctx); ok {
					a.step = step
				}
			}
		}
		evs := tab.alloc(&a, pcs[:n], time.Now(), buf)
		evs.write()
	})
	if err != nil {
		return nil, err
	}
	return cuptiHooks{h}, nil
}

func (c cuptiHooks) stop() error { return c.h.Stop() }

// warnings says what the hooks saw fail or cannot see.
func (c cuptiHooks) warnings() []event.Warning {
	st := c.h.Stats()
	var w []event.Warning
	if st.Failed > 0 {
		w = append(w, event.Warning{Source: noteSource, Code: "cuda_failed",
			Text: fmt.Sprintf("%d CUDA allocation or free calls failed (an allocation failing near the device's capacity is an out-of-memory error; these live buffers are what held it)", st.Failed)})
	}
	if len(st.Unhooked) > 0 {
		w = append(w, event.Warning{Source: noteSource, Code: "cuda_unhooked",
			Text: "this libcupti cannot hook " + strings.Join(st.Unhooked, ", ") + ": memory allocated through them is not tracked"})
	}
	return w
}

// cudaKind names a CUPTI memory kind as the event model does
// (event.ArgMemoryKind): "device", "pinned", "managed", ….
func cudaKind(k uint8) string {
	n := cuptiwrap.MemoryKindName(k)
	switch n {
	case "DeviceStatic":
		return "device_static"
	case "ManagedStatic":
		return "managed_static"
	}
	if strings.HasPrefix(n, "MemoryKind(") {
		return fmt.Sprintf("kind_%d", k)
	}
	return strings.ToLower(n)
}
