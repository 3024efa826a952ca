package perfetto

import (
	"bufio"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"

	"github.com/devprof/devprof/internal/protoenc"
	kflate "github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// This file holds the reader's input: the file as a stream of top-level
// TracePackets (gzip-compressed files inflated as they are read), and the
// packets inside compressed_packets, inflated one field at a time into a
// buffer that is reused. No more of the file than one packet (or one
// compressed_packets field and what it inflates to) is held at a time.

// packetSource reads the top-level fields of a Trace from a stream.
type packetSource struct {
	r          io.Reader
	buf        []byte
	start, end int   // buf[start:end] is read and not yet consumed
	off        int64 // offset in the stream of buf[start]
	eof        bool
	readErr    error
	head       []byte // the stream's first bytes, for firstError
}

// minRead is how much a packetSource asks of its reader at a time.
const minRead = 256 << 10

func newPacketSource(r io.Reader) *packetSource {
	return &packetSource{r: r, buf: make([]byte, minRead)}
}

// next returns the next top-level field, its offset in the stream and
// its size, or io.EOF at the end of the stream. The field's bytes are
// valid until the next call.
func (s *packetSource) next() (field, int64, error) {
	for {
		b := s.buf[s.start:s.end]
		if len(b) == 0 && s.eof {
			if s.readErr != nil {
				return field{}, s.off, s.readErr
			}
			return field{}, s.off, io.EOF
		}
		if need, ok := fieldSize(b); ok && need <= len(b) || s.eof {
			f, n, err := readField(b)
			if err != nil {
				if s.readErr != nil {
					return field{}, s.off, s.readErr // the stream broke off: say why, not that it is truncated
				}
				return field{}, s.off, err
			}
			off := s.off
			s.start += n
			s.off += int64(n)
			return f, off, nil
		} else if ok {
			s.fill(need)
		} else {
			s.fill(len(b) + 1)
		}
	}
}

// fill reads until at least need bytes are unconsumed, or the stream
// ends. The buffer grows with what is read, never to a length a field
// only declares: a hostile length costs no more than the bytes that
// follow it.
func (s *packetSource) fill(need int) {
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:s.end])
		s.start, s.end = 0, n
	}
	for s.end < need && !s.eof {
		if s.end == len(s.buf) {
			nb := make([]byte, min(need, 2*len(s.buf)))
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
		n, err := s.r.Read(s.buf[s.end:])
		if s.head == nil && s.off == 0 && s.start == 0 {
			s.head = bytes.Clone(s.buf[:min(s.end+n, 64)])
		}
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.readErr = err
			}
		}
	}
}

// fieldSize returns how many bytes the field at the start of b takes,
// when b holds enough of it to say (its tag, and for a length-delimited
// field its length); false when it does not, or when the field is
// malformed (readField reports that).
func fieldSize(b []byte) (int, bool) {
	tag, n := consumeVarint(b)
	if n <= 0 {
		return 0, false
	}
	switch tag & 7 {
	case wireVarint:
		_, m := consumeVarint(b[n:])
		if m <= 0 {
			return 0, false
		}
		return n + m, true
	case wireI64:
		return n + 8, true
	case 5: // fixed32
		return n + 4, true
	case wireBytes:
		l, m := consumeVarint(b[n:])
		if m <= 0 || l > 1<<40 {
			return 0, false
		}
		return n + m + int(l), true
	}
	return 0, false
}

// consumeVarint decodes the varint at the start of b: its value and
// length, or a length of 0 when b ends inside it (or it overflows).
func consumeVarint(b []byte) (uint64, int) {
	v, n := protoenc.Varint(b)
	if n <= 0 {
		return 0, 0
	}
	return v, n
}

// openStream returns the trace's bytes as a stream: r itself, or r
// inflated when it starts with gzip's magic. JSON and zstd are told
// apart by their first bytes only once the content fails to read as
// protobuf (see notProtobuf).
func openStream(r io.Reader) (src io.Reader, gz bool, closeFn func(), err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, true, nil, fmt.Errorf("perfetto: reading gzip: %w", err)
		}
		return zr, true, func() { zr.Close() }, nil
	}
	if bytes.Equal(head, zstdMagic) {
		return nil, false, nil, errors.New("perfetto: zstd-compressed traces are not supported (decompress the file first)")
	}
	return br, false, func() {}, nil
}

// inflater inflates compressed_packets fields into one buffer that it
// reuses, with decompressors it resets rather than remakes.
type inflater struct {
	out bytes.Buffer
	in  bytes.Reader
	fl  io.ReadCloser // raw deflate, reset per field
	zl  io.ReadCloser // zlib
	gz  *gzip.Reader
	lim io.LimitedReader
}

// inflate decompresses b (zlib; raw deflate and gzip are accepted too)
// and returns the result, valid until the next call.
func (z *inflater) inflate(b []byte) ([]byte, error) {
	z.in.Reset(b)
	var rd io.Reader
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b:
		if z.gz == nil {
			zr, err := gzip.NewReader(&z.in)
			if err != nil {
				return nil, err
			}
			z.gz = zr
		} else if err := z.gz.Reset(&z.in); err != nil {
			return nil, err
		}
		rd = z.gz
	case len(b) >= 2 && b[0]&0x0f == 8 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0:
		if z.zl == nil {
			zr, err := zlib.NewReader(&z.in)
			if err != nil {
				return nil, err
			}
			z.zl = zr
		} else if err := z.zl.(zlib.Resetter).Reset(&z.in, nil); err != nil {
			return nil, err
		}
		rd = z.zl
	default:
		if z.fl == nil {
			z.fl = kflate.NewReader(&z.in)
		} else if err := z.fl.(flate.Resetter).Reset(&z.in, nil); err != nil {
			return nil, err
		}
		rd = z.fl
	}
	z.out.Reset()
	z.lim = io.LimitedReader{R: rd, N: maxInflated + 1}
	if _, err := z.out.ReadFrom(&z.lim); err != nil {
		return nil, err
	}
	if z.out.Len() > maxInflated {
		return nil, fmt.Errorf("expands to more than %d bytes", maxInflated)
	}
	return z.out.Bytes(), nil
}
