package devmem

import (
	"fmt"
	"strings"

	"github.com/devprof/devprof/internal/mode"
)

// Mode says whether tracking hooks CUDA's allocation entry points. It is
// the one mode type of devprof's optional parts (nvml.Mode and
// goruntime.Mode are the same type).
type Mode = mode.Mode

const (
	// ModeAuto hooks CUDA when libcupti loads and a driver answers, and
	// otherwise tracks the explicit API alone (Snapshot says why in a note).
	ModeAuto = mode.Auto
	// ModeOn makes Start fail when CUDA cannot be hooked.
	ModeOn = mode.On
	// ModeOff tracks the explicit API alone.
	ModeOff = mode.Off
)

// ParseMode reads a mode by name ("auto", "on", "off", in any case).
func ParseMode(s string) (Mode, error) { return mode.Parse(s, "devmem: CUDA mode") }

// DefaultMaxBuffers is the tracking table's bound when Options.MaxBuffers
// is 0: about 200 MB of table at its fullest with default stacks shared.
const DefaultMaxBuffers = 1 << 20

// DefaultStackDepth is how many frames an allocation keeps when
// Options.StackDepth is 0 (runtime/pprof keeps 32 in memory profiles; CUDA
// allocations tend to sit under deeper framework stacks).
const DefaultStackDepth = 64

// maxStackDepth bounds StackDepth: deeper stacks cost time at every
// allocation for frames no report shows.
const maxStackDepth = 1024

// Options configure tracking. The zero value hooks CUDA when it can, keeps
// up to DefaultMaxBuffers live allocations and DefaultStackDepth frames.
type Options struct {
	// CUDA says whether CUDA's allocation entry points are hooked.
	CUDA Mode
	// Library is the libcupti to load for the CUDA hooks; "" searches
	// where the CUPTI source does ($DEVPROF_CUPTI_LIB, the loader's path,
	// CUDA toolkit directories).
	Library string
	// MaxBuffers bounds the live allocations tracked; past it allocations
	// are counted (MemoryCounts.Untracked) but not stored. 0 means
	// DefaultMaxBuffers. Advanced key (trace): device_memory_max_buffers.
	MaxBuffers int
	// StackDepth is the most Go frames kept per allocation: 0 means
	// DefaultStackDepth, negative keeps no stacks (cheapest: the profile
	// then groups by device, kind, tags and span alone).
	StackDepth int
	// Bindings are the import paths of packages (a path stands for the
	// packages under it too) whose frames are glue between the code that
	// allocates and CUDA: a Go CUDA binding, or a framework's allocator
	// above it. Profiles name the first frame past them as the call site
	// (event.Buffer.Glue), and keep the whole stack. The package that
	// called C for a CUDA allocation is found without being named here
	// (event.DeviceMemory.MarkGlue); name the layers above it.
	Bindings []string
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	if o.CUDA > ModeOff {
		return fmt.Errorf("devmem.Options.CUDA is %v: want ModeAuto, ModeOn or ModeOff", o.CUDA)
	}
	if o.MaxBuffers < 0 {
		return fmt.Errorf("devmem.Options.MaxBuffers (trace.Options.DeviceMemory.MaxBuffers, advanced key device_memory_max_buffers) is %d: want 0 (default %d) or more", o.MaxBuffers, DefaultMaxBuffers)
	}
	if o.StackDepth > maxStackDepth {
		return fmt.Errorf("devmem.Options.StackDepth is %d: at most %d frames are kept", o.StackDepth, maxStackDepth)
	}
	for _, b := range o.Bindings {
		if b == "" || strings.ContainsAny(b, " \t\n") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") {
			return fmt.Errorf("devmem.Options.Bindings has %q: want package import paths (\"github.com/org/cuda\")", b)
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxBuffers == 0 {
		o.MaxBuffers = DefaultMaxBuffers
	}
	switch {
	case o.StackDepth == 0:
		o.StackDepth = DefaultStackDepth
	case o.StackDepth < 0:
		o.StackDepth = 0
	}
	return o
}
