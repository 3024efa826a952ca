//go:build !amd64

package recorder

func rdtsc() int64 { return nanotime() }

func invariantTSC() bool { return false }
