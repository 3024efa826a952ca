package pprof

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
)

// Stacks of the fixture, innermost first.
var (
	loadWeights = []event.Frame{
		{Function: "main.(*Model).loadWeights", File: "/src/model/model.go", Line: 41},
		{Function: "main.(*Model).Load", File: "/src/model/model.go", Line: 22},
		{Function: "main.main", File: "/src/main.go", Line: 12},
	}
	allocActivations = []event.Frame{
		{Function: "main.(*Model).forward", File: "/src/model/model.go", Line: 77},
		{Function: "main.train", File: "/src/main.go", Line: 30},
		{Function: "main.main", File: "/src/main.go", Line: 14},
	}
	stageBatch = []event.Frame{
		{Function: "main.stage", File: "/src/data/loader.go", Line: 9},
		{Function: "main.train", File: "/src/main.go", Line: 28},
		{Function: "main.main", File: "/src/main.go", Line: 14},
	}
)

// fixture is a small tracker's view: weights on two GPUs, activations of
// two sizes, a pinned host staging buffer, one buffer allocated with no
// stack, and a tracker that lost some allocations.
func fixture() *event.DeviceMemory {
	m := &event.DeviceMemory{
		Time: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC),
		Counts: event.MemoryCounts{Allocs: 14, Frees: 3, Untracked: 2, UntrackedBytes: 3 << 20,
			UnknownFrees: 1, ZeroSize: 1, Replaced: 1},
		Warnings: []event.Warning{
			{Source: "devmem", Code: "untracked", Text: "2 allocations (3145728 bytes) not tracked: the tracking table was full (raise MaxBuffers, advanced key device_memory_max_buffers)"},
			{Source: "devmem", Code: "unknown_free", Text: "1 free of a pointer the tracker never saw allocated (allocated before tracking started, or not tracked)"},
		},
		Devices: []event.DeviceUsage{
			{Device: 0, Total: 80 << 30, Used: 30 << 30, Process: 25 << 30},
			{Device: 1, Total: 80 << 30, Used: 12 << 30},
		},
	}
	add := func(n int, b event.Buffer) {
		for i := range n {
			b.Address = 0x7f00_0000_0000 + uint64(len(m.Buffers))<<20 + uint64(i)
			b.Count = 1
			b.Time = m.Time.Add(-time.Duration(len(m.Buffers)+1) * time.Second)
			m.Buffers = append(m.Buffers, b)
		}
	}
	add(2, event.Buffer{Bytes: 4 << 20, Device: 0, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights"}, Stack: loadWeights})
	add(2, event.Buffer{Bytes: 4 << 20, Device: 1, Kind: "device", Source: "cuda", API: "cudaMalloc", Tags: []string{"weights"}, Stack: loadWeights})
	add(3, event.Buffer{Bytes: 1 << 20, Device: 0, Kind: "device", Source: "cuda", API: "cuMemAllocAsync", Tags: []string{"activations", "fp16"}, Span: "train/step/forward", Stack: allocActivations})
	add(1, event.Buffer{Bytes: 512 << 10, Device: 1, Kind: "device", Source: "cuda", API: "cuMemAllocAsync", Tags: []string{"activations", "fp16"}, Span: "train/step/forward", Stack: allocActivations})
	add(1, event.Buffer{Bytes: 256 << 10, Device: -1, Kind: "pinned", Source: "cuda", API: "cudaHostAlloc", Span: "train/step", Stack: stageBatch})
	add(1, event.Buffer{Bytes: 64 << 10, Device: 0, Kind: "workspace", Source: "api"})
	return m
}

// groupOf is what Write keeps of a buffer: everything but its address,
// time and count.
type groupOf struct {
	stack                         string
	bytes                         uint64
	device                        int
	kind, tags, span, source, api string
}

func keyOf(b *event.Buffer) groupOf {
	return groupOf{fmt.Sprint(b.Stack), b.Bytes, b.Device, b.Kind, strings.Join(b.Tags, ","), b.Span, b.Source, b.API}
}

// groups sums the buffers of m by what Write keeps of them.
func groups(m *event.DeviceMemory) map[groupOf]int {
	out := map[groupOf]int{}
	for i := range m.Buffers {
		out[keyOf(&m.Buffers[i])] += max(m.Buffers[i].Count, 1)
	}
	return out
}

func encode(t testing.TB, m *event.DeviceMemory) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(t testing.TB, data []byte) *event.DeviceMemory {
	t.Helper()
	m, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRoundTrip: what Read gives back of what Write wrote is the same
// buffers, grouped, with the same time, counts and warnings.
func TestRoundTrip(t *testing.T) {
	in := fixture()
	out := decode(t, encode(t, in))
	want, got := groups(in), groups(out)
	if len(got) != len(want) || len(out.Buffers) != len(want) {
		t.Errorf("read %d buffers in %d groups, want %d groups", len(out.Buffers), len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("group %+v: read %d buffers, want %d", k, got[k], n)
		}
	}
	for _, b := range out.Buffers {
		if b.Address != 0 || !b.Time.IsZero() {
			t.Errorf("read buffer %+v has an address or time pprof does not keep", b)
		}
	}
	if !slices.Equal(out.Devices, in.Devices) {
		t.Errorf("read devices %+v, want %+v", out.Devices, in.Devices)
	}
	if !out.Time.Equal(in.Time) || out.Counts != in.Counts || !slices.Equal(out.Warnings, in.Warnings) {
		t.Errorf("read time %v, counts %+v, warnings %+v\nwant %v, %+v, %+v", out.Time, out.Counts, out.Warnings, in.Time, in.Counts, in.Warnings)
	}
	inBytes, inBufs := in.Live()
	outBytes, outBufs := out.Live()
	if inBytes != outBytes || inBufs != outBufs {
		t.Errorf("read %d bytes in %d buffers, wrote %d in %d", outBytes, outBufs, inBytes, inBufs)
	}
	if !slices.IsSortedFunc(out.Buffers, func(a, b event.Buffer) int { return cmp.Compare(b.Total(), a.Total()) }) {
		t.Errorf("read buffers not largest first")
	}
}

// TestLayout checks the profile against JAX's layout and the package doc,
// through google/pprof's own parser.
func TestLayout(t *testing.T) {
	in := fixture()
	p, err := profile.Parse(bytes.NewReader(encode(t, in)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || *p.SampleType[0] != (profile.ValueType{Type: "allocations", Unit: "count"}) ||
		*p.SampleType[1] != (profile.ValueType{Type: "space", Unit: "bytes"}) || p.DefaultSampleType != "space" {
		t.Errorf("sample types %v %v, default %q", p.SampleType[0], p.SampleType[1], p.DefaultSampleType)
	}
	if p.TimeNanos != in.Time.UnixNano() || len(p.Mapping) != 1 {
		t.Errorf("time %d, %d mappings", p.TimeNanos, len(p.Mapping))
	}
	want := groups(in)
	if len(p.Sample) != len(want) {
		t.Errorf("%d samples, want one per group: %d", len(p.Sample), len(want))
	}
	for i, s := range p.Sample {
		if i > 0 && s.Value[1] > p.Sample[i-1].Value[1] {
			t.Errorf("sample %d larger than the one before", i)
		}
		if len(s.NumLabel) != 0 {
			t.Errorf("sample %d has numeric labels %v", i, s.NumLabel)
		}
		for k, v := range s.Label {
			if len(v) != 1 || v[0] == "" {
				t.Errorf("sample %d label %s = %q: want one value", i, k, v)
			}
			if !slices.Contains([]string{"kind", "device", "tags", "span", "source", "api"}, k) {
				t.Errorf("sample %d has label %s", i, k)
			}
		}
		var stack []event.Frame
		for _, l := range s.Location {
			if m := l.Mapping; l.Address != 0 || m == nil || !m.HasFunctions || !m.HasFilenames || !m.HasLineNumbers || len(l.Line) != 1 {
				t.Errorf("location %d: address %#x, mapping %v, %d lines", l.ID, l.Address, l.Mapping, len(l.Line))
				continue
			}
			fn := l.Line[0].Function
			if fn.Name != fn.SystemName {
				t.Errorf("function %d: name %q, system name %q", fn.ID, fn.Name, fn.SystemName)
			}
			stack = append(stack, event.Frame{Function: fn.Name, File: fn.Filename, Line: int(l.Line[0].Line)})
		}
		if len(stack) == 1 && stack[0].Function == UnknownFunction {
			stack = nil
		}
		b := event.Buffer{Stack: stack, Bytes: uint64(s.Value[1] / s.Value[0]), Kind: label(s, "kind"), Span: label(s, "span"),
			Source: label(s, "source"), API: label(s, "api")}
		if tags := label(s, "tags"); tags != "" {
			b.Tags = strings.Split(tags, ",")
		}
		switch d := label(s, "device"); d {
		case "host":
			b.Device = -1
		default:
			if _, err := fmt.Sscanf(d, "gpu:%d", &b.Device); err != nil {
				t.Errorf("sample %d: device %q", i, d)
			}
		}
		k := keyOf(&b)
		if n, ok := want[k]; !ok || int64(n) != s.Value[0] || s.Value[1] != s.Value[0]*int64(b.Bytes) {
			t.Errorf("sample %d %v (%+v) is not one of the groups written (%d)", i, s.Value, k, n)
		}
		delete(want, k)
	}
	// Ids 1-based and dense; functions and locations not repeated.
	funcs := map[[2]string]bool{}
	for i, f := range p.Function {
		if f.ID != uint64(i+1) || funcs[[2]string{f.Name, f.Filename}] {
			t.Errorf("function %d: id %d, %s repeated: %v", i, f.ID, f.Name, funcs[[2]string{f.Name, f.Filename}])
		}
		funcs[[2]string{f.Name, f.Filename}] = true
	}
	locs := map[string]bool{}
	for i, l := range p.Location {
		k := fmt.Sprint(l.Line[0].Function.ID, l.Line[0].Line)
		if l.ID != uint64(i+1) || locs[k] {
			t.Errorf("location %d: id %d, repeated %v", i, l.ID, locs[k])
		}
		locs[k] = true
	}
	if len(p.Comments) != 2+len(in.Warnings)+2*len(in.Devices) || !strings.HasPrefix(p.Comments[0], "devprof device memory: ") || !strings.HasPrefix(p.Comments[len(p.Comments)-1], "#devprof counts: ") {
		t.Errorf("comments %q", p.Comments)
	}
}

func label(s *profile.Sample, key string) string {
	if v := s.Label[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// TestDeterministic: the order of the buffers does not change a byte.
func TestDeterministic(t *testing.T) {
	m := fixture()
	want := encode(t, m)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(m.Buffers), func(i, j int) { m.Buffers[i], m.Buffers[j] = m.Buffers[j], m.Buffers[i] })
		if got := encode(t, m); !bytes.Equal(got, want) {
			t.Fatalf("buffers in another order encode differently")
		}
	}
}

// TestHeader: the header counts what is live and says what the tracker
// missed; an empty profile is still a valid profile.
func TestHeader(t *testing.T) {
	m := fixture()
	live, bufs := m.Live()
	p, err := profile.Parse(bytes.NewReader(encode(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("%d live buffers", bufs), fmt.Sprintf("(%d bytes)", live), "2 allocations (3.0 MiB) untracked", "1 free of an unknown pointer"} {
		if !strings.Contains(p.Comments[0], want) {
			t.Errorf("header %q lacks %q", p.Comments[0], want)
		}
	}
	empty := decode(t, encode(t, &event.DeviceMemory{}))
	if len(empty.Buffers) != 0 || !empty.Time.IsZero() || empty.Counts != (event.MemoryCounts{}) || len(empty.Warnings) != 0 {
		t.Errorf("empty profile read back as %+v", empty)
	}
	p, err = profile.Parse(bytes.NewReader(encode(t, &event.DeviceMemory{})))
	if err != nil || strings.Contains(p.Comments[0], "incomplete") || p.TimeNanos != 0 {
		t.Errorf("empty profile: %v, comments %q, time %d", err, p.Comments, p.TimeNanos)
	}
}

// TestWarningStartingWithHash: pprof hides comments that start with "#";
// a warning that does is still shown, and read back as it was.
func TestWarningStartingWithHash(t *testing.T) {
	m := &event.DeviceMemory{Warnings: []event.Warning{{Text: "#3 went wrong"}}}
	p, err := profile.Parse(bytes.NewReader(encode(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(p.Comments[1], "#") {
		t.Errorf("warning written as %q: pprof hides it", p.Comments[1])
	}
	if got := decode(t, encode(t, m)).Warnings; !slices.Equal(got, m.Warnings) {
		t.Errorf("read back %+v", got)
	}
}

// TestWriteErrors: sizes pprof cannot hold are refused, naming the site,
// and WriteFile then leaves nothing behind.
func TestWriteErrors(t *testing.T) {
	site := []event.Frame{{Function: "main.huge", File: "h.go", Line: 3}}
	for _, m := range []*event.DeviceMemory{
		{Buffers: []event.Buffer{{Bytes: math.MaxInt64 + 1, Stack: site}}},
		{Buffers: []event.Buffer{{Bytes: 1 << 40, Count: 1 << 23, Stack: site}, {Bytes: 1 << 40, Count: 1 << 23, Stack: site}}},
		{Buffers: []event.Buffer{{Bytes: 1, Count: math.MaxInt, Stack: site}, {Bytes: 1, Count: 1, Stack: site}}},
	} {
		err := Write(&bytes.Buffer{}, m)
		if err == nil || !strings.Contains(err.Error(), "main.huge (h.go:3)") {
			t.Errorf("Write %+v: %v, want an error naming the site", m.Buffers, err)
		}
		dir := t.TempDir()
		if err := WriteFile(filepath.Join(dir, "m.pb.gz"), m); err == nil {
			t.Errorf("WriteFile succeeded")
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("WriteFile left %v", left)
		}
	}
	// The largest sizes that fit are written.
	m := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: math.MaxInt64, Stack: site}}}
	if got := decode(t, encode(t, m)); got.Buffers[0].Bytes != math.MaxInt64 {
		t.Errorf("read %+v", got.Buffers)
	}
}

// TestWriteFile writes through the atomic file: the profile appears whole
// under its name, nothing else is left, and a missing directory is an error
// naming the path.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.pb.gz")
	if err := WriteFile(path, fixture()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, encode(t, fixture())) {
		t.Fatalf("file differs from Write's bytes (%v)", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries", len(entries))
	}
	m, err := ReadFile(path)
	if err != nil || len(m.Buffers) != len(groups(fixture())) {
		t.Fatalf("ReadFile: %v", err)
	}
	bad := filepath.Join(dir, "no", "such", "m.pb.gz")
	if err := WriteFile(bad, fixture()); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteFile into a missing directory: %v", err)
	}
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

// TestEmptyStack: a buffer without a stack is one frame pprof can show,
// and reads back without a stack; an empty function name is shown too.
func TestEmptyStack(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 100, Device: 2},
		{Bytes: 7, Stack: []event.Frame{{File: "x.go", Line: 5}}},
	}}
	p, err := profile.Parse(bytes.NewReader(encode(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if len(s.Location) != 1 || s.Location[0].Line[0].Function.Name != UnknownFunction {
			t.Errorf("sample %v: locations %v", s.Value, s.Location)
		}
	}
	got := decode(t, encode(t, m))
	if len(got.Buffers) != 2 || got.Buffers[0].Stack != nil || got.Buffers[0].Device != 2 ||
		!slices.Equal(got.Buffers[1].Stack, []event.Frame{{Function: UnknownFunction, File: "x.go", Line: 5}}) {
		t.Errorf("read %+v", got.Buffers)
	}
}

func TestIEC(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 3 << 20: "3.0 MiB",
		1<<20 - 1: "1.0 MiB", 80 << 30: "80.0 GiB", math.MaxUint64: "16.0 EiB",
	} {
		if got := iec(n); got != want {
			t.Errorf("iec(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDeviceLabel(t *testing.T) {
	for d := -3; d < 12; d++ {
		l := DeviceLabel(d)
		back, ok := parseDevice(l)
		if !ok || back != max(d, -1) {
			t.Errorf("DeviceLabel(%d) = %q reads back as %d, %v", d, l, back, ok)
		}
	}
}
