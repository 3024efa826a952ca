package cupti_test

import (
	"fmt"
	"os"
	"time"

	"github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/trace"
)

// A session takes the CUPTI source's options in trace.Options.GPU, or by
// their advanced configuration keys; either way they are checked before
// anything starts, on any machine, with or without a GPU.
func ExampleOptions() {
	logdir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(logdir)

	_, err := trace.StartSession(logdir, trace.Options{
		GPU: cupti.Options{FlushPeriod: 2 * time.Minute},
	})
	fmt.Println(err)
	_, err = trace.StartSession(logdir, trace.Options{
		AdvancedConfig: map[string]any{"gpu_max_buffers": -1},
	})
	fmt.Println(err)
	// Output:
	// GPU.FlushPeriod (advanced key gpu_flush_period_ms) 2m0s out of range: want 0..1m
	// GPU.MaxBuffers (advanced key gpu_max_buffers) -1 out of range: want 1..4096
}

// Validate names each field out of range with its advanced configuration
// key. The zero value is valid: CUPTI's buffers at their defaults, records
// bounded by the session's MaxEvents.
func ExampleOptions_Validate() {
	fmt.Println(cupti.Options{}.Validate())
	fmt.Println(cupti.Options{BufferSize: 8 << 20, MaxBuffers: 64, MaxRecords: 1e6}.Validate())
	fmt.Println(cupti.Options{BufferSize: 1, MaxRecords: -1}.Validate())
	// Output:
	// <nil>
	// <nil>
	// GPU.BufferSize (advanced key gpu_buffer_size) 1 out of range: want 65536..268435456 bytes
	// GPU.MaxRecords (advanced key gpu_max_activity_api_events) -1 out of range: want at least 1, or 0 for the session's MaxEvents
}
