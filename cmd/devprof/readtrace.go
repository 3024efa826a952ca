package main

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/sinkpipe"
)

// readInto streams the trace file at path, of format f, into sink; with
// piped, the sink runs behind a sinkpipe.Pipe on a goroutine of its own,
// so that the reader and the sink use two cores. It returns the reader's
// error, else the Pipe's (the sink panicked).
func readInto(f *formats.Format, path string, sink event.Sink, piped bool, lim readLimits, o formats.ReadOptions) error {
	var pipe *sinkpipe.Pipe
	if piped {
		pipe = sinkpipe.New(sink)
		sink = pipe
	}
	var err error
	if f == formats.GoTrace {
		err = decodeGoTrace(path, sink, lim, o.Progress)
	} else {
		err = f.StreamFile(path, sink, o)
	}
	if pipe != nil {
		if perr := pipe.Close(); err == nil {
			err = perr
		}
	}
	return err
}
