package pprof

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
)

// Write encodes a profile itself, field by field, and must give the
// profile bytes google/pprof's encoder gave before: profileBuild is the profile
// it built then, and TestWriteMatchesProfileEncoder holds the two
// together on varied models.

// profileBuild is the profile Write encoded before it streamed, through
// google/pprof's Profile: the oracle of TestWriteMatchesProfileEncoder.
func profileBuild(m *event.DeviceMemory) (*profile.Profile, error) {
	groups, err := profileGroup(m.Buffers)
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

// profileGroupKey is what buffers must share to be one sample: the labels as
// written, the size of one buffer and the stack (as stackKey).
type profileGroupKey struct {
	stack                         string
	glue                          int
	bytes                         uint64
	device                        int
	deviceName                    string
	kind, tags, span, source, api string
}

func (k *profileGroupKey) labels() map[string][]string {
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
type profileSample struct {
	key          profileGroupKey
	stack        []event.Frame
	count, space int64
}

// profileGroup folds buffers into samples, largest space first, ties in the
// order of their keys, so that the output does not depend on the order of
// m.Buffers.
func profileGroup(bufs []event.Buffer) ([]*profileSample, error) {
	index := map[profileGroupKey]*profileSample{}
	var out []*profileSample
	for i := range bufs {
		b := &bufs[i]
		k := profileGroupKey{
			stack: stackKey(b.Stack), glue: glueOf(b), bytes: b.Bytes, device: max(b.Device, -1), deviceName: b.DeviceName,
			kind: b.Kind, tags: strings.Join(b.Tags, ","), span: b.Span, source: b.Source, api: b.API,
		}
		count := int64(max(b.Count, 1))
		s := index[k]
		if s == nil {
			s = &profileSample{key: k, stack: b.Stack}
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
	slices.SortFunc(out, func(a, b *profileSample) int {
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

// randomMemory is a model with what Write must tell apart or merge:
// stacks shared and equal but not shared, no stack, frames without a
// function, glue, tags, named devices, equal spaces (ties), counts.
func randomMemory(r *rand.Rand, n int) *event.DeviceMemory {
	frame := func() event.Frame {
		return event.Frame{Function: []string{"", "main.f", "main.g", "a/b.(*T).M", "a/b.h.func1", `q"uote`}[r.IntN(6)],
			File: []string{"", "/src/a.go", "/src/b.go"}[r.IntN(3)], Line: r.IntN(4) - 1}
	}
	var stacks [][]event.Frame
	for range 12 {
		st := make([]event.Frame, r.IntN(5))
		for i := range st {
			st[i] = frame()
		}
		stacks = append(stacks, st)
	}
	tagSets := [][]string{nil, {"weights"}, {"a", "b"}, {"a,b"}}
	m := &event.DeviceMemory{Time: time.Unix(0, r.Int64N(1<<62)), Counts: event.MemoryCounts{Allocs: uint64(n)}}
	if r.IntN(3) == 0 {
		m.Time = time.Time{}
	}
	for i := range n {
		st := stacks[r.IntN(len(stacks))]
		if r.IntN(4) == 0 {
			st = slices.Clone(st) // equal, not shared
		}
		m.Buffers = append(m.Buffers, event.Buffer{
			Address: uint64(i), Bytes: uint64(1 << r.IntN(4)), Count: r.IntN(3), Device: r.IntN(4) - 2,
			DeviceName: []string{"", "", "cpu:0"}[r.IntN(3)], Kind: []string{"", "device", "pinned"}[r.IntN(3)],
			Source: []string{"", "cuda", "api"}[r.IntN(3)], API: []string{"", "cudaMalloc"}[r.IntN(2)],
			Tags: tagSets[r.IntN(len(tagSets))], Span: []string{"", "train/step"}[r.IntN(2)], Stack: st, Glue: r.IntN(3),
		})
	}
	return m
}

// TestWriteMatchesProfileEncoder: Write gives the bytes google/pprof's
// encoder gives for the profile Write used to build, once inflated (the
// gzip stream is klauspost/compress's, faster than compress/gzip's at
// the same level).
func TestWriteMatchesProfileEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 39))
	for i := range 300 {
		m := randomMemory(r, r.IntN(60))
		if i == 0 {
			m = fixture()
		}
		p, err := profileBuild(m)
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := p.WriteUncompressed(&want); err != nil {
			t.Fatal(err)
		}
		if err := Write(&got, m); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(&got)
		if err != nil {
			t.Fatal(err)
		}
		inflated, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(inflated, want.Bytes()) {
			back, _ := profile.ParseUncompressed(inflated)
			t.Fatalf("model %d: Write gives other bytes than google/pprof's encoder:\n%v\nwant\n%v", i, back, p)
		}
	}
}
