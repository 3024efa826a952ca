package analysis

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
)

// What the analysis keeps per piece of device work and per launch call
// grows with the trace; past Options.MemoryBudget it goes to a temporary
// file in fixed-size records, and Report reads it back in chunks: a
// trace of any length is analyzed in about the budget.

// DefaultMemoryBudget is how much of the device work and launch calls an
// Analyzer holds in memory before it spills them to a temporary file,
// unless Options.MemoryBudget says otherwise.
const DefaultMemoryBudget = 64 << 20

// spillFile is the temporary file an Analyzer spills to: blocks of
// records appended and read back by offset. It is made on the first
// spill and unlinked at once where the system allows (Unix), so that
// nothing is left behind however the program ends; elsewhere Reset and
// Report remove it.
type spillFile struct {
	dir  string
	f    *os.File
	size int64
	// path is the file's name while it still has one (not unlinked).
	path string
	// err is the first error: writes stop there, and Report returns it.
	err error
	// buf is where records are encoded before they are written.
	buf []byte
}

// spillChunk is how many bytes of records are encoded and written at
// once.
const spillChunk = 1 << 20

func (s *spillFile) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("analysis: spilling to a temporary file in %s: %w", s.where(), err)
	}
}

func (s *spillFile) where() string {
	if s.dir != "" {
		return s.dir
	}
	return os.TempDir()
}

// write appends b and returns its offset.
func (s *spillFile) write(b []byte) int64 {
	if s.err != nil {
		return 0
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "devprof-analysis-*")
		if err != nil {
			s.fail(err)
			return 0
		}
		s.f, s.path = f, f.Name()
		if os.Remove(f.Name()) == nil {
			s.path = ""
		}
	}
	off := s.size
	if _, err := s.f.WriteAt(b, off); err != nil {
		s.fail(err)
		return 0
	}
	s.size += int64(len(b))
	return off
}

// read fills b from offset off.
func (s *spillFile) read(b []byte, off int64) {
	if s.err != nil {
		return
	}
	if s.f == nil {
		s.fail(errors.New("read before any write"))
		return
	}
	if _, err := s.f.ReadAt(b, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.fail(err)
	}
}

// close closes and removes the file; the spillFile may be used again.
func (s *spillFile) close() {
	if s.f != nil {
		s.f.Close()
		if s.path != "" {
			os.Remove(s.path)
		}
	}
	s.f, s.size, s.path = nil, 0, ""
}

// codec writes a record of type T in size bytes and reads it back.
type codec[T any] struct {
	size int
	put  func(b []byte, v *T)
	get  func(b []byte, v *T)
}

// block is a run of records in the spill file: n records from offset
// off, the first of them record first of its spool.
type block struct {
	off   int64
	n     int
	first int
}

// spool is a sequence of records, appended and read back in order: the
// last ones in memory (tail), the rest in blocks of the spill file.
type spool[T any] struct {
	blocks  []block
	spilled int // records in blocks
	tail    []T
}

func (s *spool[T]) len() int { return s.spilled + len(s.tail) }

// flush writes the tail to f as one block. The tail's memory is kept
// for the records to come while the tail filled at least half of it:
// tails that fill again as they did keep their memory, and what a tail
// no longer needs is let go.
func (s *spool[T]) flush(f *spillFile, c *codec[T]) {
	if len(s.tail) == 0 {
		return
	}
	per := max(spillChunk/c.size, 1)
	if len(f.buf) < per*c.size {
		f.buf = make([]byte, per*c.size)
	}
	off := int64(-1)
	for i := 0; i < len(s.tail); i += per {
		n := min(per, len(s.tail)-i)
		buf := f.buf[:n*c.size]
		for j := range n {
			c.put(buf[j*c.size:], &s.tail[i+j])
		}
		// One writer appends: the pieces of a block are contiguous.
		if o := f.write(buf); off < 0 {
			off = o
		}
	}
	s.blocks = append(s.blocks, block{off, len(s.tail), s.spilled})
	s.spilled += len(s.tail)
	if 2*len(s.tail) < cap(s.tail) {
		s.tail = nil
	} else {
		s.tail = s.tail[:0]
	}
}

// at returns record i if it is still in memory, else nil.
func (s *spool[T]) at(i int) *T {
	if i < s.spilled || i >= s.len() {
		return nil
	}
	return &s.tail[i-s.spilled]
}

// get returns record i, reading it from the file if it was spilled.
func (s *spool[T]) get(f *spillFile, c *codec[T], i int) T {
	var v T
	if p := s.at(i); p != nil {
		return *p
	}
	k := sort.Search(len(s.blocks), func(k int) bool { return s.blocks[k].first > i }) - 1
	if k < 0 || i < 0 || i >= s.spilled {
		return v
	}
	b := make([]byte, c.size)
	f.read(b, s.blocks[k].off+int64((i-s.blocks[k].first)*c.size))
	c.get(b, &v)
	return v
}

// source is a sequence of records read in order.
type source[T any] interface {
	// next returns the next record, false at the end (or on an error,
	// which the spill file keeps).
	next() (T, bool)
}

// spoolReader reads a spool back, chunk records at a time from its
// blocks.
type spoolReader[T any] struct {
	s     *spool[T]
	f     *spillFile
	c     *codec[T]
	chunk int
	buf   []byte
	recs  []T
	at    int // next record in recs
	blk   int // block being read
	inBlk int // records of it read
	index int // index of the next record in the spool
	tail  bool
}

func (s *spool[T]) reader(f *spillFile, c *codec[T], chunk int) *spoolReader[T] {
	return &spoolReader[T]{s: s, f: f, c: c, chunk: max(chunk, 1)}
}

func (r *spoolReader[T]) next() (T, bool) {
	for r.at >= len(r.recs) {
		if !r.fill() {
			var zero T
			return zero, false
		}
	}
	v := r.recs[r.at]
	r.at++
	r.index++
	return v, true
}

// fill reads the next chunk into recs.
func (r *spoolReader[T]) fill() bool {
	r.at = 0
	if r.blk < len(r.s.blocks) && r.f.err == nil {
		b := r.s.blocks[r.blk]
		n := min(r.chunk, b.n-r.inBlk)
		if cap(r.buf) < n*r.c.size {
			r.buf = make([]byte, n*r.c.size)
		}
		buf := r.buf[:n*r.c.size]
		r.f.read(buf, b.off+int64(r.inBlk*r.c.size))
		if cap(r.recs) < n {
			r.recs = make([]T, n)
		}
		r.recs = r.recs[:n]
		for i := range n {
			r.c.get(buf[i*r.c.size:], &r.recs[i])
		}
		if r.inBlk += n; r.inBlk == b.n {
			r.blk, r.inBlk = r.blk+1, 0
		}
		return r.f.err == nil
	}
	if r.tail || r.f.err != nil {
		r.recs = r.recs[:0]
		return false
	}
	r.tail = true
	r.recs, r.buf = r.s.tail, nil
	return len(r.recs) > 0
}

// extSort sorts records by cmp: in memory up to limit records, past
// that in sorted runs in the spill file merged as they are read. Records
// that compare equal come out in the order they went in when stable is
// set, else in any order.
type extSort[T any] struct {
	c      *codec[T]
	cmp    func(x, y T) int
	stable bool
	limit  int
	buf    []T
	runs   []spool[T]
	f      *spillFile
}

func newExtSort[T any](f *spillFile, c *codec[T], cmp func(x, y T) int, limitBytes int) *extSort[T] {
	return &extSort[T]{c: c, cmp: cmp, f: f, limit: max(limitBytes/c.size, 64)}
}

// reserve makes room in memory for n more records (up to the limit),
// so that a sort whose size is known does not grow its buffer step by
// step.
func (e *extSort[T]) reserve(n int) {
	e.buf = slices.Grow(e.buf, min(n, e.limit))
}

func (e *extSort[T]) add(v T) {
	e.buf = append(e.buf, v)
	if len(e.buf) >= e.limit {
		e.spill()
	}
}

func (e *extSort[T]) sort() {
	if e.stable {
		slices.SortStableFunc(e.buf, e.cmp)
	} else {
		slices.SortFunc(e.buf, e.cmp)
	}
}

func (e *extSort[T]) spill() {
	e.sort()
	run := spool[T]{tail: e.buf}
	run.flush(e.f, e.c)
	run.tail = nil
	e.runs = append(e.runs, run)
	e.buf = e.buf[:0]
}

// sorted returns the records in order; chunk is how many records each
// run's reader holds. The extSort is done with.
func (e *extSort[T]) sorted(chunk int) source[T] {
	e.sort()
	mem := &spool[T]{tail: e.buf}
	if len(e.runs) == 0 {
		return mem.reader(e.f, e.c, chunk)
	}
	// The runs in the order they were written, the records still in
	// memory last: ties go to the earlier run.
	m := &mergeSource[T]{cmp: e.cmp}
	for i := range e.runs {
		m.add(e.runs[i].reader(e.f, e.c, chunk))
	}
	m.add(mem.reader(e.f, e.c, chunk))
	heap.Init(m)
	return m
}

// mergeSource merges sorted sources into one, ties to the source added
// first.
type mergeSource[T any] struct {
	cmp  func(x, y T) int
	srcs []mergeHead[T]
}

type mergeHead[T any] struct {
	src source[T]
	v   T
	seq int
}

func (m *mergeSource[T]) add(s source[T]) {
	if v, ok := s.next(); ok {
		m.srcs = append(m.srcs, mergeHead[T]{s, v, len(m.srcs)})
	}
}

// fewSources is how many sources a merge scans for the least rather
// than keeping them in a heap.
const fewSources = 8

func (m *mergeSource[T]) next() (T, bool) {
	v, _, ok := m.nextFrom()
	return v, ok
}

// nextFrom is next, with the source the record came from.
func (m *mergeSource[T]) nextFrom() (T, source[T], bool) {
	if len(m.srcs) == 0 {
		var zero T
		return zero, nil, false
	}
	least := 0
	if len(m.srcs) <= fewSources {
		for i := 1; i < len(m.srcs); i++ {
			if c := m.cmp(m.srcs[i].v, m.srcs[least].v); c < 0 || c == 0 && m.srcs[i].seq < m.srcs[least].seq {
				least = i
			}
		}
	}
	h := &m.srcs[least]
	v, src := h.v, h.src
	nv, ok := src.next()
	switch {
	case ok:
		h.v = nv
		if len(m.srcs) > fewSources {
			heap.Fix(m, 0)
		}
	case len(m.srcs) > fewSources:
		heap.Pop(m)
	default:
		m.srcs = slices.Delete(m.srcs, least, least+1)
	}
	return v, src, true
}

func (m *mergeSource[T]) Len() int { return len(m.srcs) }
func (m *mergeSource[T]) Less(a, b int) bool {
	x, y := &m.srcs[a], &m.srcs[b]
	return cmp.Or(m.cmp(x.v, y.v), cmp.Compare(x.seq, y.seq)) < 0
}
func (m *mergeSource[T]) Swap(a, b int) { m.srcs[a], m.srcs[b] = m.srcs[b], m.srcs[a] }
func (m *mergeSource[T]) Push(x any)    { m.srcs = append(m.srcs, x.(mergeHead[T])) }
func (m *mergeSource[T]) Pop() any {
	x := m.srcs[len(m.srcs)-1]
	m.srcs = m.srcs[:len(m.srcs)-1]
	return x
}
