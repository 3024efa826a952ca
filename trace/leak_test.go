package trace_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: Stop
// must leave nothing of sessions (the prefetcher, the calibration ticker, sources' goroutines) behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
