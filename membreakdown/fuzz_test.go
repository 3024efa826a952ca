package membreakdown

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// encodeJSON writes d as a JSON keyword file, in its order.
func encodeJSON(t *testing.T, d Dictionary) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, r := range d {
		if i > 0 {
			b.WriteString(",\n")
		}
		k, err := json.Marshal(r.Category)
		if err != nil {
			t.Fatal(err)
		}
		v, err := json.Marshal(r.Keywords)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// FuzzParseDictionary: whatever the bytes, ParseDictionary returns a
// valid dictionary or a *ParseError naming the file and a line inside it,
// never both and never a panic; a dictionary it returns, written as JSON,
// reads back the same through both the JSON and the YAML parser. The
// committed corpus (testdata/fuzz/FuzzParseDictionary) keeps what the
// fuzzer found beyond the seeds.
func FuzzParseDictionary(f *testing.F) {
	for _, s := range []string{
		`{"Parameters": ["weights", "param"], "Gradients": ["grad"]}`,
		"Parameters: [weights, param]\nGradients:\n  - grad\n",
		`{"A": "x"}`, `{"A": [1]}`, `{"": []}`, `{"A": [], "A": []}`, `["a"]`, `{"A": ["a",]}`,
		"A: &x [a]\nB: *x\n", "A:\n  - a\n  - {b: c}\n", "? [x]\n: [y]\n", "A: [a]\n---\nB: []\n",
		"'Others': [x]", "A: [\"\\u00e9\", '', ~]", "\xff",
	} {
		f.Add(true, []byte(s))
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, asJSON bool, data []byte) {
		name := "k.yaml"
		if asJSON {
			name = "k.json"
		}
		d, err := ParseDictionary(name, data)
		if err != nil {
			var pe *ParseError
			if d != nil {
				t.Fatal("a dictionary and an error")
			}
			if !errors.As(err, &pe) || pe.File != name {
				t.Fatalf("%T %v: want a *ParseError naming %s", err, err, name)
			}
			if lines := bytes.Count(data, []byte{'\n'}) + 1; pe.Line < 0 || pe.Line > lines || pe.Column < 0 {
				t.Fatalf("%v: line %d column %d, outside the file's %d lines", err, pe.Line, pe.Column, lines)
			}
			return
		}
		if len(d) == 0 {
			t.Fatal("an empty dictionary and no error")
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("parsed an invalid dictionary %q: %v", d, err)
		}
		enc := encodeJSON(t, d)
		for _, again := range []string{"again.json", "again.yaml"} {
			back, err := ParseDictionary(again, enc)
			if err != nil {
				t.Fatalf("%q written as JSON does not read back as %s: %v\n%s", d, again, err, enc)
			}
			if !reflect.DeepEqual(back, d) {
				t.Fatalf("%q written as JSON reads back as %s %q", d, again, back)
			}
		}
	})
}

// FuzzCSV: whatever a buffer's tags and span hold (commas, quotes, line
// breaks, invalid UTF-8), both CSV layouts read back with a CSV reader
// (Python's csv module follows the same RFC 4180 quoting) as CSVRows
// records of the right number of fields, the name field being the
// buffer's Text (where the reader does not fold a quoted "\r\n" into
// "\n", as readers do).
func FuzzCSV(f *testing.F) {
	for _, s := range []string{"weights", "a,b", `say "hi"`, "x\ny", "x\r\ny", "", " lead", "\xff", `"`, "nvml_amend"} {
		f.Add(s, "train/step", uint64(3<<20), uint8(2), int8(0))
	}
	f.Fuzz(func(t *testing.T, tag, span string, size uint64, count uint8, dev int8) {
		b := event.Buffer{Bytes: size, Count: int(count), Device: int(dev), Span: span}
		if tag != "" {
			b.Tags = []string{tag, "x"}
		}
		m := &event.DeviceMemory{Buffers: []event.Buffer{b, {Bytes: 1, Count: 1, Device: 1, Tags: []string{"y"}}}}
		for _, storage := range []bool{false, true} {
			var buf bytes.Buffer
			var err error
			if storage {
				err = WriteStorageCSV(&buf, m, Categorize(m, DefaultDictionary(), Options{}))
			} else {
				err = WriteCSV(&buf, m)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := csv.NewReader(bytes.NewReader(buf.Bytes()))
			r.FieldsPerRecord = -1
			recs, err := r.ReadAll()
			if err != nil {
				t.Fatalf("storage %v: %v\n%q", storage, err, buf.String())
			}
			want, fields := int(CSVRows(m)), 2
			if storage {
				want, fields = want+1, 5 // the header; no NVML figures, so no amend rows
			}
			if len(recs) != want {
				t.Fatalf("storage %v: %d records, want %d\n%q", storage, len(recs), want, buf.String())
			}
			names := 0
			for _, rec := range recs {
				if len(rec) != fields {
					t.Fatalf("storage %v: record %q has %d fields, want %d", storage, rec, len(rec), fields)
				}
				if rec[0] == Text(&m.Buffers[0]) {
					names++
				}
			}
			if onDev := OnDevice(&m.Buffers[0]); onDev && !strings.Contains(Text(&m.Buffers[0]), "\r") && names != max(int(count), 1) {
				t.Fatalf("storage %v: %d records named %q, want %d\n%q", storage, names, Text(&m.Buffers[0]), max(int(count), 1), buf.String())
			}
		}
	})
}
