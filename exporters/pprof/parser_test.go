package pprof

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
)

// The streaming reader must read what google/pprof's parser reads, the
// same way: parserRead is the reader it replaced (the whole file parsed
// by profile.ParseUncompressed and CheckValid, then converted), and
// FuzzReadMatchesParser holds the two together.

// parserRead reads a profile as Read did before it streamed.
func parserRead(data []byte) (*event.DeviceMemory, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if _, err := out.ReadFrom(zr); err != nil {
			return nil, err
		}
		data = out.Bytes()
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("empty")
	}
	p, err := profile.ParseUncompressed(data)
	if err != nil {
		return nil, err
	}
	if err := p.CheckValid(); err != nil {
		return nil, err
	}
	return parserConvert(p)
}

func parserTypeIndex(p *profile.Profile, typ, unit string) int {
	return slices.IndexFunc(p.SampleType, func(v *profile.ValueType) bool { return v.Type == typ && v.Unit == unit })
}

func parserSampleTypes(p *profile.Profile) string {
	var s []string
	for _, v := range p.SampleType {
		s = append(s, v.Type+"/"+v.Unit)
	}
	return strings.Join(s, ", ")
}

// parserConvert is Read as it was before it streamed: the model made
// from google/pprof's parsed profile.
func parserConvert(p *profile.Profile) (*event.DeviceMemory, error) {
	ci, si := parserTypeIndex(p, TypeAllocations, UnitCount), parserTypeIndex(p, TypeSpace, UnitBytes)
	if ci < 0 || si < 0 {
		return nil, fmt.Errorf("pprof: %w: its sample types are %s; a memory profile (devprof's, or jax.profiler.save_device_memory_profile's) has %s/%s and %s/%s",
			ErrNotMemory, parserSampleTypes(p), TypeAllocations, UnitCount, TypeSpace, UnitBytes)
	}
	m := &event.DeviceMemory{}
	if p.TimeNanos != 0 {
		m.Time = time.Unix(0, p.TimeNanos)
	}
	frames := map[uint64][]event.Frame{} // by location id
	stacks := map[string][]event.Frame{} // by location ids
	var totalCount, totalSpace int64
	var totalFrames int
	var key []byte
	cut, anyGlue := false, false
	for i, s := range p.Sample {
		count, space := s.Value[ci], s.Value[si]
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
		b := event.Buffer{Bytes: uint64(space / count), Count: int(count), Device: -1}
		key = key[:0]
		for _, loc := range s.Location {
			key = binary.AppendUvarint(key, loc.ID)
		}
		stack, ok := stacks[string(key)]
		if !ok {
			for _, loc := range s.Location {
				if len(stack) >= MaxFrames {
					cut = true
					break
				}
				fs, ok := frames[loc.ID]
				if !ok {
					fs = parserLocationFrames(loc)
					frames[loc.ID] = fs
				}
				stack = append(stack, fs...)
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
			stacks[string(key)] = stack
		}
		if glue := s.Label[LabelGlue]; len(glue) > 0 && len(stack) > 0 {
			anyGlue = true
			key = append(key, 0)
			for _, v := range glue {
				key = append(key, v...)
				key = append(key, 0)
			}
			full, ok := stacks[string(key)]
			if !ok {
				full = make([]event.Frame, 0, len(glue)+len(stack))
				for _, v := range glue {
					full = append(full, parseFrame(v))
				}
				full = append(full, stack...)
				if totalFrames += len(full); totalFrames > maxTotalFrames {
					return nil, fmt.Errorf("pprof: more than %d stack frames in all: too big for a memory profile", maxTotalFrames)
				}
				stacks[string(key)] = full
			}
			stack = full
			b.Glue = len(glue)
		}
		b.Stack = stack
		labels(&b, s)
		m.Buffers = append(m.Buffers, b)
	}
	readComments(m, p.Comments)
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

// parserLocationFrames returns a location's frames, innermost first: one per
// line (inlined calls first, as pprof orders them), or, for a location
// without lines, its address.
func parserLocationFrames(loc *profile.Location) []event.Frame {
	if len(loc.Line) == 0 {
		f := event.Frame{Function: fmt.Sprintf("%#x", loc.Address)}
		if loc.Mapping != nil {
			f.File = loc.Mapping.File
		}
		return []event.Frame{f}
	}
	out := make([]event.Frame, 0, len(loc.Line))
	for _, ln := range loc.Line {
		f := event.Frame{Line: int(min(max(ln.Line, 0), math.MaxInt32))}
		if fn := ln.Function; fn != nil {
			f.Function, f.File = firstOf(fn.Name, fn.SystemName), fn.Filename
		}
		if f.Function == "" {
			f.Function = UnknownFunction
		}
		out = append(out, f)
	}
	return out
}

// FuzzReadMatchesParser: whatever the bytes, Read fails where the parser
// fails and otherwise gives the model it gives, buffer for buffer.
func FuzzReadMatchesParser(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := parserRead(data)
		got, err := Read(bytes.NewReader(data))
		if (err != nil) != (werr != nil) {
			t.Fatalf("Read: %v; the parser: %v", err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Read gives %+v\nthe parser %+v", got, want)
		}
	})
}

// TestReadMatchesParserOnOddLayouts: tables before samples, samples
// split across fields, repeated and unpacked fields, duplicate and
// missing ids, strings out of range: Read agrees with the parser on
// each.
func TestReadMatchesParserOnOddLayouts(t *testing.T) {
	ours := write(t, jaxProfile(), false)
	// Split the profile into its top-level fields to reorder them.
	var fields [][]byte
	for b := ours; len(b) > 0; {
		start := b
		_, rest, err := nextField(b)
		if err != nil {
			t.Fatal(err)
		}
		fields = append(fields, start[:len(start)-len(rest)])
		b = rest
	}
	join := func(fs [][]byte) []byte { return bytes.Join(fs, nil) }
	reversed := slices.Clone(fields)
	slices.Reverse(reversed)
	tag := func(num, typ int) []byte { return binary.AppendUvarint(nil, uint64(num<<3|typ)) }
	msg := func(num int, body []byte) []byte {
		return append(binary.AppendUvarint(tag(num, 2), uint64(len(body))), body...)
	}
	varintField := func(num int, v uint64) []byte { return binary.AppendUvarint(tag(num, 0), v) }
	cases := map[string][]byte{
		"as written":       ours,
		"reversed":         join(reversed),
		"twice":            join(append(slices.Clone(fields), fields...)),
		"time twice":       append(slices.Clone(ours), append(varintField(9, 5), varintField(9, 6)...)...),
		"unknown fields":   append(append(msg(99, []byte("skipped")), varintField(40, 3)...), ours...),
		"location id 0":    append(slices.Clone(ours), msg(4, varintField(2, 1))...),
		"function id 0":    append(slices.Clone(ours), msg(5, varintField(2, 1))...),
		"string past end":  append(slices.Clone(ours), varintField(7, 1000)...),
		"comment past end": append(slices.Clone(ours), varintField(13, 1000)...),
		"sample of ids":    append(slices.Clone(ours), msg(2, append(append(varintField(1, 1), varintField(1, 2)...), append(varintField(2, 1), varintField(2, 8)...)...))...),
		"sample, no loc":   append(slices.Clone(ours), msg(2, append(varintField(1, 77), append(varintField(2, 1), varintField(2, 8)...)...))...),
		"wrong type":       append(slices.Clone(ours), varintField(2, 1)...),
		"bad string[0]":    append(msg(6, []byte("x")), ours...),
		"mapping":          append(slices.Clone(ours), msg(3, append(varintField(1, 1), varintField(5, 1)...))...),
		"mapping twice":    append(slices.Clone(ours), append(msg(3, varintField(1, 1)), msg(3, varintField(1, 1))...)...),
	}
	for name, data := range cases {
		for _, gz := range []bool{false, true} {
			if gz {
				data = gzipped(data)
			}
			want, werr := parserRead(data)
			got, err := Read(bytes.NewReader(data))
			if (err != nil) != (werr != nil) {
				t.Errorf("%s (gzip %v): Read: %v; the parser: %v", name, gz, err, werr)
				continue
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s (gzip %v): Read gives %+v\nthe parser %+v", name, gz, got, want)
			}
		}
	}
}
