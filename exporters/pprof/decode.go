package pprof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A profile is read in one pass over its (inflated) bytes, one top-level
// field at a time, without holding the file: samples name their
// locations, labels and the string table by number, and writers put the
// samples first and the tables after them (google/pprof's encoder, so
// devprof's and JAX's, ends with the string table), so what a sample
// says is kept in numbers until the tables have come. What is kept is
// what the model needs: each sample as a few numbers, each distinct
// stack of location numbers and each distinct set of labels once, and
// the tables. The rules are google/pprof's parser's (profile.Parse and
// CheckValid): a file it rejects is an error here too, and one it
// reads gives the same model.

// errMalformed is the parser's word for a number that names no string,
// kept so that errors read as they did.
var errMalformed = errors.New("malformed profile format")

// valueType is a sample type or the period type, by string numbers.
type valueType struct{ typ, unit int64 }

// sampleRec is one sample: its stack (seqTable), its labels (labelSets,
// 0 for none) and its values, vals[val:val+nval].
type sampleRec struct {
	seq, labels uint32
	val, nval   uint32
}

// rawLabel is one label as written: string numbers and a number.
type rawLabel struct{ key, str, num, unit int64 }

// location is one location: lines[line:line+nline].
type location struct {
	mapping, address uint64
	line, nline      uint32
}

type line struct {
	function uint64
	number   int64
}

type function struct{ name, systemName, filename int64 }

func newDecoder(r io.Reader) *decoder {
	src := &sourceReader{r: r}
	return &decoder{
		r: bufio.NewReaderSize(src, 64<<10), src: src,
		seqIndex: map[string]uint32{}, tails: map[uint64]struct{}{},
		labelStart: []uint32{0}, labelIndex: map[string]uint32{},
		mappings: map[uint64]int64{}, locations: map[uint64]location{}, functions: map[uint64]function{},
	}
}

// decoder holds what the fields read so far said.
type decoder struct {
	r   *bufio.Reader
	src *sourceReader
	buf []byte // the current field's bytes

	sampleTypes []valueType
	samples     []sampleRec
	vals        []int64
	// seqs are the distinct stacks of the samples, as location numbers:
	// the innermost MaxFrames of each (seqMore says a sample had more,
	// whose numbers are only checked to name locations: tails).
	seqs     []uint64
	seqStart []uint32
	seqMore  []bool
	seqIndex map[string]uint32
	tails    map[uint64]struct{}
	// labelSets are the distinct label lists of the samples; set i is
	// labels[labelStart[i-1]:labelStart[i]], set 0 the empty one.
	labels     []rawLabel
	labelStart []uint32
	labelIndex map[string]uint32

	mappings  map[uint64]int64 // by id: the file's string
	locations map[uint64]location
	lines     []line
	functions map[uint64]function
	strs      []byte
	strEnd    []uint32
	comments  []int64

	timeNanos              int64
	dropFrames, keepFrames int64
	defaultType, docURL    int64
	periodType             valueType
	maxString              uint64 // the largest string number a field names that must name one
	invalid                error  // the first rule of CheckValid broken
	// What the budgets count.
	refs, numbers, stringBytes, entries int

	scratchIDs  []uint64
	scratchKey  []byte
	scratchVals []int64
	scratchLbls []rawLabel
}

// sourceReader keeps the first error of the stream under the profile
// (gzip's), so that it is reported as the stream's, not the profile's.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// errEnd ends a read at the end of a field that the stream cut short.
var errEnd = errors.New("unexpected end of data")

func (d *decoder) seeString(x int64) { d.maxString = max(d.maxString, uint64(x)) }

func (d *decoder) fail(err error) {
	if d.invalid == nil {
		d.invalid = err
	}
}

// readVarint reads a varint as the parser does: at most 10 bytes, the
// bits past 64 dropped.
func (d *decoder) readVarint() (uint64, error) {
	var u uint64
	for i := 0; ; i++ {
		c, err := d.r.ReadByte()
		if err != nil {
			if i == 0 && err == io.EOF {
				return 0, io.EOF
			}
			return 0, errors.New("bad varint")
		}
		if i >= 10 {
			return 0, errors.New("bad varint")
		}
		u |= uint64(c&0x7f) << uint(7*i)
		if c&0x80 == 0 {
			return u, nil
		}
	}
}

// varint decodes one from b as the parser does.
func varint(b []byte) (uint64, []byte, error) {
	var u uint64
	for i := 0; ; i++ {
		if i >= 10 || i >= len(b) {
			return 0, nil, errors.New("bad varint")
		}
		u |= uint64(b[i]&0x7f) << uint(7*i)
		if b[i]&0x80 == 0 {
			return u, b[i+1:], nil
		}
	}
}

// field is one field of a message: its number, wire type and value
// (u for varints and fixed, data for length-delimited).
type field struct {
	num  int
	typ  int
	u    uint64
	data []byte
}

// nextField decodes the field at the start of b and returns the rest.
func nextField(b []byte) (field, []byte, error) {
	x, b, err := varint(b)
	if err != nil {
		return field{}, nil, err
	}
	f := field{num: int(x >> 3), typ: int(x & 7)}
	switch f.typ {
	case 0:
		f.u, b, err = varint(b)
		if err != nil {
			return f, nil, err
		}
	case 1:
		if len(b) < 8 {
			return f, nil, errors.New("not enough data")
		}
		f.u, b = binary.LittleEndian.Uint64(b), b[8:]
	case 2:
		var n uint64
		n, b, err = varint(b)
		if err != nil {
			return f, nil, err
		}
		if n > uint64(len(b)) {
			return f, nil, errors.New("too much data")
		}
		f.data, b = b[:n], b[n:]
	case 5:
		if len(b) < 4 {
			return f, nil, errors.New("not enough data")
		}
		f.u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
	default:
		return f, nil, fmt.Errorf("unknown wire type: %d", f.typ)
	}
	return f, b, nil
}

var errType = errors.New("type mismatch")

// eachField calls fn for each field of message b.
func eachField(b []byte, fn func(f *field) error) error {
	for len(b) > 0 {
		var f field
		var err error
		if f, b, err = nextField(b); err != nil {
			return err
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}

func (f *field) int64() (int64, error) {
	if f.typ != 0 {
		return 0, errType
	}
	return int64(f.u), nil
}

// appendInts appends a repeated integer field, packed or not.
func (f *field) appendInts(dst []uint64) ([]uint64, error) {
	if f.typ == 0 {
		return append(dst, f.u), nil
	}
	if f.typ != 2 {
		return dst, errType
	}
	for b := f.data; len(b) > 0; {
		var u uint64
		var err error
		if u, b, err = varint(b); err != nil {
			return dst, err
		}
		dst = append(dst, u)
	}
	return dst, nil
}

// decode reads the profile's fields to the end of the stream. It
// returns whether there was any byte.
func (d *decoder) decode() (bool, error) {
	any := false
	for {
		tag, err := d.readVarint()
		if err == io.EOF {
			return any, nil
		}
		any = true
		if err != nil {
			return any, err
		}
		f := field{num: int(tag >> 3), typ: int(tag & 7)}
		switch f.typ {
		case 0:
			if f.u, err = d.readVarint(); err == io.EOF {
				err = errEnd
			}
		case 1, 5:
			n := 8
			if f.typ == 5 {
				n = 4
			}
			var b [8]byte
			if _, err = io.ReadFull(d.r, b[:n]); err != nil {
				err = errors.New("not enough data")
			}
			if n == 4 {
				f.u = uint64(binary.LittleEndian.Uint32(b[:4]))
			} else {
				f.u = binary.LittleEndian.Uint64(b[:])
			}
		case 2:
			var n uint64
			if n, err = d.readVarint(); err == io.EOF {
				err = errEnd
			}
			if err != nil {
				break
			}
			if f.num < 1 || f.num > 15 {
				// A field the parser skips: skipped here unread.
				if m, _ := io.CopyN(io.Discard, d.r, int64(min(n, 1<<62))); uint64(m) != n {
					return any, errors.New("too much data")
				}
				continue
			}
			if n > uint64(maxFieldSize) {
				return any, &budgetError{fmt.Sprintf("a field of %d bytes: larger than a memory profile's fields (%d bytes at most)", n, maxFieldSize)}
			}
			if uint64(cap(d.buf)) < n {
				d.buf = make([]byte, n)
			}
			f.data = d.buf[:n]
			if _, err = io.ReadFull(d.r, f.data); err != nil {
				err = errors.New("too much data")
			}
		default:
			err = fmt.Errorf("unknown wire type: %d", f.typ)
		}
		if err != nil {
			return any, err
		}
		if err := d.topField(&f); err != nil {
			return any, err
		}
	}
}

// budgetError says which of the reader's bounds a profile passed.
type budgetError struct{ msg string }

func (e *budgetError) Error() string { return e.msg }

// topField takes one field of the Profile message.
func (d *decoder) topField(f *field) error {
	switch f.num {
	case 1:
		vt, err := valueTypeOf(f)
		if err != nil {
			return err
		}
		d.seeString(vt.typ)
		d.seeString(vt.unit)
		d.sampleTypes = append(d.sampleTypes, vt)
		return d.spendNumbers(2)
	case 2:
		return d.sample(f)
	case 3:
		return d.mapping(f)
	case 4:
		return d.location(f)
	case 5:
		return d.function(f)
	case 6:
		if f.typ != 2 {
			return errType
		}
		if len(d.strEnd) == 0 && len(f.data) != 0 {
			return errors.New("string_table[0] must be ''")
		}
		if d.stringBytes += len(f.data) + 1; d.stringBytes > maxStringBytes {
			return &budgetError{fmt.Sprintf("more than %d bytes of strings: too big for a memory profile", maxStringBytes)}
		}
		d.strs = append(d.strs, f.data...)
		d.strEnd = append(d.strEnd, uint32(len(d.strs)))
		return nil
	case 7, 8, 10, 12, 14, 15:
		x, err := f.int64()
		if err != nil {
			return err
		}
		switch f.num {
		case 7:
			d.dropFrames = x
		case 8:
			d.keepFrames = x
		case 14:
			d.defaultType = x
		case 15:
			d.docURL = x
		}
		return nil
	case 9:
		if d.timeNanos != 0 {
			return errors.New("concatenated profiles detected")
		}
		x, err := f.int64()
		d.timeNanos = x
		return err
	case 11:
		vt, err := valueTypeOf(f)
		d.periodType = vt
		return err
	case 13:
		n := len(d.scratchIDs[:0])
		ids, err := f.appendInts(d.scratchIDs[:0])
		d.scratchIDs = ids
		if err != nil {
			return err
		}
		if err := d.spendNumbers(len(ids) - n); err != nil {
			return err
		}
		for _, c := range ids {
			d.comments = append(d.comments, int64(c))
		}
	}
	return nil
}

func valueTypeOf(f *field) (valueType, error) {
	var vt valueType
	if f.typ != 2 {
		return vt, errType
	}
	err := eachField(f.data, func(g *field) error {
		var err error
		switch g.num {
		case 1:
			vt.typ, err = g.int64()
		case 2:
			vt.unit, err = g.int64()
		}
		return err
	})
	return vt, err
}

// spendNumbers counts n more numbers kept (sample values, labels,
// comments, sample types) against their bound.
func (d *decoder) spendNumbers(n int) error {
	if d.numbers += n; d.numbers > maxNumbers {
		return &budgetError{fmt.Sprintf("more than %d sample values, labels and comments: too big for a memory profile", maxNumbers)}
	}
	return nil
}

// spendTable counts n more entries of the mapping, location and
// function tables (a location's lines each) against their bound.
func (d *decoder) spendTable(n int) error {
	if d.entries += n; d.entries > maxTotalFrames {
		return &budgetError{fmt.Sprintf("more than %d locations, lines and functions: too big for a memory profile", maxTotalFrames)}
	}
	return nil
}

// sample keeps one sample: its values, and its stack and labels as the
// numbers of their distinct forms.
func (d *decoder) sample(f *field) error {
	if f.typ != 2 {
		return errType
	}
	if len(d.samples) >= maxSamples {
		return &budgetError{fmt.Sprintf("more than %d samples: too big for a memory profile (devprof writes one per group of equal live buffers; its tracker keeps 1048576 buffers unless told otherwise)", maxSamples)}
	}
	// Loops, not eachField: a closure per sample would be allocated.
	ids, vals, lbls := d.scratchIDs[:0], d.scratchVals[:0], d.scratchLbls[:0]
	var err error
	for b := f.data; len(b) > 0 && err == nil; {
		var g field
		if g, b, err = nextField(b); err != nil {
			break
		}
		switch g.num {
		case 1:
			ids, err = g.appendInts(ids)
		case 2:
			if g.typ == 0 {
				vals = append(vals, int64(g.u))
				continue
			}
			if g.typ != 2 {
				err = errType
				break
			}
			for v := g.data; len(v) > 0 && err == nil; {
				var u uint64
				if u, v, err = varint(v); err == nil {
					vals = append(vals, int64(u))
				}
			}
		case 3:
			if g.typ != 2 {
				err = errType
				break
			}
			var l rawLabel
			for v := g.data; len(v) > 0 && err == nil; {
				var h field
				if h, v, err = nextField(v); err != nil {
					break
				}
				switch h.num {
				case 1:
					l.key, err = h.int64()
				case 2:
					l.str, err = h.int64()
				case 3:
					l.num, err = h.int64()
				case 4:
					l.unit, err = h.int64()
				}
			}
			lbls = append(lbls, l)
		}
	}
	d.scratchIDs, d.scratchVals, d.scratchLbls = ids, vals, lbls
	if err != nil {
		return err
	}
	if err := d.spendNumbers(len(vals)); err != nil {
		return err
	}
	s := sampleRec{val: uint32(len(d.vals)), nval: uint32(len(vals))}
	d.vals = append(d.vals, vals...)
	for _, l := range lbls {
		// The strings the parser looks up, so must be there.
		d.seeString(l.key)
		if l.str != 0 {
			d.seeString(l.str)
		} else if l.unit != 0 {
			d.seeString(l.unit)
		}
	}
	if s.seq, err = d.seq(ids); err != nil {
		return err
	}
	if s.labels, err = d.labelSet(lbls); err != nil {
		return err
	}
	d.samples = append(d.samples, s)
	return nil
}

// seq returns the number of the stack ids, keeping it the first time.
func (d *decoder) seq(ids []uint64) (uint32, error) {
	more := len(ids) > MaxFrames
	if more {
		for _, id := range ids[MaxFrames:] {
			if _, ok := d.tails[id]; !ok {
				if err := d.spendRefs(1); err != nil {
					return 0, err
				}
				d.tails[id] = struct{}{}
			}
		}
		ids = ids[:MaxFrames]
	}
	k := d.scratchKey[:0]
	for _, id := range ids {
		k = binary.AppendUvarint(k, id)
	}
	if more {
		k = append(k, 0xff) // no varint ends so
	}
	d.scratchKey = k
	if n, ok := d.seqIndex[string(k)]; ok {
		return n, nil
	}
	if len(ids) > 1 {
		// A stack of one location may be the no-stack mark, no frame.
		if err := d.spendRefs(len(ids)); err != nil {
			return 0, err
		}
	}
	n := uint32(len(d.seqMore))
	d.seqIndex[string(k)] = n
	d.seqs = append(d.seqs, ids...)
	d.seqStart = append(d.seqStart, uint32(len(d.seqs)))
	d.seqMore = append(d.seqMore, more)
	return n, nil
}

// spendRefs counts location numbers kept in stacks: each is a frame at
// least, so that their bound is the frames'.
func (d *decoder) spendRefs(n int) error {
	if d.refs += n; d.refs > maxTotalFrames {
		return &budgetError{fmt.Sprintf("more than %d stack frames in all: too big for a memory profile", maxTotalFrames)}
	}
	return nil
}

// labelSet returns the number of the label list, keeping it the first
// time; 0 is the empty list.
func (d *decoder) labelSet(lbls []rawLabel) (uint32, error) {
	if len(lbls) == 0 {
		return 0, nil
	}
	k := d.scratchKey[:0]
	for _, l := range lbls {
		k = binary.AppendUvarint(k, uint64(l.key))
		k = binary.AppendUvarint(k, uint64(l.str))
		k = binary.AppendUvarint(k, uint64(l.num))
		k = binary.AppendUvarint(k, uint64(l.unit))
	}
	d.scratchKey = k
	if n, ok := d.labelIndex[string(k)]; ok {
		return n, nil
	}
	if err := d.spendNumbers(4 * len(lbls)); err != nil {
		return 0, err
	}
	d.labels = append(d.labels, lbls...)
	d.labelStart = append(d.labelStart, uint32(len(d.labels)))
	n := uint32(len(d.labelStart) - 1)
	d.labelIndex[string(k)] = n
	return n, nil
}

// labelsOf returns label set n.
func (d *decoder) labelsOf(n uint32) []rawLabel {
	if n == 0 {
		return nil
	}
	return d.labels[d.labelStart[n-1]:d.labelStart[n]]
}

// seqOf returns stack n's location numbers and whether the sample had
// more.
func (d *decoder) seqOf(n uint32) ([]uint64, bool) {
	start := uint32(0)
	if n > 0 {
		start = d.seqStart[n-1]
	}
	return d.seqs[start:d.seqStart[n]], d.seqMore[n]
}

func (d *decoder) mapping(f *field) error {
	if f.typ != 2 {
		return errType
	}
	var id uint64
	var file, buildID int64
	err := eachField(f.data, func(g *field) error {
		var err error
		switch g.num {
		case 1, 2, 3, 4, 7, 8, 9, 10:
			if g.typ != 0 {
				return errType
			}
			if g.num == 1 {
				id = g.u
			}
		case 5:
			file, err = g.int64()
		case 6:
			buildID, err = g.int64()
		}
		return err
	})
	if err != nil {
		return err
	}
	d.seeString(file)
	d.seeString(buildID)
	if err := d.spendTable(1); err != nil {
		return err
	}
	if id == 0 {
		d.fail(errors.New("found mapping with reserved ID=0"))
	} else if _, dup := d.mappings[id]; dup {
		d.fail(fmt.Errorf("multiple mappings with same id: %d", id))
	}
	d.mappings[id] = file
	return nil
}

func (d *decoder) location(f *field) error {
	if f.typ != 2 {
		return errType
	}
	var id uint64
	loc := location{line: uint32(len(d.lines))}
	err := eachField(f.data, func(g *field) error {
		switch g.num {
		case 1, 2, 3, 5:
			if g.typ != 0 {
				return errType
			}
			switch g.num {
			case 1:
				id = g.u
			case 2:
				loc.mapping = g.u
			case 3:
				loc.address = g.u
			}
		case 4:
			if g.typ != 2 {
				return errType
			}
			var ln line
			err := eachField(g.data, func(h *field) error {
				if h.num >= 1 && h.num <= 3 && h.typ != 0 {
					return errType
				}
				switch h.num {
				case 1:
					ln.function = h.u
				case 2:
					ln.number = int64(h.u)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if err := d.spendTable(1); err != nil {
				return err
			}
			d.lines = append(d.lines, ln)
			loc.nline++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := d.spendTable(1); err != nil {
		return err
	}
	if id == 0 {
		d.fail(errors.New("found location with reserved id=0"))
	} else if _, dup := d.locations[id]; dup {
		d.fail(fmt.Errorf("multiple locations with same id: %d", id))
	}
	d.locations[id] = loc
	return nil
}

func (d *decoder) function(f *field) error {
	if f.typ != 2 {
		return errType
	}
	var id uint64
	var fn function
	err := eachField(f.data, func(g *field) error {
		var err error
		switch g.num {
		case 1, 5:
			if g.typ != 0 {
				return errType
			}
			if g.num == 1 {
				id = g.u
			}
		case 2:
			fn.name, err = g.int64()
		case 3:
			fn.systemName, err = g.int64()
		case 4:
			fn.filename, err = g.int64()
		}
		return err
	})
	if err != nil {
		return err
	}
	d.seeString(fn.name)
	d.seeString(fn.systemName)
	d.seeString(fn.filename)
	if err := d.spendTable(1); err != nil {
		return err
	}
	if id == 0 {
		d.fail(errors.New("found function with reserved ID=0"))
	} else if _, dup := d.functions[id]; dup {
		d.fail(fmt.Errorf("multiple functions with same id: %d", id))
	}
	d.functions[id] = fn
	return nil
}

// str returns string n, which check has found in the table.
func (d *decoder) str(n int64) string {
	start := uint32(0)
	if n > 0 {
		start = d.strEnd[n-1]
	}
	return string(d.strs[start:d.strEnd[n]])
}

// check applies what the parser checks once the whole profile is read:
// every string number names a string, and the tables hold what the
// samples and locations name (CheckValid).
func (d *decoder) check() (parse, valid error) {
	for _, c := range d.comments {
		d.seeString(c)
	}
	for _, x := range []int64{d.dropFrames, d.keepFrames, d.defaultType, d.docURL, d.periodType.typ, d.periodType.unit} {
		d.seeString(x)
	}
	if d.maxString >= uint64(len(d.strEnd)) {
		return errMalformed, nil
	}
	if len(d.sampleTypes) == 0 && len(d.samples) != 0 {
		return nil, errors.New("missing sample type information")
	}
	for _, s := range d.samples {
		if int(s.nval) != len(d.sampleTypes) {
			return nil, fmt.Errorf("mismatch: sample has %d values vs. %d types", s.nval, len(d.sampleTypes))
		}
	}
	if d.invalid != nil {
		return nil, d.invalid
	}
	for n := range d.seqMore {
		ids, _ := d.seqOf(uint32(n))
		for _, id := range ids {
			if _, ok := d.locations[id]; !ok {
				return nil, errors.New("sample has nil location")
			}
		}
	}
	for id := range d.tails {
		if _, ok := d.locations[id]; !ok {
			return nil, errors.New("sample has nil location")
		}
	}
	for id, loc := range d.locations {
		for _, ln := range d.lines[loc.line : loc.line+loc.nline] {
			if _, ok := d.functions[ln.function]; !ok || ln.function == 0 {
				return nil, fmt.Errorf("location id: %d has a line with nil function", id)
			}
		}
	}
	return nil, nil
}
