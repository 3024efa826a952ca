package membreakdown_test

import (
	"fmt"
	"os"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/membreakdown"
)

const mib = 1 << 20

// profile is what a device-memory profile read back with exporters/pprof
// holds: live buffers by tags and span, and what NVML said the process
// held on the device.
func profile() *event.DeviceMemory {
	return &event.DeviceMemory{
		Buffers: []event.Buffer{
			{Bytes: 512 * mib, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights"}},
			{Bytes: 512 * mib, Count: 1, Device: 0, Kind: "device", Tags: []string{"grad"}},
			{Bytes: 128 * mib, Count: 2, Device: 0, Kind: "device", Span: "train/forward"},
			{Bytes: 64 * mib, Count: 1, Device: 0, Kind: "device", Tags: []string{"lookup table"}},
			{Bytes: 32 * mib, Count: 1, Device: -1, Kind: "pinned", Tags: []string{"batch"}},
		},
		Devices: []event.DeviceUsage{{Device: 0, Total: 80 << 30, Used: 2048 * mib, Process: 1600 * mib}},
	}
}

// Categorize breaks a profile down with the default dictionary: what no
// keyword matches is Others, and what NVML counts beyond every tracked
// buffer is Untrackable.
func ExampleCategorize() {
	r := membreakdown.Categorize(profile(), membreakdown.DefaultDictionary(), membreakdown.Options{})
	for _, c := range r.Categories {
		fmt.Printf("%-12s %5d MiB in %d buffers\n", c.Name, c.Bytes/mib, c.Buffers)
	}
	for _, u := range r.Untrackable {
		fmt.Printf("Untrackable  %5d MiB on device %d (%s)\n", u.Bytes/mib, u.Device, u.From)
	}
	fmt.Printf("host memory left out: %d MiB\n", r.Host.Bytes/mib)
	// Output:
	// Parameters     512 MiB in 1 buffers
	// Gradients      512 MiB in 1 buffers
	// Activations    256 MiB in 2 buffers
	// Others          64 MiB in 1 buffers
	// Untrackable    256 MiB on device 0 (nvml-process)
	// host memory left out: 32 MiB
}

// A dictionary of one's own, as devprof memory breakdown -dict reads it
// from a JSON or YAML file.
func ExampleParseDictionary() {
	d, err := membreakdown.ParseDictionary("mine.yaml", []byte("Embeddings: [lookup]\nParameters: [weights]\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := membreakdown.Categorize(profile(), d, membreakdown.Options{})
	for _, c := range r.Categories {
		fmt.Printf("%-10s %4d MiB\n", c.Name, c.Bytes/mib)
	}

	_, err = membreakdown.ParseDictionary("bad.yaml", []byte("Others: [x]\n"))
	fmt.Println(err)
	// Output:
	// Parameters  512 MiB
	// Embeddings   64 MiB
	// Others      768 MiB
	// bad.yaml:1:1: category "Others" is reserved: the breakdown adds it itself
}

// WriteCSV writes a profile's buffers as MXNet's memory profiler wrote
// its CSV.
func ExampleWriteCSV() {
	if err := membreakdown.WriteCSV(os.Stdout, profile()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// weights,512
	// grad,512
	// unknown train/forward,128
	// unknown train/forward,128
	// lookup table,64
}

// WriteStorageCSV writes the same buffers with the columns of MXNet 2's
// storage profiler, sorted by name, and what NVML counts beyond them as
// an nvml_amend row.
func ExampleWriteStorageCSV() {
	m := profile()
	r := membreakdown.Categorize(m, membreakdown.DefaultDictionary(), membreakdown.Options{})
	if err := membreakdown.WriteStorageCSV(os.Stdout, m, r); err != nil {
		fmt.Println(err)
	}
	// Output:
	// "Attribute Name","Requested Size","Device","Actual Size","Reuse?"
	// "grad","536870912","0","536870912","0"
	// "lookup table","67108864","0","67108864","0"
	// "unknown train/forward","134217728","0","134217728","0"
	// "unknown train/forward","134217728","0","134217728","0"
	// "weights","536870912","0","536870912","0"
	// "nvml_amend","268435456","0","268435456","0"
}
