package xplane

import (
	"bytes"
	"fmt"
	"io"

	"github.com/devprof/devprof/internal/protoenc"
)

// source is the XSpace being read: its bytes in memory (a stream, or a
// gzip-compressed file, inflated), or a file read a window at a time, so
// that reading a file holds neither its bytes nor a decoded copy of its
// events. Both passes of the reader (decode.go) walk the space's large
// messages, planes and lines, field by field through source.field, and
// take the bytes of small ones (an event, a metadata entry) with at.
type source struct {
	data []byte // the whole space, when in memory

	ra     io.ReaderAt // else the file, from base on
	base   int64
	size   int64
	win    []byte // the bytes at winOff, what at returned last
	winOff int64
}

// windowSize is how much of a file source reads at a time (a variable
// for the test that reads with tiny windows).
var windowSize = 1 << 20

// maxHeader is the longest field header: a tag and a length, each a
// varint of at most 10 bytes.
const maxHeader = 20

func bytesSource(b []byte) *source { return &source{data: b, size: int64(len(b))} }

func fileSource(ra io.ReaderAt, base, size int64) *source {
	return &source{ra: ra, base: base, size: size}
}

// at returns the n bytes at off, which must lie within the space; from a
// file they are valid until the next call.
func (s *source) at(off int64, n int) ([]byte, error) {
	if s.ra == nil {
		return s.data[off : off+int64(n)], nil
	}
	if off >= s.winOff && off+int64(n) <= s.winOff+int64(len(s.win)) {
		return s.win[off-s.winOff:][:n], nil
	}
	size := int(min(int64(max(n, windowSize)), s.size-off))
	if cap(s.win) < size {
		s.win = make([]byte, size)
	}
	s.win = s.win[:size]
	s.winOff = off
	if k, err := s.ra.ReadAt(s.win, s.base+off); k < size {
		s.win = s.win[:0]
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading at byte %d: %w", off, err)
	}
	return s.win[:n], nil
}

// field decodes the header of the field at off in the message that ends
// at end: the field (Bytes left nil) and where its value begins and ends.
// It checks what protoenc.Next checks; groups, which XSpace does not use,
// are taken whole.
func (s *source) field(off, end int64) (f protoenc.Field, body, next int64, err error) {
	h, err := s.at(off, int(min(maxHeader, end-off)))
	if err != nil {
		return f, 0, 0, err
	}
	tag, k := protoenc.Varint(h)
	if k <= 0 || tag>>3 == 0 || tag>>3 > protoenc.MaxFieldNumber || tag&7 != protoenc.WireBytes {
		// All but a length-delimited field fit the header, or are
		// groups (taken whole): Next decodes and checks them.
		if k > 0 && tag&7 == protoenc.WireStartGroup {
			if h, err = s.at(off, int(end-off)); err != nil {
				return f, 0, 0, err
			}
		}
		f, n, err := protoenc.Next(h)
		if err != nil {
			return f, 0, 0, err
		}
		f.Bytes = nil
		return f, off + int64(n), off + int64(n), nil
	}
	f.Num, f.Wire = int32(tag>>3), protoenc.WireBytes
	l, m := protoenc.Varint(h[k:])
	if m <= 0 {
		// Next names the fault of the length's varint.
		_, _, err := protoenc.Next(h)
		return f, 0, 0, err
	}
	body = off + int64(k+m)
	if l > uint64(end-body) {
		return f, 0, 0, &protoenc.Error{Num: f.Num, What: fmt.Sprintf("length %d overruns the %d bytes left", l, end-body)}
	}
	return f, body, body + int64(l), nil
}

// walk is a walk over the fields of a message in a source.
type walk struct {
	src        *source
	at, end    int64
	start      int64 // where the message begins, for errors
	field      protoenc.Field
	body, next int64
	err        error
}

func (s *source) walk(off, end int64) walk { return walk{src: s, at: off, end: end, start: off} }

// Next decodes the next field's header, as protoenc.Iter.Next does.
func (w *walk) Next() bool {
	if w.at >= w.end {
		return false
	}
	f, body, next, err := w.src.field(w.at, w.end)
	if err != nil {
		if e, ok := err.(*protoenc.Error); ok {
			e.Offset += int(w.at - w.start)
		}
		w.err, w.at = err, w.end
		return false
	}
	w.field, w.body, w.next, w.at = f, body, next, next
	return true
}

// bytes returns the value of the length-delimited field Next decoded
// (from a file, valid until the source is read again).
func (w *walk) bytes() ([]byte, error) { return w.src.at(w.body, int(w.next-w.body)) }

// all returns the whole space, read into memory from a file (a
// compressed one, which is inflated whole).
func (s *source) all() ([]byte, error) {
	if s.ra == nil {
		return s.data, nil
	}
	if s.size > maxInflated {
		return nil, fmt.Errorf("file of %d bytes exceeds 2 GiB", s.size)
	}
	b := make([]byte, s.size)
	if k, err := s.ra.ReadAt(b, s.base); int64(k) < s.size {
		return nil, err
	}
	return b, nil
}

// looksLikeJSON reports whether the space's first byte past white space
// opens a JSON object or array.
func (s *source) looksLikeJSON() bool {
	for off := int64(0); off < s.size; {
		b, err := s.at(off, int(min(s.size-off, int64(windowSize))))
		if err != nil {
			return false
		}
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			return t[0] == '{' || t[0] == '['
		}
		off += int64(len(b))
	}
	return false
}
