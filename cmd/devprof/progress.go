package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/internal/runstore"
)

// readTrace reads a trace for command cmd, drawing progress on stderr when
// it is a terminal (bytes read of the file's size while reading, then the
// events and the rate) and staying silent elsewhere: in a pipe or a log a
// progress line would make a refusal of a bad input more than its one line.
//
// maxEvents bounds the events kept from a streamed input (a Go execution
// trace, -max_events); 0 means the reader's default.
func readTrace(cmd, path string, stderr io.Writer, maxEvents int64) (*event.Snapshot, *formats.Format, error) {
	return readTraceWith(cmd, path, stderr, readLimits{maxEvents: maxEvents})
}

// readTraceWith is readTrace with every limit on a streamed input.
func readTraceWith(cmd, path string, stderr io.Writer, lim readLimits) (*event.Snapshot, *formats.Format, error) {
	if runstore.IsURL(path) {
		var f *formats.Format
		s, err := readRemote(path, func(local string) (s *event.Snapshot, err error) {
			s, f, err = readTraceWith(cmd, local, stderr, lim)
			return s, err
		})
		return s, f, err
	}
	f, err := formats.Detect(path)
	if err != nil {
		return nil, nil, err
	}
	if lim.maxGoroutines != 0 && f != formats.GoTrace {
		return nil, nil, fmt.Errorf("%s: a bound on goroutine rows applies to a Go execution trace, not to a %s", path, f.Display)
	}
	read := func(progress func(read, size int64)) (*event.Snapshot, error) {
		if f == formats.GoTrace {
			b := event.NewBuilder(event.Meta{})
			if err := decodeGoTrace(path, b, lim, progress); err != nil {
				return nil, err
			}
			return b.Snapshot(), nil
		}
		return f.ReadFileWith(path, formats.ReadOptions{Progress: progress, MaxEvents: lim.maxEvents})
	}
	if !isTerminal(stderr) {
		s, err := read(nil)
		return s, f, err
	}
	m := &progressMeter{w: stderr, label: "devprof " + cmd + ": reading " + path, every: 200 * time.Millisecond}
	start := time.Now()
	s, err := read(m.update)
	m.clear()
	if err != nil {
		return nil, nil, err
	}
	took := time.Since(start)
	fmt.Fprintf(stderr, "devprof %s: read %s (%s) in %v, %s/s\n", cmd, plural(int64(len(s.Events)), "event"), f.Display,
		took.Round(time.Millisecond), si(float64(len(s.Events))/max(took.Seconds(), 1e-9)))
	return s, f, nil
}

// maxEventsFlag adds -max_events to a command that reads a trace.
func maxEventsFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("max_events", 0, fmt.Sprintf("draw the first `N` events of a Go execution trace, which is read as a stream: later ones are counted as dropped and a warning says where the cut fell, but GC cycles and pauses are drawn past it, and the Go runtime's counts cover the whole file (0: %d; a conversion holds about %d bytes an event, %.1f GB at the default, whatever the output format)",
		gotrace.DefaultMaxEvents, gotrace.BytesPerEvent, float64(gotrace.DefaultMaxEvents*gotrace.BytesPerEvent)/1e9))
}

// checkMaxEvents refuses a negative -max_events.
func checkMaxEvents(cmd string, n int64, stderr io.Writer) error {
	if n < 0 {
		fmt.Fprintf(stderr, "devprof %s: -max_events %d: want 0 (the default bound) or more\n", cmd, n)
		return errUsage
	}
	return nil
}

// progressMeter draws one line it rewrites in place ("\r"), at most once
// per every.
type progressMeter struct {
	w     io.Writer
	label string
	every time.Duration
	last  time.Time
	drawn bool
}

// update draws how much of the file has been read.
func (m *progressMeter) update(read, size int64) {
	now := time.Now()
	if now.Sub(m.last) < m.every {
		return
	}
	m.last = now
	if size > 0 {
		fmt.Fprintf(m.w, "\r%s: %s of %s (%d%%)", m.label, bytesText(read), bytesText(size), read*100/size)
	} else {
		fmt.Fprintf(m.w, "\r%s: %s", m.label, bytesText(read))
	}
	m.drawn = true
}

// clear erases the line if one was drawn.
func (m *progressMeter) clear() {
	if m.drawn {
		fmt.Fprint(m.w, "\r\033[K")
		m.drawn = false
	}
}

// bytesText writes a size in decimal units, as file managers do.
func bytesText(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// si writes a rate with an SI prefix ("1.2 M").
func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1f G events", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1f M events", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k events", v/1e3)
	}
	return fmt.Sprintf("%.0f events", v)
}
