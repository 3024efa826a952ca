package tables

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/devprof/devprof/event"
)

// An ev is one event of the model as the tables need it, whichever way
// it came: from a reader once it ended (Export), from a Writer's spool
// once the trace's clock anchor is known, or from a Snapshot's record. One ev becomes one row
// of spans, instants, counters, kernels or memory, and its flows, steps.
type ev struct {
	kind     event.Kind
	activity event.ActivityKind
	finished bool
	step     bool
	// annotation marks a span on a device's stream that is a range a
	// profiler annotated there, not work (see mayAnnotate): a row of
	// spans, where the stream's other spans are rows of kernels.
	annotation bool
	id         uint64
	parent     uint64
	track      uint32 // the Track's id, 0 for none
	name       string
	unit       string // a counter's
	start      int64
	end        int64
	stepNum    int64
	value      float64 // a counter's
	args       []event.Arg
}

// trackFacts are the columns a row gets from the track it sits on.
type trackFacts struct {
	name    string
	thread  int64
	id      int64 // a device stream's stream (event.StreamOf), else Track.ID
	device  int32
	pid     int64
	process string
	// stream marks a device's stream (event.StreamOf): its spans are
	// device work, rows of kernels. replan: its annotated ranges are
	// those in deriver.annotated rather than those the spool marks.
	stream, replan bool
	// known: resolved (see deriver.facts).
	known bool
}

// streamClass is a track's reading as a device stream (event.StreamOf),
// as the Writer fixed it when its first event came.
type streamClass struct {
	device int
	stream int64
	ok     bool
	replan bool
}

// deriver turns evs into rows of the tables: it resolves tracks and
// processes, maps times to Unix nanoseconds and counts rows.
type deriver struct {
	run, host, session string
	offset             int64 // Unix ns minus the trace's monotonic ns
	tracks             []trackFacts
	program            trackFacts // the program's own, for events on no track
	set                *tableSet
	json               []byte      // scratch for args
	rest               []event.Arg // scratch: a kernel's arguments no column holds
	counts             [numTables]int64
	// annotated are the annotated ranges of the streams whose work came
	// out of order (trackFacts.replan).
	annotated map[uint64]bool
	// profilerSteps: the trace marks no step, so its ProfilerStep#N
	// spans are its steps. ruleSteps counts the spans that became steps
	// so.
	profilerSteps bool
	ruleSteps     int64

	// resolve gives the facts of a track first used (see facts), and
	// programUsed says a row took the program's.
	resolve     func(id uint32) trackFacts
	programUsed bool
}

// newDeriver resolves the tracks and processes of a finished trace.
// streams are the tracks' readings as device streams; nil reads them
// from tracks as they are now.
func newDeriver(run, host, session string, m *event.Meta, tracks []event.Track, procs []event.Process, streams []streamClass, set *tableSet) *deriver {
	d := &deriver{run: run, host: host, session: session, set: set}
	d.offset = m.Start.Wall - m.Start.Mono
	d.program = programFacts(m)
	d.tracks = tracksFacts(d.program, tracks, procs, streams)
	return d
}

// tracksFacts resolves every track; streams are their readings as
// device streams, nil to read them from tracks as they are now.
func tracksFacts(program trackFacts, tracks []event.Track, procs []event.Process, streams []streamClass) []trackFacts {
	facts := make([]trackFacts, len(tracks))
	for i, t := range tracks {
		c := streamClass{}
		if streams != nil {
			c = streams[i]
		} else {
			c.device, c.stream, c.ok = event.StreamOf(t, procs)
		}
		facts[i] = factsOf(program, t, procs, c)
	}
	return facts
}

// programFacts are the columns of the rows on no track: the program's.
func programFacts(m *event.Meta) trackFacts {
	return trackFacts{device: -1, pid: int64(m.PID), process: validUTF8(m.Program), known: true}
}

// factsOf returns the columns of the rows on track t, read as a device
// stream or not by c; a track of no process is the program's.
func factsOf(program trackFacts, t event.Track, procs []event.Process, c streamClass) trackFacts {
	f := program
	f.name, f.id = validUTF8(t.Name), t.ID
	switch t.Kind {
	case event.TrackHostThread, event.TrackProcess:
		if t.Kind == event.TrackHostThread {
			f.thread = t.ID
		}
		if t.Process > 0 && t.Process <= len(procs) {
			p := procs[t.Process-1]
			f.pid, f.process = p.PID, validUTF8(p.Name)
			if f.process == "" {
				f.process = validUTF8(p.Label)
			}
		}
	default:
		f.device = int32(t.Device)
	}
	if c.ok {
		f.stream, f.replan = true, c.replan
		f.device, f.id, f.thread = int32(c.device), c.stream, 0
	}
	return f
}

// facts returns the columns of the track with id id (0: the program).
// A deriver that writes rows while the trace is read (resolve set)
// resolves a track when its first row comes, and notes which facts its
// rows took, for the check at the end (Writer.factsHeld).
func (d *deriver) facts(id uint32) *trackFacts {
	if id == 0 || int(id) > len(d.tracks) {
		d.programUsed = true
		return &d.program
	}
	f := &d.tracks[id-1]
	if !f.known {
		*f = d.resolve(id)
	}
	return f
}

// Table indexes, in Tables' order.
const (
	tSpans = iota
	tInstants
	tCounters
	tKernels
	tMemory
	tFlows
	tSteps
	tHosts
	numTables
)

// tableNames are the tables by index, apart from the exported Tables,
// which a caller could change.
var tableNames = [numTables]string{TableSpans, TableInstants, TableCounters, TableKernels, TableMemory, TableFlows, TableSteps, TableHosts}

// add writes the rows of e.
func (d *deriver) add(e *ev) error {
	name := validUTF8(e.name)
	var table int
	var err error
	switch e.kind {
	case event.KindSpan:
		table = tSpans
		if f := d.facts(e.track); f.stream && !d.isAnnotation(e, f) {
			// Work on a device's stream that a file kept as a slice.
			table = tKernels
			kind, _ := event.WorkKind(event.ActivityUnknown, e.name, e.args)
			err = d.kernel(e, name, kind)
			break
		}
		err = d.span(e, name)
	case event.KindInstant:
		table = tInstants
		f := d.facts(e.track)
		d.counts[tInstants]++
		var r *Instant
		if r, err = d.set.instants.row(e.track); err == nil {
			*r = Instant{
				Run: d.run, Host: d.host, Session: d.session,
				Name: name, TimeNS: e.start + d.offset, ParentID: int64(e.parent),
				Track: f.name, ThreadID: f.thread, Device: f.device, PID: f.pid, Process: f.process,
				Args: d.argsJSON(e.args),
			}
		}
	case event.KindCounter:
		f := d.facts(e.track)
		d.counts[tCounters]++
		r, err := d.set.counters.row(e.track)
		if err == nil {
			*r = Counter{
				Run: d.run, Host: d.host, Session: d.session,
				Name: name, Unit: validUTF8(e.unit), TimeNS: e.start + d.offset, Value: e.value,
				Track: f.name, ThreadID: f.thread, Device: f.device, PID: f.pid, Process: f.process,
			}
		}
		return err
	case event.KindActivity:
		if e.activity == event.ActivityAlloc || e.activity == event.ActivityFree {
			table = tMemory
			err = d.memory(e)
		} else {
			table = tKernels
			err = d.kernel(e, name, e.activity)
		}
	}
	if err != nil {
		return err
	}
	return d.flows(e, table)
}

// isAnnotation reports whether span e on stream f is a range annotated on
// the stream rather than work.
func (d *deriver) isAnnotation(e *ev, f *trackFacts) bool {
	if f.replan {
		return d.annotated[e.id]
	}
	return e.annotation
}

func (d *deriver) span(e *ev, name string) error {
	f := d.facts(e.track)
	start, end := e.start+d.offset, e.end+d.offset
	step, stepNum := e.step, e.stepNum
	if !step && d.profilerSteps && !f.stream {
		if stepNum, step = event.ProfilerStep(e.name); step {
			d.ruleSteps++
		}
	}
	d.counts[tSpans]++
	r, err := d.set.spans.row(e.track)
	if err != nil {
		return err
	}
	*r = Span{
		Run: d.run, Host: d.host, Session: d.session,
		ID: int64(e.id), ParentID: int64(e.parent), Name: name,
		StartNS: start, EndNS: end, DurNS: e.end - e.start, Finished: e.finished,
		Track: f.name, ThreadID: f.thread, Device: f.device, PID: f.pid, Process: f.process,
		Step: step, StepNum: stepNum, Args: d.argsJSON(e.args),
	}
	if !step {
		return nil
	}
	d.counts[tSteps]++
	return d.set.steps.add(e.track, Step{
		Run: d.run, Host: d.host, Session: d.session,
		StepNum: stepNum, SpanID: int64(e.id), Name: name,
		StartNS: start, EndNS: end, DurNS: e.end - e.start, Finished: e.finished, Track: f.name,
	})
}

// kernel writes device activity of kind as a row of kernels. Besides
// the model's own arguments, it reads the launch shape and resources a
// file's slice carries in its tool's words where the model's are absent:
// Kineto's "grid" and "block" arrays and "registers per thread", xprof's
// kernel_details ("regs:16 static_shared:0 dynamic_shared:8
// grid:1,1,1 block:64,1,1 ..."), and a copy's direction and memories in
// its name ("Memcpy HtoD (Pinned -> Device)").
func (d *deriver) kernel(e *ev, name string, kind event.ActivityKind) error {
	f := d.facts(e.track)
	k, err := d.set.kernels.row(e.track)
	if err != nil {
		return err
	}
	*k = Kernel{
		Run: d.run, Host: d.host, Session: d.session,
		ID: int64(e.id), Kind: kind.String(), Name: name,
		StartNS: e.start + d.offset, EndNS: e.end + d.offset, DurNS: e.end - e.start,
		Device: f.device, Track: f.name, SrcDevice: -1, DstDevice: -1,
	}
	if t := int(e.track); t > 0 && t <= len(d.tracks) {
		k.Stream = d.tracks[t-1].id
	}
	k.CorrelationID, _ = correlationOf(e.args)
	var details string
	registers := int64(-1)
	rest := d.rest[:0]
	for i := range e.args {
		a := &e.args[i]
		switch a.Key {
		default:
			rest = append(rest, *a)
		case event.ArgGrid:
			k.Grid = launchShape(argString(a))
		case event.ArgBlock:
			k.Block = launchShape(argString(a))
		case event.ArgRegistersPerThread:
			k.RegistersPerThread = argInt(a)
		case event.ArgStaticSharedMemory:
			k.StaticSharedMemory = argInt(a)
		case event.ArgDynamicSharedMemory:
			k.DynamicSharedMemory = argInt(a)
		case event.ArgBytes:
			k.Bytes = argInt(a)
		case event.ArgCopyKind:
			k.CopyKind = argString(a)
		case event.ArgSrcMemoryKind:
			k.SrcMemoryKind = argString(a)
		case event.ArgDstMemoryKind:
			k.DstMemoryKind = argString(a)
		case event.ArgSrcDevice:
			k.SrcDevice = int32(argInt(a))
		case event.ArgDstDevice:
			k.DstDevice = int32(argInt(a))
		case event.ArgAnnotation:
			k.Annotation = argString(a)
		case "registers per thread":
			registers = argInt(a)
		case "kernel_details":
			if a.Kind == event.ArgString {
				details = a.Str
			}
			rest = append(rest, *a) // it also holds what no column does (occ_pct)
		}
	}
	if registers >= 0 && k.RegistersPerThread == 0 {
		k.RegistersPerThread = registers
	}
	if details != "" {
		fromKernelDetails(k, details)
	}
	if kind == event.ActivityMemcpy && k.CopyKind == "" {
		fromCopyName(k, name)
	}
	k.Args = d.argsJSON(rest)
	d.rest = rest
	d.counts[tKernels]++
	return nil
}

// launchShape returns a launch dimension as the column holds it,
// "x,y,z": Kineto writes it as a JSON array ("[256,1,1]").
func launchShape(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return strings.ReplaceAll(s[1:len(s)-1], " ", "")
	}
	return s
}

// fromKernelDetails fills the columns that the model's arguments left
// empty from xprof's kernel_details summary.
func fromKernelDetails(k *Kernel, details string) {
	for field := range strings.FieldsSeq(details) {
		key, v, ok := strings.Cut(field, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch key {
		case "grid":
			if k.Grid == "" {
				k.Grid = validUTF8(v)
			}
		case "block":
			if k.Block == "" {
				k.Block = validUTF8(v)
			}
		case "regs":
			if k.RegistersPerThread == 0 && err == nil {
				k.RegistersPerThread = n
			}
		case "static_shared":
			if k.StaticSharedMemory == 0 && err == nil {
				k.StaticSharedMemory = n
			}
		case "dynamic_shared":
			if k.DynamicSharedMemory == 0 && err == nil {
				k.DynamicSharedMemory = n
			}
		}
	}
}

// copyKinds are the directions CUPTI names a copy by.
var copyKinds = []string{"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA"}

// fromCopyName reads a copy's direction and memories from a name such as
// Kineto's "Memcpy HtoD (Pinned -> Device)".
func fromCopyName(k *Kernel, name string) {
	rest, ok := strings.CutPrefix(name, "Memcpy ")
	if !ok {
		return
	}
	dir, rest, _ := strings.Cut(rest, " ")
	if !slices.Contains(copyKinds, dir) {
		return
	}
	k.CopyKind = dir
	inner, open := strings.CutPrefix(rest, "(")
	inner, closed := strings.CutSuffix(inner, ")")
	if !open || !closed {
		return
	}
	if src, dst, ok := strings.Cut(inner, " -> "); ok && k.SrcMemoryKind == "" && k.DstMemoryKind == "" {
		k.SrcMemoryKind, k.DstMemoryKind = validUTF8(strings.ToLower(src)), validUTF8(strings.ToLower(dst))
	}
}

func (d *deriver) memory(e *ev) error {
	f := d.facts(e.track)
	m := Memory{
		Run: d.run, Host: d.host, Session: d.session,
		Kind: e.activity.String(), TimeNS: e.start + d.offset, Device: f.device, Track: f.name,
	}
	for i := range e.args {
		a := &e.args[i]
		switch a.Key {
		case event.ArgAddress:
			m.Address = argInt(a)
		case event.ArgBytes:
			m.Bytes = argInt(a)
		case event.ArgMemoryKind:
			m.MemoryKind = argString(a)
		case event.ArgTags:
			m.Tags = argString(a)
		case event.ArgSpan:
			m.Site = argString(a)
		case event.ArgAPI:
			m.API = argString(a)
		case event.ArgStep:
			m.Step = argInt(a)
		case event.ArgInUse:
			m.BytesInUse = argInt(a)
		case event.ArgPeakInUse:
			m.PeakBytesInUse = argInt(a)
		case event.ArgCarried:
			m.Carried = argInt(a) != 0
		}
	}
	d.counts[tMemory]++
	return d.set.memory.add(e.track, m)
}

// flows writes a row for each flow id among e's arguments.
func (d *deriver) flows(e *ev, table int) error {
	for i := range e.args {
		a := &e.args[i]
		if a.Kind != event.ArgFlow {
			continue
		}
		id := int64(e.id)
		if e.kind == event.KindInstant {
			id = 0
		}
		d.counts[tFlows]++
		r, err := d.set.flows.row(0)
		if err != nil {
			return err
		}
		*r = Flow{
			Run: d.run, Host: d.host, Session: d.session,
			FlowID: int64(a.Num), EventID: id, EventTable: tableNames[table], TimeNS: e.start + d.offset,
		}
	}
	return nil
}

// argString returns a string argument's value, or any other's as text.
func argString(a *event.Arg) string {
	if a.Kind == event.ArgString {
		return validUTF8(a.Str)
	}
	return strconv.FormatUint(a.Num, 10)
}

// argInt returns a numeric argument's value as an int64 (a float
// truncated; a string parsed, 0 when it is no number).
func argInt(a *event.Arg) int64 {
	switch a.Kind {
	case event.ArgFloat:
		return int64(math.Float64frombits(a.Num))
	case event.ArgString:
		n, _ := strconv.ParseInt(a.Str, 10, 64)
		return n
	}
	return int64(a.Num)
}

// argsJSON returns args (flows left out) as one JSON object, "" when
// there are none: a column engines read with their JSON functions
// (DuckDB's json_extract, Spark's get_json_object).
func (d *deriver) argsJSON(args []event.Arg) string {
	n := 0
	for i := range args {
		if args[i].Kind != event.ArgFlow {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	args = event.UniqueKeys(args)
	b := append(d.json[:0], '{')
	first := true
	for i := range args {
		a := &args[i]
		if a.Kind == event.ArgFlow {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, a.Key)
		b = append(b, ':')
		switch a.Kind {
		case event.ArgInt, event.ArgDuration:
			b = strconv.AppendInt(b, int64(a.Num), 10)
		case event.ArgUint:
			b = strconv.AppendUint(b, a.Num, 10)
		case event.ArgFloat:
			f := math.Float64frombits(a.Num)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				b = append(b, "null"...) // JSON has no NaN or infinities
			} else {
				b = strconv.AppendFloat(b, f, 'g', -1, 64)
			}
		case event.ArgBool:
			b = strconv.AppendBool(b, a.Num != 0)
		default:
			b = appendJSONString(b, a.Str)
		}
	}
	b = append(b, '}')
	d.json = b
	return string(b)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD, as the model's strings do.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// validUTF8 returns s with invalid UTF-8 replaced (Parquet strings are
// UTF-8), without copying a valid s.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendValid(nil, s))
}

func appendValid(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}
