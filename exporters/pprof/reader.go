package pprof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/metatext"
)

// Limits that keep a hostile file from costing much more than the model
// it describes. None is below what devprof's tracker writes at its
// defaults (1,048,576 live buffers, 64 frames each).
const (
	// MaxFieldSize is the most bytes of one field of a profile (a sample,
	// a location, a string): a field is read whole before it is decoded.
	// A profile is read as it comes and never held whole, so it has no
	// size limit of its own.
	MaxFieldSize = 64 << 20
	// MaxSamples is the most samples Read keeps: 16 times the live
	// buffers the tracker keeps by default (devmem.DefaultMaxBuffers),
	// each of which is at most a sample.
	MaxSamples = 1 << 24
	// MaxFrames is the most frames Read keeps of one stack (the innermost
	// ones); JAX keeps at most 512.
	MaxFrames = 4096
	// MaxTotalFrames bounds the frames of all distinct stacks together
	// (buffers with the same stack share its frames), and the entries of
	// the location and function tables: the tracker's defaults, 1 Mi
	// buffers each with its own 64-frame stack.
	MaxTotalFrames = 1 << 26
	// MaxStringBytes bounds the profile's strings (its string table)
	// together.
	MaxStringBytes = 1 << 28
)

// The limits Read applies: the constants, lowered by tests to keep them
// fast. maxNumbers bounds the sample values, labels and comments kept.
var (
	maxFieldSize   = MaxFieldSize
	maxSamples     = MaxSamples
	maxTotalFrames = MaxTotalFrames
	maxStringBytes = MaxStringBytes
	maxNumbers     = 1 << 26
)

// Warning codes of what Read tells about the file (event.Warning.Code,
// with Source "pprof").
const (
	// CodeComment marks a comment of a profile devprof did not write,
	// kept as it was.
	CodeComment = "comment"
	// CodeStackCut says stacks deeper than MaxFrames were cut.
	CodeStackCut = "stack_cut"
)

// ReadFile reads the memory profile at path; see Read. Errors name path.
func ReadFile(path string) (*event.DeviceMemory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ErrNotMemory is wrapped by Read's error for a valid pprof profile that is
// not a memory profile (a CPU profile, a Go heap profile): its sample types
// are not allocations/count and space/bytes.
var ErrNotMemory = errors.New("not a device-memory profile")

// Read decodes a device-memory profile, gzip-compressed or not: one devprof
// wrote, or any pprof profile with the sample types allocations/count and
// space/bytes, such as jax.profiler.save_device_memory_profile's.
//
// Each sample becomes one Buffer standing for Count equal buffers (its
// allocations value) of Bytes each (space divided by count); Address and
// Time are zero, since pprof keeps neither. The stack comes from the
// locations, innermost first (a location's inlined lines each become a
// frame; one without lines is its address, in hex), after the frames of
// the glue label (Buffer.Glue counts them). A profile with no glue label
// at all (one written before it, or by another tool) has its glue frames
// found as the tracker finds them (DeviceMemory.MarkGlue), so that its
// call sites are a binding's callers there too. Labels go back to the
// fields they came from (see the package doc). The device label "gpu:N"
// (devprof's), "cuda:N" or "rocm:N" (JAX's GPU devices) gives Device N,
// and "host" Device -1; any other device ("cpu:0", "TFRT_CPU_0", a TPU)
// gives Device -1 and its name as DeviceName: that backend's device
// memory, not host memory. Labels devprof
// does not write become tags "key=value" too, so nothing a profile says is
// lost. The counts come back from devprof's counts comment; warnings from
// its warning lines, and a foreign profile's comments become warnings
// with Source "pprof" and Code CodeComment.
//
// Input that is not gzip nor a profile, a profile cut short, a profile of
// other sample types (ErrNotMemory), negative values (a profile saved
// from -diff_base) or values that disagree (bytes that do not divide into
// the count) are errors saying so; nothing in a file makes Read panic.
// Buffers are sorted as DeviceMemory.Sort sorts them.
func Read(r io.Reader) (*event.DeviceMemory, error) {
	br := bufio.NewReader(r)
	var src io.Reader = br
	gz := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("pprof: not a valid gzip stream: %w", err)
		}
		defer zr.Close()
		src, gz = zr, true
	}
	d := newDecoder(src)
	any, err := d.decode()
	switch {
	case d.src.err != nil && gz:
		return nil, fmt.Errorf("pprof: gzip stream: %w", d.src.err)
	case d.src.err != nil:
		return nil, fmt.Errorf("pprof: %w", d.src.err)
	case err != nil:
		var budget *budgetError
		if errors.As(err, &budget) {
			return nil, fmt.Errorf("pprof: %w", err)
		}
		return nil, fmt.Errorf("pprof: not a pprof profile: %v", err)
	case !any:
		return nil, errors.New("pprof: empty: not a profile")
	}
	parse, invalid := d.check()
	switch {
	case parse != nil:
		return nil, fmt.Errorf("pprof: not a pprof profile: %v", parse)
	case invalid != nil:
		return nil, fmt.Errorf("pprof: malformed profile: %v", invalid)
	}
	return d.convert()
}

// typeIndex returns the index of the sample type (typ, unit), or -1.
func (d *decoder) typeIndex(typ, unit string) int {
	return slices.IndexFunc(d.sampleTypes, func(v valueType) bool { return d.str(v.typ) == typ && d.str(v.unit) == unit })
}

func (d *decoder) sampleTypeNames() string {
	if len(d.sampleTypes) == 0 {
		return "none"
	}
	var s []string
	for _, v := range d.sampleTypes {
		s = append(s, d.str(v.typ)+"/"+d.str(v.unit))
	}
	return strings.Join(s, ", ")
}

// labelInfo is what one distinct label set gives a buffer.
type labelInfo struct {
	done   bool
	fields event.Buffer // Kind, Device, DeviceName, Tags, Span, Source, API
	glue   []string
	// glueKey tells glue lists apart: their values joined with NUL.
	glueKey string
}

// fullKey is a stack with its glue frames: the location numbers'
// stack and the glue label's values.
type fullKey struct {
	seq  uint32
	glue string
}

// convert turns a read, valid profile into the model, sample by sample
// as google/pprof's profile would be.
func (d *decoder) convert() (*event.DeviceMemory, error) {
	ci, si := d.typeIndex(TypeAllocations, UnitCount), d.typeIndex(TypeSpace, UnitBytes)
	if ci < 0 || si < 0 {
		return nil, fmt.Errorf("pprof: %w: its sample types are %s; a memory profile (devprof's, or jax.profiler.save_device_memory_profile's) has %s/%s and %s/%s",
			ErrNotMemory, d.sampleTypeNames(), TypeAllocations, UnitCount, TypeSpace, UnitBytes)
	}
	m := &event.DeviceMemory{}
	if d.timeNanos != 0 {
		m.Time = time.Unix(0, d.timeNanos)
	}
	frames := map[uint64][]event.Frame{} // by location id
	stacks := make([][]event.Frame, len(d.seqMore))
	resolved := make([]bool, len(d.seqMore))
	full := map[fullKey][]event.Frame{}
	infos := make([]labelInfo, len(d.labelStart))
	var totalCount, totalSpace int64
	var totalFrames int
	cut, anyGlue := false, false
	m.Buffers = make([]event.Buffer, 0, len(d.samples))
	for i, s := range d.samples {
		vals := d.vals[s.val : s.val+s.nval]
		count, space := vals[ci], vals[si]
		switch {
		case count < 0 || space < 0:
			return nil, fmt.Errorf("pprof: sample %d has negative values (%d allocations, %d bytes): a difference of profiles (-diff_base), not a memory profile", i+1, count, space)
		case count == 0 && space == 0:
			continue // nothing live
		case count == 0:
			return nil, fmt.Errorf("pprof: sample %d holds %d bytes in 0 allocations", i+1, space)
		case space%count != 0:
			return nil, fmt.Errorf("pprof: sample %d: its %d bytes do not divide into its %d allocations", i+1, space, count)
		case count > math.MaxInt64-totalCount || space > math.MaxInt64-totalSpace || count > math.MaxInt:
			return nil, fmt.Errorf("pprof: sample %d: the profile's totals overflow (more than %d allocations or bytes)", i+1, int64(math.MaxInt64))
		}
		totalCount += count
		totalSpace += space
		stack := stacks[s.seq]
		if !resolved[s.seq] {
			ids, more := d.seqOf(s.seq)
			for _, id := range ids {
				if len(stack) >= MaxFrames {
					cut = true
					break
				}
				fs, ok := frames[id]
				if !ok {
					fs = d.locationFrames(id)
					frames[id] = fs
				}
				stack = append(stack, fs...)
			}
			if more && len(stack) >= MaxFrames {
				cut = true
			}
			if len(stack) > MaxFrames {
				stack, cut = stack[:MaxFrames:MaxFrames], true
			}
			if len(stack) == 1 && stack[0] == (event.Frame{Function: UnknownFunction}) {
				stack = nil
			}
			if totalFrames += len(stack); totalFrames > maxTotalFrames {
				return nil, fmt.Errorf("pprof: more than %d stack frames in all: too big for a memory profile", maxTotalFrames)
			}
			stacks[s.seq], resolved[s.seq] = stack, true
		}
		info := &infos[s.labels]
		if !info.done {
			d.labelInfo(info, s.labels)
		}
		b := info.fields
		b.Bytes, b.Count = uint64(space/count), int(count)
		if glue := info.glue; len(glue) > 0 && len(stack) > 0 {
			anyGlue = true
			k := fullKey{s.seq, info.glueKey}
			st, ok := full[k]
			if !ok {
				st = make([]event.Frame, 0, len(glue)+len(stack))
				for _, v := range glue {
					st = append(st, parseFrame(v))
				}
				st = append(st, stack...)
				if totalFrames += len(st); totalFrames > maxTotalFrames {
					return nil, fmt.Errorf("pprof: more than %d stack frames in all: too big for a memory profile", maxTotalFrames)
				}
				full[k] = st
			}
			stack = st
			b.Glue = len(glue)
		}
		b.Stack = stack
		m.Buffers = append(m.Buffers, b)
	}
	if len(m.Buffers) == 0 {
		m.Buffers = nil
	}
	comments := make([]string, len(d.comments))
	for i, c := range d.comments {
		comments[i] = d.str(c)
	}
	readComments(m, comments)
	if !anyGlue {
		// A profile written before the glue label, or by another tool:
		// find the call sites as the tracker does.
		m.MarkGlue(nil)
	}
	if cut {
		m.Warnings = append(m.Warnings, event.Warning{Source: "pprof", Code: CodeStackCut,
			Text: fmt.Sprintf("pprof: stacks deeper than %d frames were cut to their innermost %d", MaxFrames, MaxFrames)})
	}
	m.Sort()
	return m, nil
}

// labelInfo fills info from label set n, building the labels as
// google/pprof's profile holds them (by key, in order; numbers with
// their units) for labels to read.
func (d *decoder) labelInfo(info *labelInfo, n uint32) {
	info.done = true
	info.fields.Device = -1
	lbls := d.labelsOf(n)
	if len(lbls) == 0 {
		return
	}
	s := &profile.Sample{}
	for _, l := range lbls {
		key := d.str(l.key)
		switch {
		case l.str != 0:
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label[key] = append(s.Label[key], d.str(l.str))
		case l.num != 0 || l.unit != 0:
			if s.NumLabel == nil {
				s.NumLabel = map[string][]int64{}
			}
			nums := s.NumLabel[key]
			if l.unit != 0 {
				if s.NumUnit == nil {
					s.NumUnit = map[string][]string{}
				}
				units := s.NumUnit[key]
				for len(units) < len(nums) {
					units = append(units, "")
				}
				s.NumUnit[key] = append(units, d.str(l.unit))
			}
			s.NumLabel[key] = append(nums, l.num)
		}
	}
	for key, units := range s.NumUnit {
		for len(units) < len(s.NumLabel[key]) {
			units = append(units, "")
		}
		s.NumUnit[key] = units
	}
	labels(&info.fields, s)
	info.fields.Tags = slices.Clip(info.fields.Tags)
	info.glue = s.Label[LabelGlue]
	info.glueKey = strings.Join(info.glue, "\x00")
}

// locationFrames returns location id's frames, innermost first: one per
// line (inlined calls first, as pprof orders them), or, for a location
// without lines, its address.
func (d *decoder) locationFrames(id uint64) []event.Frame {
	loc := d.locations[id]
	if loc.nline == 0 {
		f := event.Frame{Function: fmt.Sprintf("%#x", loc.address)}
		if file, ok := d.mappings[loc.mapping]; ok {
			f.File = d.str(file)
		}
		return []event.Frame{f}
	}
	out := make([]event.Frame, 0, loc.nline)
	for _, ln := range d.lines[loc.line : loc.line+loc.nline] {
		fn := d.functions[ln.function]
		f := event.Frame{Line: int(min(max(ln.number, 0), math.MaxInt32)),
			Function: firstOf(d.str(fn.name), d.str(fn.systemName)), File: d.str(fn.filename)}
		if f.Function == "" {
			f.Function = UnknownFunction
		}
		out = append(out, f)
	}
	return out
}

// parseFrame reads a frame of the glue label, "function (file:line)" as
// event.Frame.String writes it; a value not so is all function.
func parseFrame(v string) event.Frame {
	fn, rest, ok := strings.Cut(v, " (")
	if !ok || !strings.HasSuffix(rest, ")") {
		return event.Frame{Function: v}
	}
	f := event.Frame{Function: fn, File: rest[:len(rest)-1]}
	if i := strings.LastIndexByte(f.File, ':'); i >= 0 {
		if n, err := strconv.Atoi(f.File[i+1:]); err == nil && n > 0 {
			f.File, f.Line = f.File[:i], n
		}
	}
	return f
}

// firstOf returns the first of its arguments that is not empty.
func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// labels sets b's fields from the sample's labels.
func labels(b *event.Buffer, s *profile.Sample) {
	keys := make([]string, 0, len(s.Label))
	for k := range s.Label {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var extra []string
	for _, k := range keys {
		v := strings.Join(s.Label[k], ",")
		switch k {
		case LabelKind:
			b.Kind = v
		case LabelDevice:
			if d, ok := parseDevice(v); ok {
				b.Device = d
			} else if v != "" {
				b.DeviceName = v
			}
		case LabelTags:
			for _, t := range strings.Split(v, ",") {
				if t != "" {
					b.Tags = append(b.Tags, t)
				}
			}
		case LabelSpan:
			b.Span = v
		case LabelSource:
			b.Source = v
		case LabelAPI:
			b.API = v
		case LabelGlue:
			// Read with the stack.
		default:
			extra = append(extra, k+"="+v)
		}
	}
	keys = keys[:0]
	for k := range s.NumLabel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		units := s.NumUnit[k]
		for i, n := range s.NumLabel[k] {
			t := k + "=" + strconv.FormatInt(n, 10)
			if i < len(units) && units[i] != "" {
				t += " " + units[i]
			}
			extra = append(extra, t)
		}
	}
	b.Tags = append(b.Tags, extra...)
}

// parseDevice reads a device label: "gpu:N", "cuda:N" or "rocm:N" is
// device N, "host" -1; anything else is not a device devprof can number.
func parseDevice(v string) (int, bool) {
	if v == HostDevice {
		return -1, true
	}
	for _, prefix := range []string{"gpu:", "cuda:", "rocm:"} {
		if rest, ok := strings.CutPrefix(v, prefix); ok {
			n, err := strconv.ParseUint(rest, 10, 31)
			if err != nil || rest[0] == '+' || (len(rest) > 1 && rest[0] == '0') {
				return 0, false
			}
			return int(n), true
		}
	}
	return 0, false
}

// readComments takes the counts, warnings and other comments back.
func readComments(m *event.DeviceMemory, comments []string) {
	ours := slices.ContainsFunc(comments, func(c string) bool { return strings.HasPrefix(c, headerPrefix) })
	for _, c := range comments {
		switch {
		case strings.HasPrefix(c, headerPrefix):
			// Totals, computed again from the buffers.
		case strings.HasPrefix(c, countsPrefix):
			parseCounts(&m.Counts, c[len(countsPrefix):])
		case ours && strings.HasPrefix(c, devicePrefix):
			if u, ok := parseUsage(c[len(devicePrefix):]); ok {
				m.Devices = append(m.Devices, u)
			}
		case ours && strings.HasPrefix(c, usagePrefix):
			// Said again from the device lines and the buffers.
		case !ours:
			m.Warnings = append(m.Warnings, event.Warning{Source: "pprof", Code: CodeComment, Text: c})
		default:
			if c != "" && c[0] == ' ' && strings.HasPrefix(c[1:], "#") {
				c = c[1:] // written with a space so that pprof shows it
			}
			l := metatext.ParseLine(c)
			if l.Warning != nil {
				m.Warnings = append(m.Warnings, *l.Warning)
			} else {
				m.Warnings = append(m.Warnings, event.Warning{Text: c})
			}
		}
	}
}

// parseUsage reads a device line ("device=0 total=… used=… process=…").
func parseUsage(s string) (event.DeviceUsage, bool) {
	u := event.DeviceUsage{Device: -1}
	seen := 0
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "device" {
			d, err := strconv.Atoi(v)
			if err != nil || d < 0 {
				return u, false
			}
			u.Device, seen = d, seen+1
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "total":
			u.Total = n
		case "used":
			u.Used = n
		case "process":
			u.Process = n
		}
	}
	return u, seen == 1
}

// parseCounts reads the fields of the counts line ("allocs=9 frees=2 …");
// fields it does not know or cannot read are left alone.
func parseCounts(c *event.MemoryCounts, s string) {
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue
		}
		for _, f := range countFields {
			if f.name == k {
				*f.ptr(c) = n
			}
		}
	}
}

// Sniff reports whether head, the first bytes of a file's content (after
// gunzip), start as pprof profiles do: after any of the profile's scalar
// fields (the Go runtime's encoder starts with time_nanos), a ValueType,
// exactly two varints in fields 1 and 2 (the type's and the unit's string
// indices), in the profile's field 1 (a sample type: google/pprof's and
// JAX's encoders start so) or field 11 (the period type). No trace devprof
// reads starts so: a Perfetto trace starts with a packet (field 1) whose
// field 1 would be a message (its ftrace_events), an XSpace with a plane
// (field 1) whose field 2 is a string (its name), Chrome JSON with text.
// Trace readers check it first, so that a profile is not read as an empty
// trace.
func Sniff(head []byte) bool {
	// Skip the leading varint fields: drop_frames 7, keep_frames 8,
	// time_nanos 9, duration_nanos 10, period 12, comment 13 (unpacked),
	// default_sample_type 14, doc_url 15.
	for len(head) > 0 && head[0]&7 == 0 && slices.Contains([]byte{7, 8, 9, 10, 12, 13, 14, 15}, head[0]>>3) {
		_, n := protowire.ConsumeVarint(head[1:])
		if n <= 0 {
			return false
		}
		head = head[1+n:]
	}
	if len(head) < 2 || head[0] != 0x0a && head[0] != 0x5a { // field 1 or 11, length-delimited
		return false
	}
	size, n := protowire.ConsumeVarint(head[1:])
	if n <= 0 || size < 4 || size > 22 {
		return false
	}
	body := head[1+n:]
	if uint64(len(body)) < size {
		return false
	}
	body = body[:size]
	for _, tag := range []byte{0x08, 0x10} { // field 1 varint, field 2 varint
		if len(body) == 0 || body[0] != tag {
			return false
		}
		_, n := protowire.ConsumeVarint(body[1:])
		if n <= 0 {
			return false
		}
		body = body[1+n:]
	}
	return len(body) == 0
}
