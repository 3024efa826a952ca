package membreakdown

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
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
