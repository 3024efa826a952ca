// Package metatext is the one way devprof's writers show a trace's
// metadata (event.Meta's warnings, notes and per-source drops) to people,
// and the one way its readers turn what they show back into the same
// structure.
//
// Timeline formats (Perfetto, Chrome JSON) carry each item as an instant
// on the process, the form their viewers put in front of the user: a
// warning or a note as an instant named WarningName or NoteName whose
// arguments hold the text, source and code; the drops as one instant whose
// name says what was lost and whose arguments count it per source.
// Markers builds them, Collector reads them back.
//
// XSpace has a list of warning strings, which xprof shows as they are:
// WarningLine, NoteLine and DropsLine write one human-readable line per
// item, with the structure in a bracketed prefix, and ParseLine reads it
// back; a line without the prefix (TSL's own warnings) is a warning with
// only a text.
package metatext

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// Names of the instants that carry warnings and notes.
const (
	WarningName = "devprof warning"
	NoteName    = "devprof note"
)

// Argument keys of the marker instants.
const (
	ArgMessage = "message" // the text of a warning or note
	ArgSource  = "source"  // its source, when it has one
	ArgCode    = "code"    // a warning's code, when it has one
	// ArgDropped is the total of the drop instant, ArgDroppedBy+source
	// each source's share.
	ArgDropped   = "dropped_events"
	ArgDroppedBy = "dropped_events."
	ArgMaxEvents = "max_events"
)

// Marker is one instant a timeline writer puts on the process.
type Marker struct {
	Name string
	// AtStop places it at the trace's stop; otherwise it sits at the
	// start, where a reader of the trace sees it first.
	AtStop bool
	Args   []event.Arg
}

func str(key, v string) event.Arg { return event.Arg{Key: key, Kind: event.ArgString, Str: v} }

func num(key string, v int64) event.Arg {
	return event.Arg{Key: key, Kind: event.ArgInt, Num: uint64(v)}
}

// Markers returns the instants that show m's warnings, notes and drops,
// in that order.
func Markers(m *event.Meta) []Marker {
	var out []Marker
	for _, w := range m.Warnings {
		args := []event.Arg{str(ArgMessage, w.Text)}
		if w.Source != "" {
			args = append(args, str(ArgSource, w.Source))
		}
		if w.Code != "" {
			args = append(args, str(ArgCode, w.Code))
		}
		out = append(out, Marker{Name: WarningName, Args: args})
	}
	for _, n := range m.Notes {
		args := []event.Arg{str(ArgMessage, n.Text)}
		if n.Source != "" {
			args = append(args, str(ArgSource, n.Source))
		}
		out = append(out, Marker{Name: NoteName, Args: args})
	}
	if total := m.Dropped(); total > 0 {
		args := []event.Arg{num(ArgDropped, total), num(ArgMaxEvents, m.MaxEvents)}
		for _, d := range m.Drops {
			if d.Events > 0 {
				args = append(args, num(ArgDroppedBy+d.Source, d.Events))
			}
		}
		out = append(out, Marker{Name: DropSummary(m), AtStop: true, Args: args})
	}
	return out
}

// DropSummary is the one line that tells people what m lost:
// "devprof: 12 events dropped (recorder: 7, buffer full at
// max_events=100; cupti: 5)".
func DropSummary(m *event.Meta) string {
	var parts []string
	for _, d := range m.Drops {
		if d.Events > 0 {
			parts = append(parts, dropPart(d, m.MaxEvents))
		}
	}
	return fmt.Sprintf("devprof: %d events dropped (%s)", m.Dropped(), strings.Join(parts, "; "))
}

func dropPart(d event.Drops, maxEvents int64) string {
	s := fmt.Sprintf("%s: %d", d.Source, d.Events)
	if d.Source == event.DropsRecorder {
		s += fmt.Sprintf(", buffer full at max_events=%d", maxEvents)
	}
	return s
}

// legacyDrops is the drop marker of files written before drops had
// sources: all of them the recorder's.
var legacyDrops = regexp.MustCompile(`^devprof: (\d+) events dropped \(buffer full at max_events=(\d+)\)$`)

// Collector gathers the metadata that marker instants carry, as a reader
// meets them.
type Collector struct {
	Warnings  []event.Warning
	Notes     []event.Note
	Drops     []event.Drops
	MaxEvents int64
}

// Take consumes the instant (name, args) if it is a marker Markers
// writes, and reports whether it was. Warning and note instants without a
// text argument are ordinary instants.
func (c *Collector) Take(name string, args []event.Arg) bool {
	switch {
	case name == WarningName || name == NoteName:
		var msg, src, code string
		found := false
		for _, a := range args {
			if a.Kind != event.ArgString {
				continue
			}
			switch a.Key {
			case ArgMessage:
				msg, found = a.Str, true
			case ArgSource:
				src = a.Str
			case ArgCode:
				code = a.Str
			}
		}
		if !found {
			return false
		}
		if name == WarningName {
			c.Warnings = append(c.Warnings, event.Warning{Source: src, Code: code, Text: msg})
		} else {
			c.Notes = append(c.Notes, event.Note{Source: src, Text: msg})
		}
		return true
	case strings.HasPrefix(name, "devprof: ") && strings.Contains(name, " events dropped"):
		var total int64
		var found bool
		var per []event.Drops
		for _, a := range args {
			v, ok := intValue(a)
			if !ok {
				continue
			}
			switch {
			case a.Key == ArgDropped:
				total, found = v, true
			case a.Key == ArgMaxEvents:
				c.MaxEvents = v
			case strings.HasPrefix(a.Key, ArgDroppedBy):
				per = append(per, event.Drops{Source: a.Key[len(ArgDroppedBy):], Events: v})
			}
		}
		if !found {
			return false
		}
		if len(per) == 0 { // an older file: the recorder's alone
			per = []event.Drops{{Source: event.DropsRecorder, Events: total}}
			if m := legacyDrops.FindStringSubmatch(name); m != nil {
				c.MaxEvents, _ = strconv.ParseInt(m[2], 10, 64)
			}
		}
		c.Drops = append(c.Drops, per...)
		return true
	}
	return false
}

func intValue(a event.Arg) (int64, bool) {
	switch a.Kind {
	case event.ArgInt:
		return a.Int(), true
	case event.ArgUint:
		if int64(a.Num) >= 0 {
			return int64(a.Num), true
		}
	}
	return 0, false
}

// Apply adds what c gathered to a snapshot being built.
func (c *Collector) Apply(b *event.Builder) { c.ApplyMeta(b.Meta()) }

// ApplyMeta adds what c gathered to the metadata of a trace being read
// into a sink (event.Sink.Meta).
func (c *Collector) ApplyMeta(m *event.Meta) {
	m.Warnings = append(m.Warnings, c.Warnings...)
	m.Notes = append(m.Notes, c.Notes...)
	for _, d := range c.Drops {
		m.AddDrops(d.Source, d.Events)
	}
	if c.MaxEvents != 0 {
		m.MaxEvents = c.MaxEvents
	}
}

// Prefixes of the XSpace lines.
const (
	warningPrefix = "devprof warning ["
	notePrefix    = "devprof note ["
	dropsPrefix   = "devprof drops ["
)

// WarningLine writes w as one line: "devprof warning [cupti/unavailable]:
// GPU tracing off: …". A warning with neither source nor code is its text
// alone, as it was read. Sources contain no "/" and neither field a "]".
func WarningLine(w event.Warning) string {
	if w.Source == "" && w.Code == "" {
		return w.Text
	}
	return warningPrefix + w.Source + "/" + w.Code + "]: " + w.Text
}

// NoteLine writes n as one line: "devprof note [cupti]: GPU timestamps: …".
func NoteLine(n event.Note) string {
	if n.Source == "" {
		return n.Text
	}
	return notePrefix + n.Source + "]: " + n.Text
}

// DropsLine writes one source's drops as one line: "devprof drops
// [recorder]: 7 events dropped (buffer full at max_events=100)".
func DropsLine(d event.Drops, maxEvents int64) string {
	s := fmt.Sprintf("%s%s]: %d events dropped", dropsPrefix, d.Source, d.Events)
	if d.Source == event.DropsRecorder {
		s += fmt.Sprintf(" (buffer full at max_events=%d)", maxEvents)
	}
	return s
}

var dropsLine = regexp.MustCompile(`^devprof drops \[([^\]]*)\]: (\d+) events dropped(?: \(buffer full at max_events=(\d+)\))?$`)

// Line is what ParseLine found in one XSpace line: exactly one of its
// pointers is set.
type Line struct {
	Warning   *event.Warning
	Note      *event.Note
	Drops     *event.Drops
	MaxEvents int64 // with Drops of the recorder
}

// ParseLine reads a line written by WarningLine, NoteLine or DropsLine
// (or the drop line of older files); any other line is a warning with
// only a text.
func ParseLine(s string) Line {
	if m := dropsLine.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err == nil {
			mx, _ := strconv.ParseInt(m[3], 10, 64)
			return Line{Drops: &event.Drops{Source: m[1], Events: n}, MaxEvents: mx}
		}
	}
	if m := legacyDrops.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil {
			mx, _ := strconv.ParseInt(m[2], 10, 64)
			return Line{Drops: &event.Drops{Source: event.DropsRecorder, Events: n}, MaxEvents: mx}
		}
	}
	if rest, ok := strings.CutPrefix(s, warningPrefix); ok {
		if tag, text, ok := strings.Cut(rest, "]: "); ok && !strings.Contains(tag, "]") {
			if src, code, ok := strings.Cut(tag, "/"); ok {
				return Line{Warning: &event.Warning{Source: src, Code: code, Text: text}}
			}
		}
	}
	if rest, ok := strings.CutPrefix(s, notePrefix); ok {
		if src, text, ok := strings.Cut(rest, "]: "); ok && !strings.Contains(src, "]") {
			return Line{Note: &event.Note{Source: src, Text: text}}
		}
	}
	return Line{Warning: &event.Warning{Text: s}}
}

// Bytes formats a byte count in binary units with up to one decimal, as
// people read sizes of device memory: "512 B", "1.5 KiB", "3.0 MiB",
// "80.0 GiB".
func Bytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v >= 1023.95 && i < len(units)-1 { // would round to "1024.0"
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}
