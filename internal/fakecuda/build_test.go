package fakecuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildLeavesNothingInTempDir: the built fake is cached in the user's
// cache directory; the system's temporary directory stays as it was.
func TestBuildLeavesNothingInTempDir(t *testing.T) {
	tmp, cache := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_CACHE_HOME", cache)
	built.Lock()
	saved := built.paths
	built.paths = nil
	built.Unlock()
	defer func() { built.Lock(); built.paths = saved; built.Unlock() }()
	p, err := Compile(Minimal)
	if err != nil {
		t.Skip(err) // no C compiler: Build's own callers say so
	}
	if !strings.HasPrefix(p, filepath.Join(cache, "devprof")+string(filepath.Separator)) {
		t.Errorf("built %s, want it under %s", p, cache)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("building left %v in the temporary directory", left)
	}
}
