package cuptiwrap

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is. [Start]'s errors match at most one of them.
var (
	// ErrNeedsCgo: this build has no cgo, so it cannot load libcupti.
	ErrNeedsCgo = errors.New("cuptiwrap: device tracing needs cgo: build with CGO_ENABLED=1 and a C compiler (gcc or clang) installed")
	// ErrLibraryNotFound: no usable libcupti could be loaded; the error is a
	// [*LoadError] listing every place tried.
	ErrLibraryNotFound = errors.New("cuptiwrap: libcupti not found")
	// ErrAlreadyStarted: another Collector is running. CUPTI's activity
	// buffers and callbacks are process-wide, so there can be only one.
	ErrAlreadyStarted = errors.New("cuptiwrap: a device collector is already running in this process (CUPTI is process-global): Stop it first")
	// ErrStopped: the Collector was stopped.
	ErrStopped = errors.New("cuptiwrap: collector stopped")
	// ErrNoDevice matches an [*Error] saying CUPTI found no usable GPU or
	// driver (CUPTI_ERROR_NOT_INITIALIZED): record without device activity.
	ErrNoDevice = errors.New("cuptiwrap: no NVIDIA GPU or driver usable")
	// ErrPermission matches an [*Error] for CUPTI_ERROR_INSUFFICIENT_PRIVILEGES.
	ErrPermission = errors.New("cuptiwrap: not permitted to profile the GPU")
	// ErrProfilerConflict matches an [*Error] saying another CUPTI client
	// (Nsight, compute-sanitizer, another tracer) owns this process.
	ErrProfilerConflict = errors.New("cuptiwrap: another profiler is using CUPTI")
)

// CUptiResult codes with their own handling or message.
const (
	codeMaxLimitReached   = 12
	codeNotInitialized    = 15
	codeQueueEmpty        = 18
	codeInvalidKind       = 21
	codeNotSupported      = 27
	codeNotCompatible     = 14
	codeInsufficientPrivs = 35
	codeMultipleSubs      = 39
)

// Error is a failed CUPTI call.
type Error struct {
	Op     string // the CUPTI function, e.g. "cuptiActivityEnable"
	Code   int    // the CUptiResult
	Name   string // e.g. "CUPTI_ERROR_NOT_INITIALIZED"
	Detail string // what devprof was doing, e.g. "kind CONCURRENT_KERNEL"; may be empty
}

// Error returns one line: what happened, why, and what to do about it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cuptiwrap: ")
	b.WriteString(e.Op)
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	b.WriteString(": ")
	switch {
	case e.Code == codeNotInitialized:
		fmt.Fprintf(&b, "no NVIDIA GPU or driver usable (%s): CUPTI could not initialize the CUDA driver "+
			"(libcuda.so.1 missing, no kernel module, or no device); check that nvidia-smi works. "+
			"The trace will have no GPU activity", e.Name)
	case e.Code == codeInsufficientPrivs:
		fmt.Fprintf(&b, "not permitted to profile the GPU (%s): the NVIDIA driver lets only administrators "+
			"trace GPU activity. Run as root (in a container, add --cap-add SYS_ADMIN), or allow all users: "+
			"put the line 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in a file in /etc/modprobe.d/, "+
			"then reload the nvidia kernel module or reboot", e.Name)
	case e.conflict():
		fmt.Fprintf(&b, "another profiler is already attached to this process (%s): CUPTI allows one client "+
			"per process. Stop Nsight Systems/Compute, compute-sanitizer, cuda-gdb or the other tracer "+
			"(e.g. a framework's own profiler), or record without device tracing", e.Name)
	default:
		fmt.Fprintf(&b, "%s (code %d)", e.Name, e.Code)
	}
	return b.String()
}

func (e *Error) conflict() bool {
	return e.Code == codeMultipleSubs || (e.Code == codeMaxLimitReached && e.Op == "cuptiSubscribe")
}

// Is makes errors.Is(err, ErrNoDevice / ErrPermission / ErrProfilerConflict)
// work on the matching codes.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoDevice:
		return e.Code == codeNotInitialized
	case ErrPermission:
		return e.Code == codeInsufficientPrivs
	case ErrProfilerConflict:
		return e.conflict()
	}
	return false
}

// resultNames are the CUptiResult names devprof knows without asking the
// library; the library's cuptiGetResultString covers the rest.
var resultNames = map[int]string{
	0:   "CUPTI_SUCCESS",
	1:   "CUPTI_ERROR_INVALID_PARAMETER",
	2:   "CUPTI_ERROR_INVALID_DEVICE",
	3:   "CUPTI_ERROR_INVALID_CONTEXT",
	7:   "CUPTI_ERROR_INVALID_OPERATION",
	8:   "CUPTI_ERROR_OUT_OF_MEMORY",
	9:   "CUPTI_ERROR_HARDWARE",
	11:  "CUPTI_ERROR_API_NOT_IMPLEMENTED",
	12:  "CUPTI_ERROR_MAX_LIMIT_REACHED",
	13:  "CUPTI_ERROR_NOT_READY",
	14:  "CUPTI_ERROR_NOT_COMPATIBLE",
	15:  "CUPTI_ERROR_NOT_INITIALIZED",
	18:  "CUPTI_ERROR_QUEUE_EMPTY",
	19:  "CUPTI_ERROR_INVALID_HANDLE",
	20:  "CUPTI_ERROR_INVALID_STREAM",
	21:  "CUPTI_ERROR_INVALID_KIND",
	23:  "CUPTI_ERROR_DISABLED",
	26:  "CUPTI_ERROR_HARDWARE_BUSY",
	27:  "CUPTI_ERROR_NOT_SUPPORTED",
	33:  "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED",
	35:  "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
	36:  "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED",
	38:  "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
	39:  "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
	40:  "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
	41:  "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED",
	42:  "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED",
	999: "CUPTI_ERROR_UNKNOWN",
}

// Attempt is one place [Start] tried to load libcupti from.
type Attempt struct {
	Place  string // a path or soname
	Reason string // dlopen's error, or why the file was not usable
}

// LoadError says no usable libcupti was found. It matches
// [ErrLibraryNotFound].
type LoadError struct {
	// Explicit is set when the place came from Options.Library or
	// $DEVPROF_CUPTI_LIB, in which case nothing else was tried.
	Explicit bool
	Tried    []Attempt
}

// Error lists every attempt and how to fix the problem.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("cuptiwrap: no usable libcupti (needed for GPU activity); tried:")
	for _, a := range e.Tried {
		fmt.Fprintf(&b, "\n  %s: %s", a.Place, a.Reason)
	}
	if e.Explicit {
		b.WriteString("\nfix the path in DEVPROF_CUPTI_LIB (or trace.Options.GPU.Library, advanced key cupti_library; cuptiwrap.Options.Library), or unset it to search the usual places")
	} else {
		b.WriteString("\ninstall CUPTI (Debian: libcupti11.8 from non-free, e.g. scripts/cupti-deps; " +
			"NVIDIA's CUDA toolkit: the cuda-cupti package; pip: nvidia-cuda-cupti-cu12), " +
			"or point DEVPROF_CUPTI_LIB (or CUDA_HOME) at it, e.g. DEVPROF_CUPTI_LIB=/usr/local/cuda/extras/CUPTI/lib64/libcupti.so")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrLibraryNotFound) true.
func (e *LoadError) Is(target error) bool { return target == ErrLibraryNotFound }
