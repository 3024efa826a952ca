package fakecuda

import (
	"os"
	"testing"
)

// RequireRealEnv names the environment variable under which a test that
// needs Debian's real CUPTI packages fails instead of skipping when they
// are missing. scripts/test (and so CI) sets it, so there those tests
// always run.
const RequireRealEnv = "DEVPROF_REQUIRE_CUPTI"

// MissingReal reports that what a test needs from Debian's real CUPTI
// packages (headers or libcupti) is missing, because of err: the test
// fails where RequireRealEnv=1 is set, and otherwise skips, naming the
// setup command, so that a fresh clone's first `go test ./...` passes.
func MissingReal(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := what + " is missing (" + err.Error() + "): run scripts/cupti-deps as root (Debian's libcupti-dev and libcupti11.8 from non-free)"
	if os.Getenv(RequireRealEnv) == "1" {
		tb.Fatal(msg + "; " + RequireRealEnv + "=1 forbids skipping")
	}
	tb.Skip(msg)
}
