package cuptisource

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: Stop
// must leave nothing of the CUPTI source and its collector behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
