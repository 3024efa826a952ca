package pprof

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
)

// jaxProfile builds a profile as jaxlib's PyClient::HeapProfile does: no
// default sample type, time or comments; Python frames without mappings;
// buffers labelled kind=buffer and the device's debug string, executables
// kind=executable with no device.
func jaxProfile() *profile.Profile {
	fnMain := &profile.Function{ID: 1, Name: "<module>", SystemName: "<module>", Filename: "train.py", StartLine: 1}
	fnInit := &profile.Function{ID: 2, Name: "init_params", SystemName: "init_params", Filename: "model.py", StartLine: 10}
	fnJit := &profile.Function{ID: 3, Name: "step", SystemName: "step", Filename: "train.py", StartLine: 20}
	locMain := &profile.Location{ID: 1, Line: []profile.Line{{Function: fnMain, Line: 5}}}
	locInit := &profile.Location{ID: 2, Line: []profile.Line{{Function: fnInit, Line: 14}}}
	locJit := &profile.Location{ID: 3, Line: []profile.Line{{Function: fnJit, Line: 21}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locInit, locMain}, Value: []int64{3, 3 * 4096}, Label: map[string][]string{"kind": {"buffer"}, "device": {"cuda:0"}}},
			{Location: []*profile.Location{locInit, locMain}, Value: []int64{1, 4096}, Label: map[string][]string{"kind": {"buffer"}, "device": {"cuda:1"}}},
			{Location: []*profile.Location{locInit, locMain}, Value: []int64{2, 2 * 100}, Label: map[string][]string{"kind": {"buffer"}, "device": {"TFRT_CPU_0"}}},
			{Location: []*profile.Location{locJit, locMain}, Value: []int64{1, 70000}, Label: map[string][]string{"kind": {"executable"}}},
		},
		Location: []*profile.Location{locMain, locInit, locJit},
		Function: []*profile.Function{fnMain, fnInit, fnJit},
	}
}

func write(t testing.TB, p *profile.Profile, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if gz {
		err = p.Write(&buf)
	} else {
		err = p.WriteUncompressed(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadJAX reads the layout JAX writes, compressed (as
// save_device_memory_profile writes it) and not.
func TestReadJAX(t *testing.T) {
	p := jaxProfile()
	for _, gz := range []bool{true, false} {
		m := decode(t, write(t, p, gz))
		if len(m.Buffers) != len(p.Sample) || !m.Time.IsZero() || len(m.Warnings) != 0 || m.Counts != (event.MemoryCounts{}) {
			t.Fatalf("gzip %v: read %+v", gz, m)
		}
		// Read sorts largest first; find each sample's buffer by its total.
		for _, s := range p.Sample {
			i := slices.IndexFunc(m.Buffers, func(b event.Buffer) bool { return b.Total() == uint64(s.Value[1]) })
			if i < 0 {
				t.Fatalf("no buffer of %d bytes in %+v", s.Value[1], m.Buffers)
			}
			b := m.Buffers[i]
			if b.Count != int(s.Value[0]) || b.Bytes != uint64(s.Value[1]/s.Value[0]) || b.Kind != s.Label["kind"][0] || len(b.Stack) != len(s.Location) {
				t.Errorf("sample %v %v read as %+v", s.Value, s.Label, b)
			}
			for j, l := range s.Location {
				fn := l.Line[0].Function
				if b.Stack[j] != (event.Frame{Function: fn.Name, File: fn.Filename, Line: int(l.Line[0].Line)}) {
					t.Errorf("frame %d: %+v, want %s %s:%d", j, b.Stack[j], fn.Name, fn.Filename, l.Line[0].Line)
				}
			}
			dev := s.Label["device"]
			switch {
			case dev == nil:
				if b.Device != -1 || len(b.Tags) != 0 {
					t.Errorf("executable read as device %d, tags %q", b.Device, b.Tags)
				}
			case strings.HasPrefix(dev[0], "cuda:"):
				if want := int(dev[0][len("cuda:")] - '0'); b.Device != want || len(b.Tags) != 0 {
					t.Errorf("%s read as device %d, tags %q", dev[0], b.Device, b.Tags)
				}
			default:
				// Another backend's device: its memory, named as JAX
				// names it.
				if b.Device != -1 || b.DeviceName != dev[0] || len(b.Tags) != 0 || !b.OnDevice() {
					t.Errorf("%s read as device %d %q, tags %q, on device %v", dev[0], b.Device, b.DeviceName, b.Tags, b.OnDevice())
				}
			}
		}
	}
}

// TestReadForeignLabels: labels devprof does not write, numeric ones too,
// and comments of other writers are kept, not dropped.
func TestReadForeignLabels(t *testing.T) {
	p := jaxProfile()
	p.Sample = p.Sample[:1]
	p.Sample[0].Label["owner"] = []string{"optimizer"}
	p.Sample[0].Label["tags"] = []string{",a,,b,"}
	p.Sample[0].NumLabel = map[string][]int64{"shard": {3}, "align": {256}}
	p.Sample[0].NumUnit = map[string][]string{"align": {"bytes"}}
	p.Comments = []string{"made by hand"}
	m := decode(t, write(t, p, true))
	if want := []string{"a", "b", "owner=optimizer", "align=256 bytes", "shard=3"}; !slices.Equal(m.Buffers[0].Tags, want) {
		t.Errorf("tags %q, want %q", m.Buffers[0].Tags, want)
	}
	if want := []event.Warning{{Source: "pprof", Code: CodeComment, Text: "made by hand"}}; !slices.Equal(m.Warnings, want) {
		t.Errorf("warnings %+v, want %+v", m.Warnings, want)
	}
}

// TestReadLocations: inlined lines are frames of their own (callee
// first), a location without lines is its address, and stacks deeper than
// MaxFrames keep their innermost frames with a warning.
func TestReadLocations(t *testing.T) {
	p := jaxProfile()
	inl := &profile.Function{ID: 9, Name: "inlined", Filename: "i.go"}
	caller := p.Function[1]
	m := &profile.Mapping{ID: 1, File: "/lib/libfoo.so", Start: 0x1000, Limit: 0x9000}
	locInl := &profile.Location{ID: 7, Line: []profile.Line{{Function: inl, Line: 3}, {Function: caller, Line: 15}}}
	locAddr := &profile.Location{ID: 8, Mapping: m, Address: 0x1234}
	p.Function, p.Mapping = append(p.Function, inl), []*profile.Mapping{m}
	p.Location = append(p.Location, locInl, locAddr)
	p.Sample = []*profile.Sample{{Location: []*profile.Location{locAddr, locInl, p.Location[0]}, Value: []int64{1, 8}}}
	deep := make([]*profile.Location, MaxFrames+10)
	for i := range deep {
		deep[i] = p.Location[i%3]
	}
	p.Sample = append(p.Sample, &profile.Sample{Location: deep, Value: []int64{1, 16}})
	got := decode(t, write(t, p, false))
	want := []event.Frame{{Function: "0x1234", File: "/lib/libfoo.so"}, {Function: "inlined", File: "i.go", Line: 3}, {Function: caller.Name, File: caller.Filename, Line: 15}, {Function: "<module>", File: "train.py", Line: 5}}
	if !slices.Equal(got.Buffers[1].Stack, want) {
		t.Errorf("stack %+v\nwant %+v", got.Buffers[1].Stack, want)
	}
	if n := len(got.Buffers[0].Stack); n != MaxFrames || got.Buffers[0].Stack[0].Function != "<module>" {
		t.Errorf("deep stack read as %d frames from %+v", n, got.Buffers[0].Stack[0])
	}
	if len(got.Warnings) != 1 || got.Warnings[0].Code != CodeStackCut {
		t.Errorf("warnings %+v", got.Warnings)
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestReadErrors: hostile or wrong input is an error that says what is
// wrong, never a panic.
func TestReadErrors(t *testing.T) {
	defer func(n int) { maxFieldSize = n }(maxFieldSize)
	maxFieldSize = 1 << 20
	good := encode(t, fixture())
	bigComment := jaxProfile()
	bigComment.Comments = []string{strings.Repeat("x", 1<<20+1)}
	sample := func(values ...int64) []byte {
		p := jaxProfile()
		p.Sample = p.Sample[:1]
		p.Sample[0].Value = values
		return write(t, p, true)
	}
	cpu := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	goHeap := &profile.Profile{SampleType: []*profile.ValueType{
		{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}}}
	overflow := jaxProfile()
	overflow.Sample = overflow.Sample[:2]
	overflow.Sample[0].Value = []int64{1, math.MaxInt64}
	overflow.Sample[1].Value = []int64{1, 1}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":             {nil, "empty: not a profile"},
		"empty gzip":        {gzipped(nil), "empty: not a profile"},
		"text":              {[]byte("hello, this is not a profile\n"), "not a pprof profile"},
		"bad gzip header":   {append([]byte{0x1f, 0x8b, 9}, good[3:]...), "not a valid gzip stream"},
		"truncated gzip":    {good[:len(good)/2], "gzip stream: unexpected EOF"},
		"truncated profile": {gzipped(write(t, jaxProfile(), false)[:40]), "not a pprof profile"},
		"cpu profile":       {write(t, cpu, true), "not a device-memory profile: its sample types are samples/count, cpu/nanoseconds"},
		"go heap profile":   {write(t, goHeap, true), "not a device-memory profile"},
		"no sample types":   {write(t, &profile.Profile{Comments: []string{"x"}}, true), "sample types are none"},
		"negative count":    {sample(-1, -4096), "negative values"},
		"negative bytes":    {sample(2, -4096), "negative values"},
		"bytes no count":    {sample(0, 4096), "4096 bytes in 0 allocations"},
		"indivisible":       {sample(3, 100), "100 bytes do not divide into its 3 allocations"},
		"totals overflow":   {write(t, overflow, true), "totals overflow"},
		"zeros":             {gzipped(make([]byte, 1<<20+2)), "not a pprof profile: malformed profile format"},
		"field too big":     {write(t, bigComment, true), "a field of 1048577 bytes: larger than a memory profile's fields (1048576 bytes at most)"},
	} {
		m, err := Read(bytes.NewReader(c.data))
		if err == nil || m != nil || !strings.HasPrefix(err.Error(), "pprof: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (model %v); want an error saying %q", name, err, m != nil, c.want)
		}
	}
	_, err := Read(bytes.NewReader(write(t, cpu, false)))
	if !errors.Is(err, ErrNotMemory) {
		t.Errorf("cpu profile: %v is not ErrNotMemory", err)
	}
	// A sample of nothing is skipped, not an error.
	if m := decode(t, sample(0, 0)); len(m.Buffers) != 0 {
		t.Errorf("empty sample read as %+v", m.Buffers)
	}
}

// TestReadTotalFrames: distinct stacks are bounded in all; equal stacks
// share their frames, so a large profile of few stacks reads.
func TestReadTotalFrames(t *testing.T) {
	defer func(n int) { maxTotalFrames = n }(maxTotalFrames)
	maxTotalFrames = 1 << 14
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 1}}}
	p := &profile.Profile{SampleType: jaxProfile().SampleType, Location: []*profile.Location{loc}, Function: []*profile.Function{fn}}
	deep := slices.Repeat([]*profile.Location{loc}, MaxFrames)
	for range maxTotalFrames/MaxFrames + 1 {
		p.Sample = append(p.Sample, &profile.Sample{Location: deep, Value: []int64{1, 1}})
	}
	m := decode(t, write(t, p, true))
	if len(m.Buffers) != len(p.Sample) || &m.Buffers[0].Stack[0] != &m.Buffers[1].Stack[0] {
		t.Errorf("read %d buffers; equal stacks not shared", len(m.Buffers))
	}
	// Distinct stacks: vary the outermost frame.
	for i, s := range p.Sample {
		l := &profile.Location{ID: uint64(i + 2), Line: []profile.Line{{Function: fn, Line: int64(i + 2)}}}
		p.Location = append(p.Location, l)
		s.Location = append(slices.Clone(deep[:MaxFrames-1]), l)
	}
	_, err := Read(bytes.NewReader(write(t, p, true)))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d stack frames", maxTotalFrames)) {
		t.Errorf("%d distinct deep stacks: %v", len(p.Sample), err)
	}
}

func TestParseDevice(t *testing.T) {
	for v, want := range map[string]int{"gpu:0": 0, "gpu:7": 7, "cuda:3": 3, "rocm:1": 1, "host": -1, "gpu:2147483647": math.MaxInt32,
		"gpu:": -2, "gpu:-1": -2, "gpu:+1": -2, "gpu:01": -2, "gpu:2147483648": -2, "TFRT_CPU_0": -2, "tpu:0": -2, "GPU:0": -2, "": -2} {
		d, ok := parseDevice(v)
		if ok != (want != -2) || ok && d != want {
			t.Errorf("parseDevice(%q) = %d, %v; want %d", v, d, ok, want)
		}
	}
}

// TestGlueFramesRoundTrip: the glue label's values read back as the
// frames written, whatever their names hold (type arguments with spaces
// and parentheses, paths with colons), and a value not in the written
// form reads as a function.
func TestGlueFramesRoundTrip(t *testing.T) {
	for _, f := range []event.Frame{
		{Function: "example.com/cuda.(*Ctx).Malloc.func1", File: "/src/cuda.go", Line: 83},
		{Function: "example.com/cuda.Alloc[go.shape.struct { X func() }]", File: `C:\src\a (1).go`, Line: 7},
		{Function: "example.com/cuda.F", File: "x.go"},
		{Function: "example.com/cuda.G"},
	} {
		if got := parseFrame(f.String()); got != f {
			t.Errorf("parseFrame(%q) = %+v, want %+v", f.String(), got, f)
		}
	}
	if got := parseFrame("no frame (here"); got != (event.Frame{Function: "no frame (here"}) {
		t.Errorf("parseFrame of a malformed value = %+v", got)
	}
}

// TestNamedDeviceRoundTrip: a buffer on a named device (JAX's CPU
// backend) is written with its name as the device label and read back
// as that device's memory, apart from host memory.
func TestNamedDeviceRoundTrip(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 4 << 20, Count: 1, Device: -1, DeviceName: "cpu:0", Kind: "buffer", Stack: []event.Frame{{Function: "init_params", File: "model.py", Line: 14}}},
		{Bytes: 1 << 20, Count: 1, Device: -1, Kind: "pinned", Stack: []event.Frame{{Function: "init_params", File: "model.py", Line: 14}}},
	}}
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range p.Sample {
		labels = append(labels, s.Label[LabelDevice]...)
	}
	slices.Sort(labels)
	if !slices.Equal(labels, []string{"cpu:0", "host"}) {
		t.Errorf("device labels %v, want cpu:0 and host", labels)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Buffers) != 2 || back.Buffers[0].DeviceName != "cpu:0" || !back.Buffers[0].OnDevice() || back.Buffers[1].DeviceName != "" || back.Buffers[1].OnDevice() {
		t.Errorf("read back %+v", back.Buffers)
	}
}

// TestReadBombs: a few bytes that stand for much. A sample of 10⁹
// allocations is one buffer counted 10⁹ times (nothing expands it); a
// gzip stream of one sample repeated past MaxSamples fails as soon as it
// passes, naming the bound, after reading no more than that.
func TestReadBombs(t *testing.T) {
	p := jaxProfile()
	p.Sample = p.Sample[:1]
	p.Sample[0].Value = []int64{1e9, 1e9 * 4096}
	small := write(t, p, true)
	m, err := Read(bytes.NewReader(small))
	if err != nil || len(m.Buffers) != 1 || m.Buffers[0].Count != 1e9 {
		t.Fatalf("a %d-byte profile of 10⁹ allocations: %v, %+v", len(small), err, m)
	}

	defer func(n int) { maxSamples = n }(maxSamples)
	maxSamples = 1 << 16
	plain := write(t, jaxProfile(), false)
	// One sample field, repeated: the fields after it may come in any
	// number, so the stream is a valid profile until the bound.
	f, _, err := nextField(plain[bytes.IndexByte(plain, 0x12):])
	if err != nil || f.num != 2 {
		t.Fatalf("no sample field: %v", err)
	}
	one := append(protowire.AppendVarint([]byte{0x12}, uint64(len(f.data))), f.data...)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(plain)
	for range 4 * maxSamples {
		zw.Write(one)
	}
	zw.Close()
	_, err = Read(&buf)
	if want := fmt.Sprintf("pprof: more than %d samples", maxSamples); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%d samples: %v, want an error starting %q", 4*maxSamples, err, want)
	}
}
