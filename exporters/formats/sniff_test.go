package formats

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
)

// perfettoStartingLike encodes a Perfetto trace whose first packet (a
// track descriptor, padded by its name) is exactly size bytes long, so
// that the file starts 0a <size>, followed by a slice "work" from 1000
// to 3000 ns on that track.
func perfettoStartingLike(t *testing.T, size int) []byte {
	t.Helper()
	const uuid = 7
	packet := func(fields ...[]byte) []byte {
		var p []byte
		for _, f := range fields {
			p = append(p, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), p)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	bytesField := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	var first []byte
	for n := 0; n < size; n++ {
		desc := append(varint(1, uuid), bytesField(2, []byte(strings.Repeat("t", n)))...)
		first = packet(varint(10, 1), bytesField(60, desc))
		if len(first)-2 == size { // tag and a one-byte length
			break
		}
	}
	if len(first) < 2 || first[0] != 0x0a || int(first[1]) != size {
		t.Fatalf("no first packet of %d bytes: % x", size, first)
	}
	slice := func(ts uint64, typ uint64, name string) []byte {
		ev := append(varint(9, typ), varint(11, uuid)...)
		if name != "" {
			ev = append(ev, bytesField(23, []byte(name))...)
		}
		return packet(varint(8, ts), varint(10, 1), bytesField(11, ev))
	}
	out := append(first, slice(1000, 1, "work")...) // TYPE_SLICE_BEGIN
	return append(out, slice(3000, 2, "")...)       // TYPE_SLICE_END
}

// TestBinaryTraceIsNeverJSON reads Perfetto traces whose first packet's
// length byte is '{' (0x7b) or '[' (0x5b), after the TracePacket tag
// 0x0a ('\n', which a white-space trim eats): named .json or .pftrace,
// they are Perfetto, read whole.
func TestBinaryTraceIsNeverJSON(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0x7b, 0x5b} {
		data := perfettoStartingLike(t, size)
		if m := Chrome.Sniff(data[:HeadSize]); m != NoMatch {
			t.Errorf("a Perfetto trace starting % x sniffs as JSON (%v)", data[:3], m)
		}
		for _, name := range []string{"x.json", "x.pftrace", "x.trace.json.gz"} {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, f, err := Read(path)
			if err != nil || f != Perfetto {
				t.Fatalf("%s starting % x: %v, %v; want Perfetto", name, data[:3], f, err)
			}
			var spans []string
			for _, r := range s.Events {
				if r.Kind() == event.KindSpan {
					end, _ := s.EndOf(r)
					spans = append(spans, s.Name(r))
					if end-r.Start() != 2000 {
						t.Errorf("%s: span %s lasts %d ns, want 2000", name, s.Name(r), end-r.Start())
					}
				}
			}
			if len(spans) != 1 || spans[0] != "work" {
				t.Errorf("%s: spans %q, want [work]", name, spans)
			}
		}
	}
}

// TestContentOrNameWhicheverParses: when a file's name and content
// disagree, the format whose reader reads it wins, and when neither
// does, the error names both attempts.
func TestContentOrNameWhicheverParses(t *testing.T) {
	dir := t.TempDir()
	var js bytes.Buffer
	if err := Chrome.Write(&js, sample(), false); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// JSON named as Perfetto: its content reads.
	if _, f, err := Read(write("json.pftrace", js.Bytes())); err != nil || f != Chrome {
		t.Errorf("Chrome JSON named .pftrace: %v, %v; want Chrome", f, err)
	}
	// Starts like a Perfetto packet, named JSON, and is neither.
	bad := append([]byte{0x0a, 0x7b}, bytes.Repeat([]byte{0xff}, 0x7b)...)
	path := write("neither.json", bad)
	_, f, err := Read(path)
	if err == nil || f != nil {
		t.Fatalf("neither Perfetto nor JSON: %v, %v; want an error", f, err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{path + ": not Chrome JSON (", "); as Perfetto (by content): "} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Count(msg, path) != 1 || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming the file once", msg)
	}
}
