//go:build !linux

package recorder

// boottime is not available here; ReadClocks then uses the monotonic clock.
func boottime() int64 { return 0 }
