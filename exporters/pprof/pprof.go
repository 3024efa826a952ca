// Package pprof writes and reads device-memory profiles in pprof's format
// (a gzip-compressed perftools.profiles.Profile), laid out as
// jax.profiler.save_device_memory_profile lays out its own, so that `go
// tool pprof` (or google/pprof) shows who holds device memory and
// `-diff_base` shows what grew between two moments.
//
// In devprof's flow it is an exporter, but of a different model: it
// writes an event.DeviceMemory (the live buffers a memory tracker knows of
// at one moment), not a trace snapshot, and Read turns a memory profile,
// devprof's or JAX's, back into the same value. It is therefore not a row
// of exporters/formats, which holds trace formats; `devprof memory` is the
// command that reads these files.
//
// # Layout
//
// Two sample types, allocations/count then space/bytes, space the default.
// One sample per group of buffers that share their stack, size, device,
// kind, tags, span, source and API; its values are [count, size×count].
// The group's labels (all strings, one value each) are:
//
//	kind    Buffer.Kind ("device", "pinned", "managed", …)
//	device  "gpu:N" for device N, "host" for Device -1, or
//	        Buffer.DeviceName when set
//	tags    Buffer.Tags joined with ","; absent without tags
//	span    Buffer.Span; absent when empty
//	source  Buffer.Source ("cuda", "api"); absent when empty
//	api     Buffer.API ("cudaMalloc", …); absent when empty
//	glue    the Buffer.Glue innermost frames (a Go CUDA binding's and
//	        cgo's), one value per frame as "function (file:line)",
//	        innermost first; absent without them
//
// Tags containing "," come back from Read split there. No address or time
// is a label: they differ between buffers and moments, and pprof merges
// samples only when their stacks and all their labels are equal, so that
// `-base before.pb.gz after.pb.gz` (after minus before) cancels what two
// profiles share only then, and -traces and -tags would list every buffer
// apart. (-top adds up per function whatever the labels.) Each stack frame from the call site outward (past the glue frames,
// so that -top names the caller of the binding, not the binding) is one
// location with one line and no address, innermost first; its function's name and system name are the
// frame's function, its file name the frame's file. A buffer with no stack
// gets the one frame UnknownFunction.
//
// The profile's time is DeviceMemory.Time. Its comments, which pprof
// prints above -top, -traces and -peek and in its graphs' legend, are a header line with
// the totals (and what the tracker could not see, if anything), one line
// per warning (as internal/metatext words them) and a line starting with
// "#", which pprof does not show, that carries MemoryCounts for Read:
//
//	devprof device memory: 7 live buffers, 3.0 MiB (3145728 bytes)
//	devprof warning [memory/untracked]: 2 allocations (1.0 MiB) were not tracked: …
//	#devprof counts: allocs=9 frees=2 untracked=2 untracked_bytes=1048576 unknown_frees=0 double_frees=0 zero_size=0
//
// Writing is deterministic: the same DeviceMemory gives the same bytes.
package pprof

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/metatext"
)

// Sample types, in the order a profile lists them, and the units they
// are in (pprof's -sample_index takes the type names).
const (
	TypeAllocations = "allocations"
	UnitCount       = "count"
	TypeSpace       = "space"
	UnitBytes       = "bytes"
)

// Label keys of a sample, for pprof's -tagfocus, -tagroot and -tags.
const (
	LabelKind   = "kind"
	LabelDevice = "device"
	LabelTags   = "tags"
	LabelSpan   = "span"
	LabelSource = "source"
	LabelAPI    = "api"
	// LabelGlue holds the frames between the call site and CUDA
	// (event.Buffer.Glue), one value per frame, innermost first, each as
	// event.Frame.String writes it: the locations start at the call site.
	LabelGlue = "glue"
)

// HostDevice is the device label of buffers with Device -1 (host memory,
// or a device not known).
const HostDevice = "host"

// UnknownFunction names the one frame of a buffer allocated with no stack
// (pprof would otherwise count its bytes in no function).
const UnknownFunction = "(no stack)"

// headerPrefix starts the first comment; countsPrefix the comment that
// carries MemoryCounts. pprof hides comments that start with "#".
const (
	headerPrefix = "devprof device memory: "
	countsPrefix = "#devprof counts:"
	// devicePrefix starts a machine-readable line of NVML's view of one
	// device (event.DeviceUsage); usagePrefix the line people read.
	devicePrefix = "#devprof device:"
	usagePrefix  = "devprof device "
)

// DeviceLabel is the device label of a buffer on device d: "gpu:N", or
// HostDevice for a negative d.
func DeviceLabel(d int) string {
	if d < 0 {
		return HostDevice
	}
	return "gpu:" + strconv.Itoa(d)
}

// WriteFile writes m to path as a gzip-compressed pprof profile (see
// Write). The file appears whole or not at all (internal/atomicfile).
func WriteFile(path string, m *event.DeviceMemory) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := Write(f, m); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// Write encodes m as a gzip-compressed pprof profile in the layout the
// package documents. It fails only when w does or when a buffer's size
// times its count does not fit pprof's int64 values.
func Write(w io.Writer, m *event.DeviceMemory) error {
	p, err := build(m)
	if err != nil {
		return err
	}
	return p.Write(w)
}

// build makes the profile Write encodes.
func build(m *event.DeviceMemory) (*profile.Profile, error) {
	groups, err := group(m.Buffers)
	if err != nil {
		return nil, err
	}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: TypeAllocations, Unit: UnitCount}, {Type: TypeSpace, Unit: UnitBytes}},
		DefaultSampleType: TypeSpace,
		Comments:          comments(m),
		// One mapping that says the locations are already symbolized:
		// without it, `go tool pprof FILE` looks for the program's binary
		// to symbolize them and prints "Main binary filename not
		// available." above every report.
		Mapping: []*profile.Mapping{{ID: 1, HasFunctions: true, HasFilenames: true, HasLineNumbers: true}},
	}
	if !m.Time.IsZero() {
		p.TimeNanos = m.Time.UnixNano()
	}
	type fnKey struct{ name, file string }
	funcs := map[fnKey]*profile.Function{}
	locs := map[event.Frame]*profile.Location{}
	location := func(f event.Frame) *profile.Location {
		if f.Function == "" {
			f.Function = UnknownFunction
		}
		if l := locs[f]; l != nil {
			return l
		}
		fk := fnKey{f.Function, f.File}
		fn := funcs[fk]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Function, SystemName: f.Function, Filename: f.File}
			funcs[fk] = fn
			p.Function = append(p.Function, fn)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: p.Mapping[0], Line: []profile.Line{{Function: fn, Line: int64(max(f.Line, 0))}}}
		locs[f] = l
		p.Location = append(p.Location, l)
		return l
	}
	for _, g := range groups {
		s := &profile.Sample{Value: []int64{g.count, g.space}, Label: g.key.labels()}
		stack := g.stack
		if glue := g.key.glue; glue > 0 && glue < len(stack) {
			// The call site is the innermost location, so that -top
			// counts its bytes; the binding's frames above it go in a
			// label, one value per frame, innermost first.
			vals := make([]string, glue)
			for i, f := range stack[:glue] {
				vals[i] = f.String()
			}
			s.Label[LabelGlue] = vals
			stack = stack[glue:]
		}
		if len(stack) == 0 {
			stack = []event.Frame{{Function: UnknownFunction}}
		}
		for _, f := range stack {
			s.Location = append(s.Location, location(f))
		}
		p.Sample = append(p.Sample, s)
	}
	return p, nil
}

// groupKey is what buffers must share to be one sample: the labels as
// written, the size of one buffer and the stack (as stackKey).
type groupKey struct {
	stack                         string
	glue                          int
	bytes                         uint64
	device                        int
	deviceName                    string
	kind, tags, span, source, api string
}

func (k *groupKey) labels() map[string][]string {
	dev := DeviceLabel(k.device)
	if k.deviceName != "" {
		dev = k.deviceName
	}
	l := map[string][]string{LabelDevice: {dev}}
	for _, kv := range [...]struct{ key, v string }{
		{LabelKind, k.kind}, {LabelTags, k.tags}, {LabelSpan, k.span}, {LabelSource, k.source}, {LabelAPI, k.api},
	} {
		if kv.v != "" {
			l[kv.key] = []string{kv.v}
		}
	}
	return l
}

// sample is one group of equal buffers.
type sample struct {
	key          groupKey
	stack        []event.Frame
	count, space int64
}

// stackKey encodes a stack so that equal stacks, and only they, give
// equal strings.
func stackKey(st []event.Frame) string {
	var sb strings.Builder
	for _, f := range st {
		sb.WriteString(strconv.Quote(f.Function))
		sb.WriteString(strconv.Quote(f.File))
		sb.WriteString(strconv.Itoa(f.Line))
		sb.WriteByte(';')
	}
	return sb.String()
}

// group folds buffers into samples, largest space first, ties in the
// order of their keys, so that the output does not depend on the order of
// m.Buffers.
func group(bufs []event.Buffer) ([]*sample, error) {
	index := map[groupKey]*sample{}
	var out []*sample
	for i := range bufs {
		b := &bufs[i]
		k := groupKey{
			stack: stackKey(b.Stack), glue: glueOf(b), bytes: b.Bytes, device: max(b.Device, -1), deviceName: b.DeviceName,
			kind: b.Kind, tags: strings.Join(b.Tags, ","), span: b.Span, source: b.Source, api: b.API,
		}
		count := int64(max(b.Count, 1))
		s := index[k]
		if s == nil {
			s = &sample{key: k, stack: b.Stack}
			index[k] = s
			out = append(out, s)
		}
		if count > math.MaxInt64-s.count {
			return nil, fmt.Errorf("pprof: more than %d buffers allocated at %s", int64(math.MaxInt64), siteOf(b))
		}
		s.count += count
		if b.Bytes > math.MaxInt64 || s.count > 0 && b.Bytes > uint64(math.MaxInt64/s.count) {
			return nil, fmt.Errorf("pprof: %d buffers of %d bytes allocated at %s: more bytes than pprof's int64 values hold", s.count, b.Bytes, siteOf(b))
		}
		s.space = s.count * int64(b.Bytes)
	}
	slices.SortFunc(out, func(a, b *sample) int {
		if c := cmp.Compare(b.space, a.space); c != 0 {
			return c
		}
		ka, kb := &a.key, &b.key
		return cmp.Or(
			cmp.Compare(ka.stack, kb.stack), cmp.Compare(ka.glue, kb.glue), cmp.Compare(ka.bytes, kb.bytes), cmp.Compare(ka.device, kb.device), cmp.Compare(ka.deviceName, kb.deviceName),
			cmp.Compare(ka.kind, kb.kind), cmp.Compare(ka.tags, kb.tags), cmp.Compare(ka.span, kb.span),
			cmp.Compare(ka.source, kb.source), cmp.Compare(ka.api, kb.api))
	})
	return out, nil
}

// glueOf is the glue frames a buffer's sample puts in its label: none
// when Glue is out of the stack's range (the call site is then the
// innermost frame, as Buffer.CallStack says).
func glueOf(b *event.Buffer) int {
	if b.Glue <= 0 || b.Glue >= len(b.Stack) {
		return 0
	}
	return b.Glue
}

func siteOf(b *event.Buffer) string {
	if s := b.Site(); s != "" {
		return s
	}
	return UnknownFunction
}

// comments returns the profile's comments: the header, the warnings and
// the counts line.
func comments(m *event.DeviceMemory) []string {
	bytes, buffers := m.Live()
	header := fmt.Sprintf("%s%s, %s (%d bytes)", headerPrefix, plural(uint64(buffers), "live buffer"), iec(bytes), bytes)
	c := &m.Counts
	var missing []string
	if c.Untracked > 0 {
		missing = append(missing, fmt.Sprintf("%s (%s) untracked", plural(c.Untracked, "allocation"), iec(c.UntrackedBytes)))
	}
	if c.UnknownFrees > 0 {
		if c.UnknownFrees == 1 {
			missing = append(missing, "1 free of an unknown pointer")
		} else {
			missing = append(missing, plural(c.UnknownFrees, "free")+" of unknown pointers")
		}
	}
	if c.DoubleFrees > 0 {
		missing = append(missing, plural(c.DoubleFrees, "double free"))
	}
	if len(missing) > 0 {
		header += "; incomplete: " + strings.Join(missing, ", ")
	}
	out := []string{header}
	for _, w := range m.Warnings {
		line := metatext.WarningLine(w)
		if strings.HasPrefix(line, "#") {
			line = " " + line // pprof hides comments starting with "#"
		}
		out = append(out, line)
	}
	out = append(out, usageLines(m)...)
	return append(out, countsLine(c))
}

// usageLines says, per device NVML described, what it had in use beside
// what the profile tracked there: the gap is the memory no allocation
// explains (CUDA's context, libraries' workspaces, a caching allocator's
// slack). One line for people, one for Read.
func usageLines(m *event.DeviceMemory) []string {
	var out []string
	for _, u := range m.Devices {
		var tracked uint64
		for i := range m.Buffers {
			if b := &m.Buffers[i]; b.Device == u.Device && b.OnDevice() {
				tracked += b.Total()
			}
		}
		line := fmt.Sprintf("%s%s: NVML says %s in use of %s", usagePrefix, DeviceLabel(u.Device), iec(u.Used), iec(u.Total))
		if u.Process > 0 {
			line += fmt.Sprintf(" (this process %s)", iec(u.Process))
		}
		out = append(out, line+fmt.Sprintf("; tracked here %s", iec(tracked)),
			fmt.Sprintf("%s device=%d total=%d used=%d process=%d", devicePrefix, u.Device, u.Total, u.Used, u.Process))
	}
	return out
}

// countFields name MemoryCounts' fields in the counts line, in order.
var countFields = []struct {
	name string
	ptr  func(*event.MemoryCounts) *uint64
}{
	{"allocs", func(c *event.MemoryCounts) *uint64 { return &c.Allocs }},
	{"frees", func(c *event.MemoryCounts) *uint64 { return &c.Frees }},
	{"untracked", func(c *event.MemoryCounts) *uint64 { return &c.Untracked }},
	{"untracked_bytes", func(c *event.MemoryCounts) *uint64 { return &c.UntrackedBytes }},
	{"unknown_frees", func(c *event.MemoryCounts) *uint64 { return &c.UnknownFrees }},
	{"double_frees", func(c *event.MemoryCounts) *uint64 { return &c.DoubleFrees }},
	{"zero_size", func(c *event.MemoryCounts) *uint64 { return &c.ZeroSize }},
	{"replaced", func(c *event.MemoryCounts) *uint64 { return &c.Replaced }},
}

func countsLine(c *event.MemoryCounts) string {
	var sb strings.Builder
	sb.WriteString(countsPrefix)
	for _, f := range countFields {
		fmt.Fprintf(&sb, " %s=%d", f.name, *f.ptr(c))
	}
	return sb.String()
}

func plural(n uint64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.FormatUint(n, 10) + " " + thing + "s"
}

// iec formats a byte count as people read device memory sizes.
func iec(n uint64) string { return metatext.Bytes(n) }
