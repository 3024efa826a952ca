package trace

import (
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/internal/sources/cuptisource"
	"github.com/devprof/devprof/internal/sources/goruntimesource"
	"github.com/devprof/devprof/internal/sources/nvmlsource"
	"github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/sources/goruntime"
	"github.com/devprof/devprof/sources/nvml"
)

// sourceRow is one source a session can run. Adding a source is its
// package under sources/ (what users set) with its machinery under
// internal/sources/, its typed options in Options (and advanced keys
// in advancedKeys, if any), and a row here; nothing else in the session
// changes.
type sourceRow struct {
	name string // names the source in warnings, notes and drop counts
	// on reports whether the resolved options run the source.
	on func(c *config) bool
	// start starts it on the session's buffer.
	start func(b *recorder.Buffer, c *config) (recorder.Source, error)
	// explain turns a start error into the warning the outputs carry and
	// standard error shows once. quiet says when the error is expected
	// (nothing the user asked for is missing): it is then only a note in
	// the outputs, neither a warning (xprof shows warnings as a banner
	// above every tool) nor a line on standard error.
	explain func(error) event.Warning
	quiet   func(c *config, err error) bool
	// brief, when set, gives the one line standard error shows for a start
	// error in place of the warning's whole text ("" for the whole text):
	// a machine without a GPU is no news, and its line stays short.
	brief func(error) string
}

var sourceTable = []sourceRow{{
	name: cupti.SourceName,
	on:   func(c *config) bool { return c.deviceLevel > 0 },
	start: func(b *recorder.Buffer, c *config) (recorder.Source, error) {
		return cuptisource.Start(b, c.gpu)
	},
	explain: cuptisource.Explain,
	brief:   cuptisource.Brief,
}, {
	name: nvml.SourceName,
	on:   func(c *config) bool { return c.gpuMetrics.Runs(c.deviceLevel > 0) },
	start: func(b *recorder.Buffer, c *config) (recorder.Source, error) {
		return nvmlsource.Start(b, c.gpuMetrics)
	},
	explain: nvmlsource.Explain,
	// Metrics that ran only because the device tracer did (auto), on a
	// machine without an NVIDIA driver or in a build without cgo: CUPTI's
	// one line already says GPU tracing is off.
	quiet: func(c *config, err error) bool { return c.gpuMetrics.Mode == nvml.ModeAuto && nvmlsource.Expected(err) },
}, {
	name: "devmem",
	// Tracking the program started itself (devmem.Start) runs through
	// sessions that did not ask for it: its counts are the session's too.
	on: func(c *config) bool { return c.deviceMemory != nil || devmem.Tracking() },
	start: func(_ *recorder.Buffer, c *config) (recorder.Source, error) {
		return startMemory(c)
	},
	explain: func(err error) event.Warning {
		return event.Warning{Source: "devmem", Code: "start", Text: "device-memory tracking is off: " + err.Error()}
	},
}, {
	name: goruntime.SourceName,
	on:   func(c *config) bool { return c.goRuntime.Runs(c.hostLevel) },
	start: func(b *recorder.Buffer, c *config) (recorder.Source, error) {
		return goruntimesource.Start(b, c.goRuntime)
	},
	explain: func(err error) event.Warning {
		return event.Warning{Source: goruntime.SourceName, Code: "start", Text: "the Go runtime is not shown: " + err.Error()}
	},
}}

// runningSource is a source a session started.
type runningSource struct {
	name string
	src  recorder.Source
}

// startSources starts every source the options turn on. One that cannot
// start leaves the session recording without it: its reason goes into
// every output and, once per process, to standard error.
func (s *Session) startSources() {
	for _, row := range sourceTable {
		if !row.on(&s.cfg) {
			continue
		}
		src, err := row.start(s.buf, &s.cfg)
		if err != nil {
			w := row.explain(err)
			if row.quiet != nil && row.quiet(&s.cfg, err) {
				s.meta.Notes = append(s.meta.Notes, event.Note{Source: w.Source, Text: w.Text})
				continue
			}
			line := w.Text
			if row.brief != nil {
				if b := row.brief(err); b != "" {
					line = b
				}
			}
			printOnce("devprof: " + line)
			s.meta.Warnings = append(s.meta.Warnings, w)
			continue
		}
		s.sources = append(s.sources, runningSource{row.name, src})
	}
}

// stopSources stops the running sources, newest first, and adds what they
// report to the session's metadata.
func (s *Session) stopSources() {
	for i := len(s.sources) - 1; i >= 0; i-- {
		rs := s.sources[i]
		rep := rs.src.Stop()
		if g, ok := rs.src.(*goruntimesource.Source); ok {
			s.cpu = g.CPUProfile()
		}
		s.meta.Notes = append(s.meta.Notes, rep.Notes...)
		s.meta.Warnings = append(s.meta.Warnings, rep.Warnings...)
		// Events a source lost are events the trace lacks: they count
		// with the recorder's own drops, under the source's name.
		s.meta.AddDrops(rs.name, rep.Dropped)
		if rep.GoRuntime != nil {
			s.meta.GoRuntime = rep.GoRuntime // the whole trace's, whatever the rows kept
		}
		for _, w := range rep.Warnings {
			printOnce("devprof: " + w.Text)
		}
	}
	s.sources = nil
}
