//go:build !amd64

package event

func rdtsc() int64 { return nanotime() }

func invariantTSC() bool { return false }
