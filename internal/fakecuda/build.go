// Package fakecuda builds and drives devprof's stand-in libcupti
// (internal/cuptiwrap/testdata/fakecupti/fakecupti.c) for tests: [Build] compiles it
// with the system C compiler and returns the path to pass as
// cuptiwrap.Options.Library (or $DEVPROF_CUPTI_LIB); [Open] loads the same
// file and calls its test hooks, such as [Lib.Launch], which plays a program
// launching a kernel on the calling thread. Go test files cannot use cgo,
// so tests in any package reach the fake through here:
//
//	path := fakecuda.Build(t)             // fails the test if there is no C compiler
//	t.Setenv("DEVPROF_CUPTI_LIB", path)   // or cuptiwrap.Options{Library: path}
//	t.Setenv("FAKECUPTI_LAYOUT", "12")    // see fakecupti.c for the other knobs
//	... start the session ...
//	fk, _ := fakecuda.Open(path)
//	runtime.LockOSThread()
//	corr := fk.Launch("_Z6matmulPfS_S_i", 0, 7) // a kernel on device 0, stream 7
//
// It also plays CUDA allocations and frees the way CUDA does under
// CUPTI's callback API, for cuptiwrap's memory hooks: [Lib.Memory] takes
// any of the entry points the hooks follow, and helpers such as
// [Lib.CudaMalloc], [Lib.CudaFree] and [Lib.CudaMallocAsync] play the
// common ones. They are real cgo calls, so a test that calls them is a Go
// program calling cudaMalloc through cgo:
//
//	h, _ := cuptiwrap.StartMemoryHooks(cuptiwrap.HookOptions{Library: path}, handler)
//	ptr := fk.CudaMalloc(1<<20, 0) // handler runs here, on this goroutine
//	fk.CudaFree(ptr)
//	h.Stop()
//
// It is a test helper: nothing in devprof's own code imports it.
package fakecuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Variant selects how the fake is compiled.
type Variant string

// The variants of the fake.
const (
	// Full exports every entry point devprof uses, optional ones included.
	Full Variant = "full"
	// Minimal leaves out the optional entry points
	// (cuptiActivityFlushPeriod, cuptiActivityRegisterTimestampCallback,
	// cuptiGetCallbackName, and the callback API's cuptiEnableCallback and
	// cuptiGetDeviceId), as an old or stripped-down CUPTI would.
	Minimal Variant = "minimal"
)

// Build compiles the full fake (once per process; the result is cached in
// the user's cache directory, os.UserCacheDir, by source hash) and returns the .so path. It
// fails the test, saying what to install, when there is no C compiler.
func Build(tb testing.TB) string {
	tb.Helper()
	return BuildVariant(tb, Full)
}

// BuildVariant is [Build] for a given variant.
func BuildVariant(tb testing.TB, v Variant) string {
	tb.Helper()
	p, err := Compile(v)
	if err != nil {
		tb.Fatalf("building the fake libcupti: %v", err)
	}
	return p
}

var built struct {
	sync.Mutex
	paths map[Variant]string
}

// Compile builds the fake and returns the path of the shared library.
func Compile(v Variant) (string, error) {
	built.Lock()
	defer built.Unlock()
	if p := built.paths[v]; p != "" {
		return p, nil
	}
	var flags []string
	switch v {
	case Full:
	case Minimal:
		flags = append(flags, "-DFAKECUPTI_MINIMAL")
	default:
		return "", fmt.Errorf("fakecuda: unknown variant %q", v)
	}
	dir, err := SourceDir()
	if err != nil {
		return "", err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		return "", fmt.Errorf("fakecuda: no C compiler %q on PATH (%v): install one, e.g. apt-get install gcc, or set CC", cc, err)
	}
	h := sha256.New()
	for _, f := range []string{"fakecupti.c", "fake_records.h", "fake_params.h"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("fakecuda: reading the fake's source: %w", err)
		}
		h.Write(b)
	}
	fmt.Fprint(h, ccPath, flags)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	// The cache is shared by the test binaries `go test ./...` runs in
	// parallel: build under a private name, then rename into place. It
	// lives in the user's cache directory, not the system's temporary one,
	// where a test run must leave nothing behind.
	outDir := filepath.Join(cacheDir(), "devprof", "fakecupti-"+key)
	out := filepath.Join(outDir, "libcupti-fake-"+string(v)+".so")
	if _, err := os.Stat(out); err == nil {
		built.paths = setPath(built.paths, v, out)
		return out, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("fakecuda: %w", err)
	}
	tmp, err := os.CreateTemp(outDir, "build-*.so")
	if err != nil {
		return "", fmt.Errorf("fakecuda: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror"}, flags...)
	args = append(args, "-o", tmp.Name(), filepath.Join(dir, "fakecupti.c"), "-lpthread")
	cmd := exec.Command(ccPath, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fakecuda: %s %v: %v\n%s", cc, args, err, msg)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("fakecuda: %w", err)
	}
	built.paths = setPath(built.paths, v, out)
	return out, nil
}

func setPath(m map[Variant]string, v Variant, p string) map[Variant]string {
	if m == nil {
		m = map[Variant]string{}
	}
	m[v] = p
	return m
}

// SourceDir returns the directory holding fakecupti.c, found relative to
// this package's source (tests run from the source tree).
func SourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("fakecuda: cannot locate the package source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "cuptiwrap", "testdata", "fakecupti")
	if _, err := os.Stat(filepath.Join(dir, "fakecupti.c")); err != nil {
		return "", fmt.Errorf("fakecuda: the fake's source is missing: %w", err)
	}
	return filepath.Clean(dir), nil
}

// cacheDir is where built fakes are kept: the user's cache directory, or
// without a home (some CI containers) the directory Go caches builds in.
func cacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d
	}
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && len(out) > 1 {
		return filepath.Dir(string(out[:len(out)-1]))
	}
	return os.TempDir()
}
