package tables

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	"github.com/devprof/devprof/event"
)

// A spool holds a Writer's finished events on disk until the trace ends:
// readers fill in the clock anchor that maps their times to Unix
// nanoseconds, the host's name and the tracks' final names only at the
// end of a file, so no row can be written before. Each event is a few
// varints and its strings, written and read back sequentially, so the
// trace's events cost disk, not memory.
type spool struct {
	f     *os.File
	w     *bufio.Writer
	buf   []byte
	n     int64 // events written
	slots [stringSlots]string
}

// stringSlots is the size of the table of recent strings that a spool
// refers back to instead of writing them again. A reader passes the same
// string (the same bytes in memory) for every event of one name, so a
// slot is found by the string's address, without hashing its bytes:
// names, keys and values cost a few bytes on disk and no lookup by
// content when read back. The slot holds the string, which keeps its
// bytes alive, so an equal address means an equal string.
const stringSlots = 1 << stringSlotBits

const stringSlotBits = 12

// slotOf hashes every bit of the string's address: short strings share
// 16-byte blocks (Go's tiny allocator packs them), so names of one length
// allocated together ("op_1", "op_2") differ only in their low 4 bits,
// and a hash that dropped them sent them to one slot to evict each other
// on every event.
func slotOf(s string) int {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) ^ uint64(len(s))<<48
	return int(p * 0x9e3779b97f4a7c15 >> (64 - stringSlotBits))
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
	spoolFinished   = 1 << 3
	spoolStep       = 1 << 4
	spoolAnnotation = 1 << 5
)

// put writes e.
func (s *spool) put(e *ev) error {
	// The record goes after room for its length, written in front of
	// it at the end.
	b := append(s.buf[:0], make([]byte, binary.MaxVarintLen64)...)
	flags := byte(e.kind)
	if e.finished {
		flags |= spoolFinished
	}
	if e.step {
		flags |= spoolStep
	}
	if e.annotation {
		flags |= spoolAnnotation
	}
	b = append(b, flags, byte(e.activity))
	b = binary.AppendUvarint(b, e.id)
	b = binary.AppendUvarint(b, e.parent)
	b = binary.AppendUvarint(b, uint64(e.track))
	b = s.appendString(b, e.name)
	b = binary.AppendVarint(b, e.start)
	b = binary.AppendVarint(b, e.end-e.start)
	if e.step {
		b = binary.AppendVarint(b, e.stepNum)
	}
	if e.kind == event.KindCounter {
		b = s.appendString(b, e.unit)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.value))
	}
	b = binary.AppendUvarint(b, uint64(len(e.args)))
	for i := range e.args {
		a := &e.args[i]
		b = s.appendString(b, a.Key)
		b = append(b, byte(a.Kind))
		if a.Kind == event.ArgString {
			b = s.appendString(b, a.Str)
		} else {
			b = binary.AppendUvarint(b, a.Num)
		}
	}
	s.buf = b
	s.n++
	var n [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(n[:], uint64(len(b)-binary.MaxVarintLen64))
	start := binary.MaxVarintLen64 - k
	copy(b[start:], n[:k])
	_, err := s.w.Write(b[start:])
	return err
}

// appendString writes str: 0 for "", slot<<1|1 for the string a slot
// holds, else len<<1, the slot it now takes and its bytes.
func (s *spool) appendString(b []byte, str string) []byte {
	if str == "" {
		return append(b, 0)
	}
	i := slotOf(str)
	if old := s.slots[i]; len(old) == len(str) && unsafe.StringData(old) == unsafe.StringData(str) {
		return binary.AppendUvarint(b, uint64(i)<<1|1)
	}
	s.slots[i] = str
	b = binary.AppendUvarint(b, uint64(len(str))<<1)
	b = binary.AppendUvarint(b, uint64(i))
	return append(b, str...)
}

// reset discards every event written.
func (s *spool) reset() error {
	s.w.Reset(s.f)
	s.n = 0
	clear(s.slots[:])
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

// replay reads every event back, in the order written, into fn. The ev
// and its arguments are valid during the call only; its strings may be
// kept.
func (s *spool) replay(fn func(*ev) error) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := &spoolReader{r: s.f, buf: make([]byte, 0, 1<<20), strs: map[string]string{}}
	var e ev
	for i := int64(0); i < s.n; i++ {
		rec, err := r.record()
		if err == nil {
			err = decode(rec, &e, r)
		}
		if err != nil {
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

// spoolReader reads spooled records a window at a time.
type spoolReader struct {
	r     io.Reader
	buf   []byte // the window: buf[off:] is unread
	off   int
	strs  map[string]string // interned strings, cleared when large
	slots [stringSlots]string
}

// maxInterned bounds the read-back string cache: names repeat, but a
// trace of unique strings must not grow it without end.
const maxInterned = 1 << 16

var errCorrupt = errors.New("corrupt spool")

// record returns the next record's bytes, valid until the next call.
func (r *spoolReader) record() ([]byte, error) {
	n, k := binary.Uvarint(r.buf[r.off:])
	if k <= 0 || uint64(len(r.buf)-r.off-k) < n {
		if err := r.fill(); err != nil {
			return nil, err
		}
		if n, k = binary.Uvarint(r.buf[r.off:]); k <= 0 {
			return nil, errCorrupt
		}
		if uint64(len(r.buf)-r.off-k) < n {
			if n > 1<<40 {
				return nil, errCorrupt
			}
			// A record larger than the window: grow the window to fit.
			need := r.off + k + int(n)
			if need > cap(r.buf) {
				r.buf = append(make([]byte, 0, need), r.buf...)
			}
			m, err := io.ReadFull(r.r, r.buf[len(r.buf):need])
			r.buf = r.buf[:len(r.buf)+m]
			if err != nil {
				return nil, errCorrupt
			}
		}
	}
	rec := r.buf[r.off+k : r.off+k+int(n)]
	r.off += k + int(n)
	return rec, nil
}

// fill moves the unread bytes to the window's start and reads more.
func (r *spoolReader) fill() error {
	rest := copy(r.buf[:cap(r.buf)], r.buf[r.off:])
	r.buf, r.off = r.buf[:rest], 0
	n, err := io.ReadFull(r.r, r.buf[rest:cap(r.buf)])
	r.buf = r.buf[:rest+n]
	if err == io.ErrUnexpectedEOF || err == io.EOF && rest+n > 0 {
		err = nil
	}
	return err
}

// decoder reads the fields of one record.
type decoder struct {
	b   []byte
	err error
	r   *spoolReader
}

func (d *decoder) u() uint64 {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) v() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.err, d.b = errCorrupt, nil
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

// str reads a string: one a slot holds, or one written out, interned in
// a bounded cache and put in its slot.
func (d *decoder) str() string {
	tag := d.u()
	if tag == 0 || d.err != nil {
		return ""
	}
	if tag&1 == 1 {
		if tag>>1 >= stringSlots {
			d.err, d.b = errCorrupt, nil
			return ""
		}
		return d.r.slots[tag>>1]
	}
	n, slot := tag>>1, d.u()
	if slot >= stringSlots {
		d.err, d.b = errCorrupt, nil
		return ""
	}
	s := d.literal(n)
	d.r.slots[slot] = s
	return s
}

// literal reads n bytes as a string, interned in a bounded cache.
func (d *decoder) literal(n uint64) string {
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err, d.b = errCorrupt, nil
		return ""
	}
	b := d.bytes(int(n))
	if s, ok := d.r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.r.strs) >= maxInterned {
		clear(d.r.strs)
	}
	if len(s) <= 256 {
		d.r.strs[s] = s
	}
	return s
}

func decode(rec []byte, e *ev, r *spoolReader) error {
	d := decoder{b: rec, r: r}
	hdr := d.bytes(2)
	if d.err != nil {
		return d.err
	}
	e.kind = event.Kind(hdr[0] & 7)
	e.finished = hdr[0]&spoolFinished != 0
	e.step = hdr[0]&spoolStep != 0
	e.annotation = hdr[0]&spoolAnnotation != 0
	e.activity = event.ActivityKind(hdr[1])
	e.id = d.u()
	e.parent = d.u()
	e.track = uint32(d.u())
	e.name = d.str()
	e.start = d.v()
	e.end = e.start + d.v()
	e.stepNum = 0
	if e.step {
		e.stepNum = d.v()
	}
	e.unit, e.value = "", 0
	if e.kind == event.KindCounter {
		e.unit = d.str()
		if f := d.bytes(8); f != nil {
			e.value = math.Float64frombits(binary.LittleEndian.Uint64(f))
		}
	}
	n := d.u()
	if d.err != nil {
		return d.err
	}
	if n > uint64(len(d.b)) {
		return errCorrupt
	}
	e.args = e.args[:0]
	for range n {
		var a event.Arg
		a.Key = d.str()
		if k := d.bytes(1); k != nil {
			a.Kind = event.ArgKind(k[0])
		}
		if a.Kind == event.ArgString {
			a.Str = d.str()
		} else {
			a.Num = d.u()
		}
		if d.err != nil {
			return d.err
		}
		e.args = append(e.args, a)
	}
	return d.err
}
