package chrome

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

// Limits that keep a hostile file from costing much more than its size.
const (
	maxName   = 1 << 12 // bytes kept of an event, thread, process, counter or argument name
	maxString = 1 << 16 // bytes kept of a string argument
	maxArgs   = 255     // arguments kept per event (what an event.Record holds)
	maxOpen   = 1 << 12 // open B (or b) slices per track; deeper ones are ignored
	maxWalk   = 1 << 8  // spans looked at to find a parent or the span enclosing a time
	maxIntern = 1 << 16 // distinct strings shared between events
	maxTime   = 1 << 62 // bound on |ts| and dur in ns (146 years), so that differences fit an int64
)

// ReadFile reads the Chrome Trace Event Format file at path; see Read.
func ReadFile(path string) (*event.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Read decodes a Chrome Trace Event Format file into an event snapshot,
// so that any devprof exporter can convert it: Decode into an
// event.Builder.
func Read(r io.Reader) (*event.Snapshot, error) {
	b := event.NewBuilder(event.Meta{})
	if err := Decode(r, b); err != nil {
		return nil, err
	}
	return b.Snapshot(), nil
}

// Decode decodes a Chrome Trace Event Format file (JSON, optionally gzip —
// sniff 1f 8b) into sink, filling sink.Meta() as well.
//
// It accepts the JSON Array Format (a bare array of events, whose closing
// bracket may be missing, as the format allows for traces cut short) and
// the JSON Object Format ({"traceEvents": [...], ...}). A file devprof
// wrote, read from an r that can seek (an *os.File, a bytes.Reader), goes
// into sink event by event as it is read, holding one event and each
// thread's enclosing spans, so that memory does not grow with the file;
// any other file is read whole first, as the rules below need (stream.go
// says which files stream, and how one that cannot is read again). Times are microseconds in the file and become
// ticks (ns, rounded) relative to the earliest event, or to the session
// start for a file devprof wrote (otherData.start_unix_ns). Every pid of
// the file becomes an event.Process (numbered as emitProcesses says) with
// its process_name, process_labels and process_sort_index metadata, and
// each (pid, tid) a host-thread track of its process named by its
// thread_name metadata, ordered by thread_sort_index; a file devprof wrote
// keeps its recording program's threads in the program's process (Meta).
// Async events get a track per (pid, cat, name, id). Flows become
// event.ArgFlow arguments of the slices they bind to by the format's rules
// (v1 s/t/f keyed by id, cat and name, an id free again after its f; v2
// bind_id with flow_in/flow_out, on complete, begin and instant events);
// a flow with fewer than two ends bound is dropped and counted under
// DropsFlows, except in a file devprof wrote. Counter samples ("C") and
// process- or global-scoped instants belong to their pid's process
// (event.TrackProcess; the program's need no track).
// Within a track, a span's parent is the latest-starting span
// that contains it. devprof's own markers (step_num, unfinished, the
// warning, note and dropped-events instants, otherData) are turned back
// into what they mark.
// What it cannot represent is counted in Meta.Warnings.
//
// A malformed file gives an error "chrome: <what> at byte offset N", with
// N counted in the decompressed JSON: for JSON syntax errors the offset
// json.SyntaxError uses (bytes read up to and including the bad one), for
// a value of the wrong type the offset where that value begins.
//
// Speed: the package's own lexer (lexer.go) checks each event's syntax
// and finds its members in one pass over a reused buffer; on the
// streaming path nothing is allocated per event. On a devprof session's
// trace of 1 M events (BenchmarkRead, -cpu 1, per second of CPU time on a
// shared 2-core AMD EPYC, medians of 3): 2.9 M events/s into a sink that
// keeps nothing and 2.2 M into the model from plain JSON, 2.1 M and 1.5 M
// from gzip; encoding/json's Decoder (each event a json.RawMessage, then
// walked again) read 0.56 M and 0.43 M, 0.52 M and 0.38 M. On Kineto's
// 500-step H100 trace (BenchmarkReadChromeVsDecoderToken) the lexer
// checks every event in 32 ms, where RawMessage and a second walk took
// 155-179 ms and a Decoder.Token walk 616-653 ms.
func Decode(r io.Reader, sink event.Sink) error {
	// The streaming path needs an input it can read again from the start
	// should the file turn out not to be one it can stream (stream.go).
	seeker, _ := r.(io.Seeker)
	var start int64
	stream := seeker != nil
	if stream {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			stream = false
		}
	}
	err := decode(r, sink, stream)
	if err != errRestart {
		return err
	}
	sink.Reset()
	if _, err := seeker.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("chrome: reading the input again: %w", err)
	}
	return decode(r, sink, false)
}

// decode reads the file from r into sink, through the streaming path
// (which may give up with errRestart) or the batch path.
func decode(r io.Reader, sink event.Sink, stream bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	gz := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("chrome: gzip header: %w", err)
		}
		defer zr.Close()
		src, gz = zr, true
	}
	p := newParser(src, gz)
	if stream {
		p.stream = newStreamer(p, sink)
	}
	if err := p.parse(); err != nil {
		return err
	}
	if stream {
		return p.stream.finish()
	}
	p.build(sink)
	return nil
}

// procID is a pid or tid: a number, or a string (a non-standard hack that
// Perfetto accepts and interns; Kineto writes "Spans", "Traces" and "").
type procID struct {
	n   int64
	s   string
	str bool // a string id, s ("" is a string id, distinct from 0)
}

func (id procID) String() string {
	if id.str {
		return id.s
	}
	return strconv.FormatInt(id.n, 10)
}

type threadKey struct{ pid, tid procID }

type threadInfo struct {
	threadKey
	name   string // thread_name metadata
	first  int    // seq of the first event that names the thread
	lane   int    // index into parser.lanes, -1 until something is placed on it
	sort   int64  // thread_sort_index metadata, when sorted
	sorted bool
}

type procInfo struct {
	name   string   // process_name metadata
	labels []string // process_labels metadata, split at commas
	sort   int64    // process_sort_index metadata, when sorted
	sorted bool
	events int
	first  int
	num    int // the event.Process number (Track.Process); 0 for the program
}

// Event flag bits.
const (
	fFlowIn uint8 = 1 << iota
	fFlowOut
	fBindEnclosing // flow v1 "bp":"e"
	fProcScope     // instant scope "g" or "p"
	fHasID
	fHasBind
)

// ev is an event kept until all of the file has been read.
type ev struct {
	ph      byte
	flags   uint8
	thread  int32 // index into parser.threads
	seq     int   // order in the file
	name    string
	cat     string
	id      string
	bindID  string
	ts, dur int64 // ns, as in the file
	args    []event.Arg
}

type otherData struct {
	host       string
	dropped    int64
	startNS    int64
	hasStartNS bool
	// programPIDs are the pids devprof's writer wrote the recording
	// program's threads under (its own and its devices'), first the
	// program's; the file's other pids are processes of their own.
	programPIDs    []procID
	hasProgramPIDs bool
	// pid and program are Meta's, as devprof's writer wrote them.
	pid     int64
	program string
	hasPID  bool
}

type parser struct {
	lx *lexer
	gz bool

	events  []ev
	seq     int
	minTS   int64
	threads []threadInfo
	thrIdx  map[threadKey]int32
	procs   map[procID]*procInfo
	other   otherData
	intern  map[string]string
	compact bytes.Buffer

	arrayForm, sawEvents, missingBracket bool

	unknown  map[string]int
	noTS     int
	argsLost int

	// stream, when set, takes each event as it is read (the streaming
	// path, stream.go) instead of events keeping it; argBuf is then the
	// arguments' scratch, reused from event to event.
	stream *streamer
	argBuf []event.Arg

	// recent caches names from str, by a hash of their bytes.
	recent [256]string

	// The thread and process of the last event, looked up first.
	lastThread int32
	lastPID    procID
	lastProc   *procInfo
}

func newParser(src io.Reader, gz bool) *parser {
	p := &parser{
		lx:      newLexer(src),
		gz:      gz,
		minTS:   math.MaxInt64,
		thrIdx:  map[threadKey]int32{},
		procs:   map[procID]*procInfo{},
		intern:  map[string]string{},
		unknown: map[string]int{},
	}
	if _, ok := p.lx.at(2); ok && bytes.HasPrefix(p.lx.buf[p.lx.pos:p.lx.end], []byte("\xef\xbb\xbf")) {
		p.lx.pos += 3 // a UTF-8 byte order mark, as some Windows tools write
	}
	return p
}

// what names the input in read errors.
func (p *parser) what() string {
	if p.gz {
		return "gzip"
	}
	return "reading input"
}

// endError is the error for input that ends (or fails) where more JSON
// must follow.
func (p *parser) endError() error { return p.lx.endError(p.what()) }

// quoteChar formats c as encoding/json's messages do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func (p *parser) parse() error {
	lx := p.lx
	c, ok := lx.skipSpace()
	if !ok {
		if lx.err != nil {
			return p.endError()
		}
		return errors.New("chrome: empty input")
	}
	switch c {
	case '[':
		lx.pos++
		p.arrayForm = true
		if err := p.eventArray(); err != nil {
			return err
		}
		if p.missingBracket {
			return nil // the input ended
		}
	case '{':
		lx.pos++
		if err := p.object(); err != nil {
			return err
		}
	default:
		start := lx.offset(lx.pos)
		if _, err := lx.value(p.what()); err != nil {
			return err
		}
		return fmt.Errorf("chrome: top-level value is %s, want an array of events or an object with traceEvents at byte offset %d", describeKind(c), start)
	}
	// Nothing but space may follow. Reading to the end also checks the
	// gzip checksum.
	if c, ok := lx.skipSpace(); ok {
		return fmt.Errorf("chrome: invalid character %s after top-level value at byte offset %d", quoteChar(c), lx.offset(lx.pos)+1)
	}
	if lx.err != nil {
		return p.endError()
	}
	if !p.arrayForm && !p.sawEvents {
		return errors.New(`chrome: the top-level object has no "traceEvents"`)
	}
	return nil
}

// describeKind names the kind of JSON value that begins with c.
func describeKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// object reads the JSON Object Format after its '{'.
func (p *parser) object() error {
	lx := p.lx
	c, ok := lx.skipSpace()
	if !ok {
		return p.endError()
	}
	if c == '}' {
		lx.pos++
		return nil
	}
	for {
		if c != '"' {
			return lx.badChar(0, "looking for beginning of object key string")
		}
		raw, err := lx.value(p.what())
		if err != nil {
			return err
		}
		key := unquote(raw)
		if c, ok = lx.skipSpace(); !ok {
			return p.endError()
		}
		if c != ':' {
			return lx.badChar(0, "after object key")
		}
		lx.pos++
		if c, ok = lx.skipSpace(); !ok {
			return p.endError()
		}
		switch key {
		case "traceEvents":
			if c != '[' {
				start := lx.offset(lx.pos)
				if _, err := lx.value(p.what()); err != nil {
					return err
				}
				return fmt.Errorf("chrome: traceEvents is %s, want an array at byte offset %d", describeKind(c), start)
			}
			lx.pos++
			p.sawEvents = true
			if err := p.eventArray(); err != nil {
				return err
			}
		case "otherData":
			raw, err := lx.value(p.what())
			if err != nil {
				return err
			}
			p.otherData(raw)
		default: // displayTimeUnit (Perfetto ignores it too), metadata, systemTraceEvents, ...
			if _, err := lx.value(p.what()); err != nil {
				return err
			}
		}
		if c, ok = lx.skipSpace(); !ok {
			return p.endError()
		}
		switch c {
		case '}':
			lx.pos++
			return nil
		case ',':
			lx.pos++
			if c, ok = lx.skipSpace(); !ok {
				return p.endError()
			}
		default:
			return lx.badChar(0, "after object key:value pair")
		}
	}
}

// arrayEnd handles the input ending where the next event or the closing
// bracket of the array would begin: the JSON Array Format allows it.
func (p *parser) arrayEnd() error {
	if !p.arrayForm || p.lx.err != nil {
		return p.endError()
	}
	p.missingBracket = true
	return nil
}

// eventArray reads the events of an array after its '['.
func (p *parser) eventArray() error {
	lx := p.lx
	c, ok := lx.skipSpace()
	if !ok {
		return p.arrayEnd()
	}
	if c == ']' {
		lx.pos++
		return nil
	}
	for {
		start := lx.offset(lx.pos)
		raw, err := lx.value(p.what())
		if err != nil {
			return err
		}
		if err := p.event(raw, start); err != nil {
			return err
		}
		if c, ok = lx.skipSpace(); !ok {
			return p.arrayEnd()
		}
		switch c {
		case ']':
			lx.pos++
			return nil
		case ',':
			lx.pos++
			if _, ok = lx.skipSpace(); !ok {
				return p.arrayEnd()
			}
		default:
			return lx.badChar(0, "after array element")
		}
	}
}

// ---------------------------------------------------------------------------
// Scanning values the lexer has already checked.

// objIter walks the members of a JSON object that is known to be valid.
type objIter struct {
	b       []byte
	i       int
	started bool
	key     []byte // still quoted
	val     []byte
	off     int // offset of val in b
	bad     bool
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func (it *objIter) next() bool {
	b, i := it.b, it.i
	if !it.started {
		it.started = true
		i = skipSpace(b, 0)
		if i >= len(b) || b[i] != '{' {
			it.bad = true
			return false
		}
		i++
	}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] == '}' {
		return false
	}
	ke := valueEnd(b, i)
	if b[i] != '"' || ke < 0 {
		it.bad = true
		return false
	}
	it.key = b[i:ke]
	i = skipSpace(b, ke)
	if i >= len(b) || b[i] != ':' {
		it.bad = true
		return false
	}
	i = skipSpace(b, i+1)
	ve := valueEnd(b, i)
	if ve < 0 {
		it.bad = true
		return false
	}
	it.val, it.off, it.i = b[i:ve], i, ve
	return true
}

// valueEnd returns the index just after the JSON value that starts at
// b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// unquote returns the value of the JSON string v (quotes included).
func unquote(v []byte) string {
	if len(v) < 2 {
		return ""
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	json.Unmarshal(v, &s) // valid JSON: cannot fail
	return s
}

// hasBackslash reports whether an object key has an escape: a loop, for
// keys of a few bytes, costs less than a call to bytes.IndexByte.
func hasBackslash(key []byte) bool {
	for _, c := range key {
		if c == '\\' {
			return true
		}
	}
	return false
}

// truncate cuts s to at most n bytes, on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// str returns the JSON string v as a name: truncated and shared between
// events.
func (p *parser) str(v []byte) string {
	if len(v) < 2 || len(v)-2 > maxName || hasBackslash(v) {
		return p.internStr(truncate(unquote(v), maxName))
	}
	body := v[1 : len(v)-1]
	// A trace has few names, each used again and again: a small cache
	// answers most lookups without hashing the name.
	h := 0
	if len(body) > 0 {
		h = (len(body)*31 + int(body[0]) + int(body[len(body)-1])*7) & (len(p.recent) - 1)
	}
	if s := p.recent[h]; s == string(body) {
		return s
	}
	s, ok := p.intern[string(body)]
	if !ok {
		s = p.internStr(unquote(v))
	}
	p.recent[h] = s
	return s
}

func (p *parser) internStr(s string) string {
	if t, ok := p.intern[s]; ok {
		return t
	}
	if len(p.intern) < maxIntern {
		p.intern[s] = s
	}
	return s
}

// describe shows a JSON value in an error message.
func describe(v []byte) string {
	if len(v) > 32 {
		return truncate(string(v[:33]), 32) + "..."
	}
	return string(v)
}

// fieldError reports a field of an event with a value of the wrong type.
func fieldError(field string, v []byte, want string, off int64) error {
	return fmt.Errorf("chrome: %q is %s, want %s at byte offset %d", field, describe(v), want, off)
}

// isNumber reports whether s is a number: JSON's grammar, loosened for
// numeric strings (a leading '+', leading zeros, a bare '.').
func isNumber(s []byte) bool {
	i := skipSign(s, 0)
	i, digits := skipDigits(s, i)
	if i < len(s) && s[i] == '.' {
		var fd int
		i, fd = skipDigits(s, i+1)
		digits += fd
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		var ed int
		if i, ed = skipDigits(s, skipSign(s, i+1)); ed == 0 {
			return false
		}
	}
	return i == len(s)
}

// skipSign returns the index after an optional sign at s[i].
func skipSign(s []byte, i int) int {
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	return i
}

// skipDigits returns the index after the decimal digits at s[i] and how
// many there are.
func skipDigits(s []byte, i int) (end, n int) {
	for end = i; end < len(s) && s[end] >= '0' && s[end] <= '9'; end++ {
	}
	return end, end - i
}

// micros converts a number of microseconds (isNumber holds) to
// nanoseconds, rounding half away from zero, exactly. ok is false when
// |result| > maxTime.
func micros(s []byte) (ns int64, ok bool) {
	neg := s[0] == '-'
	i := skipSign(s, 0)
	// The value is D × 10^k ns, where D is the digit string without the
	// point or leading zeros.
	nd, frac, j := mantissa(s, i)
	exp := exponent(s, j)
	if nd == 0 {
		return 0, true
	}
	k := exp + 3 - int64(frac)
	intDigits := int64(nd) + k // digits before the point of D × 10^k
	if intDigits > 19 {
		return 0, false
	}
	if intDigits < 0 {
		return 0, true
	}
	acc, round := leadingDigits(s, i, intDigits)
	for ; k > 0; k-- {
		acc *= 10 // intDigits <= 19 keeps acc below 10^19
	}
	if round {
		acc++
	}
	if acc > maxTime {
		return 0, false
	}
	if neg {
		return -int64(acc), true
	}
	return int64(acc), true
}

// mantissa scans the digits and point from s[i]: nd counts the digits
// from the first non-zero one, frac those after the point, and j is where
// the exponent (if any) starts.
func mantissa(s []byte, i int) (nd, frac, j int) {
	seenPoint := false
	for j = i; j < len(s); j++ {
		c := s[j]
		if c == '.' {
			seenPoint = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if seenPoint {
			frac++
		}
		if nd > 0 || c != '0' {
			nd++
		}
	}
	return nd, frac, j
}

// exponent reads the exponent that starts with 'e' or 'E' at s[j] (0 when
// j is the end); its magnitude saturates near 2^40, far past any that
// gives a representable time.
func exponent(s []byte, j int) int64 {
	if j >= len(s) {
		return 0
	}
	j++
	neg := s[j] == '-'
	j = skipSign(s, j)
	exp := int64(0)
	for ; j < len(s); j++ {
		if exp < 1<<40 {
			exp = exp*10 + int64(s[j]-'0')
		}
	}
	if neg {
		return -exp
	}
	return exp
}

// leadingDigits returns the first intDigits significant digits of the
// mantissa at s[i] as an integer, and whether the digit after them rounds
// it up.
func leadingDigits(s []byte, i int, intDigits int64) (acc uint64, round bool) {
	pos := int64(0)
	for j := i; j < len(s) && pos <= intDigits; j++ {
		c := s[j]
		if c == '.' {
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if pos == 0 && c == '0' {
			continue // leading zero
		}
		if pos < intDigits {
			acc = acc*10 + uint64(c-'0')
		} else {
			round = c >= '5'
		}
		pos++
	}
	return acc, round
}

// timeField parses ts or dur: a number of µs, or a numeric string.
func timeField(field string, v []byte, off int64) (int64, error) {
	if ns, ok := plainMicros(v); ok {
		return ns, nil
	}
	num := v
	if len(v) > 0 && v[0] == '"' {
		num = bytes.TrimSpace(v[1 : len(v)-1])
	}
	if !isNumber(num) {
		return 0, fieldError(field, v, "a number of microseconds", off)
	}
	ns, ok := micros(num)
	if !ok {
		return 0, fmt.Errorf("chrome: %q %s is out of range at byte offset %d", field, describe(v), off)
	}
	return ns, nil
}

// plainMicros is micros for the numbers writers mostly write: up to 15
// integer digits and up to 3 decimals (ns resolution), exact without
// rounding. ok is false for any other form.
func plainMicros(v []byte) (ns int64, ok bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	whole, frac := v, v[:0]
	for i, c := range v {
		if c == '.' {
			whole, frac = v[:i], v[i+1:]
			if len(frac) == 0 || len(frac) > 3 {
				return 0, false
			}
			break
		}
	}
	if len(whole) > 15 {
		return 0, false
	}
	n, ok := smallUint(whole)
	if !ok {
		return 0, false
	}
	f, ok := smallUint(frac)
	if !ok && len(frac) > 0 {
		return 0, false
	}
	for range 3 - len(frac) {
		f *= 10
	}
	ns = n*1000 + f
	if neg {
		ns = -ns
	}
	return ns, true
}

// smallUint parses 1 to 18 decimal digits; ok is false for anything
// else.
func smallUint(v []byte) (n int64, ok bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, c := range v {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	return n, true
}

// idField parses a pid or tid: an integer, or any string.
func (p *parser) idField(field string, v []byte, off int64) (procID, error) {
	switch {
	case len(v) > 0 && v[0] == '"':
		s := unquote(v)
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return procID{n: n}, nil
		}
		return procID{s: p.internStr(truncate(s, maxName)), str: true}, nil
	case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
		if n, ok := smallUint(v); ok {
			return procID{n: n}, nil
		}
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return procID{n: n}, nil
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return procID{n: int64(f)}, nil
		}
		return procID{s: p.internStr(truncate(string(v), maxName)), str: true}, nil
	}
	return procID{}, fieldError(field, v, "a number or a string", off)
}

// idString returns an id, id2 ({"local": id} or {"global": id}) or
// bind_id as text.
func (p *parser) idString(v []byte) string {
	if len(v) > 0 && v[0] == '{' {
		it := objIter{b: v}
		for it.next() {
			switch k := unquote(it.key); k {
			case "local", "global":
				return p.internStr(k + ":" + p.scalarID(it.val))
			}
		}
	}
	return p.scalarID(v)
}

func (p *parser) scalarID(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		return p.internStr(truncate(unquote(v), maxName))
	}
	return p.internStr(truncate(string(p.compactJSON(v)), maxName))
}

func (p *parser) compactJSON(v []byte) []byte {
	p.compact.Reset()
	if json.Compact(&p.compact, v) != nil {
		return v
	}
	return p.compact.Bytes()
}

// thread returns the index of the thread (pid, tid), adding it if new.
func (p *parser) thread(pid, tid procID) int32 {
	k := threadKey{pid, tid}
	// Events of one thread come in runs: look up the last one first.
	if i := p.lastThread; i < int32(len(p.threads)) && p.threads[i].threadKey == k {
		return i
	}
	i, ok := p.thrIdx[k]
	if !ok {
		i = int32(len(p.threads))
		p.threads = append(p.threads, threadInfo{threadKey: k, first: p.seq, lane: -1})
		p.thrIdx[k] = i
	}
	p.lastThread = i
	p.proc(pid)
	return i
}

// proc returns the process pid, adding it if new: any event names its
// process, even one of a phase Read skips.
func (p *parser) proc(pid procID) *procInfo {
	if p.lastProc != nil && p.lastPID == pid {
		return p.lastProc
	}
	pi := p.procs[pid]
	if pi == nil {
		pi = &procInfo{first: p.seq}
		p.procs[pid] = pi
	}
	p.lastPID, p.lastProc = pid, pi
	return pi
}

// evFields is what the members of one event object say, before the event
// is kept.
type evFields struct {
	e                  ev
	phase              string
	hasPh, hasTS, full bool
	pid, tid           procID
	hasTid, hasPid     bool
	argsRaw            []byte
	argsOff            int64
	scope              string
}

// event reads one element of the event array; start is its offset.
func (p *parser) event(raw []byte, start int64) error {
	if len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("chrome: event is %s, want an object at byte offset %d", describe(raw), start)
	}
	p.seq++
	f := evFields{e: ev{seq: p.seq}}
	// The lexer found the members as it checked the event.
	for _, m := range p.lx.members {
		f.full = true
		key := raw[m.key0+1 : m.key1-1]
		if hasBackslash(key) {
			key = []byte(unquote(raw[m.key0:m.key1]))
		}
		if err := f.member(p, key, raw[m.val0:m.val1], start+int64(m.val0)); err != nil {
			return err
		}
	}
	if !f.hasPh {
		if f.full {
			p.unsupported("(none)")
		}
		return nil // TSL ends its array with {}
	}
	if !f.hasTid {
		f.tid = f.pid // a process-level event: its main thread
	}
	if f.hasPid {
		p.proc(f.pid)
	}
	if f.phase == "M" {
		return p.metadata(&f)
	}
	return p.keep(&f)
}

// member reads one member of an event object; off is the value's offset.
// The key stays a []byte (switched on without converting it), as a string
// would cost an allocation per member.
func (f *evFields) member(p *parser, key, v []byte, off int64) error {
	switch string(key) {
	case "ph", "name", "cat", "s", "bp":
		return f.stringMember(p, key, v, off)
	}
	if v[0] == 'n' {
		return nil // null: as if absent
	}
	return f.valueMember(p, key, v, off)
}

// stringMember reads a member whose value must be a string (or, but for
// "ph", null).
func (f *evFields) stringMember(p *parser, key, v []byte, off int64) error {
	if v[0] != '"' {
		if string(key) == "ph" || v[0] != 'n' {
			return fieldError(string(key), v, "a string", off)
		}
		return nil
	}
	switch string(key) {
	case "ph":
		f.phase, f.hasPh = unquote(v), true
	case "name":
		f.e.name = p.str(v)
	case "cat":
		f.e.cat = p.str(v)
	case "s":
		f.scope = unquote(v)
	case "bp":
		if unquote(v) == "e" {
			f.e.flags |= fBindEnclosing
		}
	}
	return nil
}

// valueMember reads a member that is not a string member and not null.
func (f *evFields) valueMember(p *parser, key, v []byte, off int64) error {
	var err error
	switch string(key) {
	case "ts":
		f.e.ts, err = timeField("ts", v, off)
		f.hasTS = err == nil
	case "dur":
		f.e.dur, err = timeField("dur", v, off)
	case "pid":
		f.pid, err = p.idField("pid", v, off)
		f.hasPid = err == nil
	case "tid":
		f.tid, err = p.idField("tid", v, off)
		f.hasTid = err == nil
	case "id", "id2":
		f.e.id = p.idString(v)
		f.e.flags |= fHasID
	case "bind_id":
		f.e.bindID = p.idString(v)
		f.e.flags |= fHasBind
	case "flow_in", "flow_out":
		if v[0] != 't' && v[0] != 'f' {
			return fieldError(string(key), v, "a boolean", off)
		}
		if v[0] == 't' && string(key) == "flow_in" {
			f.e.flags |= fFlowIn
		} else if v[0] == 't' {
			f.e.flags |= fFlowOut
		}
	case "args":
		if v[0] != '{' {
			return fieldError("args", v, "an object", off)
		}
		f.argsRaw, f.argsOff = v, off
	}
	return err
}

// metadata applies an M event: process names, labels and sort indexes,
// thread names and sort indexes. Other metadata is not kept.
func (p *parser) metadata(f *evFields) error {
	var name, labels string
	var sort int64
	hasSort := false
	if f.argsRaw != nil {
		it := objIter{b: f.argsRaw}
		for it.next() {
			switch unquote(it.key) {
			case "name":
				if it.val[0] == '"' {
					name = truncate(unquote(it.val), maxName)
				}
			case "labels":
				if it.val[0] == '"' {
					labels = truncate(unquote(it.val), maxString)
				}
			case "sort_index":
				if n, ok := argInt(p.arg("", it.val)); ok {
					sort, hasSort = n, true
				} else if a := p.arg("", it.val); a.Kind == event.ArgFloat && a.Float() == math.Trunc(a.Float()) && math.Abs(a.Float()) < 1<<62 {
					sort, hasSort = int64(a.Float()), true
				}
			}
		}
	}
	switch f.e.name {
	case "process_name":
		p.thread(f.pid, f.tid)
		pi := p.procs[f.pid]
		was := foldedDevice(pi)
		pi.name = name
		if p.stream != nil && foldedDevice(pi) != was {
			return p.stream.deviceRenamed(f.pid)
		}
	case "process_labels":
		// As the Chrome trace viewer does: split at commas, each label
		// once.
		pi := p.proc(f.pid)
		for _, l := range strings.Split(labels, ",") {
			if !slices.Contains(pi.labels, l) && len(pi.labels) < maxArgs {
				pi.labels = append(pi.labels, truncate(l, maxName))
			}
		}
	case "process_sort_index":
		if hasSort {
			pi := p.proc(f.pid)
			pi.sort, pi.sorted = sort, true
		}
	case "thread_name":
		ti := p.thread(f.pid, f.tid)
		p.threads[ti].name = name
		if p.stream != nil {
			return p.stream.threadMeta(ti, false)
		}
	case "thread_sort_index":
		if hasSort {
			ti := p.thread(f.pid, f.tid)
			t := &p.threads[ti]
			t.sort, t.sorted = sort, true
			if p.stream != nil {
				return p.stream.threadMeta(ti, true)
			}
		}
	}
	return nil
}

// keep keeps an event of a phase Read converts until the file is read.
func (p *parser) keep(f *evFields) error {
	if len(f.phase) != 1 || !strings.Contains("XBEiIRCbenstf", f.phase) {
		p.unsupported(f.phase)
		return nil
	}
	if !f.hasTS {
		p.noTS++
		return nil
	}
	e := f.e
	e.ph = f.phase[0]
	if f.scope == "g" || f.scope == "p" {
		e.flags |= fProcScope
	}
	e.thread = p.thread(f.pid, f.tid)
	p.proc(f.pid).events++
	if f.argsRaw != nil {
		var err error
		var scratch []event.Arg
		if p.stream != nil {
			scratch = p.argBuf[:0]
		}
		if e.args, err = p.args(f.argsRaw, f.argsOff, scratch); err != nil {
			return err
		}
		if p.stream != nil {
			p.argBuf = e.args
		}
	}
	p.minTS = min(p.minTS, e.ts)
	if p.stream != nil {
		return p.stream.add(&e)
	}
	p.events = append(p.events, e)
	return nil
}

// unsupported counts an event of a phase Read does not convert.
func (p *parser) unsupported(phase string) {
	phase = truncate(phase, 16)
	if _, ok := p.unknown[phase]; !ok && len(p.unknown) >= 32 {
		phase = "(others)"
	}
	p.unknown[phase]++
}

// args converts the members of an args object, appending them to out.
func (p *parser) args(v []byte, off int64, out []event.Arg) ([]event.Arg, error) {
	it := objIter{b: v}
	for it.next() {
		if len(out) == maxArgs {
			p.argsLost++
			continue
		}
		out = append(out, p.arg(p.str(it.key), it.val))
	}
	if it.bad {
		return nil, fmt.Errorf("chrome: malformed args at byte offset %d", off)
	}
	return out, nil
}

func (p *parser) arg(key string, v []byte) event.Arg {
	a := event.Arg{Key: key}
	switch c := v[0]; {
	case c == '"':
		a.Kind, a.Str = event.ArgString, truncate(unquote(v), maxString)
	case c == 't' || c == 'f':
		a.Kind = event.ArgBool
		if c == 't' {
			a.Num = 1
		}
	case c == '-' || c >= '0' && c <= '9':
		s := string(v)
		if !bytes.ContainsAny(v, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				a.Kind, a.Num = event.ArgInt, uint64(n)
				return a
			}
			if n, err := strconv.ParseUint(s, 10, 64); err == nil {
				a.Kind, a.Num = event.ArgUint, n
				return a
			}
		}
		f, _ := strconv.ParseFloat(s, 64) // out of range gives ±Inf
		a.Kind, a.Num = event.ArgFloat, math.Float64bits(f)
	default: // null, object, array
		a.Kind, a.Str = event.ArgString, truncate(string(p.compactJSON(v)), maxString)
	}
	return a
}

func (p *parser) otherData(v []byte) {
	it := objIter{b: v}
	for it.next() {
		val := it.val
		switch unquote(it.key) {
		case "host":
			if val[0] == '"' {
				p.other.host = truncate(unquote(val), maxName)
			}
		case "dropped_events":
			if n, err := strconv.ParseInt(string(val), 10, 64); err == nil && n > 0 {
				p.other.dropped = n
			}
		case "pid":
			if n, err := strconv.ParseInt(string(val), 10, 64); err == nil {
				p.other.pid, p.other.hasPID = n, true
			}
		case "program":
			if val[0] == '"' {
				p.other.program = truncate(unquote(val), maxName)
			}
		case "program_pids":
			var elems []json.RawMessage
			if val[0] == '[' && json.Unmarshal(val, &elems) == nil {
				p.other.programPIDs, p.other.hasProgramPIDs = nil, true
				for _, e := range elems {
					if id, err := p.idField("program_pids", e, 0); err == nil && len(p.other.programPIDs) < 1<<10 {
						p.other.programPIDs = append(p.other.programPIDs, id)
					}
				}
			}
		case "start_unix_ns":
			if val[0] == '"' {
				val = val[1 : len(val)-1]
			}
			if n, err := strconv.ParseInt(string(val), 10, 64); err == nil {
				p.other.startNS, p.other.hasStartNS = n, true
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Building the snapshot.

// lane is a track that spans and instants are placed on: a thread, or the
// track of async events with one (pid, cat, name, id).
type lane struct {
	name     string
	pid      procID // the process it belongs to
	thread   int    // index into parser.threads; -1 for async lanes
	tid      int64
	first    int
	async    bool
	open     []int // B (or b) spans not yet ended, innermost last
	overflow int   // B beyond maxOpen, whose E are to be ignored
	spans    []int // sorted by (start, -end, seq) once all are known
	starts   []int64
	track    uint32
}

type span struct {
	name       string
	start, end int64 // ticks; end is the stop time for an unfinished span
	lane       int
	parent     int // index into spans, -1 for none
	seq        int
	args       []event.Arg
	step       bool
	stepNum    int64
	unfinished bool
	open       bool // a B not yet ended
	id         uint64
}

type instant struct {
	name   string
	t      int64
	lane   int    // -1: the process
	pid    procID // the process of a process- or global-scoped instant (lane -1)
	parent int
	args   []event.Arg
}

type counter struct {
	base, key string
	multi     bool
	pid       procID
	t         int64
	v         float64
}

type flow struct {
	lane int
	t    int64
	next bool // bind to the next span that begins (v1 "f" without bp "e")
	num  uint64
}

type asyncKey struct {
	pid           procID
	cat, name, id string
}

type asyncID struct {
	pid procID
	id  string
}

type builder struct {
	p         *parser
	lanes     []lane
	spans     []span
	instants  []instant
	counters  []counter
	flows     []flow
	asyncs    map[asyncKey]int
	lastAsync map[asyncID]int
	flowNums  map[string]uint64
	nextFlow  uint64
	unmatched int
	tooDeep   int
	noValue   int
	unbound   int
	origin    int64
	stop      int64
	strIDs    map[string]int64
	nextID    int64
	marks     metatext.Collector // devprof's warnings, notes and drops
	pids      []procID           // the file's pids in order of first use
	oneEnded  int64              // flows dropped for having fewer than two ends
}

func (b *builder) rel(ts int64) int64 { return ts - b.origin }

// num returns the number of a pid or tid: a string one gets a number past
// every numeric id of the file, in order of first use.
func (b *builder) num(id procID) int64 {
	if !id.str {
		return id.n
	}
	if n, ok := b.strIDs[id.s]; ok {
		return n
	}
	if b.strIDs == nil {
		b.strIDs = map[string]int64{}
		next := func(x procID) {
			if !x.str && x.n >= b.nextID && x.n < math.MaxInt64 {
				b.nextID = x.n + 1
			}
		}
		for _, t := range b.p.threads {
			next(t.pid)
			next(t.tid)
		}
		for pid := range b.p.procs {
			next(pid)
		}
		b.nextID = max(b.nextID, 1)
	}
	n := b.nextID
	if n < math.MaxInt64 {
		b.nextID++
	}
	b.strIDs[id.s] = n
	return n
}

func satAdd(a, d int64) int64 {
	if d > 0 && a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}

func (b *builder) threadLane(ti int32) int {
	t := &b.p.threads[ti]
	if t.lane < 0 {
		t.lane = len(b.lanes)
		b.lanes = append(b.lanes, lane{name: laneName(t), pid: t.pid, thread: int(ti), tid: b.num(t.tid), first: t.first})
	}
	return t.lane
}

// laneName is the name of a thread's track: its thread_name, or its tid.
func laneName(t *threadInfo) string {
	switch {
	case t.name != "":
		return t.name
	case t.tid.str && t.tid.s != "":
		return t.tid.s
	}
	return "tid " + t.tid.String()
}

func (b *builder) asyncLane(e *ev) int {
	pid := b.p.threads[e.thread].pid
	if strings.HasPrefix(e.id, "global:") {
		pid = procID{}
	}
	k := asyncKey{pid, e.cat, e.name, e.id}
	li, ok := b.asyncs[k]
	if !ok {
		li = len(b.lanes)
		b.lanes = append(b.lanes, lane{name: e.name, pid: b.p.threads[e.thread].pid, thread: -1, first: e.seq, async: true})
		b.asyncs[k] = li
	}
	if e.ph == 'b' {
		b.lastAsync[asyncID{pid, e.id}] = li
	}
	return li
}

// endLane returns the lane an async end event closes a span on.
func (b *builder) endLane(e *ev) int {
	pid := b.p.threads[e.thread].pid
	if strings.HasPrefix(e.id, "global:") {
		pid = procID{}
	}
	if li, ok := b.asyncs[asyncKey{pid, e.cat, e.name, e.id}]; ok && len(b.lanes[li].open)+b.lanes[li].overflow > 0 {
		return li
	}
	if li, ok := b.lastAsync[asyncID{pid, e.id}]; ok {
		return li
	}
	return -1
}

// freshFlow returns the number of a new flow.
func (b *builder) freshFlow() uint64 {
	b.nextFlow++
	return b.nextFlow
}

// setFlow makes n the open flow of key (a bound on the map's size keeps a
// hostile file from costing much: past it, flows get one end).
func (b *builder) setFlow(key string, n uint64) {
	if _, ok := b.flowNums[key]; ok || len(b.flowNums) < 1<<20 {
		b.flowNums[key] = n
	}
}

// begin adds a span (from X, B or b) to lane li.
func (b *builder) begin(e *ev, li int, end int64, open bool) int {
	s := span{name: e.name, start: b.rel(e.ts), end: end, lane: li, parent: -1, seq: e.seq, open: open}
	s.args = b.spanArgs(&s, e.args)
	b.flowV2(&s, e)
	b.spans = append(b.spans, s)
	return len(b.spans) - 1
}

// spanArgs takes devprof's markers out of a span's arguments.
func (b *builder) spanArgs(s *span, args []event.Arg) []event.Arg {
	out := args[:0:0]
	for _, a := range args {
		switch {
		case a.Key == "step_num" && !s.step:
			if n, ok := argInt(a); ok {
				s.step, s.stepNum = true, n
				continue
			}
		case a.Key == "unfinished" && a.Kind == event.ArgBool:
			s.unfinished = s.unfinished || a.Bool()
			continue
		}
		out = append(out, a)
	}
	return out
}

func argInt(a event.Arg) (int64, bool) {
	switch a.Kind {
	case event.ArgInt:
		return a.Int(), true
	case event.ArgString:
		n, err := strconv.ParseInt(a.Str, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func addFlow(s *span, num uint64) {
	for _, a := range s.args {
		if a.Kind == event.ArgFlow && a.Num == num {
			return
		}
	}
	if len(s.args) < maxArgs {
		s.args = append(s.args, event.Arg{Kind: event.ArgFlow, Num: num})
	}
}

// end closes the innermost open span of lane li at ts.
func (b *builder) end(e *ev, li int) {
	if li < 0 {
		b.unmatched++
		return
	}
	l := &b.lanes[li]
	if l.overflow > 0 {
		l.overflow--
		return
	}
	if len(l.open) == 0 {
		b.unmatched++
		return
	}
	s := &b.spans[l.open[len(l.open)-1]]
	l.open = l.open[:len(l.open)-1]
	s.end, s.open = max(b.rel(e.ts), s.start), false
	for _, a := range b.spanArgs(s, e.args) { // E's args are merged into the slice's
		if !slices.ContainsFunc(s.args, func(x event.Arg) bool { return x.Key == a.Key && x.Kind != event.ArgFlow }) && len(s.args) < maxArgs {
			s.args = append(s.args, a)
		}
	}
	b.flowV2(s, e)
}

// flowV2 binds span s to the flow of e's bind_id, if e has one (flow v2).
// flow_in continues the flow whose last slice had flow_out; without one
// it begins a flow of its own (which has one end unless a later flow_in
// takes it on). A flow_out without flow_in begins a new flow, so ids can
// be reused once their flow has ended.
func (b *builder) flowV2(s *span, e *ev) {
	if n, ok := b.flowV2Num(e); ok {
		addFlow(s, n)
	}
}

// flowV2Num returns the flow e's bind_id binds e to (see flowV2), and
// false if e has none.
func (b *builder) flowV2Num(e *ev) (uint64, bool) {
	if e.flags&fHasBind == 0 || e.flags&(fFlowIn|fFlowOut) == 0 {
		return 0, false
	}
	key := "v2\x00" + e.bindID
	n, open := b.flowNums[key]
	if e.flags&fFlowIn == 0 || !open {
		n = b.freshFlow()
	}
	if e.flags&fFlowOut != 0 {
		b.setFlow(key, n)
	} else {
		delete(b.flowNums, key)
	}
	return n, true
}

func (b *builder) push(li, si int) {
	l := &b.lanes[li]
	if len(l.open) >= maxOpen {
		l.overflow++
		b.tooDeep++
		b.spans = b.spans[:si]
		return
	}
	l.open = append(l.open, si)
}

func (p *parser) build(sink event.Sink) {
	b := &builder{
		p:         p,
		asyncs:    map[asyncKey]int{},
		lastAsync: map[asyncID]int{},
		flowNums:  map[string]uint64{},
	}
	b.pids = make([]procID, 0, len(p.procs))
	for id := range p.procs {
		b.pids = append(b.pids, id)
	}
	slices.SortFunc(b.pids, func(x, y procID) int {
		if c := cmp.Compare(p.procs[x].first, p.procs[y].first); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.n, y.n), cmp.Compare(x.s, y.s), cmp.Compare(boolInt(x.str), boolInt(y.str)))
	})
	for _, id := range b.pids { // string pids are numbered first, in order of first use
		b.num(id)
	}
	if len(p.events) > 0 {
		b.origin = p.minTS
	}
	if p.other.hasStartNS && b.origin > 0 {
		b.origin = 0 // devprof writes times relative to the session start
	}
	nspans := 0
	for i := range p.events {
		if ph := p.events[i].ph; ph == 'X' || ph == 'B' || ph == 'b' {
			nspans++
		}
	}
	b.spans = make([]span, 0, nspans)
	for _, k := range p.timeOrder() {
		b.add(&p.events[k.i])
	}
	for i := range b.spans { // B never ended: open until the end of the trace
		if s := &b.spans[i]; s.open {
			s.unfinished, s.end = true, max(b.stop, s.start)
		}
	}
	b.nest()
	b.bindFlows()
	if !p.other.hasStartNS {
		b.dropOneEnded()
	}
	b.bindInstants()
	b.emit(sink)
}

// timeKey orders events by time, then file order.
type timeKey struct {
	ts int64
	i  int // index into parser.events
}

// timeOrder returns the events' keys sorted by time, then file order.
func (p *parser) timeOrder() []timeKey {
	order := make([]timeKey, len(p.events))
	for i := range p.events {
		order[i] = timeKey{p.events[i].ts, i}
	}
	slices.SortFunc(order, func(x, y timeKey) int {
		if c := cmp.Compare(x.ts, y.ts); c != 0 {
			return c
		}
		return cmp.Compare(x.i, y.i)
	})
	return order
}

// add applies one event, in time order, to the lanes, spans, instants,
// counters and flows being built.
func (b *builder) add(e *ev) {
	p := b.p
	t := b.rel(e.ts)
	b.stop = max(b.stop, t)
	switch e.ph {
	case 'X':
		end := satAdd(t, max(e.dur, 0))
		b.stop = max(b.stop, end)
		b.begin(e, b.threadLane(e.thread), end, false)
	case 'B':
		li := b.threadLane(e.thread)
		b.push(li, b.begin(e, li, t, true))
	case 'E':
		li := -1
		if t := &p.threads[e.thread]; t.lane >= 0 {
			li = t.lane
		}
		b.end(e, li)
	case 'b':
		li := b.asyncLane(e)
		b.push(li, b.begin(e, li, t, true))
	case 'e':
		b.end(e, b.endLane(e))
	case 'n':
		b.instants = append(b.instants, instant{name: e.name, t: t, lane: b.asyncLane(e), parent: -1, args: e.args})
	case 'i', 'I', 'R':
		if b.marks.Take(e.name, e.args) {
			return
		}
		li := -1
		if e.flags&fProcScope == 0 {
			li = b.threadLane(e.thread)
		}
		args := e.args
		// An instant is a slice of no duration: a bind_id binds it to
		// its flow as it binds a complete event.
		if n, ok := b.flowV2Num(e); ok && len(args) < maxArgs {
			args = append(args[:len(args):len(args)], event.Arg{Kind: event.ArgFlow, Num: n})
		}
		b.instants = append(b.instants, instant{name: e.name, t: t, lane: li, pid: p.threads[e.thread].pid, parent: -1, args: args})
	case 'C':
		b.counter(e, t)
	case 's', 't', 'f':
		// Flow v1: keyed by (id, cat, name). s begins a flow, t and f
		// continue the open one, and f ends it, so that an id can be
		// used again; a t or f with no open flow has a flow of its own.
		key := "v1\x00" + e.id + "\x00" + e.cat + "\x00" + e.name
		n, open := b.flowNums[key]
		if e.ph == 's' || !open {
			n = b.freshFlow()
		}
		if e.ph == 'f' {
			delete(b.flowNums, key)
		} else {
			b.setFlow(key, n)
		}
		b.flows = append(b.flows, flow{
			lane: b.threadLane(e.thread),
			t:    t,
			next: e.ph == 'f' && e.flags&fBindEnclosing == 0,
			num:  n,
		})
	}
}

func (b *builder) counter(e *ev, t int64) {
	vals := counterValues(e.args, nil)
	if len(vals) == 0 {
		b.noValue++
		return
	}
	base := counterBase(e)
	for _, x := range vals {
		b.counters = append(b.counters, counter{base: base, key: x.key, multi: len(vals) > 1, pid: b.p.threads[e.thread].pid, t: t, v: x.v})
	}
}

// counterValue is one numeric argument of a "C" event: one sample.
type counterValue struct {
	key string
	v   float64
}

// counterValues appends to dst the numeric arguments of a "C" event.
func counterValues(args []event.Arg, dst []counterValue) []counterValue {
	for _, a := range args {
		switch a.Kind {
		case event.ArgInt:
			dst = append(dst, counterValue{a.Key, float64(a.Int())})
		case event.ArgUint:
			dst = append(dst, counterValue{a.Key, float64(a.Num)})
		case event.ArgFloat:
			dst = append(dst, counterValue{a.Key, a.Float()})
		case event.ArgString: // devprof writes NaN and infinities as strings
			if f, err := strconv.ParseFloat(strings.TrimSpace(a.Str), 64); err == nil {
				dst = append(dst, counterValue{a.Key, f})
			}
		}
	}
	return dst
}

// counterBase is the series name of a "C" event's samples, before the
// argument's key.
func counterBase(e *ev) string {
	if e.flags&fHasID != 0 {
		return e.name + " id: " + e.id
	}
	return e.name
}

// counterName names the series of one sample: a counter event with
// several values has a series per key, one with a single value other
// than "value" has the key as its unit.
func counterName(base, key string, multi bool) (name, unit string) {
	switch {
	case multi:
		return base + " " + key, ""
	case key != "value":
		return base, key
	}
	return base, ""
}

// nest sorts the spans of every lane and gives each the latest-starting
// span that contains it as parent.
func (b *builder) nest() {
	for i := range b.spans {
		l := &b.lanes[b.spans[i].lane]
		l.spans = append(l.spans, i)
	}
	var stack []int
	for li := range b.lanes {
		l := &b.lanes[li]
		slices.SortFunc(l.spans, func(x, y int) int {
			a, c := &b.spans[x], &b.spans[y]
			if d := cmp.Compare(a.start, c.start); d != 0 {
				return d
			}
			if d := cmp.Compare(c.end, a.end); d != 0 {
				return d
			}
			return cmp.Compare(a.seq, c.seq)
		})
		l.starts = make([]int64, len(l.spans))
		stack = stack[:0]
		for k, si := range l.spans {
			s := &b.spans[si]
			l.starts[k] = s.start
			for len(stack) > 0 && b.spans[stack[len(stack)-1]].end <= s.start {
				stack = stack[:len(stack)-1]
			}
			for j, n := len(stack)-1, 0; j >= 0 && n < maxWalk; j, n = j-1, n+1 {
				p := &b.spans[stack[j]]
				if p.end > s.start && s.end <= p.end {
					s.parent = stack[j]
					break
				}
			}
			stack = append(stack, si)
		}
	}
}

// enclosing returns the span of lane li with the latest start that
// contains t, or -1.
func (b *builder) enclosing(li int, t int64) int {
	l := &b.lanes[li]
	k, found := slices.BinarySearch(l.starts, t)
	if found { // the last span starting at t
		for k+1 < len(l.starts) && l.starts[k+1] == t {
			k++
		}
	} else {
		k--
	}
	n := 0
	for ; k >= 0 && n < maxWalk; k-- {
		for s := l.spans[k]; s >= 0 && n < maxWalk; s = b.spans[s].parent {
			if b.spans[s].end >= t {
				return s
			}
			n++
		}
	}
	return -1
}

func (b *builder) bindFlows() {
	for _, f := range b.flows {
		l := &b.lanes[f.lane]
		si := -1
		if f.next {
			if k, _ := slices.BinarySearch(l.starts, f.t); k < len(l.spans) {
				si = l.spans[k]
			}
		} else {
			si = b.enclosing(f.lane, f.t)
		}
		if si < 0 {
			b.unbound++
			continue
		}
		addFlow(&b.spans[si], f.num)
	}
}

// dropOneEnded takes out the flows bound to fewer than two slices, which
// no viewer could draw, and counts them (builder.oneEnded). A file devprof
// wrote keeps them: there a flow with one end is the recording's own, its
// other end perhaps in another trace.
func (b *builder) dropOneEnded() {
	ends := make(map[uint64]int, b.nextFlow)
	for i := range b.spans {
		for _, a := range b.spans[i].args {
			if a.Kind == event.ArgFlow {
				ends[a.Num]++
			}
		}
	}
	for i := range b.instants {
		for _, a := range b.instants[i].args {
			if a.Kind == event.ArgFlow {
				ends[a.Num]++
			}
		}
	}
	complete := 0
	for _, n := range ends {
		if n >= 2 {
			complete++
		}
	}
	b.oneEnded = int64(b.nextFlow) - int64(complete)
	if b.oneEnded == 0 {
		return
	}
	lone := func(a event.Arg) bool { return a.Kind == event.ArgFlow && ends[a.Num] < 2 }
	for i := range b.spans {
		if s := &b.spans[i]; slices.ContainsFunc(s.args, lone) {
			s.args = slices.DeleteFunc(s.args, lone)
		}
	}
	for i := range b.instants {
		if in := &b.instants[i]; slices.ContainsFunc(in.args, lone) {
			in.args = slices.DeleteFunc(in.args, lone)
		}
	}
}

func (b *builder) bindInstants() {
	for i := range b.instants {
		in := &b.instants[i]
		if in.lane >= 0 {
			in.parent = b.enclosing(in.lane, in.t)
		}
	}
}

// DropsFlows is the drop source (event.Meta.AddDrops) under which Read
// counts the flows of a file that it dropped for having fewer than two
// ends bound to slices: flows whose other end the file does not hold.
const DropsFlows = "chrome flows"

// readerWarning is a warning of the reader's own.
func readerWarning(code, text string) event.Warning {
	return event.Warning{Source: "chrome", Code: code, Text: text}
}

func (b *builder) emit(bl event.Sink) {
	b.fillMeta(bl.Meta())
	b.emitProcesses(bl)
	b.emitMarks(bl.Meta())
	b.emitSpans(bl)
	b.emitInstants(bl)
	b.emitCounters(bl)
	b.warn(bl.Meta())
}

// fillMeta sets what the file says of the recording in meta: the process
// with the most events names the program.
func (b *builder) fillMeta(meta *event.Meta) {
	p := b.p
	meta.Host = p.other.host
	var best *procInfo
	var bestID procID
	for id, pi := range p.procs {
		if best == nil || pi.events > best.events || pi.events == best.events && pi.first < best.first {
			best, bestID = pi, id
		}
	}
	if p.other.hasPID && p.other.hasStartNS {
		meta.PID, meta.Program = int(p.other.pid), p.other.program
	} else if best != nil {
		meta.PID, meta.Program = int(b.num(bestID)), best.name
		switch {
		case meta.Program != "":
		case bestID.str && bestID.s != "":
			meta.Program = bestID.s
		default:
			meta.Program = "pid " + bestID.String()
		}
	}
	start := p.other.startNS
	meta.Start = event.ClockAnchor{Mono: 0, Boot: start, Wall: start}
	meta.Stop = event.ClockAnchor{Mono: b.stop, Boot: satAdd(start, b.stop), Wall: satAdd(start, b.stop)}
}

// foldedDevice returns the device a process of the program stands for
// in a file devprof wrote: its writer gives each device's streams as
// threads of a process named "GPU <n>" or "GPU <n> (<device name>)",
// which the reader folds into the program's. The ordinal goes on the
// threads' tracks (Track.Device), so that the streams of two GPUs stay
// two devices' (event.StreamOf). 0 for any other process, as on any
// host thread.
func foldedDevice(pi *procInfo) int {
	rest, ok := strings.CutPrefix(pi.name, "GPU ")
	if !ok {
		return 0
	}
	rest, _, _ = strings.Cut(rest, " ")
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// emitProcesses adds the file's processes, in the order they first
// appear. A file devprof wrote keeps the recording program's threads (its
// own and its devices') in the program's process, Meta; any other file has
// every pid as a process of its own, pid 0 included, and a string pid
// numbered past every numeric one with its string as the label.
func (b *builder) emitProcesses(bl event.Sink) {
	p := b.p
	for _, id := range b.pids {
		pi := p.procs[id]
		if p.other.hasStartNS && (!p.other.hasProgramPIDs || slices.Contains(p.other.programPIDs, id)) {
			continue // the program's
		}
		pi.num = bl.Process(event.Process{
			PID: b.num(id), Label: id.s, IsLabel: id.str,
			Name: pi.name, Labels: pi.labels, SortIndex: pi.sort, Sorted: pi.sorted,
		})
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// emitMarks adds the warnings, notes and drops devprof's marker instants
// carried; otherData's count stands in for a drop marker that went.
func (b *builder) emitMarks(meta *event.Meta) {
	c := &b.marks
	c.ApplyMeta(meta)
	if len(c.Drops) == 0 && b.p.other.dropped > 0 {
		// otherData counts what the file lost even if its marker went.
		meta.AddDrops(event.DropsRecorder, b.p.other.dropped)
	}
}

// emitSpans adds a track for every lane with events, in the order the
// lanes first appear, and then each lane's spans.
func (b *builder) emitSpans(bl event.Sink) {
	order := make([]int, len(b.lanes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(b.lanes[x].first, b.lanes[y].first) })
	used := make([]bool, len(b.lanes))
	for _, in := range b.instants {
		if in.lane >= 0 {
			used[in.lane] = true
		}
	}
	for _, li := range order {
		if l := &b.lanes[li]; len(l.spans) > 0 || used[li] {
			pi := b.p.proc(l.pid)
			tk := event.Track{Kind: event.TrackHostThread, ID: l.tid, Name: l.name, Process: pi.num}
			if pi.num == 0 {
				tk.Device = foldedDevice(pi)
			}
			if l.thread >= 0 {
				t := &b.p.threads[l.thread]
				tk.SortIndex, tk.Sorted = t.sort, t.sorted
			}
			l.track = bl.Track(tk)
		}
	}
	for _, li := range order {
		l := &b.lanes[li]
		for _, si := range l.spans {
			s := &b.spans[si]
			var parent uint64
			if s.parent >= 0 {
				parent = b.spans[s.parent].id
			}
			s.id = bl.Span(event.Span{
				Name: s.name, Start: s.start, End: s.end, Parent: parent, Track: l.track,
				Args: s.args, Step: s.step, StepNum: s.stepNum, Unfinished: s.unfinished,
			})
		}
	}
}

// emitInstants adds the instants by time.
func (b *builder) emitInstants(bl event.Sink) {
	slices.SortStableFunc(b.instants, func(x, y instant) int { return cmp.Compare(x.t, y.t) })
	for _, in := range b.instants {
		var track uint32
		var parent uint64
		if in.lane >= 0 {
			track = b.lanes[in.lane].track
		}
		if in.parent >= 0 {
			parent = b.spans[in.parent].id
		}
		if in.lane < 0 {
			// A process- or global-scoped instant stays on its own
			// process (Kineto's global instants have pids of their own).
			track = b.processTrack(bl, in.pid)
		}
		bl.Instant(in.name, in.t, track, parent, in.args)
	}
}

// emitCounters adds the counter samples, each on its process ("C" events
// are process-scoped, as trace_processor keeps them).
func (b *builder) emitCounters(bl event.Sink) {
	for _, c := range b.counters {
		name, unit := counterName(c.base, c.key, c.multi)
		if track := b.processTrack(bl, c.pid); track != 0 {
			bl.TrackCounter(track, name, unit, c.t, c.v)
			continue
		}
		bl.Counter(name, unit, c.t, c.v)
	}
}

// processTrack returns the TrackProcess track of pid's process, or 0 for
// the program's own (Meta), whose counters and instants need no track.
func (b *builder) processTrack(bl event.Sink, pid procID) uint32 {
	pi := b.p.procs[pid]
	if pi == nil || pi.num == 0 {
		return 0
	}
	return bl.ProcessTrack(pi.num)
}

// warn adds the warnings for what Read skipped or could not represent.
func (b *builder) warn(meta *event.Meta) {
	p := b.p
	if len(p.unknown) > 0 {
		phases := make([]string, 0, len(p.unknown))
		n := 0
		for ph, c := range p.unknown {
			n += c
			phases = append(phases, fmt.Sprintf("%q ×%d", ph, c))
		}
		slices.Sort(phases)
		meta.Warnings = append(meta.Warnings, readerWarning("unsupported_phases", fmt.Sprintf("chrome: skipped %d events with unsupported phases: %s", n, strings.Join(phases, ", "))))
	}
	warn := func(n int, code, format string) {
		if n > 0 {
			meta.Warnings = append(meta.Warnings, readerWarning(code, fmt.Sprintf(format, n)))
		}
	}
	warn(p.noTS, "no_timestamp", "chrome: skipped %d events without a timestamp")
	warn(b.unmatched, "unmatched_end", "chrome: ignored %d end events (E or e) with no open slice")
	warn(b.tooDeep, "too_deep", fmt.Sprintf("chrome: ignored %%d slices nested more than %d deep", maxOpen))
	warn(b.noValue, "counter_without_value", "chrome: skipped %d counter events without numeric values")
	warn(b.unbound, "unbound_flow", "chrome: %d flow events had no slice to bind to")
	if b.oneEnded > 0 {
		meta.AddDrops(DropsFlows, b.oneEnded)
		meta.Warnings = append(meta.Warnings, readerWarning("one_ended_flows", fmt.Sprintf("chrome: dropped %d flows with fewer than two ends bound to slices (of %d in the file)", b.oneEnded, b.nextFlow)))
	}
	warn(p.argsLost, "args_lost", fmt.Sprintf("chrome: dropped %%d arguments beyond %d on one event", maxArgs))
	if p.missingBracket {
		meta.Warnings = append(meta.Warnings, readerWarning("truncated", "chrome: the event array has no closing bracket (the trace may have been cut short)"))
	}
}
