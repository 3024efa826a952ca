package cupti

import (
	"errors"
	"os"
	"strings"

	"github.com/devprof/devprof/cuptiwrap"
)

// Notice is the line a program prints on standard error when Start fails
// with err. On a machine without CUDA (no libcupti found and nothing says
// CUDA is installed) it is one line: what is off, why, and how to silence
// it; the full explanation (every place searched) is in the outputs'
// warnings and in err. Where CUDA looks installed, or with
// DEVPROF_VERBOSE=1, it is Explain's full text, so that someone whose
// libcupti was not found sees every place tried.
func Notice(err error) string {
	if !errors.Is(err, cuptiwrap.ErrLibraryNotFound) || cudaLooksInstalled() || os.Getenv("DEVPROF_VERBOSE") == "1" {
		return "devprof: " + Explain(err).Text
	}
	return "devprof: GPU tracing off: no libcupti found (no CUDA on this machine?); the outputs' warnings list every place searched " +
		"(or set DEVPROF_VERBOSE=1); record host spans only with DeviceTracerLevel: trace.Off to silence this"
}

// cudaLooksInstalled reports whether the user has told devprof where CUDA
// is, or a toolkit sits in its usual place.
func cudaLooksInstalled() bool {
	for _, v := range []string{"DEVPROF_CUPTI_LIB", "CUDA_HOME", "CUDA_PATH"} {
		if strings.TrimSpace(os.Getenv(v)) != "" {
			return true
		}
	}
	for _, d := range cudaDirs {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// cudaDirs are where a CUDA toolkit is usually installed.
var cudaDirs = []string{"/usr/local/cuda"}
