package gpucheck

import (
	"fmt"
	"strings"

	"github.com/devprof/devprof/event"
)

// Alloc is a buffer the workload holds: Count live buffers of Bytes of one
// kind, made by API from a Go stack that includes the function Caller.
type Alloc struct {
	API    string // "cudaMalloc", "cudaMallocHost"
	Kind   string // "device", "pinned"
	Bytes  uint64
	Count  int
	Device int
	Caller string // a substring of a Go function in the allocating stack
}

// CheckMemory returns every way the live buffers of m disagree with want:
// each Alloc must be there exactly Count times, with its device, kind and
// a stack through Caller, and nothing else may be live. frees is how many
// frees the workload made; they must all have been matched.
func CheckMemory(m *event.DeviceMemory, want []Alloc, frees uint64) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	used := make([]bool, len(m.Buffers))
	for _, w := range want {
		n := 0
		for i, b := range m.Buffers {
			if used[i] || b.API != w.API || b.Bytes != w.Bytes {
				continue
			}
			used[i] = true
			n += max(b.Count, 1)
			if b.Kind != w.Kind || b.Device != w.Device || b.Source != "cuda" {
				bad("%s of %d bytes: kind %q device %d source %q, want %q on device %d from cuda", w.API, w.Bytes, b.Kind, b.Device, b.Source, w.Kind, w.Device)
			}
			if !stackHas(b.Stack, w.Caller) {
				bad("%s of %d bytes: the Go stack %v does not pass through %s", w.API, w.Bytes, b.Stack, w.Caller)
			}
		}
		if n != w.Count {
			bad("%s of %d bytes: %d live, want %d", w.API, w.Bytes, n, w.Count)
		}
	}
	for i, b := range m.Buffers {
		if !used[i] {
			bad("unexpected live buffer: %s of %d bytes (%s) at %s", b.API, b.Bytes, b.Kind, b.Site())
		}
	}
	c := m.Counts
	if c.Frees != frees || c.UnknownFrees != 0 || c.DoubleFrees != 0 || c.Untracked != 0 || c.Replaced != 0 {
		bad("counts %+v: want %d frees, all matched, nothing untracked or replaced", c, frees)
	}
	return problems
}

func stackHas(st []event.Frame, fn string) bool {
	for _, f := range st {
		if strings.Contains(f.Function, fn) {
			return true
		}
	}
	return false
}
