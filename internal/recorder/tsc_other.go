//go:build !amd64

package recorder

import "unsafe"

func rdtsc() int64 { return nanotime() }

func invariantTSC() bool { return false }

func prefetchw(p unsafe.Pointer) {}
