//go:build !cgo

package fakecuda

import (
	"errors"
	"unsafe"
)

var errNoCgo = errors.New("fakecuda: calling the fake libcupti needs cgo (CGO_ENABLED=1 and a C compiler)")

// Lib is the loaded fake; without cgo it cannot be loaded.
type Lib struct{}

// Open fails: dlopen needs cgo.
func Open(path string) (*Lib, error) { return nil, errNoCgo }

// Launch returns 0.
func (l *Lib) Launch(kernel string, device, stream uint32) uint32 { return 0 }

// Enabled returns false.
func (l *Lib) Enabled(kind uint32) bool { return false }

// Buffer is C memory holding activity records.
type Buffer struct {
	Ptr   unsafe.Pointer
	Valid int
}

// Free does nothing.
func (b Buffer) Free() {}

// Fill fails without cgo.
func (l *Lib) Fill(layout string, size int) (Buffer, error) { return Buffer{}, errNoCgo }

// Memory plays nothing without cgo: its result is -1.
func (l *Lib) Memory(op MemOp) MemResult { return MemResult{Result: -1} }

// DeviceOf returns -1.
func (l *Lib) DeviceOf(ptr uint64) int32 { return -1 }

// CallbacksEnabled returns 0.
func (l *Lib) CallbacksEnabled() int { return 0 }
