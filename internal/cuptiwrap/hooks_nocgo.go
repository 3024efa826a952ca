//go:build !cgo

package cuptiwrap

// MemoryHooks reports CUDA allocations and frees. This build has no cgo,
// so none can exist: [StartMemoryHooks] always fails with [ErrNeedsCgo].
type MemoryHooks struct{}

// StartMemoryHooks fails: CUPTI's callbacks need cgo (CGO_ENABLED=1 and a
// C compiler).
func StartMemoryHooks(o HookOptions, handler func(*MemoryCall)) (*MemoryHooks, error) {
	return nil, ErrNeedsCgo
}

// Stop returns ErrNeedsCgo.
func (h *MemoryHooks) Stop() error { return ErrNeedsCgo }

// Stats returns the zero HookStats.
func (h *MemoryHooks) Stats() HookStats { return HookStats{} }
