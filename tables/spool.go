package tables

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/devprof/devprof/event"
)

// A spool holds a Writer's finished events on disk until the trace ends:
// readers fill in the clock anchor that maps their times to Unix
// nanoseconds, the host's name and the tracks' final names only at the
// end of a file, so no row can be written before. Each event is a few
// varints and its strings, written and read back sequentially, so the
// trace's events cost disk, not memory.
type spool struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
	n   int64 // events written
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".spool-*")
	if err != nil {
		return nil, err
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// Event flags in a spooled event's first byte, above its kind.
const (
	spoolFinished = 1 << 3
	spoolStep     = 1 << 4
)

// put writes e.
func (s *spool) put(e *ev) error {
	b := s.buf[:0]
	flags := byte(e.kind)
	if e.finished {
		flags |= spoolFinished
	}
	if e.step {
		flags |= spoolStep
	}
	b = append(b, flags, byte(e.activity))
	b = binary.AppendUvarint(b, e.id)
	b = binary.AppendUvarint(b, e.parent)
	b = binary.AppendUvarint(b, uint64(e.track))
	b = appendString(b, e.name)
	b = binary.AppendVarint(b, e.start)
	b = binary.AppendVarint(b, e.end-e.start)
	if e.step {
		b = binary.AppendVarint(b, e.stepNum)
	}
	if e.kind == event.KindCounter {
		b = appendString(b, e.unit)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.value))
	}
	b = binary.AppendUvarint(b, uint64(len(e.args)))
	for i := range e.args {
		a := &e.args[i]
		b = appendString(b, a.Key)
		b = append(b, byte(a.Kind))
		if a.Kind == event.ArgString {
			b = appendString(b, a.Str)
		} else {
			b = binary.AppendUvarint(b, a.Num)
		}
	}
	s.buf = b
	s.n++
	_, err := s.w.Write(b)
	return err
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reset discards every event written.
func (s *spool) reset() error {
	s.w.Reset(s.f)
	s.n = 0
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

// replay reads every event back, in the order written, into fn. The ev
// and its strings and arguments are valid during the call only where
// said: strings are interned in a bounded cache, so fn may keep them.
func (s *spool) replay(fn func(*ev) error) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := &spoolReader{r: bufio.NewReaderSize(s.f, 1<<20), strs: map[string]string{}}
	var e ev
	for i := int64(0); i < s.n; i++ {
		if err := r.next(&e); err != nil {
			return fmt.Errorf("tables: reading back the spool: %w", err)
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

// close removes the spool's file.
func (s *spool) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// spoolReader decodes spooled events.
type spoolReader struct {
	r    *bufio.Reader
	strs map[string]string // interned strings, cleared when large
	big  []byte
}

// maxInterned bounds the read-back string cache: names repeat, but a
// trace of unique strings must not grow it without end.
const maxInterned = 1 << 16

var errCorrupt = errors.New("corrupt spool")

func (r *spoolReader) next(e *ev) error {
	var hdr [2]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		return err
	}
	e.kind = event.Kind(hdr[0] & 7)
	e.finished = hdr[0]&spoolFinished != 0
	e.step = hdr[0]&spoolStep != 0
	e.activity = event.ActivityKind(hdr[1])
	var err error
	u := func() uint64 {
		v, rerr := binary.ReadUvarint(r.r)
		if err == nil {
			err = rerr
		}
		return v
	}
	v := func() int64 {
		x, rerr := binary.ReadVarint(r.r)
		if err == nil {
			err = rerr
		}
		return x
	}
	e.id = u()
	e.parent = u()
	e.track = uint32(u())
	e.name, err = r.str(err)
	e.start = v()
	e.end = e.start + v()
	e.stepNum = 0
	if e.step {
		e.stepNum = v()
	}
	if e.kind == event.KindCounter {
		e.unit, err = r.str(err)
		var f [8]byte
		if err == nil {
			_, err = io.ReadFull(r.r, f[:])
		}
		e.value = math.Float64frombits(binary.LittleEndian.Uint64(f[:]))
	}
	n := u()
	if err != nil {
		return err
	}
	if n > 1<<20 {
		return errCorrupt
	}
	e.args = e.args[:0]
	for range n {
		var a event.Arg
		a.Key, err = r.str(err)
		var k byte
		if err == nil {
			k, err = r.r.ReadByte()
		}
		a.Kind = event.ArgKind(k)
		if a.Kind == event.ArgString {
			a.Str, err = r.str(err)
		} else {
			a.Num = u()
		}
		if err != nil {
			return err
		}
		e.args = append(e.args, a)
	}
	return nil
}

// str reads a string, interned (unless err is already set).
func (r *spoolReader) str(err error) (string, error) {
	if err != nil {
		return "", err
	}
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	var b []byte
	if n <= uint64(r.r.Size()) {
		if b, err = r.r.Peek(int(n)); err != nil {
			return "", err
		}
		defer r.r.Discard(int(n))
	} else {
		if n > 1<<31 {
			return "", errCorrupt
		}
		r.big = append(r.big[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r.r, r.big); err != nil {
			return "", err
		}
		return string(r.big), nil
	}
	if s, ok := r.strs[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(r.strs) >= maxInterned {
		clear(r.strs)
	}
	if len(s) <= 256 {
		r.strs[s] = s
	}
	return s, nil
}
