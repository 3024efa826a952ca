package memplot_test

import (
	"bytes"
	"fmt"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/memplot"
	"github.com/devprof/devprof/membreakdown"
)

const mib = 1 << 20

// EncodeBreakdown draws a breakdown report as one stacked bar per device;
// WriteBreakdown writes the same image into a file, whole or not at all.
func ExampleEncodeBreakdown() {
	profile := &event.DeviceMemory{
		Buffers: []event.Buffer{
			{Bytes: 512 * mib, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights"}},
			{Bytes: 256 * mib, Count: 1, Device: 0, Kind: "device", Tags: []string{"grad"}},
		},
		Devices: []event.DeviceUsage{{Device: 0, Total: 80 << 30, Used: 1024 * mib, Process: 1024 * mib}},
	}
	report := membreakdown.Categorize(profile, membreakdown.DefaultDictionary(), membreakdown.Options{})

	var img bytes.Buffer
	if err := memplot.EncodeBreakdown(&img, memplot.SVG, report); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("XML:", bytes.HasPrefix(img.Bytes(), []byte("<?xml")), "SVG:", bytes.Contains(img.Bytes(), []byte("<svg")))
	// Output:
	// XML: true SVG: true
}

// EncodeTimeline draws one device's memory over time as stacked step
// areas, here two categories over three allocations and a free.
func ExampleEncodeTimeline() {
	tl := memplot.Timeline{
		Device: 0,
		Times:  []int64{0, 1e6, 2e6, 3e6},
		Series: []memplot.Series{
			{Name: "Parameters", Bytes: []uint64{512 * mib, 512 * mib, 512 * mib, 512 * mib}},
			{Name: "Activations", Bytes: []uint64{0, 128 * mib, 256 * mib, 0}},
		},
	}
	var img bytes.Buffer
	if err := memplot.EncodeTimeline(&img, memplot.PNG, "train", []memplot.Timeline{tl}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("PNG:", bytes.HasPrefix(img.Bytes(), []byte("\x89PNG\r\n\x1a\n")))
	// Output:
	// PNG: true
}

// FormatOf picks the image format from a file name, as the Write
// functions do.
func ExampleFormatOf() {
	for _, name := range []string{"breakdown.svg", "timeline.PNG", "plot.pdf"} {
		f, err := memplot.FormatOf(name)
		fmt.Printf("%q %v\n", f, err)
	}
	// Output:
	// "svg" <nil>
	// "png" <nil>
	// "" plot.pdf: cannot tell the image format: name a .svg or a .png file
}
