package tables

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// columnFile writes one table's Parquet file a column at a time, in the
// schema, encodings and compression parquet-go's writer gives the row
// type T (the schema, key-value metadata and creator are taken from an
// empty file parquet-go writes with the same options). It exists for
// speed: parquet-go looks every string of every row up in its
// dictionary's map, which was a quarter of an export's time, while rows
// here come from readers (or a Writer's spool) that hand out one string
// value per distinct name, so a string column finds its dictionary index
// by the string's address in a small cache and hashes a string's bytes
// only once per address. Each row group is a dictionary page and one data page (v2)
// per column; row groups hold at most rowGroupRows rows.
type columnFile[T any] struct {
	out   io.Writer
	off   int64
	cols  []*column
	rows  int // rows of the open row group
	codec compress.Codec
	meta  format.FileMetaData
	// raw and packed are scratch for a page before and after
	// compression; header for its header.
	raw, packed []byte
	header      thrift.Protocol

	// track is T's track column, if it has one; refs the ids of the
	// tracks the open row group's rows sit on; written, if set, the
	// tracks of the row groups written so far. renamed says rows of the
	// open row group took another track name (rename): its track
	// dictionary is made again in order of first use before it is
	// written, as if the rows had had that name from the start.
	track   *column
	refs    []uint32
	inOpen  trackSet // the tracks refs holds
	written *trackSet
	renamed bool
}

func (c *columnFile[T]) noteWritten(s *trackSet) { c.written = s }

// rename gives the open row group's rows on track id the track name
// name.
func (c *columnFile[T]) rename(id uint32, name string) {
	if !c.inOpen.has(id) {
		return
	}
	for j, ref := range c.refs {
		if ref == id {
			c.track.int32[j] = c.track.lookup(name)
			c.renamed = true
		}
	}
}

// renumber makes a string column's dictionary again of the values its
// rows use, in the order they first use them.
func (col *column) renumber() {
	old := col.dict
	remap := make([]int32, len(old))
	for i := range remap {
		remap[i] = -1
	}
	dict := make([]string, 0, len(old))
	for j, i := range col.int32 {
		n := remap[i]
		if n < 0 {
			n = int32(len(dict))
			remap[i] = n
			dict = append(dict, old[i])
		}
		col.int32[j] = n
	}
	clear(old)
	col.dict = dict
	clear(col.index)
	for i, v := range dict {
		col.index[v] = int32(i)
	}
	col.recent = [recentSlots]recentString{}
	col.empty = -1
	if i, ok := col.index[""]; ok {
		col.empty = i
	}
}

// columnKind is how a column's values are held: by the Go type of the
// row's field.
type columnKind uint8

const (
	kindString columnKind = iota
	kindInt64
	kindInt32
	kindBool
	kindDouble
)

// column is one column of the open row group.
type column struct {
	name   string
	kind   columnKind
	offset uintptr // of the field in the row
	enc    encoding.Encoding
	ptype  format.Type
	bounds bool // min and max go in the column chunk's statistics

	ints  []int64
	int32 []int32 // int32 values, or a string column's dictionary indexes
	f64   []float64
	bools []bool

	// A string column's dictionary: its values in index order, and
	// their indexes by value and, for the values seen last, by address.
	dict   []string
	index  map[string]int32
	recent [recentSlots]recentString
	empty  int32 // the index of "", -1 before it comes
}

// recentSlots is the size of a string column's cache by address.
const recentSlots = 1 << recentBits

const recentBits = 8

// recentString is a string a column looked up, and its index. It holds
// the string, which keeps its bytes alive, so an equal address and
// length mean an equal string.
type recentString struct {
	s string
	i int32
}

// newColumnFile prepares the columns of T: every field is one required
// column, named and encoded by its parquet tag (dict: dictionary, delta:
// delta binary packed, else plain), as parquet-go's schema of T has it.
func newColumnFile[T any](out io.Writer, codec compress.Codec, opts []parquet.WriterOption) (*columnFile[T], error) {
	var empty bytes.Buffer
	w := parquet.NewGenericWriter[T](&empty, opts...)
	if err := w.Close(); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(empty.Bytes()), int64(empty.Len()))
	if err != nil {
		return nil, err
	}
	c := &columnFile[T]{out: out, codec: codec, meta: *f.Metadata(), header: new(thrift.CompactProtocol)}
	c.meta.RowGroups, c.meta.NumRows = nil, 0
	t := reflect.TypeFor[T]()
	leaves := c.meta.Schema[1:]
	if len(leaves) != t.NumField() {
		return nil, fmt.Errorf("tables: %s has %d fields, its schema %d columns", t, t.NumField(), len(leaves))
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, tag, _ := strings.Cut(sf.Tag.Get("parquet"), ",")
		col := &column{name: name, offset: sf.Offset, enc: &parquet.Plain, bounds: true}
		if leaves[i].Name != name || !leaves[i].Type.Valid {
			return nil, fmt.Errorf("tables: %s's column %d is %q, its field %q", t, i, leaves[i].Name, name)
		}
		col.ptype = leaves[i].Type.V
		switch sf.Type.Kind() {
		case reflect.String:
			col.kind, col.bounds = kindString, name == "name"
			col.index, col.empty = map[string]int32{}, -1
		case reflect.Int64:
			col.kind = kindInt64
		case reflect.Int32:
			col.kind = kindInt32
		case reflect.Bool:
			col.kind = kindBool
		case reflect.Float64:
			col.kind = kindDouble
		default:
			return nil, fmt.Errorf("tables: %s.%s: no column for %s", t, sf.Name, sf.Type)
		}
		switch tag {
		case "dict":
			col.enc = &parquet.RLEDictionary
		case "delta":
			col.enc = &parquet.DeltaBinaryPacked
		}
		if (col.kind == kindString) != (tag == "dict") {
			return nil, fmt.Errorf("tables: %s.%s: strings, and only strings, are dictionary-encoded", t, sf.Name)
		}
		c.cols = append(c.cols, col)
		if name == "track" && col.kind == kindString {
			c.track = col
		}
	}
	if _, err := out.Write([]byte("PAR1")); err != nil {
		return nil, err
	}
	c.off = 4
	return c, nil
}

// write adds rows, on the tracks refs has by row (or none: nil),
// writing a row group each time one fills.
func (c *columnFile[T]) write(rows []T, refs []uint32) error {
	for len(rows) > 0 {
		n := min(len(rows), rowGroupRows-c.rows)
		c.append(rows[:n])
		if refs != nil {
			c.refs = append(c.refs, refs[:n]...)
			for _, ref := range refs[:n] {
				c.inOpen.add(ref)
			}
			refs = refs[n:]
		}
		rows = rows[n:]
		if c.rows == rowGroupRows {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// append reads rows' fields into the columns.
func (c *columnFile[T]) append(rows []T) {
	if len(rows) == 0 {
		return
	}
	// A table past its first batch is likely to fill its row group:
	// reserve it whole rather than grow it by doubling.
	need := c.rows + len(rows)
	if need > batchRows {
		need = rowGroupRows
	}
	for _, col := range c.cols {
		col.reserve(need)
	}
	for _, col := range c.cols {
		off := col.offset
		switch col.kind {
		case kindString:
			for i := range rows {
				col.int32 = append(col.int32, col.lookup(*(*string)(unsafe.Add(unsafe.Pointer(&rows[i]), off))))
			}
		case kindInt64:
			for i := range rows {
				col.ints = append(col.ints, *(*int64)(unsafe.Add(unsafe.Pointer(&rows[i]), off)))
			}
		case kindInt32:
			for i := range rows {
				col.int32 = append(col.int32, *(*int32)(unsafe.Add(unsafe.Pointer(&rows[i]), off)))
			}
		case kindBool:
			for i := range rows {
				col.bools = append(col.bools, *(*bool)(unsafe.Add(unsafe.Pointer(&rows[i]), off)))
			}
		case kindDouble:
			for i := range rows {
				col.f64 = append(col.f64, *(*float64)(unsafe.Add(unsafe.Pointer(&rows[i]), off)))
			}
		}
	}
	c.rows += len(rows)
}

// reserve makes room for n values of the column's kind.
func (col *column) reserve(n int) {
	switch col.kind {
	case kindString, kindInt32:
		col.int32 = slices.Grow(col.int32, n-len(col.int32))
	case kindInt64:
		col.ints = slices.Grow(col.ints, n-len(col.ints))
	case kindBool:
		col.bools = slices.Grow(col.bools, n-len(col.bools))
	case kindDouble:
		col.f64 = slices.Grow(col.f64, n-len(col.f64))
	}
}

// lookup returns s's index in the column's dictionary, adding it.
func (col *column) lookup(s string) int32 {
	if len(s) == 0 {
		// "" has no address to cache it by (and is most columns' most
		// common value).
		if col.empty < 0 {
			col.empty = col.add(s)
		}
		return col.empty
	}
	p := unsafe.StringData(s)
	h := (uint64(uintptr(unsafe.Pointer(p))) ^ uint64(len(s))<<48) * 0x9e3779b97f4a7c15
	r := &col.recent[h>>(64-recentBits)]
	if unsafe.StringData(r.s) == p && len(r.s) == len(s) {
		return r.i
	}
	i := col.add(s)
	*r = recentString{s: s, i: i}
	return i
}

// add returns s's index in the dictionary, adding it if need be.
func (col *column) add(s string) int32 {
	i, ok := col.index[s]
	if !ok {
		i = int32(len(col.dict))
		col.dict = append(col.dict, s)
		col.index[s] = i
	}
	return i
}

// flush writes the open row group.
func (c *columnFile[T]) flush() error {
	if c.rows == 0 {
		return nil
	}
	if c.renamed {
		c.track.renumber()
		c.renamed = false
	}
	if c.written != nil {
		c.written.union(&c.inOpen)
	}
	c.refs = c.refs[:0]
	clear(c.inOpen.bits)
	rg := format.RowGroup{NumRows: int64(c.rows), FileOffset: c.off, Ordinal: int16(len(c.meta.RowGroups))}
	for _, col := range c.cols {
		cc, err := c.writeChunk(col)
		if err != nil {
			return err
		}
		rg.Columns = append(rg.Columns, cc)
		rg.TotalByteSize += cc.MetaData.TotalUncompressedSize
		rg.TotalCompressedSize += cc.MetaData.TotalCompressedSize
	}
	c.meta.RowGroups = append(c.meta.RowGroups, rg)
	c.meta.NumRows += int64(c.rows)
	c.rows = 0
	return nil
}

// writeChunk writes one column's chunk of the open row group and resets
// the column for the next.
func (c *columnFile[T]) writeChunk(col *column) (format.ColumnChunk, error) {
	md := format.ColumnMetaData{
		Type: col.ptype, PathInSchema: []string{col.name}, Codec: c.codec.CompressionCodec(),
		NumValues: int64(c.rows),
	}
	cc := format.ColumnChunk{FileOffset: c.off}
	var err error
	if col.kind == kindString {
		// The dictionary page: its values, plain.
		raw := c.raw[:0]
		for _, s := range col.dict {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(len(s)))
			raw = append(raw, s...)
		}
		c.raw = raw
		md.DictionaryPageOffset = c.off
		h := format.PageHeader{Type: format.DictionaryPage}
		h.DictionaryPageHeader.Valid = true
		h.DictionaryPageHeader.V = format.DictionaryPageHeader{NumValues: int32(len(col.dict)), Encoding: format.Plain}
		if err := c.writePage(&md, &h); err != nil {
			return cc, err
		}
		md.Encoding = []format.Encoding{format.Plain, format.RLEDictionary}
		md.EncodingStats = []format.PageEncodingStats{
			{PageType: format.DictionaryPage, Encoding: format.Plain, Count: 1},
			{PageType: format.DataPageV2, Encoding: format.RLEDictionary, Count: 1},
		}
		c.raw, err = col.enc.EncodeInt32(c.raw[:0], col.int32)
		if col.bounds && len(col.int32) > 0 {
			lo, hi := col.dict[col.int32[0]], col.dict[col.int32[0]]
			for _, i := range col.int32 {
				lo, hi = min(lo, col.dict[i]), max(hi, col.dict[i])
			}
			md.Statistics.MinValue, md.Statistics.MaxValue = []byte(lo), []byte(hi)
		}
	} else {
		enc := col.enc.Encoding()
		md.Encoding = []format.Encoding{enc}
		md.EncodingStats = []format.PageEncodingStats{{PageType: format.DataPageV2, Encoding: enc, Count: 1}}
		c.raw, err = col.encode(c.raw[:0], &md.Statistics)
	}
	if err != nil {
		return cc, err
	}
	md.DataPageOffset = c.off
	h := format.PageHeader{Type: format.DataPageV2}
	h.DataPageHeaderV2.Valid = true
	h.DataPageHeaderV2.V = format.DataPageHeaderV2{
		NumValues: int32(c.rows), NumRows: int32(c.rows), Encoding: col.enc.Encoding(),
	}
	h.DataPageHeaderV2.V.IsCompressed = thrift.Null[bool]{V: true, Valid: true}
	if err := c.writePage(&md, &h); err != nil {
		return cc, err
	}
	cc.MetaData = md
	col.reset()
	return cc, nil
}

// encode encodes a column of numbers or booleans into dst, and their
// bounds into st.
func (col *column) encode(dst []byte, st *format.Statistics) ([]byte, error) {
	var lo, hi []byte
	var err error
	switch col.kind {
	case kindInt64:
		dst, err = col.enc.EncodeInt64(dst, col.ints)
		if len(col.ints) > 0 {
			a, b := bounds(col.ints)
			lo, hi = binary.LittleEndian.AppendUint64(nil, uint64(a)), binary.LittleEndian.AppendUint64(nil, uint64(b))
		}
	case kindInt32:
		dst, err = col.enc.EncodeInt32(dst, col.int32)
		if len(col.int32) > 0 {
			a, b := bounds(col.int32)
			lo, hi = binary.LittleEndian.AppendUint32(nil, uint32(a)), binary.LittleEndian.AppendUint32(nil, uint32(b))
		}
	case kindBool:
		bits := make([]byte, (len(col.bools)+7)/8)
		a, b := true, false
		for i, v := range col.bools {
			if v {
				bits[i/8] |= 1 << (i % 8)
			}
			a, b = a && v, b || v
		}
		dst, err = col.enc.EncodeBoolean(dst, bits)
		if len(col.bools) > 0 {
			lo, hi = []byte{boolByte(a)}, []byte{boolByte(b)}
		}
	case kindDouble:
		dst, err = col.enc.EncodeDouble(dst, col.f64)
		// Bounds only where every value orders: NaN has no place.
		ok := len(col.f64) > 0
		a, b := math.Inf(1), math.Inf(-1)
		for _, v := range col.f64 {
			if math.IsNaN(v) {
				ok = false
				break
			}
			a, b = min(a, v), max(b, v)
		}
		if ok {
			lo, hi = binary.LittleEndian.AppendUint64(nil, math.Float64bits(a)), binary.LittleEndian.AppendUint64(nil, math.Float64bits(b))
		}
	}
	if col.bounds && lo != nil {
		st.MinValue, st.MaxValue = lo, hi
	}
	return dst, err
}

// bounds returns the least and greatest of vs, which is not empty.
func bounds[T int32 | int64](vs []T) (lo, hi T) {
	lo, hi = vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// writePage compresses c.raw as the body of the page h heads, writes
// them, and counts them in md.
func (c *columnFile[T]) writePage(md *format.ColumnMetaData, h *format.PageHeader) error {
	var err error
	if c.packed, err = c.codec.Encode(c.packed[:0], c.raw); err != nil {
		return err
	}
	if len(c.raw) > math.MaxInt32 || len(c.packed) > math.MaxInt32 {
		return fmt.Errorf("tables: a page of %d bytes is past Parquet's bound", len(c.raw))
	}
	h.UncompressedPageSize, h.CompressedPageSize = int32(len(c.raw)), int32(len(c.packed))
	head, err := thrift.Marshal(c.header, h)
	if err != nil {
		return err
	}
	if _, err := c.out.Write(head); err != nil {
		return err
	}
	if _, err := c.out.Write(c.packed); err != nil {
		return err
	}
	md.TotalUncompressedSize += int64(len(head) + len(c.raw))
	md.TotalCompressedSize += int64(len(head) + len(c.packed))
	c.off += int64(len(head) + len(c.packed))
	return nil
}

func (col *column) reset() {
	col.ints, col.int32, col.f64, col.bools = col.ints[:0], col.int32[:0], col.f64[:0], col.bools[:0]
	if col.kind == kindString {
		clear(col.dict) // let go of the strings
		col.dict, col.empty = col.dict[:0], -1
		clear(col.index)
		col.recent = [recentSlots]recentString{}
	}
}

// close writes the last row group and the footer.
func (c *columnFile[T]) close() error {
	if err := c.flush(); err != nil {
		return err
	}
	footer, err := thrift.Marshal(c.header, &c.meta)
	if err != nil {
		return err
	}
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(footer)))
	footer = append(footer, "PAR1"...)
	_, err = c.out.Write(footer)
	return err
}
