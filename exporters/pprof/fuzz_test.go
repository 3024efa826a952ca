package pprof

import (
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// fuzzSeeds are profiles devprof and JAX write, plain and compressed, and
// damaged copies of them. The committed corpus (testdata/fuzz/FuzzRead)
// keeps what the fuzzer found beyond these.
func fuzzSeeds(t testing.TB) [][]byte {
	ours := encode(t, fixture())
	zr, err := gzip.NewReader(bytes.NewReader(ours))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(plain)
	flipped[len(flipped)/3] ^= 0x40
	return [][]byte{
		ours, plain, flipped, plain[:len(plain)/2], ours[:len(ours)-5],
		write(t, jaxProfile(), true), write(t, jaxProfile(), false),
		encode(t, &event.DeviceMemory{}),
	}
}

// FuzzRead: whatever the bytes, Read returns a model or an error with the
// package's prefix, never both and never a panic; a model it returns can
// be written, and reads back with the same totals, counts and warnings.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data))
		if err != nil {
			if m != nil {
				t.Fatal("a model and an error")
			}
			if !strings.HasPrefix(err.Error(), "pprof: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := Write(&out, m); err != nil {
			t.Fatalf("writing what was read: %v", err)
		}
		back, err := Read(&out)
		if err != nil {
			t.Fatalf("reading what was written: %v", err)
		}
		b1, n1 := m.Live()
		b2, n2 := back.Live()
		if b1 != b2 || n1 != n2 || back.Counts != m.Counts || !m.Time.Equal(back.Time) {
			t.Fatalf("read %d bytes in %d buffers, counts %+v at %v; again %d in %d, %+v at %v", b1, n1, m.Counts, m.Time, b2, n2, back.Counts, back.Time)
		}
		if !slices.Equal(m.Warnings, back.Warnings) {
			t.Fatalf("warnings %q read back as %q", m.Warnings, back.Warnings)
		}
	})
}
