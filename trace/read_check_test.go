package trace_test

import "testing"

// checkReadable is filled in once the Perfetto reader exists.
func checkReadable(t *testing.T, path string, finished map[string]bool) { t.Helper() }
