package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/gotrace"
)

// readLimits are the bounds a command puts on what it keeps of a trace
// read as a stream (a Go execution trace): -max_events and
// -max_goroutines. They bound what is drawn, never what is counted.
type readLimits struct {
	maxEvents     int64 // 0: the reader's default
	maxGoroutines int   // 0: the reader's default
}

// maxGoroutinesFlag adds -max_goroutines to a command that reads a trace.
func maxGoroutinesFlag(fs *flag.FlagSet) *int {
	return fs.Int("max_goroutines", 0, fmt.Sprintf("give the first `N` goroutines of a Go execution trace a row of their own: the events of the rest are counted as dropped (the Ps' rows still show them run) while the Go runtime's counts cover every goroutine (0: %d)", gotrace.DefaultMaxGoroutines))
}

// checkMaxGoroutines refuses a negative -max_goroutines.
func checkMaxGoroutines(cmd string, n int, stderr io.Writer) error {
	if n < 0 {
		fmt.Fprintf(stderr, "devprof %s: -max_goroutines %d: want 0 (the default bound) or more\n", cmd, n)
		return errUsage
	}
	return nil
}

// decodeGoTrace streams the Go execution trace in the local file path
// into sink with the command's limits; progress, when not nil, is called
// with the bytes read so far and the file's size.
func decodeGoTrace(path string, sink event.Sink, lim readLimits, progress func(read, size int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if progress != nil {
		size := int64(-1)
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		r = &progressReader{r: f, size: size, progress: progress}
	}
	return gotrace.Decode(r, sink, gotrace.Options{Name: path, MaxEvents: lim.maxEvents, MaxGoroutines: lim.maxGoroutines})
}

// progressReader reports how much of a file has been read.
type progressReader struct {
	r          io.Reader
	read, size int64
	progress   func(read, size int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	p.progress(p.read, p.size)
	return n, err
}
