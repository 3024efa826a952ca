package xplane

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/internal/metatext"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
)

// Names the reader recognises besides the writer's.
const (
	derivedLineMin = 0xdeadbeef // xprof's kThreadIdDerivedMin
	derivedLineMax = derivedLineMin + 400

	// absoluteNS is the line timestamp above which a line without a Task
	// Environment is taken to be in Unix nanoseconds (older TF files).
	absoluteNS = 1e17

	// maxInflated bounds what a gzip-compressed file may expand to (an
	// XSpace protobuf cannot exceed 2 GiB).
	maxInflated = 2 << 30

	// defaultProgram is Meta.Program when the file does not name the process.
	defaultProgram = "xplane"
)

// derivedLines are the line names xprof derives from a device's stream
// lines during preprocessing.
var derivedLines = map[string]bool{
	"Steps":                true,
	"XLA Ops":              true,
	"XLA Modules":          true,
	"Framework Ops":        true,
	"Framework Name Scope": true,
	"Source code":          true,
	"Launch Stats":         true,
}

// hostGroups maps host planes that TSL merges into /host:CPU after
// collection to it, so that a thread's TraceMe spans and its CUPTI or
// Python events share one track.
var hostGroups = map[string]string{
	"/host:CUPTI":         HostPlaneName,
	"/host:NVTX-CUPTI":    HostPlaneName,
	"/host:ROCTRACER":     HostPlaneName,
	"/host:python-tracer": HostPlaneName,
	"/host:TPU-runtime":   HostPlaneName,
}

// ReadFile reads the XSpace at path; see Read. When the file names no
// host, Meta.Host is the file name without ".xplane.pb", as xprof does.
func ReadFile(path string) (*event.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("xplane: %w", err)
	}
	defer f.Close()
	return ReadNamed(f, path)
}

// Read decodes an XSpace (.xplane.pb) written by devprof, JAX, TensorFlow or PyTorch/XLA into an event snapshot, so that any devprof exporter can convert it: Decode into an event.Builder.
//
// Times are in nanoseconds from the profile start (Meta.Start.Mono is 0,
// Meta.Start.Wall the Task Environment's profile_start_time). Host lines
// become TrackHostThread tracks whose events are spans and instants nested
// by time; device planes (/device:GPU:<n>, TPU, custom) become
// TrackDeviceStream tracks of activity; _counters_ lines become counter
// samples. Stats become arguments of their own kinds (interned ref_value
// strings resolved); _r/step_num make a step, correlation_id a flow
// linking a launch to its kernel. Lines xprof derives from others (Steps,
// XLA Ops, ... on GPUs) are skipped, as are aggregated events (counted in
// a warning). MemoryAllocation and MemoryDeallocation events (TSL's
// allocators', devprof's) become the allocations and frees of a
// TrackMemory track per allocator (see memory.go). A whole-file gzip is
// undone. XSpace errors and warnings become Meta.Warnings (devprof's with
// their source and code, other tools' as text), except devprof's drop
// lines, which become Meta.Drops; devprof's notes on the Task Environment
// become Meta.Notes.
//
// A file that is not an XSpace gives an error
// "xplane: cannot decode XSpace: ..." (with the file name from ReadFile).
func Read(r io.Reader) (*event.Snapshot, error) { return ReadNamed(r, "") }

// ReadNamed is Read of the file named name (its path): errors name it, and
// a file that names no host gets the host xprof derives from the file name
// (<host>.xplane.pb), as ReadFile does.
func ReadNamed(r io.Reader, name string) (*event.Snapshot, error) {
	b := event.NewBuilder(event.Meta{})
	if err := DecodeNamed(r, name, b); err != nil {
		return nil, err
	}
	return b.Snapshot(), nil
}

// Decode reads an XSpace into sink as it decodes it (see Read for what
// becomes what): the events of one line at a time, never a decoded copy
// of the whole file's. A regular file (an *os.File) is read where it
// lies, a window at a time, twice: planes, metadata and line headers
// first (an XSpace is one message whose planes keep their metadata after
// their lines), then the lines. Any other reader, and a gzip-compressed
// file, is read into memory first (about 17 bytes an event). On each
// track, events come in nondecreasing start order, parents before
// children; a line whose events are out of that order, and a track made
// of several lines (TSL's /host:CUPTI threads on /host:CPU's), is
// gathered and sorted first, and so is a whole file of allocator events
// (memory.go), whose tracks are only known at its end. sink.Meta() is
// filled in (its time span, drops, warnings and notes); on an error, sink
// may hold part of the file.
func Decode(r io.Reader, sink event.Sink) error { return DecodeNamed(r, "", sink) }

// DecodeNamed is Decode of the file named name, as ReadNamed is Read's.
func DecodeNamed(r io.Reader, name string, sink event.Sink) error {
	where := "xplane: "
	if name != "" {
		where += name + ": "
	}
	src, err := openSource(r)
	if err != nil {
		return fmt.Errorf("%s%w", where, err)
	}
	if src.size == 0 {
		return errors.New(where + "empty file: no XSpace in it")
	}
	if head, err := src.at(0, int(min(src.size, 2))); err != nil {
		return fmt.Errorf("%s%w", where, err)
	} else if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		data, err := src.all()
		if err != nil {
			return fmt.Errorf("%s%w", where, err)
		}
		if data, err = gunzip(data); err != nil {
			return fmt.Errorf("%scannot decode XSpace: gzip: %w", where, err)
		}
		if len(data) == 0 {
			return errors.New(where + "empty file: no XSpace in it")
		}
		src = bytesSource(data)
	}
	if _, err := decodeSource(src, sink); err != nil {
		if src.looksLikeJSON() {
			return errors.New(where + "cannot decode XSpace: this is a JSON trace, not an .xplane.pb")
		}
		return fmt.Errorf("%scannot decode XSpace: %v", where, err)
	}
	if m := sink.Meta(); m.Host == "" && name != "" {
		m.Host = hostFromPath(name)
	}
	return nil
}

// decodeSource decodes the XSpace in src into sink.
func decodeSource(src *source, sink event.Sink) (*reader, error) {
	xs, err := decodeSpace(src)
	if err != nil {
		return nil, err
	}
	rd := &reader{xs: xs, sink: sink}
	return rd, rd.read()
}

// openSource returns the source of r: a regular file is read where it
// lies, by windows (what is left of it from its current offset); other
// readers are read into memory.
func openSource(r io.Reader) (*source, error) {
	if f, ok := r.(interface {
		io.ReaderAt
		io.Seeker
		Stat() (os.FileInfo, error)
	}); ok {
		st, err := f.Stat()
		if err == nil && st.Mode().IsRegular() {
			at, err := f.Seek(0, io.SeekCurrent)
			if err == nil && at <= st.Size() {
				return fileSource(f, at, st.Size()-at), nil
			}
		}
	}
	data, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return bytesSource(data), nil
}

// readAll reads r to its end. A file is read into a buffer of its size:
// io.ReadAll's doubling held up to twice the file at once.
func readAll(r io.Reader) ([]byte, error) {
	f, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return io.ReadAll(r)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > maxInflated {
		return io.ReadAll(r)
	}
	// One byte more than the size tells a file that grew, read on.
	buf := make([]byte, st.Size()+1)
	n, err := io.ReadFull(r, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(r)
	return append(buf, rest...), err
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflated+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > maxInflated {
		return nil, errors.New("decompressed size exceeds 2 GiB")
	}
	return out, nil
}

// hostFromPath returns the host name xprof derives from a file name.
func hostFromPath(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".gz")
	if h, ok := strings.CutSuffix(base, ".xplane.pb"); ok {
		return h
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// reader converts one decoded XSpace.
type reader struct {
	xs   *xspace
	sink event.Sink

	// lines holds, in file order, the lines whose events are yet to be
	// read (see read); allocators is set when the file has allocator
	// events, which are read as the lines are met instead.
	lines      []pendingLine
	allocators bool
	// streamed and gathered count the lines read each way.
	streamed, gathered int

	// Time base: line timestamps at or above start (Unix ns) are absolute.
	start     int64
	haveStart bool // start comes from the Task Environment
	absolute  bool // lines are absolute without a Task Environment; start is their minimum
	stop      int64
	haveStop  bool
	lastEnd   int64

	tracks   []*trackData
	procs    []event.Process // of the "/host:CPU [<pid>]" planes, for Track.Process
	host     map[hostKey]*trackData
	memory   map[string]*trackData // memory tracks by allocator_name
	counters []counterSample
	// producers maps the producer ids (_p) of step events to their step
	// numbers; consumed holds those a memory event of devprof's links to
	// (memory.go), whose _p and _pt stats the step spans lose again.
	producers map[uint64]int64
	consumed  map[uint64]bool

	warnings                               []event.Warning
	aggregated, negative, noValue, badMeta int

	// args, evArgs and devArgs are scratch space for one event's
	// arguments.
	args, evArgs, devArgs []event.Arg
	// xflows maps the ids of xprof flow stats to the model's flow ids
	// (flows.go).
	xflows map[uint64]uint64
}

type hostKey struct {
	group string
	id    int64
}

// pendingLine is a line to read: its events go to td, or with counter
// set to counter samples (of device, nil for the host, and process
// proc), or with neither, nowhere (a line the reader skips, whose events
// are only checked).
type pendingLine struct {
	pc      *planeCtx
	l       *xline
	td      *trackData
	counter bool
	device  *event.Track
	proc    int
}

// trackData gathers the events of one track before they are built.
type trackData struct {
	// lines is how many of the track's lines are still to be read;
	// gathered is set once one was read into events; out is set when the
	// events went straight into the sink instead.
	lines    int
	gathered bool
	out      *emitter
	track    event.Track
	primary  bool // the name comes from the plane the group is named after
	device   bool
	events   []pending
	args     []event.Arg // the arguments of all events, which refer to runs of it

	// A memory track (memory.go) holds the allocations and frees of one
	// allocator, taken from the host tracks in from; a host track counts
	// the events it gave away in diverted.
	memory    bool
	allocator string
	from      []*trackData
	diverted  int

	// loose marks the instants of a process on no thread (an Instants
	// line): they go on the process's TrackProcess track, or on none for
	// the program's.
	loose bool
}

// argsOf returns the arguments of one of the track's events.
func (td *trackData) argsOf(e *pending) []event.Arg { return td.args[e.args.start:e.args.end] }

// extent is a run [start, end) of trackData.args.
type extent struct{ start, end int }

// pending is one event read from a line.
type pending struct {
	name       string
	start, end int64
	args       extent // in trackData.args
	span       bool   // a span (else an instant; activities are always spans)
	step       bool
	stepNum    int64
	unfinished bool
	kind       event.ActivityKind // of a memory track's events
	consumer   uint64             // a memory event's link to its step's span (_c)
}

type counterSample struct {
	name, unit string
	t          int64
	v          float64
	device     *event.Track // the device the series belongs to; nil for the host
	proc       int          // the host process (event.Track.Process) whose plane it is on
}

// planeCtx resolves one plane's metadata.
type planeCtx struct {
	p      *xplane
	events map[int64]*eventInfo
}

// eventInfo is what an event metadata entry contributes to each event.
type eventInfo struct {
	name string
	args []event.Arg // TraceMe-encoded arguments, then the metadata's stats
}

// warnf adds a warning of the reader's own, with a stable code.
func (r *reader) warnf(code, format string, args ...any) {
	r.warnings = append(r.warnings, event.Warning{Source: "xplane", Code: code, Text: fmt.Sprintf(format, args...)})
}

// read converts the space into r.sink. Tracks are built in the order
// the file first names them, and each of their events once the track's
// lines are read; counters come last. Lines are read in file order, so
// that what the reader numbers as it goes (flows) is numbered as the file
// orders it. A track whose single line comes when every track before it
// is built, and whose events are in order, goes straight from the file
// into the sink; the others are gathered first. A file with allocator
// events is read whole before anything is built: where those events go
// (a memory track per allocator, named after what they share a line
// with) and what their steps drop from the step spans are only known at
// its end.
func (r *reader) read() error {
	meta := event.Meta{Program: defaultProgram}
	if hs := r.xs.hostnames; len(hs) > 0 {
		meta.Host = hs[0]
	}
	r.timeBase(&meta)
	if meta.Program == defaultProgram {
		meta.Program = r.programName(meta.Host)
	}
	warns := r.fileWarnings(&meta)
	r.host = map[hostKey]*trackData{}
	r.memory = map[string]*trackData{}
	r.allocators = r.hasAllocatorEvents()
	for i := range r.xs.planes {
		p := &r.xs.planes[i]
		if len(p.lines) == 0 {
			continue
		}
		var err error
		switch name := p.name; {
		case isDevicePlane(name):
			err = r.devicePlane(p)
		default:
			err = r.hostPlane(p)
		}
		if err != nil {
			return err
		}
	}
	b := r.sink
	m := b.Meta()
	*m = meta
	// The clock's anchor before the events, as timeSpan sets it at the
	// end, for a sink that writes Unix times as events come
	// (tables.Export).
	m.Start = r.startAnchor()
	r.numberProcesses(meta.PID)
	for _, proc := range r.procs {
		b.Process(proc)
	}
	if r.allocators {
		r.nameMemoryTracks()
		for _, td := range r.tracks {
			if len(td.events) == 0 && td.diverted > 0 {
				continue // a line of memory events alone: it is their track
			}
			r.build(b, td)
		}
	} else if err := r.readLines(); err != nil {
		return err
	}
	deviceTrack := map[int]uint32{}
	for _, c := range r.counters {
		if c.device == nil && c.proc > 0 {
			// A process plane's counters are that process's.
			b.TrackCounter(b.ProcessTrack(c.proc), c.name, c.unit, c.t, c.v)
			continue
		}
		if c.device == nil {
			b.Counter(c.name, c.unit, c.t, c.v)
			continue
		}
		id, ok := deviceTrack[c.device.Device]
		if !ok {
			id = b.Track(*c.device)
			deviceTrack[c.device.Device] = id
		}
		b.TrackCounter(id, c.name, c.unit, c.t, c.v)
	}
	// C++ writers do not check that names are UTF-8.
	if r.xs.invalidUTF8 > 0 {
		r.warnf("invalid_utf8", "xplane: %d strings were not valid UTF-8; invalid bytes replaced with U+FFFD", r.xs.invalidUTF8)
	}
	r.countWarnings()
	// The file's warnings first, then the reader's own.
	m.Warnings = append(append(m.Warnings, warns...), r.warnings...)
	r.timeSpan(m)
	return nil
}

// noStreaming makes readLines gather every track, for the test that
// holds the two ways to the same model.
var noStreaming bool

// readLines reads the lines left to read, in file order, building each
// track when its last line is read and the tracks before it are built.
func (r *reader) readLines() error {
	next := 0 // the first track not built
	for i := range r.lines {
		pl := &r.lines[i]
		var err error
		switch td := pl.td; {
		case pl.counter:
			err = r.counterLine(pl.pc, pl.l, pl.device, pl.proc)
		case td == nil:
			err = r.xs.eachEvent(pl.l, func(*xevent) error { return nil })
		case !noStreaming && next < len(r.tracks) && r.tracks[next] == td && td.lines == 1 && !td.gathered && !td.loose && r.inOrder(pl.l):
			td.lines = 0
			r.streamed++
			out := r.emitter(r.sink, td)
			err = r.lineEvents(pl.pc, pl.l, td, out)
		default:
			td.lines--
			td.gathered = true
			r.gathered++
			err = r.lineEvents(pl.pc, pl.l, td, nil)
		}
		if err != nil {
			return err
		}
		for ; next < len(r.tracks) && r.tracks[next].lines == 0; next++ {
			if td := r.tracks[next]; td.out == nil {
				r.build(r.sink, td)
				td.events, td.args = nil, nil
			}
		}
	}
	return nil
}

// hasAllocatorEvents reports whether a host plane names an allocator
// event (memory.go) in its event metadata.
func (r *reader) hasAllocatorEvents() bool {
	for i := range r.xs.planes {
		p := &r.xs.planes[i]
		if isDevicePlane(p.name) {
			continue
		}
		for _, md := range p.eventMD {
			name := md.displayName
			if len(name) == 0 {
				name = md.name
			}
			if n, _ := parseTraceMe(string(name)); n == MemoryAllocationName || n == MemoryDeallocationName {
				return true
			}
		}
	}
	return false
}

// line takes a line of events for track td (created for it, or met
// before): read at once in a file of allocator events, else queued.
func (r *reader) line(pc *planeCtx, l *xline, td *trackData) error {
	if r.allocators {
		return r.lineEvents(pc, l, td, nil)
	}
	td.lines++
	r.lines = append(r.lines, pendingLine{pc: pc, l: l, td: td})
	return nil
}

// counterLines takes a _counters_ line, as line takes a line of events.
func (r *reader) counterLines(pc *planeCtx, l *xline, device *event.Track, proc int) error {
	if r.allocators {
		return r.counterLine(pc, l, device, proc)
	}
	r.lines = append(r.lines, pendingLine{pc: pc, l: l, counter: true, device: device, proc: proc})
	return nil
}

// skip takes a line of events the reader leaves out, which are checked
// all the same (as proto.Unmarshal would).
func (r *reader) skip(l *xline) error {
	if l.events == 0 {
		return nil
	}
	if r.allocators {
		return r.xs.eachEvent(l, func(*xevent) error { return nil })
	}
	r.lines = append(r.lines, pendingLine{l: l})
	return nil
}

// fileWarnings returns the warnings the file carries (its errors first),
// taking devprof's drop lines into meta.Drops and its notes into
// meta.Notes instead.
func (r *reader) fileWarnings(meta *event.Meta) []event.Warning {
	var warns []event.Warning
	for _, e := range r.xs.errors {
		warns = append(warns, event.Warning{Text: "XSpace error: " + e})
	}
	for _, w := range r.xs.warnings {
		switch l := metatext.ParseLine(w); {
		case l.Drops != nil:
			meta.AddDrops(l.Drops.Source, l.Drops.Events)
			if l.Drops.Source == event.DropsRecorder {
				meta.MaxEvents = l.MaxEvents
			}
		case l.Note != nil:
			meta.Notes = append(meta.Notes, *l.Note)
		default:
			warns = append(warns, *l.Warning)
		}
	}
	return warns
}

// countWarnings adds the reader's own warnings for what it skipped.
func (r *reader) countWarnings() {
	if r.aggregated > 0 {
		r.warnf("aggregated_events", "xplane: %d aggregated events (num_occurrences, no start time) skipped", r.aggregated)
	}
	if r.negative > 0 {
		r.warnf("negative_duration", "xplane: %d events with a negative duration read as zero-length", r.negative)
	}
	if r.noValue > 0 {
		r.warnf("counter_without_value", "xplane: %d counter samples without a numeric stat skipped", r.noValue)
	}
	if r.badMeta > 0 {
		r.warnf("unknown_metadata", "xplane: %d events refer to event metadata the plane does not define", r.badMeta)
	}
}

// startAnchor is the trace's start: time zero, at the profile's start.
func (r *reader) startAnchor() event.ClockAnchor {
	startWall := int64(0)
	if r.haveStart || r.absolute {
		startWall = r.start
	}
	return event.ClockAnchor{Mono: 0, Boot: startWall, Wall: startWall}
}

// timeSpan sets the snapshot's start and stop anchors.
func (r *reader) timeSpan(meta *event.Meta) {
	meta.Start = r.startAnchor()
	startWall := meta.Start.Wall
	if r.haveStart && r.haveStop {
		d := r.stop - r.start
		meta.Stop = event.ClockAnchor{Mono: d, Boot: r.stop, Wall: r.stop}
	} else {
		d := max(r.lastEnd, 0)
		meta.Stop = event.ClockAnchor{Mono: d, Boot: addSat(startWall, d), Wall: addSat(startWall, d)}
	}
}

// programName names the process of a file that has no process_name stat
// (TSL writes none): the first host thread TSL named after itself (the
// line's name and display name both the thread's name, "python3"; an
// unnamed thread is "Host Threads/<tid>"), else the host, else "xplane".
func (r *reader) programName(host string) string {
	for _, p := range r.xs.planes {
		if p.name != HostPlaneName {
			continue
		}
		for _, l := range p.lines {
			if name := l.name; name != "" && name == l.displayName && !strings.Contains(name, "/") {
				return name
			}
		}
	}
	if host != "" {
		return host
	}
	return defaultProgram
}

// timeBase reads the Task Environment plane and process-wide plane stats.
func (r *reader) timeBase(meta *event.Meta) {
	havePID := false
	for i := range r.xs.planes {
		p := &r.xs.planes[i]
		stats := statsOf(p)
		if p.name == TaskEnvPlaneName {
			r.taskEnv(p, stats, meta)
		}
		if strings.HasPrefix(p.name, ProcessPlanePrefix) {
			continue // another process's plane (processPlane)
		}
		if st := stats["process_id"]; st != nil && !havePID {
			if v, ok := intStat(st); ok && v > 0 && v <= math.MaxInt32 {
				meta.PID, havePID = int(v), true
			}
		}
		if st := stats["process_name"]; st != nil && meta.Program == defaultProgram {
			if v := r.strStat(p, st); v != "" {
				meta.Program = v
			}
		}
	}
	if r.haveStop && r.haveStart && r.stop < r.start {
		r.haveStop = false
	}
	if r.haveStart {
		return
	}
	// No Task Environment: absolute lines are measured from the earliest.
	for _, p := range r.xs.planes {
		for _, l := range p.lines {
			if ts := l.timestampNS; ts > absoluteNS && (!r.absolute || ts < r.start) {
				r.start, r.absolute = ts, true
			}
		}
	}
}

// taskEnv reads the Task Environment plane's stats: profile start and
// stop (the first of each), the tracer levels and devprof's notes.
func (r *reader) taskEnv(p *xplane, stats map[string]*xstat, meta *event.Meta) {
	if v, ok := wallStat(stats["profile_start_time"]); ok && v > 0 && !r.haveStart {
		r.start, r.haveStart = v, true
	}
	if v, ok := wallStat(stats["profile_stop_time"]); ok && !r.haveStop {
		r.stop, r.haveStop = v, true
	}
	if st := stats["profile_options"]; st != nil && st.kind == statKindBytes {
		meta.HostTracerLevel, meta.DeviceTracerLevel = tracerLevels(st.b)
	}
	r.taskEnvNotes(p, meta)
}

// taskEnvNotes adds devprof's notes on the Task Environment plane to
// meta.Notes.
func (r *reader) taskEnvNotes(p *xplane, meta *event.Meta) {
	for i := range p.stats {
		st := &p.stats[i]
		if statName(p, st.metadataID) != noteStat {
			continue
		}
		// A note's line has the prefix of a note or none.
		if l := metatext.ParseLine(r.strStat(p, st)); l.Note != nil {
			meta.Notes = append(meta.Notes, *l.Note)
		} else if l.Warning != nil {
			meta.Notes = append(meta.Notes, event.Note{Text: l.Warning.Text})
		}
	}
}

// lineBase returns a line's timestamp in ns from the profile start.
func (r *reader) lineBase(ts int64) int64 {
	switch {
	case r.haveStart && (ts >= r.start || ts > absoluteNS):
		return ts - r.start
	case r.absolute && ts > absoluteNS:
		return ts - r.start
	}
	return ts
}

// statsOf maps a plane's stats by name, the first of each name.
func statsOf(p *xplane) map[string]*xstat {
	m := map[string]*xstat{}
	for i := range p.stats {
		name := statName(p, p.stats[i].metadataID)
		if _, dup := m[name]; !dup {
			m[name] = &p.stats[i]
		}
	}
	return m
}

// wallStat reads a Unix-ns stat (uint64 as TSL writes it, or int64).
// A nil stat (one statsOf did not find) has no value.
func wallStat(st *xstat) (int64, bool) {
	if v, ok := intStat(st); ok && v >= 0 {
		return v, true
	}
	return 0, false
}

func intStat(st *xstat) (int64, bool) {
	switch {
	case st == nil:
	case st.kind == statKindInt64:
		return int64(st.num), true
	case st.kind == statKindUint64 && st.num <= math.MaxInt64:
		return int64(st.num), true
	}
	return 0, false
}

func (r *reader) strStat(p *xplane, st *xstat) string {
	switch st.kind {
	case statKindStr:
		return r.xs.str(st.b)
	case statKindRef:
		return refName(p, st.num)
	}
	return ""
}

// tracerLevels reads host_tracer_level (2) and device_tracer_level (3)
// from serialized ProfileOptions.
func tracerLevels(b []byte) (host, device int) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.VarintType && (num == 2 || num == 3) {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return
			}
			if v <= math.MaxInt32 {
				if num == 2 {
					host = int(v)
				} else {
					device = int(v)
				}
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return
		}
		b = b[m:]
	}
	return
}

func statName(p *xplane, id int64) string {
	if name := p.statMD[id]; name != "" {
		return name
	}
	return "stat_" + strconv.FormatInt(id, 10)
}

// refName resolves an interned string (ref_value).
func refName(p *xplane, id uint64) string {
	if id <= math.MaxInt64 {
		if name, ok := p.statMD[int64(id)]; ok {
			return name
		}
	}
	return "stat_" + strconv.FormatUint(id, 10)
}

// isDevicePlane tells device planes (xprof's IsDevicePlane, plus the
// legacy custom and virtual-device prefixes) from host planes.
func isDevicePlane(name string) bool {
	for _, pre := range []string{"/device", "#Chip", "/custom:", "/virtualdevice:"} {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// ordinal returns n for /device:GPU:<n> and /device:TPU:<n>.
func ordinal(name string) (int, bool) {
	for _, pre := range []string{GPUPlanePrefix, "/device:TPU:"} {
		if s, ok := strings.CutPrefix(name, pre); ok && s != "" && s[0] >= '0' && s[0] <= '9' {
			if n, err := strconv.Atoi(s); err == nil && n <= math.MaxInt32 {
				return n, true
			}
		}
	}
	return 0, false
}

func isDerivedID(id int64) bool { return id >= derivedLineMin && id < derivedLineMax }

func lineLabel(l *xline) string {
	if l.displayName != "" {
		return l.displayName
	}
	return l.name
}

// processPlane registers the process of a "/host:CPU [<pid>]" plane (one
// per process besides the program, as devprof writes them and as JAX
// names a subprocess's planes) and returns its Track.Process: its pid
// from the process_id stat, else from the name, else a string pid; its
// name, labels and sort index from devprof's stats.
func (r *reader) processPlane(p *xplane) int {
	stats := statsOf(p)
	inner := strings.TrimSuffix(strings.TrimPrefix(p.name, ProcessPlanePrefix), "]")
	proc := event.Process{}
	if v, ok := intStat(stats["process_id"]); ok {
		proc.PID = v
	} else if v, err := strconv.ParseInt(inner, 10, 64); err == nil {
		proc.PID = v
	} else {
		proc.Label, proc.IsLabel, proc.PID = inner, true, -1 // numbered in numberProcesses
	}
	if st := stats[StatPIDLabel]; st != nil {
		proc.Label, proc.IsLabel = r.strStat(p, st), true
	}
	if st := stats["process_name"]; st != nil {
		proc.Name = r.strStat(p, st)
	}
	if st := stats[StatProcessLabels]; st != nil {
		var labels []string
		if json.Unmarshal([]byte(r.strStat(p, st)), &labels) == nil {
			proc.Labels = labels
		}
	}
	if v, ok := intStat(stats[StatSortIndex]); ok {
		proc.SortIndex, proc.Sorted = v, true
	}
	r.procs = append(r.procs, proc)
	return len(r.procs)
}

// numberProcesses gives the processes known only by a string pid numbers
// past every numeric pid, in order of first use.
func (r *reader) numberProcesses(program int) {
	next := int64(program)
	for _, p := range r.procs {
		next = max(next, p.PID)
	}
	for i := range r.procs {
		if r.procs[i].PID < 0 && r.procs[i].IsLabel {
			next++
			r.procs[i].PID = next
		}
	}
}

func (r *reader) hostPlane(p *xplane) error {
	pc := &planeCtx{p: p, events: map[int64]*eventInfo{}}
	proc := 0
	if strings.HasPrefix(p.name, ProcessPlanePrefix) {
		proc = r.processPlane(p)
	}
	group, primary := p.name, true
	if g, ok := hostGroups[group]; ok {
		group, primary = g, false
	}
	for i := range p.lines {
		l := &p.lines[i]
		if l.events == 0 || isDerivedID(l.id) {
			if err := r.skip(l); err != nil {
				return err
			}
			continue
		}
		if l.name == CountersLineName {
			if err := r.counterLines(pc, l, nil, proc); err != nil {
				return err
			}
			continue
		}
		if l.name == InstantsLineName && r.pointsOnly(l) {
			// The Instants line devprof writes for a process's instants
			// on no thread: they go back on the process.
			key := hostKey{group + "\x00" + InstantsLineName, 0}
			td := r.host[key]
			if td == nil {
				td = &trackData{track: event.Track{Kind: event.TrackProcess, Process: proc}, loose: true}
				r.host[key] = td
				r.tracks = append(r.tracks, td)
			}
			if err := r.line(pc, l, td); err != nil {
				return err
			}
			continue
		}
		key := hostKey{group, l.id}
		td := r.host[key]
		name := lineLabel(l)
		if name == "" {
			name = "Thread " + strconv.FormatInt(l.id, 10)
		}
		if td == nil {
			td = &trackData{track: event.Track{Kind: event.TrackHostThread, ID: l.id, Name: name, Process: proc}, primary: primary}
			r.host[key] = td
			r.tracks = append(r.tracks, td)
		} else if primary && !td.primary && lineLabel(l) != "" {
			td.track.Name, td.primary = name, true
		}
		if err := r.line(pc, l, td); err != nil {
			return err
		}
	}
	return nil
}

// pointsOnly reports whether every event of a line has no duration (a
// malformed line is left to the reading that fails on it).
func (r *reader) pointsOnly(l *xline) bool {
	points := true
	r.xs.scanEvents(l, func(e *xevent) { points = points && e.durationPS == 0 })
	return points
}

// inOrder reports whether a line's events, as the reader times them, are
// in the order build sorts a track's in: by start, the longer first.
func (r *reader) inOrder(l *xline) bool {
	base := r.lineBase(l.timestampNS)
	ordered := true
	var last, lastDur int64
	first := true
	ok := r.xs.scanEvents(l, func(e *xevent) {
		start, end, ok := eventTimes(base, e)
		if !ok || !ordered {
			return
		}
		if !first && (start < last || start == last && end-start > lastDur) {
			ordered = false
		}
		first, last, lastDur = false, start, end-start
	})
	return ok && ordered
}

// deviceOf reads a device plane's identity and capabilities (the stats
// TSL and devprof write) into a stream track template.
func (r *reader) deviceOf(p *xplane, dev int) event.Track {
	t := event.Track{Kind: event.TrackDeviceStream, Device: dev}
	stats := statsOf(p)
	str := func(name string) string {
		if st := stats[name]; st != nil {
			return r.strStat(p, st)
		}
		return ""
	}
	num := func(name string) int64 {
		v, _ := intStat(stats[name])
		return v
	}
	t.DeviceName, t.UUID, t.PCIBusID = str("gpu_device_name"), str("device_uuid"), str("pci_bus_id")
	if t.Vendor = str("device_vendor"); strings.EqualFold(t.Vendor, "nvidia") {
		t.Vendor = "NVIDIA" // the model's spelling; TSL writes "Nvidia"
	}
	t.Caps = event.DeviceCaps{
		ClockRateKHz:    num("clock_rate"),
		Cores:           num("core_count"),
		MemoryBytes:     uint64(num("memory_size")),
		MemoryBandwidth: uint64(num("memory_bandwidth")),
		ComputeCapMajor: num("compute_cap_major"),
		ComputeCapMinor: num("compute_cap_minor"),
	}
	return t
}

func (r *reader) devicePlane(p *xplane) error {
	pc := &planeCtx{p: p, events: map[int64]*eventInfo{}}
	dev, ok := ordinal(p.name)
	if !ok {
		dev = int(max(min(p.id, math.MaxInt32), math.MinInt32))
	}
	device := r.deviceOf(p, dev)
	derived := func(l *xline) bool {
		return isDerivedID(l.id) || derivedLines[l.name] ||
			strings.HasPrefix(l.name, "Framework Ops - from") ||
			strings.HasPrefix(l.name, "Framework Name Scope - from")
	}
	// Derived lines duplicate stream lines; a plane that has only such
	// lines (TPU planes record their ops there) keeps them.
	skipDerived := false
	for i := range p.lines {
		if l := &p.lines[i]; l.events > 0 && !derived(l) && l.name != CountersLineName {
			skipDerived = true
			break
		}
	}
	byID := map[int64]*trackData{}
	for i := range p.lines {
		l := &p.lines[i]
		if l.events == 0 {
			continue
		}
		// A device's counters line may use a derived-line id (devprof's
		// does, so that xprof's step analysis leaves it alone).
		if l.name == CountersLineName {
			dev := device
			dev.Kind = event.TrackDevice
			if err := r.counterLines(pc, l, &dev, 0); err != nil {
				return err
			}
			continue
		}
		if skipDerived && derived(l) {
			if err := r.skip(l); err != nil {
				return err
			}
			continue
		}
		td := byID[l.id]
		if td == nil {
			name := lineLabel(l)
			if name == "" {
				name = "Stream #" + strconv.FormatInt(l.id, 10)
			}
			tr := device
			tr.ID, tr.Name = l.id, name
			td = &trackData{device: true, track: tr}
			byID[l.id] = td
			r.tracks = append(r.tracks, td)
		}
		if err := r.line(pc, l, td); err != nil {
			return err
		}
	}
	return nil
}

// eventTimes returns an event's start and end in ns from the profile
// start (of its line's at base), and false for an aggregated event (no
// start time).
func eventTimes(base int64, e *xevent) (start, end int64, ok bool) {
	if e.aggregated {
		return 0, 0, false
	}
	off, dur := e.offsetPS, max(e.durationPS, 0)
	start = addSat(base, floorDiv(off, 1000))
	end = max(addSat(base, floorDiv(addSat(off, dur), 1000)), start)
	return start, end, true
}

// times is eventTimes of an event the reader reads, counted in its
// warnings and time span.
func (r *reader) times(base int64, e *xevent) (start, end int64, ok bool) {
	switch {
	case e.aggregated:
		r.aggregated++
	case e.durationPS < 0:
		r.negative++
	}
	start, end, ok = eventTimes(base, e)
	if ok {
		r.lastEnd = max(r.lastEnd, end)
	}
	return start, end, ok
}

// lineEvents reads the events of line l for track td: into out, the
// track's emitter, when the line goes straight into the sink, else into
// td's events.
func (r *reader) lineEvents(pc *planeCtx, l *xline, td *trackData, out *emitter) error {
	base := r.lineBase(l.timestampNS)
	if out == nil {
		// Room for the line's events at once, rather than by doubling.
		td.events = slices.Grow(td.events, l.events)
	}
	return r.xs.eachEvent(l, func(e *xevent) error {
		start, end, ok := r.times(base, e)
		if !ok {
			return nil
		}
		info := r.eventInfo(pc, e.metadataID)
		args := append(r.args[:0], info.args...)
		for i := range r.xs.stats {
			if a, ok := r.statArg(pc.p, &r.xs.stats[i]); ok {
				args = append(args, a)
			}
		}
		r.args = args
		if !td.device && (info.name == MemoryAllocationName || info.name == MemoryDeallocationName) {
			r.memoryEvent(td, info.name, start, args)
			return nil
		}
		ev := pending{name: info.name, start: start, end: end, span: td.device || end > start}
		if out != nil {
			own := r.special(r.evArgs[:0], args, &ev, !td.device)
			r.evArgs = own
			if ev.step {
				r.noteProducer(own, ev.stepNum)
			}
			out.event(&ev, own)
			return nil
		}
		ev.args.start = len(td.args)
		td.args = r.special(td.args, args, &ev, !td.device)
		ev.args.end = len(td.args)
		if ev.step {
			r.noteProducer(td.argsOf(&ev), ev.stepNum)
		}
		td.events = append(td.events, ev)
		return nil
	})
}

// counterLine reads a _counters_ line: a host plane's (of process proc,
// 0 for the program), or with device set,
// the counters of that device.
func (r *reader) counterLine(pc *planeCtx, l *xline, device *event.Track, proc int) error {
	base := r.lineBase(l.timestampNS)
	return r.xs.eachEvent(l, func(e *xevent) error {
		t, _, ok := r.times(base, e)
		if !ok {
			return nil
		}
		info := r.eventInfo(pc, e.metadataID)
		v, found := 0.0, false
		for _, a := range info.args {
			if v, found = numeric(a); found {
				break
			}
		}
		for i := range r.xs.stats {
			if found {
				break
			}
			if a, ok := r.statArg(pc.p, &r.xs.stats[i]); ok {
				v, found = numeric(a)
			}
		}
		if !found {
			r.noValue++
			return nil
		}
		name, unit := info.name, ""
		if n, u, ok := strings.Cut(name, " ("); ok && strings.HasSuffix(u, ")") && !strings.Contains(u, " (") {
			name, unit = n, strings.TrimSuffix(u, ")")
		}
		r.counters = append(r.counters, counterSample{name: name, unit: unit, t: t, v: v, device: device, proc: proc})
		return nil
	})
}

func numeric(a event.Arg) (float64, bool) {
	switch a.Kind {
	case event.ArgInt:
		return float64(int64(a.Num)), true
	case event.ArgUint:
		return float64(a.Num), true
	case event.ArgFloat:
		return a.Float(), true
	}
	return 0, false
}

// eventInfo resolves (once per plane) an event metadata id to the event's
// name and the arguments every such event has.
func (r *reader) eventInfo(pc *planeCtx, id int64) *eventInfo {
	if info := pc.events[id]; info != nil {
		return info
	}
	info := &eventInfo{}
	md, ok := pc.p.eventMD[id]
	if !ok {
		r.badMeta++
		info.name = "event_" + strconv.FormatInt(id, 10)
	} else {
		name := md.displayName
		if len(name) == 0 {
			name = md.name
		}
		info.name, info.args = parseTraceMe(r.xs.str(name))
		for i := range md.stats {
			if a, ok := r.statArg(pc.p, &md.stats[i]); ok {
				info.args = append(info.args, a)
			}
		}
	}
	pc.events[id] = info
	return info
}

// statArg converts a stat to an argument; bytes and empty values give false.
func (r *reader) statArg(p *xplane, st *xstat) (event.Arg, bool) {
	a := event.Arg{Key: statName(p, st.metadataID)}
	switch st.kind {
	case statKindInt64:
		a.Kind, a.Num = event.ArgInt, st.num
	case statKindUint64:
		a.Kind, a.Num = event.ArgUint, st.num
	case statKindDouble:
		a.Kind, a.Num = event.ArgFloat, st.num
	case statKindStr:
		a.Kind, a.Str = event.ArgString, r.xs.str(st.b)
	case statKindRef:
		a.Kind, a.Str = event.ArgString, refName(p, st.num)
	default:
		return a, false
	}
	return a, true
}

// special interprets the stats with a meaning in devprof's model: on host
// events _r (with step_num or iter_num) makes a step and devprof's
// unfinished=1 an unfinished span; correlation_id becomes a flow, and so
// does xprof's flow stat (flows.go). It appends the remaining arguments
// to dst.
func (r *reader) special(dst, args []event.Arg, ev *pending, host bool) []event.Arg {
	step := host && slices.ContainsFunc(args, func(a event.Arg) bool { return a.Key == "_r" })
	correlated := slices.ContainsFunc(args, func(a event.Arg) bool {
		return a.Key == "correlation_id" && (a.Kind == event.ArgInt || a.Kind == event.ArgUint)
	})
	if step {
		ev.step, ev.span = true, true
		ev.stepNum = stepNumOf(args)
	}
	out := dst
	for _, a := range args {
		switch {
		case a.Key == "correlation_id" && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			// Stats never read as flows, so the flows out holds are these.
			flow := event.Arg{Kind: event.ArgFlow, Num: a.Num}
			if !slices.Contains(out[len(dst):], flow) {
				out = append(out, flow)
			}
		case a.Key == StatFlow && (a.Kind == event.ArgInt || a.Kind == event.ArgUint):
			if id, ok := r.xflow(a.Num, correlated); ok {
				if flow := (event.Arg{Kind: event.ArgFlow, Num: id}); !slices.Contains(out[len(dst):], flow) {
					out = append(out, flow)
				}
			}
		case step && (a.Key == "_r" || a.Key == "step_num"):
		case host && ev.span && a.Key == "unfinished" && a.Kind == event.ArgInt && a.Num == 1:
			ev.unfinished = true
		default:
			out = append(out, a)
		}
	}
	return out
}

// stepNumOf returns a step's number: step_num wins over iter_num; the
// first usable value of each counts (0 if none).
func stepNumOf(args []event.Arg) int64 {
	var num int64
	haveIter := false
	for _, a := range args {
		if a.Key != "step_num" && a.Key != "iter_num" {
			continue
		}
		n, ok := stepNumber(a)
		if !ok {
			continue
		}
		if a.Key == "step_num" {
			return n
		}
		if !haveIter {
			num, haveIter = n, true
		}
	}
	return num
}

func stepNumber(a event.Arg) (int64, bool) {
	switch a.Kind {
	case event.ArgInt:
		return int64(a.Num), true
	case event.ArgUint:
		return int64(min(a.Num, math.MaxInt64)), true
	case event.ArgFloat:
		if f := a.Float(); f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), true
		}
	case event.ArgString:
		if n, err := strconv.ParseInt(strings.TrimSpace(a.Str), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// neutralDevice turns xprof's stats of device activity into the model's
// terms: tf_op is the annotation the work was launched in; kernel_details
// and memcpy_details mark a kernel and a copy, and are left out (with a
// kernel's theoretical_occupancy_pct) where the neutral arguments they are
// derived from are there (the writer derives them again); a file with the
// summary alone keeps it. The arguments are appended to dst.
func neutralDevice(dst, args []event.Arg) (event.ActivityKind, []event.Arg) {
	kind := event.ActivityUnknown
	var neutralKernel, neutralCopy bool
	for _, a := range args {
		switch a.Key {
		case "kernel_details", event.ArgGrid:
			kind = event.ActivityKernel
			neutralKernel = neutralKernel || a.Key == event.ArgGrid
		case "memcpy_details", event.ArgCopyKind:
			kind = event.ActivityMemcpy
			neutralCopy = neutralCopy || a.Key == event.ArgCopyKind
		}
	}
	out := dst
	for _, a := range args {
		switch {
		case a.Key == "tf_op":
			a.Key = event.ArgAnnotation
		case (a.Key == "kernel_details" || a.Key == "theoretical_occupancy_pct") && neutralKernel,
			a.Key == "memcpy_details" && neutralCopy:
			continue
		}
		out = append(out, a)
	}
	return kind, out
}

// build adds a track and its events, gathered in td: sorted by start
// (the longer first) and passed to the track's emitter; a memory track's
// events and loose instants are added here.
func (r *reader) build(b event.Sink, td *trackData) {
	if td.loose {
		var id uint32
		if td.track.Process > 0 {
			id = b.ProcessTrack(td.track.Process)
		}
		slices.SortStableFunc(td.events, func(x, y pending) int { return cmp.Compare(x.start, y.start) })
		for i := range td.events {
			b.Instant(td.events[i].name, td.events[i].start, id, 0, td.argsOf(&td.events[i]))
		}
		return
	}
	ev := td.events
	slices.SortStableFunc(ev, func(x, y pending) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(y.end-y.start, x.end-x.start)
	})
	if td.memory {
		id := b.Track(td.track)
		for i := range ev {
			args := td.argsOf(&ev[i])
			if n, ok := r.producers[ev[i].consumer]; ok && ev[i].consumer != 0 {
				// The builder copies the arguments; the scratch is reused.
				r.devArgs = append(append(r.devArgs[:0], args...), event.Arg{Key: event.ArgStep, Kind: event.ArgInt, Num: uint64(n)})
				args = r.devArgs
			}
			b.ActivityOf(ev[i].kind, id, ev[i].name, ev[i].start, ev[i].end, args)
		}
		return
	}
	out := r.emitter(b, td)
	for i := range ev {
		out.event(&ev[i], td.argsOf(&ev[i]))
	}
}

// emitter adds the events of one track, in build's order, to the sink:
// host events nest by time (a span is the parent of the events it
// properly contains), device events become activity.
type emitter struct {
	r     *reader
	sink  event.Sink
	id    uint32 // the track
	host  bool
	stack []openSpan
}

type openSpan struct {
	end int64
	id  uint64
}

// emitter registers td's track and returns the emitter of its events.
func (r *reader) emitter(b event.Sink, td *trackData) *emitter {
	td.out = &emitter{r: r, sink: b, id: b.Track(td.track), host: !td.device}
	return td.out
}

// event adds one event with its arguments (which the sink copies).
func (o *emitter) event(e *pending, args []event.Arg) {
	r, b := o.r, o.sink
	if !o.host {
		// The builder copies the arguments; the scratch is reused.
		kind, args := neutralDevice(r.devArgs[:0], args)
		r.devArgs = args
		b.ActivityOf(kind, o.id, e.name, e.start, e.end, args)
		return
	}
	stack := o.stack
	for len(stack) > 0 && stack[len(stack)-1].end <= e.start {
		stack = stack[:len(stack)-1]
	}
	var parent uint64
	for j := len(stack) - 1; j >= 0; j-- {
		if e.start < stack[j].end && e.end <= stack[j].end {
			parent = stack[j].id
			break
		}
	}
	if !e.span {
		o.stack = stack
		b.Instant(e.name, e.start, o.id, parent, args)
		return
	}
	if e.step && len(r.consumed) > 0 {
		args = r.dropProducer(args)
	}
	sid := b.Span(event.Span{Name: e.name, Start: e.start, End: e.end, Parent: parent, Track: o.id,
		Args: args, Step: e.step, StepNum: e.stepNum, Unfinished: e.unfinished})
	o.stack = append(stack, openSpan{end: e.end, id: sid})
}

// parseTraceMe splits a TraceMe-encoded name "name#k1=v1,k2=v2#" into the
// name and its arguments, following TSL's ParseAnnotation: a name carries
// arguments only if its last character is '#'; the name is what precedes
// the first '#' (trimmed) and the arguments are the text up to the next
// '#'. Pairs are split on ',' outside quotes and brackets, then on the
// first '='; keys and values are trimmed and pairs with an empty key or
// value dropped. A value that parses as int64 gives an ArgInt, else uint64
// an ArgUint, else a float an ArgFloat, else an ArgString. Other names are
// returned unchanged with no arguments.
func parseTraceMe(s string) (string, []event.Arg) {
	if s == "" || s[len(s)-1] != '#' {
		return s, nil
	}
	body := s[:len(s)-1]
	name, meta, _ := strings.Cut(body, "#")
	meta, _, _ = strings.Cut(meta, "#")
	name = strings.TrimSpace(name)
	var args []event.Arg
	for _, kv := range splitPairs(meta) {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			continue
		}
		args = append(args, typedArg(k, v))
	}
	return name, args
}

// splitPairs splits TraceMe metadata on commas that are outside quotes
// and brackets, as TSL's SplitPairs does (brackets are tracked even
// inside quotes).
func splitPairs(s string) []string {
	var out []string
	var stack []byte
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			if len(stack) > 0 && stack[len(stack)-1] == c {
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, c)
			}
		case '{', '(', '[':
			stack = append(stack, c)
		case '}', ')', ']':
			open := map[byte]byte{'}': '{', ')': '(', ']': '['}[c]
			if len(stack) > 0 && stack[len(stack)-1] == open {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) == 0 {
				if i-start > 1 {
					out = append(out, s[start:i])
				}
				start = i + 1
			}
		}
	}
	if len(s)-start > 1 {
		out = append(out, s[start:])
	}
	return out
}

// typedArg types a TraceMe value as TSL's ParseAndAddStatValue does.
func typedArg(k, v string) event.Arg {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(n)}
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return event.Arg{Key: k, Kind: event.ArgUint, Num: n}
	}
	if isDecimalFloat(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return event.Arg{Key: k, Kind: event.ArgFloat, Num: math.Float64bits(f)}
		}
	}
	return event.Arg{Key: k, Kind: event.ArgString, Str: v}
}

// isDecimalFloat rejects the forms Go's ParseFloat accepts but absl's
// SimpleAtod does not: hexadecimal mantissas and digit underscores.
func isDecimalFloat(v string) bool {
	u := strings.TrimLeft(v, "+-")
	if len(u) >= 2 && u[0] == '0' && (u[1] == 'x' || u[1] == 'X') {
		return false
	}
	return !strings.Contains(v, "_")
}

func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
