// Package formats is the one table that maps devprof's trace file formats
// to the exporters' writers and readers. In devprof's flow it sits between
// the finished event model and the files: a session writes its outputs
// through it, and the CLI (convert, summary, serve) picks a reader or
// writer from it by file name or content, so that both agree on names,
// extensions and gzip.
//
// A new format is a new exporter package plus one row here.
package formats

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/atomicfile"
)

// Format is one row of the table: one file format and how devprof names,
// recognises, writes and reads it. Rows are shared; do not modify them.
type Format struct {
	// Name is a short stable identifier ("perfetto"), for flags and code.
	Name string
	// Display is the name shown to people ("Perfetto").
	Display string
	// Viewer is the program people open these files in, named in messages.
	Viewer string
	// PerfettoUI says ui.perfetto.dev opens these files as they are, so
	// `devprof serve` may hand them to it.
	PerfettoUI bool
	// Extensions are the lower-case file name endings that ask for this
	// format, the plain form before its .gz form. The first is the usual
	// one. The format is written gzip-compressed exactly when the name ends
	// in ".gz", so a format has a .gz form only if its consumers read it.
	Extensions []string
	// SessionExt ends the name of the file a session writes for a host:
	// <host><SessionExt> (a session may add ".gz" where Extensions allow).
	SessionExt string
	// Sniff says how surely head, the first bytes of a file's content
	// (after gunzip, at most HeadSize of them, never empty), is in this
	// format.
	Sniff func(head []byte) Match
	// Write encodes s to w, gzip-compressed if gz; nil for a format
	// devprof only reads (a Go execution trace).
	Write func(w io.Writer, s *event.Snapshot, gz bool) error
	// Decode reads a trace in this format, gzip-compressed or not, from r
	// into the event model. name is the file's path: errors name it, and a
	// format whose files may not say their host takes it from the name.
	Decode func(r io.Reader, name string) (*event.Snapshot, error)
	// DecodeBounded is Decode keeping at most maxEvents events (0: the
	// reader's default), for a format read as a stream whose files may
	// hold more events than fit in memory (a Go execution trace); nil for
	// the others.
	DecodeBounded func(r io.Reader, name string, maxEvents int64) (*event.Snapshot, error)
	// Stream reads a trace in this format, gzip-compressed or not, from r
	// into sink as the reader decodes it, so that a sink that keeps
	// little (devprof summary's) never has the whole trace in memory;
	// name is as for Decode. It is nil for a format whose reader cannot
	// stream yet: StreamFile then reads the file with Decode and replays
	// the model into the sink (Replay).
	Stream func(r io.Reader, name string, sink event.Sink) error
}

// Match is how surely some bytes are in a format.
type Match int

const (
	// NoMatch means the bytes cannot be in the format.
	NoMatch Match = iota
	// Weak means they could be, but the format has no signature of its own
	// to check (a Perfetto trace starts like any protobuf with a field 1).
	Weak
	// Strong means they carry the format's signature.
	Strong
)

// HeadSize is how many leading bytes of content Sniff is shown.
const HeadSize = 64

// The rows, in the order messages list them. Each is registered in All.
var (
	// Perfetto is Perfetto's protobuf trace (package exporters/perfetto).
	Perfetto = register(&Format{
		Name:       "perfetto",
		Display:    "Perfetto",
		Viewer:     "ui.perfetto.dev",
		PerfettoUI: true,
		Extensions: []string{".pftrace", ".pftrace.gz", ".perfetto-trace", ".perfetto-trace.gz", ".perfetto", ".perfetto.gz"},
		SessionExt: ".pftrace",
		Sniff: func(head []byte) Match {
			// A Trace is a stream of field-1 TracePackets.
			if head[0] == 0x0a {
				return Weak
			}
			return NoMatch
		},
		Write: func(w io.Writer, s *event.Snapshot, gz bool) error {
			return perfetto.Write(w, s, perfetto.WriteOptions{Gzip: gz})
		},
		Decode: func(r io.Reader, name string) (*event.Snapshot, error) {
			s, err := perfetto.Read(r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return s, nil
		},
		Stream: func(r io.Reader, name string, sink event.Sink) error {
			if err := perfetto.Decode(r, sink); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		},
	})

	// XPlane is TensorBoard's profile, an XSpace protobuf (package
	// exporters/xplane). It has no .gz form: TensorBoard does not read one.
	XPlane = register(&Format{
		Name:       "xplane",
		Display:    "TensorBoard profile (XSpace)",
		Viewer:     "TensorBoard",
		Extensions: []string{".xplane.pb"},
		SessionExt: ".xplane.pb",
		Sniff:      sniffXSpace,
		Write: func(w io.Writer, s *event.Snapshot, gz bool) error {
			if gz {
				return errors.New("xplane: TensorBoard does not read gzip-compressed .xplane.pb files")
			}
			return xplane.Write(w, s)
		},
		Decode: xplane.ReadNamed,
		Stream: func(r io.Reader, name string, sink event.Sink) error {
			return xplane.DecodeNamed(r, name, sink)
		},
	})

	// Chrome is the Chrome Trace Event Format, JSON (package
	// exporters/chrome).
	Chrome = register(&Format{
		Name:       "chrome",
		Display:    "Chrome JSON",
		Viewer:     "ui.perfetto.dev",
		PerfettoUI: true,
		Extensions: []string{".json", ".json.gz"},
		SessionExt: ".trace.json.gz",
		Sniff:      sniffJSON,
		Write: func(w io.Writer, s *event.Snapshot, gz bool) error {
			if gz {
				return chrome.Write(w, s)
			}
			return chrome.WritePlain(w, s)
		},
		Decode: func(r io.Reader, name string) (*event.Snapshot, error) {
			s, err := chrome.Read(r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return s, nil
		},
		Stream: func(r io.Reader, name string, sink event.Sink) error {
			if err := chrome.Decode(r, sink); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		},
	})
)

// GoTrace is a Go execution trace (go test -trace, /debug/pprof/trace,
// runtime/trace's FlightRecorder; package exporters/gotrace), read into
// the same tracks as a session's Go-runtime source. devprof reads it
// only: it is an input of convert, summary and serve.
var GoTrace = register(&Format{
	Name:       "gotrace",
	Display:    "Go execution trace",
	Viewer:     "go tool trace",
	Extensions: []string{".out", ".trace"},
	Sniff: func(head []byte) Match {
		if gotrace.Sniff(head) {
			return Strong
		}
		return NoMatch
	},
	Decode: func(r io.Reader, name string) (*event.Snapshot, error) {
		return gotrace.Read(r, gotrace.Options{Name: name})
	},
	DecodeBounded: func(r io.Reader, name string, maxEvents int64) (*event.Snapshot, error) {
		return gotrace.Read(r, gotrace.Options{Name: name, MaxEvents: maxEvents})
	},
	Stream: func(r io.Reader, name string, sink event.Sink) error {
		return gotrace.Decode(r, sink, gotrace.Options{Name: name})
	},
})

var all []*Format

// register appends a row to the table: declaring a row is registering it.
func register(f *Format) *Format {
	all = append(all, f)
	return f
}

// All returns the rows of the table, in the order messages list them.
func All() []*Format { return append([]*Format(nil), all...) }

// ByName returns the row named name (as in Format.Name), or nil.
func ByName(name string) *Format {
	for _, f := range all {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// sniffXSpace recognises an XSpace by its first plane: field 1 of the
// XSpace, holding an XPlane whose optional id (field 1, varint) is
// followed by its name (field 2) in readable text ("/host:CPU",
// "/device:GPU:0", "Task Environment"). Writers serialise fields in number
// order, so that is how every XSpace starts; a Perfetto TracePacket never
// has text there (its field 2 is a message), so the match is strong.
func sniffXSpace(head []byte) Match {
	if head[0] != 0x0a {
		return NoMatch
	}
	p := 1
	if _, n := uvarint(head[p:]); n > 0 {
		p += n // the plane's length
	} else {
		return Weak
	}
	if p < len(head) && head[p] == 0x08 { // id
		_, n := uvarint(head[p+1:])
		if n <= 0 {
			return Weak
		}
		p += 1 + n
	}
	if p >= len(head) || head[p] != 0x12 { // name
		return Weak
	}
	size, n := uvarint(head[p+1:])
	if n <= 0 || size == 0 {
		return Weak
	}
	name := head[p+1+n:]
	if uint64(len(name)) > size {
		name = name[:size]
	}
	if len(name) == 0 {
		return Weak
	}
	for _, c := range name {
		if c < 0x20 || c > 0x7e {
			return Weak
		}
	}
	return Strong
}

// sniffJSON recognises JSON text: '{' or '[' after white space, and no
// byte JSON text cannot hold. A protobuf that merely starts like it (a
// Perfetto trace whose first packet is 0x7b or 0x5b bytes long starts
// 0a 7b: '\n', '{') has field tags and lengths below 0x20 soon after.
func sniffJSON(head []byte) Match {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return NoMatch
	}
	for _, c := range t {
		if c < 0x20 && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return NoMatch
		}
	}
	if !utf8.Valid(t) {
		// A rune cut by the end of head is still text.
		cut := len(t)
		for i := 1; i < utf8.UTFMax && i <= len(t); i++ {
			if utf8.RuneStart(t[len(t)-i]) {
				cut = len(t) - i
				break
			}
		}
		if !utf8.Valid(t[:cut]) {
			return NoMatch
		}
	}
	return Strong
}

// uvarint decodes a protobuf varint, returning n <= 0 if b is too short
// or the varint malformed.
func uvarint(b []byte) (v uint64, n int) { return protowire.ConsumeVarint(b) }

// isGzipName reports whether a file name asks for gzip.
func isGzipName(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".gz") }

// byExtension returns the row one of whose extensions ends path (ignoring
// case), or nil.
func byExtension(path string) *Format {
	p := strings.ToLower(path)
	for _, f := range all {
		for _, e := range f.Extensions {
			if strings.HasSuffix(p, e) {
				return f
			}
		}
	}
	return nil
}

// ForPath returns the format a file name asks for, by its extension. It
// fails, naming path, when no row has the extension, listing the ones the
// table knows, or when the name ends in ".gz" and the format has no gzip
// form.
func ForPath(path string) (*Format, error) {
	if f := byExtension(path); f != nil {
		if f.Write == nil {
			return nil, fmt.Errorf("%q names a %s, which devprof reads but does not write: name the output %s", path, f.Display, writableList())
		}
		return f, nil
	}
	if isGzipName(path) {
		if f := byExtension(path[:len(path)-len(".gz")]); f != nil {
			return nil, fmt.Errorf("%q: %s does not read gzip-compressed %s files; drop the .gz", path, f.Viewer, f.Extensions[0])
		}
	}
	return nil, fmt.Errorf("cannot tell the output format from %q: name it %s", path, outputExtensionList())
}

// writableList lists the usual extension of each format devprof writes.
func writableList() string {
	var exts []string
	for _, f := range all {
		if f.Write != nil {
			exts = append(exts, "*"+f.Extensions[0])
		}
	}
	return strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1]
}

// outputExtensionList lists every extension of the formats devprof
// writes.
func outputExtensionList() string {
	var exts []string
	for _, f := range all {
		if f.Write == nil {
			continue
		}
		for _, e := range f.Extensions {
			exts = append(exts, "*"+e)
		}
	}
	return strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1]
}

// extensionList lists every extension of the table for messages:
// "*.pftrace, *.pftrace.gz, … or *.json.gz".
func extensionList() string {
	var exts []string
	for _, f := range all {
		for _, e := range f.Extensions {
			exts = append(exts, "*"+e)
		}
	}
	return strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1]
}

// displayList lists the table's display names for messages: "Perfetto,
// TensorBoard profile (XSpace) or Chrome JSON".
func displayList() string {
	var names []string
	for _, f := range all {
		names = append(names, f.Display)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Detect decides the format of the file at path from its content, which
// it gunzips if need be, and its name: the row whose Sniff matches best
// wins, and the one the name asks for (ignoring a trailing .gz, which every
// reader undoes) breaks ties — so a misnamed file is read as what it is,
// while a damaged one is left to the reader its name chooses to explain.
// When the content looks more like another format than the one the name
// asks for, both readers may be tried (see settle): the one that reads
// the file wins, and an error names both attempts.
// An empty file (or one empty once gunzipped) is an error, as is a file
// neither its name nor its content places, and a pprof profile (see
// ErrNotTrace); the errors name path.
func Detect(path string) (*Format, error) {
	byName := byExtension(strings.TrimSuffix(strings.ToLower(path), ".gz"))
	head, err := readHead(path)
	switch {
	case errors.Is(err, errGzip) && byName != nil:
		return byName, nil // the reader reports the damage in its own words
	case err != nil:
		return nil, err
	case len(head) == 0:
		return nil, fmt.Errorf("%s is empty: not a trace", path)
	case pprof.Sniff(head):
		return nil, profileError(path)
	}
	if what := knownNonTrace(head); what != "" {
		return nil, fmt.Errorf("%s is not a trace (%s)", path, what)
	}
	var best *Format
	bestMatch := NoMatch
	for _, f := range all {
		m := f.Sniff(head)
		if m > bestMatch || (m == bestMatch && m > NoMatch && f == byName) {
			best, bestMatch = f, m
		}
	}
	switch {
	case best != nil && byName != nil && best != byName:
		return settle(path, byName, best)
	case best != nil:
		return best, nil
	case byName != nil:
		return byName, nil
	}
	return nil, fmt.Errorf("%s: cannot tell its format: the name ends in none of %s, and the content is none of %s", path, extensionList(), displayList())
}

// nonTraces are the leading bytes of common files that are not traces,
// and what they are. None of them can begin a trace of the table's
// formats (a protobuf stream's first byte there is a field tag of wire
// type 2, JSON's a bracket, a Go trace's "go 1."), so a file that begins
// with one is named for what it is instead of failing deep in a reader.
var nonTraces = []struct{ magic, what string }{
	{"\x89PNG\r\n\x1a\n", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF87a", "a GIF image"},
	{"GIF89a", "a GIF image"},
	{"%PDF-", "a PDF document"},
	{"PK\x03\x04", "a zip archive"},
	{"\x7fELF", "an ELF executable"},
	{"\x00asm", "a WebAssembly module"},
	{"SQLite format 3\x00", "an SQLite database"},
	{"<?xml", "an XML document"},
	{"<svg", "an SVG image"},
	{"BZh", "a bzip2 file (devprof reads gzip)"},
	{"\xfd7zXZ\x00", "an xz file (devprof reads gzip)"},
	{"\x28\xb5\x2f\xfd", "a zstd file (devprof reads gzip)"},
}

// knownNonTrace returns what head's file is when it is a known kind of
// file that is not a trace, or "".
func knownNonTrace(head []byte) string {
	for _, n := range nonTraces {
		if bytes.HasPrefix(head, []byte(n.magic)) {
			return n.what
		}
	}
	return ""
}

// settle decides between the format a file's name asks for and the one
// its content looks like, which differ: the one whose reader reads the
// file wins, the content's first; when neither does, the error names
// both attempts.
func settle(path string, byName, byContent *Format) (*Format, error) {
	errContent := parses(path, byContent)
	if errContent == nil {
		return byContent, nil
	}
	errName := parses(path, byName)
	if errName == nil {
		return byName, nil
	}
	return nil, fmt.Errorf("%s: not %s (%s); as %s (by content): %s", path, byName.Display,
		strings.TrimPrefix(errName.Error(), path+": "), byContent.Display, strings.TrimPrefix(errContent.Error(), path+": "))
}

// parses reads the file at path in format f, keeping nothing, and
// returns the reader's error.
func parses(path string, f *Format) error {
	if f.Stream == nil {
		_, err := f.ReadFile(path, nil)
		return err
	}
	return f.StreamFile(path, &discard{}, ReadOptions{})
}

// discard is an event.Sink that keeps nothing, for a reader run only to
// see whether a file reads.
type discard struct {
	ids  uint64
	meta event.Meta
}

func (d *discard) Track(event.Track) uint32                            { d.ids++; return uint32(d.ids) }
func (d *discard) SetTrackName(uint32, string)                         {}
func (d *discard) Process(event.Process) int                           { d.ids++; return int(d.ids) }
func (d *discard) ProcessTrack(int) uint32                             { d.ids++; return uint32(d.ids) }
func (d *discard) Span(event.Span) uint64                              { d.ids++; return d.ids }
func (d *discard) EndSpan(uint64, int64)                               {}
func (d *discard) Instant(string, int64, uint32, uint64, []event.Arg)  {}
func (d *discard) Counter(string, string, int64, float64)              {}
func (d *discard) TrackCounter(uint32, string, string, int64, float64) {}
func (d *discard) Meta() *event.Meta                                   { return &d.meta }
func (d *discard) Reset()                                              { *d = discard{} }
func (d *discard) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	d.ids++
	return d.ids
}
func (d *discard) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	d.ids++
	return d.ids
}

// ErrNotTrace is wrapped by Detect's (and Read's) error for a file that is
// a pprof profile: a device-memory profile (package exporters/pprof reads
// it, as `devprof memory` does) or another profile for go tool pprof.
// Without this check the Perfetto reader, whose format has no signature,
// would read a profile as an empty trace.
var ErrNotTrace = errors.New("not a trace")

// profileError says what the pprof profile at path is, reading it as a
// memory profile.
func profileError(path string) error {
	_, err := pprof.ReadFile(path)
	switch {
	case err == nil:
		return fmt.Errorf("%s is a device-memory profile (pprof), %w: devprof memory and go tool pprof read it", path, ErrNotTrace)
	case errors.Is(err, pprof.ErrNotMemory):
		return fmt.Errorf("%s is a pprof profile, %w: open it with go tool pprof", path, ErrNotTrace)
	}
	return fmt.Errorf("%s looks like a pprof profile, %w, but does not read as a memory profile: %s", path, ErrNotTrace, strings.TrimPrefix(err.Error(), path+": "))
}

// errGzip marks content that starts like gzip but does not decompress.
var errGzip = errors.New("not a valid gzip stream")

// readHead returns the first HeadSize bytes of the content of the file at
// path, gunzipped if it starts with gzip's magic.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	gz := false
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", path, errGzip, err)
		}
		r, gz = zr, true
	}
	head := make([]byte, HeadSize)
	n, err := io.ReadFull(r, head)
	switch {
	case n > 0 || err == io.EOF:
		// A short file, or a damaged gzip stream with some content before
		// the damage, is still sniffed: the reader reports what is wrong.
	case gz:
		return nil, fmt.Errorf("%s: %w: %v", path, errGzip, err)
	default:
		return nil, err
	}
	return head[:n], nil
}

// Read reads the trace file at path, in whichever format Detect finds,
// into the event model, and returns the format with it.
func Read(path string) (*event.Snapshot, *Format, error) {
	f, err := Detect(path)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.ReadFile(path, nil)
	return s, f, err
}

// ReadFile reads the file at path in format f. progress, when not nil, is
// called as the file is read, with the bytes read so far and the file's
// size (a caller that shows progress decides how often to draw it).
func (f *Format) ReadFile(path string, progress func(read, size int64)) (*event.Snapshot, error) {
	return f.ReadFileWith(path, ReadOptions{Progress: progress})
}

// ReadOptions tune ReadFileWith.
type ReadOptions struct {
	// Progress, when not nil, is called as the file is read, with the
	// bytes read so far and the file's size.
	Progress func(read, size int64)
	// MaxEvents bounds the events a streamed reader keeps (0: its
	// default). Only a format with DecodeBounded takes it; for the others
	// a non-zero MaxEvents is an error, since they read the whole file.
	MaxEvents int64
}

// ReadFileWith is ReadFile with options.
func (f *Format) ReadFileWith(path string, o ReadOptions) (*event.Snapshot, error) {
	if o.MaxEvents != 0 && f.DecodeBounded == nil {
		return nil, fmt.Errorf("%s: a bound on events applies to a streamed input (a Go execution trace), not to a %s, which is read whole", path, f.Display)
	}
	progress := o.Progress
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var r io.Reader = file
	if progress != nil {
		size := int64(-1)
		if st, err := file.Stat(); err == nil {
			size = st.Size()
		}
		r = &countingReader{r: file, size: size, progress: progress}
	}
	if o.MaxEvents != 0 {
		return f.DecodeBounded(r, path, o.MaxEvents)
	}
	return f.Decode(r, path)
}

// StreamFile reads the file at path in format f into sink as its reader
// decodes it (Format.Stream), or, for a format that cannot stream yet or
// a bound on events (MaxEvents, which only DecodeBounded takes), reads it
// whole and replays the model into sink. Progress is as for
// ReadFileWith.
func (f *Format) StreamFile(path string, sink event.Sink, o ReadOptions) error {
	if f.Stream == nil || o.MaxEvents != 0 {
		s, err := f.ReadFileWith(path, o)
		if err != nil {
			return err
		}
		Replay(s, sink)
		return nil
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	var r io.Reader = file
	if o.Progress != nil {
		size := int64(-1)
		if st, err := file.Stat(); err == nil {
			size = st.Size()
		}
		r = &countingReader{r: file, size: size, progress: o.Progress}
	}
	return f.Stream(r, path, sink)
}

// countingReader reports how much of a file has been read. It passes on
// what a reader needs to read the file where it lies (Seek, ReadAt,
// Stat), so that showing progress changes nothing of how it is read.
type countingReader struct {
	r        *os.File
	read     int64
	size     int64
	progress func(read, size int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	c.progress(c.read, c.size)
	return n, err
}

// Seek lets a reader that reads a file again (the Perfetto reader, when a
// file is out of order) do so through the count, which starts over with
// it.
func (c *countingReader) Seek(offset int64, whence int) (int64, error) {
	n, err := c.r.Seek(offset, whence)
	if err == nil {
		c.read = n
	}
	return n, err
}

// ReadAt reads where the reader asks (the XSpace reader reads a file by
// windows); progress is how far into the file reading has gone.
func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	if end := off + int64(n); end > c.read {
		c.read = end
		c.progress(c.read, c.size)
	}
	return n, err
}

// Stat is the file's.
func (c *countingReader) Stat() (os.FileInfo, error) { return c.r.Stat() }

// WriteFile writes s to path in format f, or in the format the name asks
// for when f is nil, gzip-compressed when the name ends in ".gz". The file
// appears whole or not at all (see internal/atomicfile).
func WriteFile(path string, f *Format, s *event.Snapshot) error {
	if f == nil {
		var err error
		if f, err = ForPath(path); err != nil {
			return err
		}
	}
	if f.Write == nil {
		return fmt.Errorf("%s: devprof reads %s files but does not write them: name the output %s", path, f.Display, writableList())
	}
	out, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := f.Write(out, s, isGzipName(path)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Commit()
}
