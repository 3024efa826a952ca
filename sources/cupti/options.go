package cupti

import (
	"errors"
	"fmt"
	"time"

	"github.com/devprof/devprof/internal/cuptiwrap"
)

// Options configure the CUPTI source of a session (trace.Options.GPU).
// The zero value uses the defaults each field names. Each field has an advanced
// configuration key of the same meaning, named in its comment, for
// callers that configure sessions by name (JAX's ProfileOptions, remote
// capture).
type Options struct {
	// Library is the libcupti to load, a path or soname; "" searches
	// $DEVPROF_CUPTI_LIB, then the CUDA 13/12/11 sonames and toolkit
	// directories. Key: cupti_library.
	Library string
	// BufferSize is the size of each CUPTI activity buffer in bytes,
	// 64 KiB..256 MiB; 0 means 4 MiB.
	// Key: gpu_buffer_size.
	BufferSize int
	// MaxBuffers caps how many activity buffers exist at once
	// (1..4096; 0 means 32); when all are full CUPTI
	// drops records and they are counted. Key: gpu_max_buffers.
	MaxBuffers int
	// FlushPeriod is how often CUPTI hands over completed buffers (at most
	// a minute; 0 means one second). Key: gpu_flush_period_ms.
	FlushPeriod time.Duration
	// MaxRecords bounds how many CUPTI records are kept, like XLA's
	// gpu_max_activity_api_events; later ones are counted as dropped. 0
	// means the session's MaxEvents. Key: gpu_max_activity_api_events.
	MaxRecords int64
}

// Validate reports every field out of range, naming the field and its
// advanced configuration key.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, key string, v any, want string) {
		errs = append(errs, fmt.Errorf("GPU.%s (advanced key %s) %v out of range: want %s", field, key, v, want))
	}
	if o.BufferSize != 0 && (o.BufferSize < cuptiwrap.MinBufferSize || o.BufferSize > cuptiwrap.MaxBufferSize) {
		bad("BufferSize", "gpu_buffer_size", o.BufferSize, fmt.Sprintf("%d..%d bytes", cuptiwrap.MinBufferSize, cuptiwrap.MaxBufferSize))
	}
	if o.MaxBuffers < 0 || o.MaxBuffers > cuptiwrap.MaxMaxBuffers {
		bad("MaxBuffers", "gpu_max_buffers", o.MaxBuffers, fmt.Sprintf("1..%d", cuptiwrap.MaxMaxBuffers))
	}
	if o.FlushPeriod < 0 || o.FlushPeriod > time.Minute {
		bad("FlushPeriod", "gpu_flush_period_ms", o.FlushPeriod, "0..1m")
	}
	if o.MaxRecords < 0 {
		bad("MaxRecords", "gpu_max_activity_api_events", o.MaxRecords, "at least 1, or 0 for the session's MaxEvents")
	}
	return errors.Join(errs...)
}

// SourceName is how the outputs name this source: the Source of its
// warnings, notes and drops in event.Meta.
const SourceName = "cupti"

// Codes of the warnings the source reports (event.Warning.Code), for a
// program that reads a trace's metadata and acts on what went wrong.
const (
	// CodeUnavailable: device activity could not be recorded (no
	// libcupti, no GPU, another profiler attached); the text says why.
	CodeUnavailable = "unavailable"
	// CodeStopFailed: CUPTI failed to stop; some records may be missing.
	CodeStopFailed = "stop_failed"
	// CodeRecordsDropped: CUPTI, or the bound on kept records
	// (Options.MaxRecords), lost records; they are counted in the
	// trace's drops under SourceName.
	CodeRecordsDropped = "records_dropped"
	// CodeUntimed: records without timestamps were left out.
	CodeUntimed = "untimed_records"
	// CodeBufferFull: device events found the event buffer full (the
	// recorder counts them among its own drops).
	CodeBufferFull = "buffer_full"
)
