package analysispage_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/analysispage"
)

// A page of a trace's analysis: here a trace of three steps, each with a
// kernel on one stream.
func ExampleWrite() {
	b := event.NewBuilder(event.Meta{})
	p := b.Process(event.Process{PID: 1, Name: "train"})
	host := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main", Process: p})
	gpu := b.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7, Name: "Stream #7", Process: p, Device: 0})
	for i := range 3 {
		t := int64(i) * 1000
		b.Span(event.Span{Name: "step", Start: t, End: t + 900, Track: host, Step: true, StepNum: int64(i)})
		b.Activity(gpu, "gemm", t+100, t+600, nil)
	}
	r := analysis.Analyze(b.Snapshot(), analysis.Options{})

	var page bytes.Buffer
	if err := analysispage.Write(&page, &analysispage.Page{Title: "train", Trace: analysispage.Trace{Name: "train.pftrace", Format: "Perfetto", Report: r}}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("charts:", strings.Count(page.String(), "<svg"))
	fmt.Println("scripts:", strings.Count(page.String(), "<script"))
	// Output:
	// charts: 3
	// scripts: 0
}
