package chrome

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// FuzzQuickScan: whenever quickScan takes a value, scan (which reads its
// input piece by piece) takes the same bytes and finds the same members.
func FuzzQuickScan(f *testing.F) {
	for _, c := range readCases {
		f.Add([]byte(c.in))
	}
	for _, c := range errorCases {
		if len(c.in) < 1000 {
			f.Add([]byte(c.in))
		}
	}
	f.Add([]byte(`{"ph":"X","name":"a\"\u00e9\\","ts":1.5e3,"dur":-0,"args":{"o":[1,{"x":null}],"t":true,"f":false}} `))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLexer(bytes.NewReader(data))
		l.fill()
		n, ok := l.quickScan(l.buf[l.pos:l.end])
		if !ok {
			return
		}
		quick := slices.Clone(l.members)
		// One byte at a time: scan refills at every byte.
		s := newLexer(&oneByte{data: data})
		m, err := s.scan(0)
		if err != nil || m != n || !slices.Equal(s.members, quick) {
			t.Fatalf("quickScan %d %v, scan %d %v (%v)", n, quick, m, s.members, err)
		}
	})
}

// oneByte reads its data one byte at a time.
type oneByte struct{ data []byte }

func (o *oneByte) Read(b []byte) (int, error) {
	if len(o.data) == 0 {
		return 0, io.EOF
	}
	b[0] = o.data[0]
	o.data = o.data[1:]
	return 1, nil
}

// TestPlainMicros: where the fast path takes a number, it gives what
// micros gives; it leaves other forms to micros.
func TestPlainMicros(t *testing.T) {
	took := 0
	for _, s := range []string{"0", "-0", "1", "225.48", "67253.382", "0.01", "-3.5", "999999999999999.999", "1000000000000000",
		"1.2345", "1e3", "007", "5.", ".5", "-", "", "1.", "12a", "1759000000000000.0001", "123456789012345.1"} {
		ns, ok := plainMicros([]byte(s))
		if !ok {
			continue
		}
		took++
		want, wok := micros([]byte(s))
		if !wok || ns != want {
			t.Errorf("plainMicros(%q) = %d, micros %d, %v", s, ns, want, wok)
		}
	}
	if took < 8 {
		t.Errorf("the fast path took only %d numbers", took)
	}
}
