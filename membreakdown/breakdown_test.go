package membreakdown

import (
	"bytes"
	"encoding/csv"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

var (
	loadStack = []event.Frame{{Function: "main.load", File: "/src/model/main.go", Line: 40}, {Function: "main.main", File: "/src/main.go", Line: 10}}
	stepStack = []event.Frame{{Function: "main.step", File: "/src/train.go", Line: 71}, {Function: "main.main", File: "/src/main.go", Line: 12}}
)

// profile is a tracker's listing over two devices and the host: plain
// categories, a group of Count buffers (as read back from pprof), two
// buffers matching two categories each, untagged buffers with and without
// a stack, host memory on a device ordinal and without one, and NVML's
// figures for both devices (device 1's without a per-process figure).
func profile() *event.DeviceMemory {
	return &event.DeviceMemory{
		Time: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Buffers: []event.Buffer{
			{Bytes: 6 * MiB, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights", "fp16"}, Span: "train/load", Stack: loadStack},
			{Bytes: 6 * MiB, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights", "fp16"}, Span: "train/load", Stack: loadStack},
			{Bytes: 6 * MiB, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights", "fp16"}, Span: "train/load", Stack: loadStack},
			{Bytes: 6 * MiB, Count: 1, Device: 1, Kind: "device", Tags: []string{"weights", "fp16"}, Span: "train/load", Stack: loadStack},
			{Bytes: 3 * MiB, Count: 5, Device: 1, Kind: "device", Tags: []string{"adam"}, Stack: stepStack},
			{Bytes: 2 * MiB, Count: 2, Device: 0, Kind: "device_static", Tags: []string{"grad", "weights"}, Stack: stepStack},
			{Bytes: 512 * KiB, Count: 1, Device: 0, Kind: "managed", Tags: []string{"workspace"}, Span: "train/step/forward", Stack: stepStack},
			{Bytes: 1 * MiB, Count: 4, Device: 1, Kind: "device", Span: "train/step", Stack: stepStack},
			{Bytes: 5000, Count: 1, Device: 0, Kind: "managed"},
			{Bytes: 300 * KiB, Count: 1, Device: 0, Kind: "pinned", Tags: []string{"data"}, Stack: stepStack},
			{Bytes: 100 * KiB, Count: 2, Device: -1, Kind: "device", Tags: []string{"data"}},
		},
		Devices: []event.DeviceUsage{
			{Device: 0, Total: 80 * GiB, Used: 30 * GiB, Process: 20 * GiB},
			{Device: 1, Total: 80 * GiB, Used: 10 * GiB},
		},
	}
}

func TestCategorize(t *testing.T) {
	m := profile()
	r := Categorize(m, DefaultDictionary(), Options{})

	stepTag := "unknown:train.go:71:main.step train/step" // no tags: the innermost frame, then the span
	params := Category{Name: "Parameters", Amount: Amount{3*6*MiB + 6*MiB + 2*2*MiB, 3 + 1 + 2},
		Devices: []DeviceBytes{{0, "", 3*6*MiB + 2*2*MiB}, {1, "", 6 * MiB}},
		Tags:    []TagBytes{{"weights,fp16 train/load", Amount{4 * 6 * MiB, 4}}, {"grad,weights", Amount{2 * 2 * MiB, 2}}}}
	opt := Category{Name: "Optimizer state", Amount: Amount{5 * 3 * MiB, 5},
		Devices: []DeviceBytes{{1, "", 5 * 3 * MiB}}, Tags: []TagBytes{{"adam", Amount{5 * 3 * MiB, 5}}}}
	grads := Category{Name: "Gradients", Amount: Amount{2 * 2 * MiB, 2},
		Devices: []DeviceBytes{{0, "", 2 * 2 * MiB}}, Tags: []TagBytes{{"grad,weights", Amount{2 * 2 * MiB, 2}}}}
	// "workspace train/step/forward" is Activations (forward) and
	// Workspace; equal totals keep the dictionary's order.
	ws := TagBytes{"workspace train/step/forward", Amount{512 * KiB, 1}}
	act := Category{Name: "Activations", Amount: ws.Amount, Devices: []DeviceBytes{{0, "", 512 * KiB}}, Tags: []TagBytes{ws}}
	work := Category{Name: "Workspace", Amount: ws.Amount, Devices: []DeviceBytes{{0, "", 512 * KiB}}, Tags: []TagBytes{ws}}
	others := Category{Name: Others, Amount: Amount{4*MiB + 5000, 5},
		Devices: []DeviceBytes{{0, "", 5000}, {1, "", 4 * MiB}},
		Tags:    []TagBytes{{stepTag, Amount{4 * MiB, 4}}, {"unknown", Amount{5000, 1}}}}
	want := []Category{params, opt, grads, act, work, others}
	if !reflect.DeepEqual(r.Categories, want) {
		t.Errorf("categories:\n%s\nwant\n%s", dump(r.Categories), dump(want))
	}

	tracked0 := uint64(3*6*MiB + 2*2*MiB + 512*KiB + 5000)
	tracked1 := uint64(6*MiB + 5*3*MiB + 4*MiB)
	if r.Tracked != tracked0+tracked1 || r.Buffers != 3+2+1+1+1+5+4 {
		t.Errorf("tracked %d in %d buffers, want %d in %d", r.Tracked, r.Buffers, tracked0+tracked1, 17)
	}
	if want := (Amount{300*KiB + 2*100*KiB, 3}); r.Host != want {
		t.Errorf("host %+v, want %+v", r.Host, want)
	}
	if !slices.Equal(r.Devices, []int{0, 1}) {
		t.Errorf("devices %v", r.Devices)
	}
	wantU := []Untrackable{
		{Device: 0, Expected: 20 * GiB, From: FromNVMLProcess, Tracked: tracked0, Bytes: int64(20*GiB - tracked0)},
		{Device: 1, Expected: 10 * GiB, From: FromNVMLUsed, Tracked: tracked1, Bytes: int64(10*GiB - tracked1)},
	}
	if !reflect.DeepEqual(r.Untrackable, wantU) {
		t.Errorf("untrackable %+v\nwant %+v", r.Untrackable, wantU)
	}
	wantT := &Untrackable{Device: AllDevices, Expected: 30 * GiB, From: FromNVML, Tracked: tracked0 + tracked1, Bytes: int64(30*GiB - tracked0 - tracked1)}
	if !reflect.DeepEqual(r.UntrackableTotal, wantT) {
		t.Errorf("total %+v, want %+v", r.UntrackableTotal, wantT)
	}
	wantMM := []MultiMatch{
		{Text: "grad,weights", Categories: []string{"Parameters", "Gradients"}, Amount: Amount{2 * 2 * MiB, 2}},
		{Text: "workspace train/step/forward", Categories: []string{"Activations", "Workspace"}, Amount: Amount{512 * KiB, 1}},
	}
	if !reflect.DeepEqual(r.MultiMatches, wantMM) {
		t.Errorf("multi-matches %+v\nwant %+v", r.MultiMatches, wantMM)
	}
	// Category totals count multi-matches twice; each buffer once is
	// Tracked.
	var sum uint64
	for _, c := range r.Categories {
		sum += c.Bytes
	}
	if double := 2*2*MiB + 512*KiB; sum != r.Tracked+uint64(double) {
		t.Errorf("categories add up to %d, want tracked %d plus the %d counted twice", sum, r.Tracked, double)
	}
	if !r.Time.Equal(m.Time) {
		t.Errorf("time %v", r.Time)
	}
}

func dump(cs []Category) string {
	var sb strings.Builder
	for _, c := range cs {
		sb.WriteString("  " + c.Name + ": " + strconv.FormatUint(c.Bytes, 10) + " in " + strconv.Itoa(c.Buffers))
		for _, d := range c.Devices {
			sb.WriteString(" gpu" + strconv.Itoa(d.Device) + "=" + strconv.FormatUint(d.Bytes, 10))
		}
		for _, tb := range c.Tags {
			sb.WriteString(" [" + tb.Tag + "]=" + strconv.FormatUint(tb.Bytes, 10))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestUntrackableFigures: an expected sum replaces NVML's figures and
// gives only a total; a figure below what was tracked gives a negative
// Untrackable; a device with buffers but no figure leaves the total out;
// NVML entries that measured nothing are no figure.
func TestUntrackableFigures(t *testing.T) {
	m := profile()
	r := Categorize(m, DefaultDictionary(), Options{ExpectedSum: 1 * GiB})
	if len(r.Untrackable) != 0 || r.UntrackableTotal == nil || r.UntrackableTotal.From != FromExpectedSum ||
		r.UntrackableTotal.Expected != GiB || r.UntrackableTotal.Bytes != int64(GiB)-int64(r.Tracked) {
		t.Errorf("expected sum: %+v, total %+v", r.Untrackable, r.UntrackableTotal)
	}

	r = Categorize(m, DefaultDictionary(), Options{ExpectedSum: 10 * MiB})
	if got := r.UntrackableTotal.Bytes; got != 10*MiB-int64(r.Tracked) || got >= 0 {
		t.Errorf("expected sum below tracked: Untrackable %d, want %d", got, 10*MiB-int64(r.Tracked))
	}

	m.Devices[0].Process = 1 * MiB
	r = Categorize(m, DefaultDictionary(), Options{})
	if u := r.UntrackableOn(0); u == nil || u.Bytes != MiB-int64(u.Tracked) || u.Bytes >= 0 {
		t.Errorf("NVML below tracked: %+v", u)
	}

	m = profile()
	m.Devices = m.Devices[:1]
	r = Categorize(m, DefaultDictionary(), Options{})
	if len(r.Untrackable) != 1 || r.Untrackable[0].Device != 0 || r.UntrackableTotal != nil || r.UntrackableOn(1) != nil {
		t.Errorf("device 1 without a figure: %+v, total %+v", r.Untrackable, r.UntrackableTotal)
	}

	m = profile()
	m.Devices = append(m.Devices, event.DeviceUsage{Device: 2, Total: 80 * GiB, Used: 700 * MiB, Process: 500 * MiB}, event.DeviceUsage{Device: 3, Total: 80 * GiB})
	r = Categorize(m, DefaultDictionary(), Options{})
	if !slices.Equal(r.Devices, []int{0, 1, 2}) {
		t.Errorf("devices %v, want 0, 1 and 2 (3 measured nothing)", r.Devices)
	}
	if u := r.UntrackableOn(2); u == nil || u.Bytes != 500*MiB || u.Tracked != 0 {
		t.Errorf("device 2 (nothing tracked): %+v", u)
	}
	if u := r.UntrackableTotal; u == nil || u.Expected != 30*GiB+500*MiB {
		t.Errorf("total %+v", u)
	}

	m.Devices = nil
	r = Categorize(m, DefaultDictionary(), Options{})
	if len(r.Untrackable) != 0 || r.UntrackableTotal != nil {
		t.Errorf("no figures: %+v, %+v", r.Untrackable, r.UntrackableTotal)
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		b    event.Buffer
		want string
	}{
		{event.Buffer{Tags: []string{"a", "b"}, Span: "x/y"}, "a,b x/y"},
		{event.Buffer{Tags: []string{"a"}}, "a"},
		{event.Buffer{Span: "x"}, "unknown x"},
		{event.Buffer{}, "unknown"},
		{event.Buffer{Tags: []string{""}, Stack: stepStack}, "unknown:train.go:71:main.step"},
		{event.Buffer{Stack: []event.Frame{{Function: "f"}}}, "unknown:.:0:f"},
	} {
		if got := Text(&c.b); got != c.want {
			t.Errorf("Text(%+v) = %q, want %q", c.b, got, c.want)
		}
	}
}

// TestTruncation: in the dictionary's categories texts are cut to 50
// characters and "..", so that long texts sharing their first 50 add
// up; in Others they are whole.
func TestTruncation(t *testing.T) {
	prefix := "weights/" + strings.Repeat("é", 50-8) // 50 characters, 92 bytes
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 10, Count: 1, Tags: []string{prefix + "/layer1"}},
		{Bytes: 20, Count: 1, Tags: []string{prefix + "/layer2"}},
		{Bytes: 5, Count: 1, Tags: []string{prefix}},
		{Bytes: 7, Count: 1, Tags: []string{strings.Repeat("z", 80)}},
	}}
	r := Categorize(m, DefaultDictionary(), Options{})
	p := r.Category("Parameters")
	want := []TagBytes{{prefix + "..", Amount{30, 2}}, {prefix, Amount{5, 1}}}
	if p == nil || !reflect.DeepEqual(p.Tags, want) {
		t.Fatalf("Parameters tags %+v, want %+v", p, want)
	}
	if o := r.Category(Others); o == nil || len(o.Tags) != 1 || o.Tags[0].Tag != strings.Repeat("z", 80) {
		t.Errorf("Others %+v, want the whole text", o)
	}
}

// TestMatch: substrings, case-sensitive, a category once however many of
// its keywords match, categories in the dictionary's order.
func TestMatch(t *testing.T) {
	d := Dictionary{{"A", []string{"ab", "b"}}, {"B", []string{"Cd"}}, {"C", []string{}}, {"D", []string{"x"}}}
	for text, want := range map[string][]int{
		"abc":   {0},
		"xab":   {0, 3},
		"cd":    nil,
		"Cdxab": {0, 1, 3},
		"":      nil,
	} {
		if got := d.Match(text); !slices.Equal(got, want) {
			t.Errorf("Match(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestCategoryOrder: largest first, ties in the dictionary's order,
// Others last even when largest.
func TestCategoryOrder(t *testing.T) {
	d := Dictionary{{"small", []string{"s"}}, {"tie2", []string{"t2"}}, {"tie1", []string{"t1"}}, {"big", []string{"b"}}, {"none", []string{"n"}}}
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 1, Tags: []string{"s"}}, {Bytes: 5, Tags: []string{"t1"}}, {Bytes: 5, Tags: []string{"t2"}},
		{Bytes: 9, Tags: []string{"b"}}, {Bytes: 100, Tags: []string{"zzz"}},
	}}
	r := Categorize(m, d, Options{})
	var names []string
	for _, c := range r.Categories {
		names = append(names, c.Name)
	}
	if want := []string{"big", "tie2", "tie1", "small", Others}; !slices.Equal(names, want) {
		t.Errorf("order %q, want %q (none matched nothing: left out)", names, want)
	}
}

func TestWriteCSV(t *testing.T) {
	m := profile()
	m.Buffers = append(m.Buffers, event.Buffer{Bytes: 3 * MiB / 2, Count: 1, Device: 0, Kind: "device", Tags: []string{`say "hi"`, "x"}, Span: "a\nb"})
	var buf bytes.Buffer
	if err := WriteCSV(&buf, m); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatalf("reading the CSV back: %v\n%s", err, buf.String())
	}
	var want [][]string
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if !OnDevice(b) {
			continue
		}
		for range max(b.Count, 1) {
			want = append(want, []string{Text(b), strconv.FormatFloat(float64(b.Bytes)/MiB, 'f', -1, 64)})
		}
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("records %q\nwant %q", recs, want)
	}
	lines := strings.Split(buf.String(), "\n")
	for _, l := range []string{`"weights,fp16 train/load",6`, "adam,3", "unknown,0.00476837158203125", `"say ""hi"",x a`} {
		if !slices.Contains(lines, l) {
			t.Errorf("no line %q in\n%s", l, buf.String())
		}
	}
	if n := strings.Count(buf.String(), "\"weights,fp16 train/load\",6\n"); n != 4 {
		t.Errorf("%d lines of the four 6 MiB weights", n)
	}
	if strings.Contains(buf.String(), "data") {
		t.Errorf("host memory in the CSV:\n%s", buf.String())
	}
}

// TestNamedDevices: a named device's buffers (JAX's CPU backend, "cpu:0")
// are device memory, broken down per named device apart from the GPUs'
// ordinals and from host memory.
func TestNamedDevices(t *testing.T) {
	m := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 4 * MiB, Count: 2, Device: -1, DeviceName: "cpu:0", Tags: []string{"weights"}},
		{Bytes: 1 * MiB, Count: 1, Device: 0, Tags: []string{"weights"}},
		{Bytes: 3 * MiB, Count: 1, Device: -1, Kind: "pinned", Tags: []string{"weights"}},
	}}
	r := Categorize(m, DefaultDictionary(), Options{})
	if r.Tracked != 9*MiB || r.Buffers != 3 || r.Host != (Amount{3 * MiB, 1}) || !slices.Equal(r.NamedDevices, []string{"cpu:0"}) || !slices.Equal(r.Devices, []int{0}) {
		t.Fatalf("tracked %d in %d, host %v, devices %v, named %v", r.Tracked, r.Buffers, r.Host, r.Devices, r.NamedDevices)
	}
	c := r.Category("Parameters")
	if c == nil || !slices.Equal(c.Devices, []DeviceBytes{{0, "", 1 * MiB}, {-1, "cpu:0", 8 * MiB}}) || c.DeviceBytes(-1) != 0 || c.DeviceBytes(0) != 1*MiB ||
		c.NamedDeviceBytes("cpu:0") != 8*MiB || c.NamedDeviceBytes("tpu:0") != 0 || c.NamedDeviceBytes("") != 0 {
		t.Errorf("Parameters %+v", c)
	}
}

// TestCSVRows: the lines of either CSV layout, counted without writing
// them: one per device-memory buffer an entry stands for, host memory
// left out, and a sum past uint64 saturates instead of wrapping.
func TestCSVRows(t *testing.T) {
	m := profile()
	// 4 weights + 5 adam + 2 grad + 1 workspace + 4 step + 1 unknown;
	// the pinned and host ones are not device memory.
	if n := CSVRows(m); n != 17 {
		t.Errorf("CSVRows %d, want 17", n)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, m); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 17 {
		t.Errorf("WriteCSV wrote %d lines, CSVRows says 17", n)
	}
	big := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 1, Count: math.MaxInt, Device: 0},
		{Bytes: 1, Count: math.MaxInt, Device: 1},
		{Bytes: 1, Count: math.MaxInt, Device: 2},
	}}
	if n := CSVRows(big); n != math.MaxUint64 {
		t.Errorf("CSVRows of 3 × MaxInt buffers %d, want it saturated at MaxUint64", n)
	}
}

// TestWriteStorageCSV: MXNet 2's storage-profiler columns, as Python's
// csv module (and Go's) reads them: the header, one row per allocation
// sorted by attribute name, sizes in bytes, the device by ordinal or
// name, Actual Size = Requested Size, Reuse? 0, then one nvml_amend row
// per device with a non-negative Untrackable figure.
func TestWriteStorageCSV(t *testing.T) {
	m := profile()
	m.Buffers = append(m.Buffers,
		event.Buffer{Bytes: 7, Count: 1, Device: -1, DeviceName: "cpu:0", Tags: []string{`say "hi"`}},
		event.Buffer{Bytes: 9, Count: 1, Device: 0, Tags: []string{"adam"}}, // ties with adam on gpu:1: after it
	)
	m.Devices[1].Used = 1 * MiB // less than tracked on gpu:1: no amend row
	r := Categorize(m, DefaultDictionary(), Options{})
	var buf bytes.Buffer
	if err := WriteStorageCSV(&buf, m, r); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(buf.String(), "\n"); first != StorageCSVHeader {
		t.Errorf("header %q, want %q", first, StorageCSVHeader)
	}
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, `"`) || !strings.HasSuffix(l, `"`) || strings.Count(l, `","`) != 4 {
			t.Errorf("line %q: want five double-quoted fields", l)
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatalf("reading the CSV back: %v\n%s", err, buf.String())
	}
	want := [][]string{{"Attribute Name", "Requested Size", "Device", "Actual Size", "Reuse?"}}
	type entry struct {
		name, dev string
		bytes     uint64
	}
	var entries []entry
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if !OnDevice(b) {
			continue
		}
		dev := strconv.Itoa(b.Device)
		if b.DeviceName != "" {
			dev = b.DeviceName
		}
		for range max(b.Count, 1) {
			entries = append(entries, entry{Text(b), dev, b.Bytes})
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	for _, e := range entries {
		n := strconv.FormatUint(e.bytes, 10)
		want = append(want, []string{e.name, n, e.dev, n, "0"})
	}
	u := r.UntrackableOn(0)
	if u == nil || u.Bytes <= 0 || r.UntrackableOn(1) == nil || r.UntrackableOn(1).Bytes >= 0 {
		t.Fatalf("the profile no longer has one positive and one negative Untrackable: %+v", r.Untrackable)
	}
	n := strconv.FormatInt(u.Bytes, 10)
	want = append(want, []string{NVMLAmend, n, "0", n, "0"})
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("records\n%q\nwant\n%q", recs, want)
	}
	if uint64(len(recs)-2) != CSVRows(m) {
		t.Errorf("%d allocation rows, CSVRows says %d", len(recs)-2, CSVRows(m))
	}
	if !strings.Contains(buf.String(), `"say ""hi""","7","cpu:0","7","0"`) {
		t.Errorf("the quote in a name not doubled, or the named device not named:\n%s", buf.String())
	}
	// Without a report: the allocations alone.
	buf.Reset()
	if err := WriteStorageCSV(&buf, m, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), NVMLAmend) {
		t.Errorf("an amend row without a report:\n%s", buf.String())
	}
}
