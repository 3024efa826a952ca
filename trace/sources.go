package trace

import (
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/recorder"
	cupti "github.com/devprof/devprof/sources/cupti"
)

// sourceRow is one source a session can run. Adding a source is its
// package under sources/, its typed options in Options (and advanced keys
// in advancedKeys, if any), and a row here; nothing else in the session
// changes.
type sourceRow struct {
	name string // names the source in warnings, notes and drop counts
	// on reports whether the resolved options run the source.
	on func(c *config) bool
	// start starts it on the session's buffer.
	start func(b *recorder.Buffer, c *config) (recorder.Source, error)
	// explain turns a start error into the warning the outputs carry, and
	// notice into the line printed once on standard error.
	explain, notice func(error) string
}

var sourceTable = []sourceRow{{
	name: "cupti",
	on:   func(c *config) bool { return c.deviceLevel > 0 },
	start: func(b *recorder.Buffer, c *config) (recorder.Source, error) {
		s, err := cupti.Start(b, c.gpu)
		if err != nil {
			return nil, err
		}
		return cuptiSource{s}, nil
	},
	explain: cupti.Explain,
	notice:  cupti.Notice,
}}

// cuptiSource reports the CUPTI source's findings as structure.
type cuptiSource struct{ *cupti.Source }

func (c cuptiSource) Stop() recorder.SourceReport {
	rep := c.Source.Stop()
	out := recorder.SourceReport{Notes: []event.Note{{Source: "cupti", Text: rep.Clock}}}
	for _, w := range rep.Warnings {
		out.Warnings = append(out.Warnings, event.Warning{Source: "cupti", Text: w})
	}
	return out
}

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
			warnOnce(row.notice(err))
			s.warn(event.Warning{Source: row.name, Code: "unavailable", Text: row.explain(err)})
			continue
		}
		s.sources = append(s.sources, runningSource{row.name, src})
	}
}

// stopSources stops the running sources, newest first, and adds what they
// report to the session's metadata.
func (s *Session) stopSources() {
	for i := len(s.sources) - 1; i >= 0; i-- {
		rep := s.sources[i].src.Stop()
		for _, n := range rep.Notes {
			s.meta.Notes = append(s.meta.Notes, n.Text)
		}
		for _, w := range rep.Warnings {
			warnOnce(w.Text)
			s.warn(w)
		}
	}
	s.sources = nil
}

// warn adds a warning to the session's metadata.
func (s *Session) warn(w event.Warning) { s.meta.Warnings = append(s.meta.Warnings, w.Text) }
