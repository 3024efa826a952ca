// Package gpucheck checks a trace recorded on a real GPU against the
// workload of known shape that produced it (scripts/gpucheck/workload.cu,
// driven by internal/gpucheck/cmd/gpucheck under scripts/gpu-check): the
// counts, launch shapes and bytes devprof recorded must be what the
// workload launched, a spin kernel must last as long as it spun, and no
// device work may begin before the call that launched it. Its checks are
// tested here against the fake libcupti; the real run needs nvcc and an
// NVIDIA GPU.
package gpucheck

import (
	"fmt"
	"strings"

	"github.com/devprof/devprof/event"
)

// Kernel is a kernel the workload launched Count times with one shape.
type Kernel struct {
	Name        string // a substring of the demangled name
	Count       int
	Grid, Block string // "x,y,z"
	// SpinNs, when > 0, is how long each launch busy-waits on the GPU's
	// clock: its recorded duration must be at least that, and within
	// Slack above it.
	SpinNs, SlackNs int64
}

// Copy is a memory copy of one direction the workload made Count times.
type Copy struct {
	Kind  string // "HtoD", "DtoH", ...
	Bytes uint64
	Count int
}

// Workload is what was launched.
type Workload struct {
	Kernels []Kernel
	Copies  []Copy
}

// Check returns every way s disagrees with w (nil when none).
func Check(s *event.Snapshot, w Workload) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	args := func(r *event.Record) map[string]event.Arg {
		m := map[string]event.Arg{}
		for _, a := range s.Args(r) {
			m[a.Key] = a
		}
		return m
	}
	for _, k := range w.Kernels {
		n := 0
		for _, r := range s.Events {
			a := args(r)
			if kindOf(s, r, a) != event.ActivityKernel || !strings.Contains(s.Name(r), k.Name) {
				continue
			}
			n++
			if a[event.ArgGrid].Str != k.Grid || a[event.ArgBlock].Str != k.Block {
				bad("kernel %s: grid %q block %q, launched with %q %q", s.Name(r), a[event.ArgGrid].Str, a[event.ArgBlock].Str, k.Grid, k.Block)
			}
			if k.SpinNs > 0 {
				end, _ := s.EndOf(r)
				if d := end - r.Start(); d < k.SpinNs || d > k.SpinNs+k.SlackNs {
					bad("kernel %s lasted %d ns, spun %d ns (slack %d ns)", s.Name(r), d, k.SpinNs, k.SlackNs)
				}
			}
		}
		if n != k.Count {
			bad("kernel %q: %d recorded, %d launched", k.Name, n, k.Count)
		}
	}
	for _, c := range w.Copies {
		n := 0
		for _, r := range s.Events {
			a := args(r)
			if kindOf(s, r, a) != event.ActivityMemcpy || a[event.ArgCopyKind].Str != c.Kind {
				continue
			}
			n++
			if a[event.ArgBytes].Num != c.Bytes {
				bad("copy %s of %d bytes, made of %d", c.Kind, a[event.ArgBytes].Num, c.Bytes)
			}
		}
		if n != c.Count {
			bad("copies %s: %d recorded, %d made", c.Kind, n, c.Count)
		}
	}
	return append(problems, causality(s)...)
}

// kindOf is what a device record is: what the source said, or for a trace
// read from a file that does not say, what its arguments show.
func kindOf(s *event.Snapshot, r *event.Record, a map[string]event.Arg) event.ActivityKind {
	if r.Kind() != event.KindActivity {
		return event.ActivityUnknown
	}
	if k := r.Activity(); k != event.ActivityUnknown {
		return k
	}
	switch _, grid := a[event.ArgGrid]; {
	case grid:
		return event.ActivityKernel
	case a[event.ArgCopyKind].Str != "":
		return event.ActivityMemcpy
	}
	return event.ActivityUnknown
}

// causality checks that no device work begins before the host call that
// launched it (the two ends of each launch flow).
func causality(s *event.Snapshot) []string {
	calls := map[uint64]*event.Record{} // flow id -> host call
	var device []*event.Record
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind != event.ArgFlow {
				continue
			}
			if t, ok := s.TrackOf(r); ok && t.Kind == event.TrackDeviceStream {
				device = append(device, r)
			} else {
				calls[a.Num] = r
			}
		}
	}
	var problems []string
	linked := 0
	for _, d := range device {
		for _, a := range s.Args(d) {
			if c := calls[a.Num]; a.Kind == event.ArgFlow && c != nil {
				linked++
				if d.Start() < c.Start() {
					problems = append(problems, fmt.Sprintf("%s began %d ns before its call %s", s.Name(d), c.Start()-d.Start(), s.Name(c)))
				}
			}
		}
	}
	if len(device) > 0 && linked == 0 {
		problems = append(problems, "no device work is linked to the call that launched it")
	}
	return problems
}
