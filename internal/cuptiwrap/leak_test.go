package cuptiwrap

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: Stop
// must leave nothing of the collector's parser and flusher behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
