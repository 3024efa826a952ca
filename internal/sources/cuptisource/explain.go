package cuptisource

import (
	"errors"
	"os"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/sources/cupti"
)

// Explain turns an error from Start into the warning the outputs carry
// (xprof shows it as a banner above every tool) and the session prints
// once on standard error. On a machine without CUDA (no libcupti found
// and nothing says CUDA is installed) it is one short line: what is off
// and how to silence it or see more. Where CUDA looks installed, or with
// DEVPROF_VERBOSE=1, it is the whole error, listing every place searched,
// so that someone whose libcupti was not found can see why.
func Explain(err error) event.Warning {
	w := event.Warning{Source: cupti.SourceName, Code: cupti.CodeUnavailable, Text: "GPU tracing off: " + err.Error()}
	if errors.Is(err, cuptiwrap.ErrLibraryNotFound) && !cudaLooksInstalled() && os.Getenv("DEVPROF_VERBOSE") != "1" {
		w.Text = "GPU tracing off: no libcupti and no CUDA installation found " +
			"(DEVPROF_VERBOSE=1 lists where; DEVPROF_DEVICE_TRACER=off or DeviceTracerLevel: trace.Off silences this)"
	}
	return w
}

// Brief returns the one line a session prints on standard error when
// Start failed with err on a machine that simply has no GPU (no driver or
// device, or neither libcupti nor CUDA installed): short, naming where
// the details are and how to silence it. It returns "" for every other
// error, whose whole text (Explain's) is what the user needs to act on.
func Brief(err error) string {
	const tail = " (the trace's warnings say more; DEVPROF_DEVICE_TRACER=off silences it)"
	switch {
	case errors.Is(err, cuptiwrap.ErrNoDevice):
		return "GPU tracing off: no NVIDIA GPU or driver" + tail
	case errors.Is(err, cuptiwrap.ErrLibraryNotFound) && !cudaLooksInstalled() && os.Getenv("DEVPROF_VERBOSE") != "1":
		return "GPU tracing off: no libcupti or CUDA found" + tail
	}
	return ""
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
