package formats

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	rtpprof "runtime/pprof"
	rttrace "runtime/trace"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/pprof"
)

// sample builds a small snapshot with a span and its child, an instant and
// a counter sample.
func sample() *event.Snapshot {
	b := event.NewBuilder(event.Meta{
		Host: "testhost", PID: 42, Program: "formats.test",
		Start: event.ClockAnchor{Mono: 0, Boot: 0, Wall: 1_700_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 10_000, Boot: 10_000, Wall: 1_700_000_000_000_010_000},
	})
	outer := b.Span(event.Span{Name: "train", Start: 1_000, End: 9_000})
	b.Span(event.Span{Name: "forward", Start: 2_000, End: 5_000, Parent: outer})
	b.Instant("checkpoint", 6_000, 0, outer, nil)
	b.Counter("loss", "", 7_000, 0.5)
	return b.Snapshot()
}

// kinds lists "kind:name" of every event, sorted, to compare snapshots
// across formats that keep different details.
func kinds(s *event.Snapshot) []string {
	var out []string
	for _, r := range s.Events {
		out = append(out, r.Kind().String()+":"+s.Name(r))
	}
	slices.Sort(out)
	return out
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writable returns the rows devprof writes (all but input-only formats
// such as a Go execution trace).
func writable() []*Format {
	var out []*Format
	for _, f := range All() {
		if f.Write != nil {
			out = append(out, f)
		}
	}
	return out
}

func TestRowsAreComplete(t *testing.T) {
	if len(All()) == 0 {
		t.Fatal("the table is empty")
	}
	for _, f := range All() {
		v := reflect.ValueOf(*f)
		for i := range v.NumField() {
			fv, name := v.Field(i), v.Type().Field(i).Name
			if fv.Kind() == reflect.Bool {
				continue // false is a value, not a gap
			}
			if f.Write == nil && (name == "Write" || name == "SessionExt") {
				continue // an input-only format: sessions and convert do not write it
			}
			if name == "DecodeBounded" {
				continue // only a streamed input has one
			}
			if fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0) {
				t.Errorf("row %q lacks %s", f.Name, name)
			}
		}
		if ByName(f.Name) != f {
			t.Errorf("ByName(%q) does not find its row", f.Name)
		}
		for _, e := range f.Extensions {
			if e != strings.ToLower(e) || !strings.HasPrefix(e, ".") {
				t.Errorf("row %q: extension %q must be lower case and start with a dot", f.Name, e)
			}
			if f.Write == nil {
				if _, err := ForPath("x" + e); err == nil || !strings.Contains(err.Error(), "does not write") || byExtension("x"+e) != f {
					t.Errorf("row %q: ForPath(x%s) = %v; want its row, refused as an output", f.Name, e, err)
				}
				continue
			}
			if g, err := ForPath("x" + e); g != f {
				t.Errorf("row %q: ForPath(x%s) = %v, %v; another row claims the extension", f.Name, e, g, err)
			}
		}
		if g, err := ForPath("host" + f.SessionExt); f.Write != nil && g != f {
			t.Errorf("row %q: a session's file host%s is not named as this format (%v, %v)", f.Name, f.SessionExt, g, err)
		}
	}
	if ByName("nope") != nil {
		t.Error("ByName of an unknown name found a row")
	}
}

// TestRoundTrip writes the sample through every row under each of its
// extensions and reads it back by name alone.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := kinds(sample())
	for _, f := range writable() {
		for _, ext := range f.Extensions {
			path := filepath.Join(dir, "t"+ext)
			if err := WriteFile(path, nil, sample()); err != nil {
				t.Fatalf("%s: %v", ext, err)
			}
			raw, _ := os.ReadFile(path)
			if gz := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b; gz != strings.HasSuffix(ext, ".gz") {
				t.Errorf("%s: written gzip-compressed = %v", path, gz)
			}
			s, g, err := Read(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if g != f {
				t.Errorf("%s read as %s, want %s", path, g.Display, f.Display)
			}
			if got := kinds(s); !slices.Equal(got, want) {
				t.Errorf("%s: events %v, want %v", path, got, want)
			}
		}
	}
}

// TestDetectByContent finds each format from its bytes alone, plain and
// gzipped, under a name that says nothing and under another format's name.
func TestDetectByContent(t *testing.T) {
	dir := t.TempDir()
	for _, f := range writable() {
		var buf bytes.Buffer
		if err := f.Write(&buf, sample(), false); err != nil {
			t.Fatal(err)
		}
		names := []string{"noext", "t.bin", "t.bin.gz"}
		for _, g := range All() {
			// A Perfetto trace has no signature of its own, so a name
			// claiming another protobuf format wins over it; that is the
			// one misnaming Detect cannot see through.
			if g != f && !(f == Perfetto && g == XPlane) {
				names = append(names, "misnamed"+g.Extensions[0])
			}
		}
		for _, name := range names {
			for _, gz := range []bool{false, true} {
				data := buf.Bytes()
				if gz {
					data = gzipBytes(t, data)
					name += ".gz"
				}
				path := filepath.Join(dir, f.Name+"-"+name)
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := Detect(path)
				if err != nil || got != f {
					t.Errorf("Detect(%s) = %v, %v; want %s", path, got, err, f.Display)
					continue
				}
				s, got, err := Read(path)
				if err != nil || got != f || !slices.Equal(kinds(s), kinds(sample())) {
					t.Errorf("Read(%s): %v as %v", path, err, got)
				}
			}
		}
	}
}

// TestDamagedFileGoesToItsNamedReader keeps a damaged file that could be
// in the format its name says with that format's reader, whose error
// says what is wrong in that format's terms.
func TestDamagedFileGoesToItsNamedReader(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
		want *Format
	}{
		{"bad.xplane.pb", []byte{0x0a, 0xff, 0xff, 0x7f, 1}, XPlane},
		{"bad.pftrace", []byte{0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3}, Perfetto},
		{"bad.pftrace.gz", []byte{0x1f, 0x8b, 0, 0, 0}, Perfetto},
		{"bad.json", []byte(`{"traceEvents": [{"ph": 7}]}`), Chrome},
	} {
		path := filepath.Join(dir, c.name)
		os.WriteFile(path, c.data, 0o644)
		f, err := Detect(path)
		if err != nil || f != c.want {
			t.Errorf("Detect(%s) = %v, %v; want %s", c.name, f, err, c.want.Display)
		}
		if _, _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Read(%s) = %v; want an error naming the file", c.name, err)
		}
	}
}

func TestUnreadableInputs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte // nil: no file
		want string
	}{
		{"missing.pftrace", nil, "no such file"},
		{"empty.pftrace", []byte{}, "is empty"},
		{"empty.pftrace.gz", []byte{}, "is empty"},
		{"empty-content.json.gz", gzipBytes(t, nil), "is empty"},
		{"empty.bin", []byte{}, "is empty"},
		{"garbage.bin", []byte("hello, world"), "cannot tell its format"},
		{"garbage", []byte{0xff}, "cannot tell its format"},
		{"badgzip.bin", []byte{0x1f, 0x8b, 1, 2, 3}, "gzip"},
	} {
		path := filepath.Join(dir, c.name)
		if c.data != nil {
			os.WriteFile(path, c.data, 0o644)
		}
		_, f, err := Read(path)
		if err == nil || f != nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%s) = %v, %v; want an error naming the file and saying %q", c.name, f, err, c.want)
		}
		if strings.Contains(c.want, "format") {
			for _, g := range All() {
				if !strings.Contains(err.Error(), "*"+g.Extensions[0]) || !strings.Contains(err.Error(), g.Display) {
					t.Errorf("%s: the error %q does not list %s (%s)", c.name, err, g.Display, g.Extensions[0])
				}
			}
		}
	}
}

func TestForPath(t *testing.T) {
	for path, want := range map[string]*Format{
		"a.pftrace": Perfetto, "A.PFTRACE.GZ": Perfetto, "a.perfetto-trace": Perfetto,
		"a.xplane.pb": XPlane, "dir.json/host.xplane.pb": XPlane,
		"a.json": Chrome, "host.trace.json.gz": Chrome,
	} {
		if f, err := ForPath(path); f != want || err != nil {
			t.Errorf("ForPath(%q) = %v, %v; want %s", path, f, err, want.Display)
		}
	}
	_, err := ForPath("out.txt")
	if err == nil || !strings.Contains(err.Error(), `"out.txt"`) {
		t.Fatalf("ForPath(out.txt) = %v", err)
	}
	for _, f := range writable() {
		for _, e := range f.Extensions {
			if !strings.Contains(err.Error(), "*"+e) {
				t.Errorf("%q does not list %s", err, e)
			}
		}
	}
	if _, err := ForPath("a.xplane.pb.gz"); err == nil || !strings.Contains(err.Error(), "TensorBoard does not read gzip-compressed .xplane.pb files") {
		t.Errorf("ForPath(a.xplane.pb.gz) = %v", err)
	}
}

func TestWriteFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path string
		f    *Format
		want string
	}{
		{filepath.Join(dir, "out.txt"), nil, "cannot tell the output format"},
		{filepath.Join(dir, "out.xplane.pb.gz"), nil, "does not read gzip"},
		{filepath.Join(dir, "forced.xplane.pb.gz"), XPlane, "does not read gzip"},
		{filepath.Join(dir, "nodir", "out.pftrace"), nil, "cannot write"},
	} {
		if err := WriteFile(c.path, c.f, sample()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteFile(%s) = %v; want %q", c.path, err, c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("failed writes left %v", left)
	}
}

// ReadFile reports progress as the file is read, ending at its size.
func TestReadFileProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pftrace")
	if err := WriteFile(path, Perfetto, sample()); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	var calls, last, size int64
	s, err := Perfetto.ReadFile(path, func(read, total int64) {
		if read < last {
			t.Errorf("progress went back: %d after %d", read, last)
		}
		calls++
		last, size = read, total
	})
	if err != nil || len(s.Events) == 0 {
		t.Fatalf("ReadFile: %v", err)
	}
	if calls == 0 || last != st.Size() || size != st.Size() {
		t.Errorf("progress: %d calls, last %d of %d, file %d bytes", calls, last, size, st.Size())
	}
}

// TestDetectProfiles: a pprof profile is no trace, whatever its name,
// compressed or not; Detect says which kind of profile it is instead of
// letting the Perfetto reader, which has no signature to check, read it as
// an empty trace.
func TestDetectProfiles(t *testing.T) {
	dir := t.TempDir()
	mem := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: 4096, Count: 1, Device: 0, Kind: "device"}}}
	var memGz bytes.Buffer
	if err := pprof.Write(&memGz, mem); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(memGz.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	memPlain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cpu := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	var cpuGz bytes.Buffer
	if err := cpu.Write(&cpuGz); err != nil {
		t.Fatal(err)
	}
	var runtimeCPU bytes.Buffer // starts with time_nanos, not a sample type
	if err := rtpprof.StartCPUProfile(&runtimeCPU); err != nil {
		t.Fatal(err)
	}
	rtpprof.StopCPUProfile()
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"runtime-cpu.pprof":   {runtimeCPU.Bytes(), "is a pprof profile, not a trace: open it with go tool pprof"},
		"memory.pb.gz":        {memGz.Bytes(), "is a device-memory profile (pprof), not a trace"},
		"memory.pb":           {memPlain, "is a device-memory profile (pprof), not a trace"},
		"misnamed.pftrace":    {memPlain, "is a device-memory profile (pprof), not a trace"},
		"misnamed.pftrace.gz": {memGz.Bytes(), "is a device-memory profile (pprof), not a trace"},
		"cpu.pb.gz":           {cpuGz.Bytes(), "is a pprof profile, not a trace: open it with go tool pprof"},
		"cut.pb":              {memPlain[:len(memPlain)/2], "looks like a pprof profile, not a trace, but does not read as a memory profile: pprof: not a pprof profile"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Detect(path)
		if f != nil || !errors.Is(err, ErrNotTrace) || !strings.HasPrefix(err.Error(), path+" ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Detect(%s) = %v, %v; want ErrNotTrace saying %q", name, f, err, c.want)
		}
		if s, _, err := Read(path); s != nil || !errors.Is(err, ErrNotTrace) {
			t.Errorf("Read(%s) = %v, %v; want ErrNotTrace", name, s != nil, err)
		}
	}
}

// A Go execution trace streams through ReadFileWith: progress ends at the
// file's size and MaxEvents bounds the events kept (the GC's slices may
// go past it, nothing else); a format read whole refuses a bound.
func TestReadFileWithGoTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rttrace.Start(f); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	rttrace.Stop()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	var last int64
	full, err := GoTrace.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := GoTrace.ReadFileWith(path, ReadOptions{MaxEvents: 5, Progress: func(read, _ int64) { last = read }})
	if err != nil {
		t.Fatal(err)
	}
	if last != st.Size() || len(s.Events) < 5 || len(s.Events) >= len(full.Events) || s.Meta.Dropped() == 0 {
		t.Errorf("bounded at 5: progress ended at %d of %d bytes; %d events of %d kept, %d dropped", last, st.Size(), len(s.Events), len(full.Events), s.Meta.Dropped())
	}
	pf := filepath.Join(t.TempDir(), "x.pftrace")
	if err := WriteFile(pf, Perfetto, sample()); err != nil {
		t.Fatal(err)
	}
	if _, err := Perfetto.ReadFileWith(pf, ReadOptions{MaxEvents: 5}); err == nil || !strings.Contains(err.Error(), "read whole") {
		t.Errorf("a bound on a Perfetto file: %v", err)
	}
}
