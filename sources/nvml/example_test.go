package nvml_test

import (
	"fmt"
	"os"
	"time"

	"github.com/devprof/devprof/sources/nvml"
	"github.com/devprof/devprof/trace"
)

// A session samples GPU metrics with its device tracer (ModeAuto), or
// with the device tracer off when asked to (ModeOn).
func ExampleOptions_Runs() {
	for _, m := range []nvml.Mode{nvml.ModeAuto, nvml.ModeOn, nvml.ModeOff} {
		o := nvml.Options{Mode: m}
		fmt.Printf("%-4v device tracer on: %-5v off: %v\n", m, o.Runs(true), o.Runs(false))
	}
	// Output:
	// auto device tracer on: true  off: false
	// on   device tracer on: true  off: true
	// off  device tracer on: false off: false
}

// Validate names each field out of range with its advanced configuration
// key; a session checks its options the same way before it starts
// anything.
func ExampleOptions_Validate() {
	fmt.Println(nvml.Options{Period: 250 * time.Millisecond, PCIe: true}.Validate())
	fmt.Println(nvml.Options{Period: time.Millisecond}.Validate())

	logdir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(logdir)
	_, err := trace.StartSession(logdir, trace.Options{GPUMetrics: nvml.Options{Period: time.Hour}})
	fmt.Println(err)
	// Output:
	// <nil>
	// GPUMetrics.Period (advanced key gpu_metrics_period_ms) 1ms out of range: want 10ms..1m, or 0 for 100ms
	// GPUMetrics.Period (advanced key gpu_metrics_period_ms) 1h0m0s out of range: want 10ms..1m, or 0 for 100ms
}

// ParseMode reads the values of the gpu_metrics key, as remote capture and
// JAX's options give them, in any case.
func ExampleParseMode() {
	for _, s := range []string{"auto", "on", "off", "On", "sometimes"} {
		m, err := nvml.ParseMode(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(m == nvml.ModeOn, m)
	}
	// Output:
	// false auto
	// true on
	// false off
	// true on
	// GPUMetrics.Mode (advanced key gpu_metrics) "sometimes": want auto, on or off
}
