package tables

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// TestColumnFileMatchesParquetGo writes the same rows of every table
// with columnFile and with parquet-go's own writer, and holds the two
// files to the same rows read back (through parquet-go's reader, as
// Read does), the same schema and metadata, dictionary-encoded strings,
// row groups of at most rowGroupRows, and chunk bounds that hold every
// value. The rows are random, with the shapes that matter: repeated
// values at one address and equal values at different addresses, "",
// invalid bounds (NaN), extremes, and more rows than a row group.
func TestColumnFileMatchesParquetGo(t *testing.T) {
	for _, n := range []int{0, 1, 1000, rowGroupRows + 3000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			compareWriters(t, randomRows[Span](r, n))
			compareWriters(t, randomRows[Counter](r, n))
			compareWriters(t, randomRows[Kernel](r, n))
			if n > rowGroupRows {
				return // the three above have every kind of column
			}
			compareWriters(t, randomRows[Instant](r, n))
			compareWriters(t, randomRows[Memory](r, n))
			compareWriters(t, randomRows[Flow](r, n))
			compareWriters(t, randomRows[Step](r, n))
			compareWriters(t, randomRows[Host](r, n))
		})
	}
}

// randomRows returns n rows of T with every field random: strings from
// a small vocabulary (each value once in memory, as the spool hands them
// out, and prefixes of one string at its address) or built anew (equal
// values at new addresses), numbers small, extreme or NaN.
func randomRows[T any](r *rand.Rand, n int) []T {
	// Prefixes of one string share its address (and a cache by address
	// must tell them apart by length, 64 apart among them).
	shared := fmt.Sprint(strings.Repeat("train_step_", 14), r.IntN(10))
	vocab := []string{"", "a", "run-1", "host/2", "ünïcode", `{"k":1}`, "op_1", "op_2"}
	for k := 1; k <= len(shared); k++ {
		vocab = append(vocab, shared[:k])
	}
	rows := make([]T, n)
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for j := range v.NumField() {
			f := v.Field(j)
			switch f.Kind() {
			case reflect.String:
				if r.IntN(4) == 0 {
					f.SetString(fmt.Sprint("fresh-", r.IntN(50))) // a new address each time
				} else {
					f.SetString(vocab[r.IntN(len(vocab))])
				}
			case reflect.Int64:
				f.SetInt([]int64{0, -1, int64(r.Uint64()), int64(i), math.MaxInt64, math.MinInt64}[r.IntN(6)])
			case reflect.Int32:
				f.SetInt(int64([]int32{0, -1, int32(r.Uint32()), math.MaxInt32, math.MinInt32}[r.IntN(5)]))
			case reflect.Bool:
				f.SetBool(r.IntN(2) == 0)
			case reflect.Float64:
				f.SetFloat([]float64{0, -1.5, r.Float64(), math.Inf(1), math.NaN()}[r.IntN(5)])
			}
		}
	}
	return rows
}

func compareWriters[T Row](t *testing.T, rows []T) {
	t.Helper()
	name := TableOf[T]()
	opts := writerOptions(name)

	var want bytes.Buffer
	pw := parquet.NewGenericWriter[T](&want, opts...)
	if _, err := pw.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	cw, err := newColumnFile[T](&got, &parquet.Zstd, opts)
	if err != nil {
		t.Fatal(err)
	}
	// In batches, as a table hands them over.
	for b := range slices.Chunk(rows, batchRows) {
		if err := cw.write(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.close(); err != nil {
		t.Fatal(err)
	}

	wantRows, err := Read[T](bytes.NewReader(want.Bytes()), int64(want.Len()))
	if err != nil {
		t.Fatal(err)
	}
	gotRows, err := Read[T](bytes.NewReader(got.Bytes()), int64(got.Len()))
	if err != nil {
		t.Fatalf("%s: reading the column writer's file: %v", name, err)
	}
	if len(gotRows) != len(wantRows) || len(gotRows) != len(rows) {
		t.Fatalf("%s: %d rows, parquet-go's %d, written %d", name, len(gotRows), len(wantRows), len(rows))
	}
	for i := range gotRows {
		// NaN is not equal to itself: compare the rows as text.
		if g, w := fmt.Sprintf("%#v", gotRows[i]), fmt.Sprintf("%#v", wantRows[i]); g != w {
			t.Fatalf("%s row %d:\n got %s\nwant %s", name, i, g, w)
		}
	}

	gf, err := parquet.OpenFile(bytes.NewReader(got.Bytes()), int64(got.Len()))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := parquet.OpenFile(bytes.NewReader(want.Bytes()), int64(want.Len()))
	if err != nil {
		t.Fatal(err)
	}
	gm, wm := gf.Metadata(), wf.Metadata()
	if !reflect.DeepEqual(gm.Schema, wm.Schema) {
		t.Errorf("%s: schema\n got %+v\nwant %+v", name, gm.Schema, wm.Schema)
	}
	if !reflect.DeepEqual(gm.KeyValueMetadata, wm.KeyValueMetadata) || gm.CreatedBy != wm.CreatedBy || gm.NumRows != wm.NumRows {
		t.Errorf("%s: metadata %v %q %d, parquet-go's %v %q %d", name, gm.KeyValueMetadata, gm.CreatedBy, gm.NumRows, wm.KeyValueMetadata, wm.CreatedBy, wm.NumRows)
	}
	for g, rg := range gm.RowGroups {
		if rg.NumRows > rowGroupRows {
			t.Errorf("%s: row group %d has %d rows", name, g, rg.NumRows)
		}
		for c, cc := range rg.Columns {
			md := cc.MetaData
			leaf := gm.Schema[1+c]
			if leaf.Type.V == format.ByteArray && !slices.Contains(md.Encoding, format.RLEDictionary) {
				t.Errorf("%s.%s: encodings %v, not a dictionary's", name, leaf.Name, md.Encoding)
			}
			checkBounds(t, name, leaf.Name, rows, g, c, md.Statistics)
		}
	}
}

// checkBounds holds a column chunk's min and max, where it has them, to
// the values of its rows.
func checkBounds[T any](t *testing.T, table, column string, rows []T, group, col int, st format.Statistics) {
	t.Helper()
	if st.MinValue == nil {
		return
	}
	part := rows[group*rowGroupRows : min(len(rows), (group+1)*rowGroupRows)]
	lo, hi := string(st.MinValue), string(st.MaxValue)
	for i := range part {
		switch f := reflect.ValueOf(&part[i]).Elem().Field(col); f.Kind() {
		case reflect.String:
			if v := f.String(); v < lo || v > hi {
				t.Fatalf("%s.%s: %q outside [%q, %q]", table, column, v, lo, hi)
			}
		case reflect.Int64:
			n, a, b := f.Int(), int64(le64(lo)), int64(le64(hi))
			if n < a || n > b {
				t.Fatalf("%s.%s: %d outside [%d, %d]", table, column, n, a, b)
			}
		case reflect.Int32:
			n, a, b := f.Int(), int64(int32(le64(lo))), int64(int32(le64(hi)))
			if n < a || n > b {
				t.Fatalf("%s.%s: %d outside [%d, %d]", table, column, n, a, b)
			}
		case reflect.Float64:
			x, a, b := f.Float(), math.Float64frombits(le64(lo)), math.Float64frombits(le64(hi))
			if x < a || x > b || math.IsNaN(x) {
				t.Fatalf("%s.%s: %v outside [%v, %v]", table, column, x, a, b)
			}
		}
	}
}

// le64 reads a bound of up to 8 bytes, little-endian.
func le64(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.LittleEndian.Uint64(b[:])
}

// TestColumnLookupSharedAddress looks up more prefixes of one string
// than the cache has slots, twice: they share an address, so slots must
// collide, and each must still find its own dictionary entry.
func TestColumnLookupSharedAddress(t *testing.T) {
	col := &column{kind: kindString, index: map[string]int32{}, empty: -1}
	s := strings.Repeat("kernel_", 2*recentSlots/7+1)
	for range 2 {
		for k := range len(s) + 1 {
			if got := col.dict[col.lookup(s[:k])]; got != s[:k] {
				t.Fatalf("lookup(%q) found %q", s[:k], got)
			}
		}
	}
	if len(col.dict) != len(s)+1 {
		t.Errorf("%d dictionary entries for %d distinct strings", len(col.dict), len(s)+1)
	}
}
