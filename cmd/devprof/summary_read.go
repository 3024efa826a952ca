package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
)

// readSummary reads the trace at path (a file or a URL) as a stream into
// a summaryAggregator and returns what summary prints of it, with its
// format. A trace whose spans turn out to be out of order on a track is
// read a second time, into an aggregator that keeps every span (see
// summaryAggregator).
func readSummary(cmd, path string, stderr io.Writer, lim readLimits) (*summaryData, *formats.Format, error) {
	if runstore.IsURL(path) {
		var f *formats.Format
		d, err := readRemote(path, func(local string) (d *summaryData, err error) {
			d, f, err = readSummary(cmd, local, stderr, lim)
			return d, err
		})
		return d, f, err
	}
	f, err := formats.Detect(path)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	d, err := summarize(f, path, stderr, cmd, lim, false)
	if errors.Is(err, errRestream) {
		d, err = summarize(f, path, stderr, cmd, lim, true)
	}
	if err != nil {
		return nil, nil, err
	}
	if isTerminal(stderr) {
		took := time.Since(start)
		fmt.Fprintf(stderr, "devprof %s: read %s (%s) in %v, %s/s\n", cmd, plural(d.events, "event"), f.Display,
			took.Round(time.Millisecond), si(float64(d.events)/max(took.Seconds(), 1e-9)))
	}
	return d, f, nil
}

// summarize reads the file at path in format f into a new aggregator,
// buffered or not, showing progress on a terminal.
func summarize(f *formats.Format, path string, stderr io.Writer, cmd string, lim readLimits, buffered bool) (*summaryData, error) {
	a := newSummaryAggregator(buffered)
	// Summing up on a goroutine of its own: the reader and the
	// aggregator each have a core.
	p := newPipedAggregator(a)
	defer p.close()
	o := formats.ReadOptions{MaxEvents: lim.maxEvents}
	if isTerminal(stderr) {
		m := &progressMeter{w: stderr, label: "devprof " + cmd + ": reading " + path, every: 200 * time.Millisecond}
		defer m.clear()
		o.Progress = m.update
	}
	var err error
	if f == formats.GoTrace {
		// Its reader streams with bounds of its own (-max_goroutines).
		err = decodeGoTrace(path, p, lim, o.Progress)
	} else {
		err = f.StreamFile(path, p, o)
	}
	p.close()
	if err != nil {
		return nil, err
	}
	return a.result()
}
