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
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"

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
//
// The profile is encoded as it is written, field by field, as
// google/pprof's encoder lays it out (the same bytes): samples first,
// then the tables they name. Buffers are grouped by numbers, not by
// their strings: equal stacks (buffers of one call site share one slice,
// as the tracker makes them) are told apart once each, not once a buffer.
func Write(w io.Writer, m *event.DeviceMemory) error {
	groups, err := group(m.Buffers)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	e := &encoder{w: bufio.NewWriterSize(zw, 256<<10), strs: map[string]int64{}, locs: map[event.Frame]uint64{}, funcs: map[fnKey]uint64{}}
	for _, s := range []string{"", TypeAllocations, UnitCount, TypeSpace, UnitBytes} {
		e.str(s)
	}
	e.encode(m, groups)
	if err := e.w.Flush(); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}

// fnKey is a function as the profile names it.
type fnKey struct{ name, file string }

// encoder writes a profile's fields and numbers its strings, locations
// and functions as google/pprof's encoder would: in the order samples
// name them.
type encoder struct {
	w       *bufio.Writer
	strs    map[string]int64
	strList []string
	locs    map[event.Frame]uint64
	locList []locEntry
	funcs   map[fnKey]uint64
	fnList  []fnKey
	msg     []byte // the message being built
	scratch []byte
}

type locEntry struct {
	function uint64
	line     int64
}

func (e *encoder) str(s string) int64 {
	if n, ok := e.strs[s]; ok {
		return n
	}
	n := int64(len(e.strList))
	e.strs[s] = n
	e.strList = append(e.strList, s)
	return n
}

// location returns the id of frame f's location, numbering it the first
// time.
func (e *encoder) location(f event.Frame) uint64 {
	if f.Function == "" {
		f.Function = UnknownFunction
	}
	if id, ok := e.locs[f]; ok {
		return id
	}
	fk := fnKey{f.Function, f.File}
	fn, ok := e.funcs[fk]
	if !ok {
		e.fnList = append(e.fnList, fk)
		fn = uint64(len(e.fnList))
		e.funcs[fk] = fn
	}
	e.locList = append(e.locList, locEntry{fn, int64(max(f.Line, 0))})
	id := uint64(len(e.locList))
	e.locs[f] = id
	return id
}

func appendTag(b []byte, field, typ int) []byte {
	return protowire.AppendTag(b, protowire.Number(field), protowire.Type(typ))
}

// appendVarintOpt appends a varint field unless x is 0, as the encoder
// leaves out zero optional fields.
func appendVarintOpt(b []byte, field int, x uint64) []byte {
	if x == 0 {
		return b
	}
	return protowire.AppendVarint(appendTag(b, field, 0), x)
}

func appendBytes(b []byte, field int, v []byte) []byte {
	b = protowire.AppendVarint(appendTag(b, field, 2), uint64(len(v)))
	return append(b, v...)
}

// appendLabel appends a string label.
func (e *encoder) appendLabel(b []byte, key, v string) []byte {
	k, s := e.str(key), e.str(v)
	var body [24]byte
	l := appendVarintOpt(appendVarintOpt(body[:0], 1, uint64(k)), 2, uint64(s))
	return appendBytes(b, 3, l)
}

// sampleParts is what samples of one stack and glue, or of one set of
// labels, share, encoded once.
type sampleParts struct {
	done bool
	enc  []byte // labels; a stack's locations
	glue []byte // a stack's glue labels
}

// encode writes the profile's fields in google/pprof's order.
func (e *encoder) encode(m *event.DeviceMemory, g *grouping) {
	w := e.w
	vt := func(t, u string) []byte {
		return appendVarintOpt(appendVarintOpt(nil, 1, uint64(e.str(t))), 2, uint64(e.str(u)))
	}
	w.Write(appendBytes(nil, 1, vt(TypeAllocations, UnitCount)))
	w.Write(appendBytes(nil, 1, vt(TypeSpace, UnitBytes)))
	// Labels sort by key: api and device, then glue, then kind, source,
	// span and tags; strings are numbered in that order.
	stackParts := map[[2]int32]*sampleParts{}
	before := make([]sampleParts, len(g.attrs))
	after := make([]sampleParts, len(g.attrs))
	for _, s := range g.samples {
		a := &g.attrs[s.attr]
		b := &g.buffers[s.first]
		stack := b.Stack
		sk := [2]int32{s.stack, s.glue}
		sp := stackParts[sk]
		if sp == nil {
			sp = &sampleParts{}
			stackParts[sk] = sp
		}
		pre := &before[s.attr]
		if !pre.done {
			pre.done = true
			if a.api != "" {
				pre.enc = e.appendLabel(pre.enc, LabelAPI, a.api)
			}
			pre.enc = e.appendLabel(pre.enc, LabelDevice, a.deviceLabel())
		}
		if !sp.done {
			sp.done = true
			// The glue label's values, then the locations: numbered now,
			// as this is the first sample to name them.
			var glue []byte
			if n := int(s.glue); n > 0 {
				for _, f := range stack[:n] {
					glue = e.appendLabel(glue, LabelGlue, f.String())
				}
				stack = stack[n:]
			}
			if len(stack) == 0 {
				stack = []event.Frame{{Function: UnknownFunction}}
			}
			ids := e.scratch[:0]
			for _, f := range stack {
				ids = protowire.AppendVarint(ids, e.location(f))
			}
			e.scratch = ids
			var locs []byte
			if len(stack) > 2 {
				locs = appendBytes(nil, 1, ids)
			} else {
				for b := ids; len(b) > 0; {
					v, n := protowire.ConsumeVarint(b)
					locs = protowire.AppendVarint(appendTag(locs, 1, 0), v)
					b = b[n:]
				}
			}
			sp.enc, sp.glue = locs, glue
		}
		post := &after[s.attr]
		if !post.done {
			post.done = true
			for _, kv := range [...]struct{ key, v string }{{LabelKind, a.kind}, {LabelSource, a.source}, {LabelSpan, a.span}, {LabelTags, a.tags}} {
				if kv.v != "" {
					post.enc = e.appendLabel(post.enc, kv.key, kv.v)
				}
			}
		}
		// The sample: locations, the two values, the labels.
		msg := append(e.msg[:0], sp.enc...)
		msg = protowire.AppendVarint(appendTag(msg, 2, 0), uint64(s.count))
		msg = protowire.AppendVarint(appendTag(msg, 2, 0), uint64(s.space))
		msg = append(msg, pre.enc...)
		msg = append(msg, sp.glue...)
		msg = append(msg, post.enc...)
		e.msg = msg
		hdr := protowire.AppendVarint(appendTag(e.scratch[:0], 2, 2), uint64(len(msg)))
		w.Write(hdr)
		w.Write(msg)
	}
	// One mapping that says the locations are already symbolized:
	// without it, `go tool pprof FILE` looks for the program's binary to
	// symbolize them and prints "Main binary filename not available."
	// above every report.
	mapping := appendVarintOpt(nil, 1, 1)
	for _, f := range []int{7, 8, 9} { // has_functions, has_filenames, has_line_numbers
		mapping = appendVarintOpt(mapping, f, 1)
	}
	w.Write(appendBytes(nil, 3, mapping))
	for i, l := range e.locList {
		ln := appendVarintOpt(appendVarintOpt(nil, 1, l.function), 2, uint64(l.line))
		loc := appendBytes(appendVarintOpt(appendVarintOpt(e.msg[:0], 1, uint64(i+1)), 2, 1), 4, ln)
		e.msg = loc
		w.Write(appendBytes(e.scratch[:0], 4, loc))
	}
	for i, f := range e.fnList {
		// Its name, system name (the same) and file, numbered in order.
		name, file := uint64(e.str(f.name)), uint64(e.str(f.file))
		fn := appendVarintOpt(appendVarintOpt(appendVarintOpt(appendVarintOpt(e.msg[:0], 1, uint64(i+1)), 2, name), 3, name), 4, file)
		e.msg = fn
		w.Write(appendBytes(e.scratch[:0], 5, fn))
	}
	var commentIDs []int64
	for _, c := range comments(m) {
		commentIDs = append(commentIDs, e.str(c))
	}
	for _, s := range e.strList {
		w.Write(protowire.AppendVarint(appendTag(e.scratch[:0], 6, 2), uint64(len(s))))
		w.WriteString(s)
	}
	var tail []byte
	if !m.Time.IsZero() {
		tail = appendVarintOpt(tail, 9, uint64(m.Time.UnixNano()))
	}
	if len(commentIDs) > 2 {
		var packed []byte
		for _, c := range commentIDs {
			packed = protowire.AppendVarint(packed, uint64(c))
		}
		tail = appendBytes(tail, 13, packed)
	} else {
		for _, c := range commentIDs {
			tail = protowire.AppendVarint(appendTag(tail, 13, 0), uint64(c))
		}
	}
	tail = protowire.AppendVarint(appendTag(tail, 14, 0), uint64(e.str(TypeSpace)))
	w.Write(tail)
}

// grouping is the samples of a profile: buffers that share their stack,
// glue, size and labels, largest space first.
type grouping struct {
	buffers []event.Buffer
	attrs   []attrs
	samples []groupSample
}

// attrs are the labels a group of buffers shares but its glue: device,
// kind, tags (joined), span, source and API, in the order groups of
// equal space are sorted by.
type attrs struct {
	device                                    int
	deviceName, kind, tags, span, source, api string
}

// deviceLabel is the device label of the group.
func (a *attrs) deviceLabel() string {
	if a.deviceName != "" {
		return a.deviceName
	}
	return DeviceLabel(a.device)
}

// groupSample is one group: its stack (by number), glue frames, size,
// labels (attrs by number), a buffer of it, and the buffers' count and
// bytes.
type groupSample struct {
	stack, glue, attr int32
	first             int32
	bytes             uint64
	count, space      int64
}

// stackKey encodes a stack so that equal stacks, and only they, give
// equal strings; groups of equal space are sorted by it.
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
// order of their stacks (stackKey), glue, size and attrs, so that the
// output does not depend on the order of bufs. A stack is looked at once
// per slice that holds it: buffers of one call site share theirs.
func group(bufs []event.Buffer) (*grouping, error) {
	g := &grouping{buffers: bufs}
	type frames struct {
		first *event.Frame
		n     int
	}
	type tagList struct {
		first *string
		n     int
	}
	stackIDs := map[frames]int32{}
	byKey := map[string]int32{}
	var keys []string // of each distinct stack
	joined := map[tagList]string{}
	attrIDs := map[attrs]int32{}
	var index groupIndex
	index.init(len(bufs))
	// At most a group a buffer: room for them all at once, rather than
	// copies of a growing slice.
	g.samples = make([]groupSample, 0, len(bufs))
	for i := range bufs {
		b := &bufs[i]
		stack := int32(-1) // none: stackKey(nil) is "", first
		if len(b.Stack) > 0 {
			id := frames{&b.Stack[0], len(b.Stack)}
			var ok bool
			if stack, ok = stackIDs[id]; !ok {
				k := stackKey(b.Stack)
				if stack, ok = byKey[k]; !ok {
					stack = int32(len(keys))
					keys = append(keys, k)
					byKey[k] = stack
				}
				stackIDs[id] = stack
			}
		}
		var tags string
		if len(b.Tags) > 0 {
			id := tagList{&b.Tags[0], len(b.Tags)}
			var ok bool
			if tags, ok = joined[id]; !ok {
				tags = strings.Join(b.Tags, ",")
				joined[id] = tags
			}
		}
		a := attrs{device: max(b.Device, -1), deviceName: b.DeviceName, kind: b.Kind, tags: tags, span: b.Span, source: b.Source, api: b.API}
		attr, ok := attrIDs[a]
		if !ok {
			attr = int32(len(g.attrs))
			g.attrs = append(g.attrs, a)
			attrIDs[a] = attr
		}
		k := groupSample{stack: stack, glue: int32(glueOf(b)), attr: attr, first: int32(i), bytes: b.Bytes}
		s := &g.samples[index.find(&g.samples, k)]
		count := int64(max(b.Count, 1))
		if count > math.MaxInt64-s.count {
			return nil, fmt.Errorf("pprof: more than %d buffers allocated at %s", int64(math.MaxInt64), siteOf(b))
		}
		s.count += count
		if b.Bytes > math.MaxInt64 || s.count > 0 && b.Bytes > uint64(math.MaxInt64/s.count) {
			return nil, fmt.Errorf("pprof: %d buffers of %d bytes allocated at %s: more bytes than pprof's int64 values hold", s.count, b.Bytes, siteOf(b))
		}
		s.space = s.count * int64(b.Bytes)
	}
	index = groupIndex{}
	// Ranks: stacks in the order of their keys (no stack first), attrs
	// in the order of their fields.
	stackRank := make([]int32, len(keys)+1)
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(keys[x], keys[y]) })
	for r, i := range order {
		stackRank[i+1] = int32(r + 1)
	}
	attrRank := make([]int32, len(g.attrs))
	order = order[:0]
	for i := range g.attrs {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, b := &g.attrs[x], &g.attrs[y]
		return cmp.Or(cmp.Compare(a.device, b.device), cmp.Compare(a.deviceName, b.deviceName), cmp.Compare(a.kind, b.kind),
			cmp.Compare(a.tags, b.tags), cmp.Compare(a.span, b.span), cmp.Compare(a.source, b.source), cmp.Compare(a.api, b.api))
	})
	for r, i := range order {
		attrRank[i] = int32(r)
	}
	slices.SortFunc(g.samples, func(a, b groupSample) int {
		switch {
		case a.space != b.space:
			return cmp.Compare(b.space, a.space)
		case a.stack != b.stack:
			return cmp.Compare(stackRank[a.stack+1], stackRank[b.stack+1])
		case a.glue != b.glue:
			return cmp.Compare(a.glue, b.glue)
		case a.bytes != b.bytes:
			return cmp.Compare(a.bytes, b.bytes)
		}
		return cmp.Compare(attrRank[a.attr], attrRank[b.attr])
	})
	return g, nil
}

// groupIndex finds a buffer's group among the samples by its numbers
// (stack, glue, attrs, size): an open-addressing table of sample
// indices, which costs 8 bytes a buffer where a map of the keys would
// cost several times that.
type groupIndex struct {
	slots []int32 // sample index + 1; 0: empty
}

func (x *groupIndex) init(buffers int) {
	size := 16
	for size < 2*buffers {
		size *= 2
	}
	x.slots = make([]int32, size)
}

func (k *groupSample) hash() uint64 {
	h := uint64(uint32(k.stack))<<32 | uint64(uint32(k.glue))
	h ^= k.bytes * 0x9e3779b97f4a7c15
	h ^= uint64(uint32(k.attr)) * 0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// find returns the index of k's group in samples, appending it the first
// time.
func (x *groupIndex) find(samples *[]groupSample, k groupSample) int {
	mask := uint64(len(x.slots) - 1)
	for i := k.hash() & mask; ; i = (i + 1) & mask {
		n := x.slots[i]
		if n == 0 {
			*samples = append(*samples, k)
			x.slots[i] = int32(len(*samples))
			return len(*samples) - 1
		}
		s := &(*samples)[n-1]
		if s.stack == k.stack && s.glue == k.glue && s.attr == k.attr && s.bytes == k.bytes {
			return int(n - 1)
		}
	}
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
