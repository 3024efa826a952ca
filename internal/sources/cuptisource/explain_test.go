package cuptisource

import (
	"fmt"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/cuptiwrap"
)

func TestExplain(t *testing.T) {
	notFound := fmt.Errorf("%w (needed for GPU activity); tried:\n  libcupti.so.13: no such file\n  libcupti.so.12: no such file", cuptiwrap.ErrLibraryNotFound)
	for _, v := range []string{"DEVPROF_CUPTI_LIB", "CUDA_HOME", "CUDA_PATH", "DEVPROF_VERBOSE"} {
		t.Setenv(v, "")
	}
	cudaDirs = []string{t.TempDir() + "/no-cuda-here"}
	defer func() { cudaDirs = []string{"/usr/local/cuda"} }()

	// A machine without CUDA: one short line, saying how to silence it and
	// how to see the details.
	n := Explain(notFound).Text
	if strings.Contains(n, "\n") || len(n) > 200 || !strings.Contains(n, "trace.Off") || !strings.Contains(n, "DEVPROF_DEVICE_TRACER=off") || !strings.Contains(n, "DEVPROF_VERBOSE=1") || strings.Contains(n, "libcupti.so.13") {
		t.Errorf("warning without CUDA is not the one short line: %q", n)
	}
	// Someone with CUDA installed sees every place tried.
	for _, env := range []string{"CUDA_HOME", "DEVPROF_CUPTI_LIB", "DEVPROF_VERBOSE"} {
		t.Run(env, func(t *testing.T) {
			v := "/opt/cuda"
			if env == "DEVPROF_VERBOSE" {
				v = "1"
			}
			t.Setenv(env, v)
			if n := Explain(notFound).Text; !strings.Contains(n, "libcupti.so.12: no such file") {
				t.Errorf("with %s set the warning hides the places tried: %q", env, n)
			}
		})
	}
	cudaDirs = []string{t.TempDir()}
	if n := Explain(notFound).Text; !strings.Contains(n, "libcupti.so.13") {
		t.Errorf("with a CUDA directory present the warning hides the places tried: %q", n)
	}
	// Other failures (a GPU that cannot be profiled) always say everything.
	cudaDirs = []string{t.TempDir() + "/no-cuda-here"}
	perm := &cuptiwrap.Error{Op: "cuptiActivityEnable", Code: 35, Name: "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}
	if n := Explain(perm).Text; n != "GPU tracing off: "+perm.Error() {
		t.Errorf("warning for %v: %q, want the full explanation", perm, n)
	}
}

// On a machine without a GPU a session prints one short line, which says
// where the details are and how to silence it; every other failure keeps
// its whole text.
func TestBriefIsOneShortLine(t *testing.T) {
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CUDA_PATH", "")
	t.Setenv("DEVPROF_CUPTI_LIB", "")
	t.Setenv("DEVPROF_VERBOSE", "")
	for _, err := range []error{cuptiwrap.ErrNoDevice, fmt.Errorf("cuptiSubscribe: %w", cuptiwrap.ErrNoDevice)} {
		b := Brief(err)
		if line := "devprof: " + b; b == "" || len(line) > 120 || !strings.Contains(b, "DEVPROF_DEVICE_TRACER=off") || strings.Contains(b, "\n") {
			t.Errorf("Brief(%v) = %q (%d characters with its prefix): want one line of at most 120 naming the switch", err, b, len(line))
		}
	}
	if b := Brief(cuptiwrap.ErrPermission); b != "" {
		t.Errorf("Brief(ErrPermission) = %q: a failure to act on keeps its whole text", b)
	}
}
