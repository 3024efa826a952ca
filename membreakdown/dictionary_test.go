package membreakdown

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestParseKeepsOrder: JSON and YAML files give the categories in the
// file's order (not sorted, as a Go map would), with their keywords.
func TestParseKeepsOrder(t *testing.T) {
	want := Dictionary{
		{"Zeta", []string{"z", "zz"}},
		{"Alpha", []string{"a"}},
		{"Mid dle", []string{}},
		{"Émoji ✓", []string{"✓", "123", "true"}},
	}
	files := map[string]string{
		"k.json": `{"Zeta": ["z", "zz"], "Alpha": ["a"],
			"Mid dle": [], "Émoji ✓": ["✓", "123", "true"]}`,
		"k.yaml": "# categories\nZeta: [z, zz]\nAlpha:\n  - a\nMid dle: []\nÉmoji ✓: [✓, 123, true]\n",
		"k.yml":  "Zeta: &z [z, zz]\nAlpha: [\"a\"]\n\"Mid dle\": []\n'Émoji ✓':\n- ✓\n- '123'\n- true\n",
		// Any other name reads as YAML, which JSON is too.
		"keywords": `{"Zeta": ["z", "zz"], "Alpha": ["a"], "Mid dle": [], "Émoji ✓": ["✓", "123", "true"]}`,
	}
	for name, text := range files {
		d, err := ParseDictionary(name, []byte(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("%s: %q, want %q", name, d, want)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", name, err)
		}
	}
}

// TestParseErrors: every refusal is a *ParseError naming the file, the
// line (and column) of the problem, and what it is.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line, col  int // col 0: not checked
		msg        string
	}{
		{"k.json", "", 0, 0, "is empty"},
		{"k.yaml", "  \n# just a comment\n", 0, 0, "is empty"},
		{"k.json", "\xff\xfe", 0, 0, "not UTF-8"},
		{"k.json", `{"A": ["a"],` + "\n" + `"B": ["b" "c"]}`, 2, 11, "JSON syntax: invalid character '\"' after array element"},
		{"k.json", "{\"A\": [\"a\"],\n\"B\": [\"b\"\n\n", 2, 10, "JSON syntax: the file ends inside the object"},
		{"k.json", "{\"A\": x}", 1, 7, "JSON syntax: invalid character 'x' looking for beginning of value"},
		{"k.json", `["a"]`, 1, 1, "want an object of category names to keyword lists, found a list"},
		{"k.json", "{\n  \"A\": \"weights\"\n}", 2, 8, `category "A": want a list of keywords, found a string ("weights")`},
		{"k.json", "{\n  \"A\": {\"x\": 1}\n}", 2, 8, `category "A": want a list of keywords, found an object`},
		{"k.json", "{\"A\": [\"a\",\n 7]}", 2, 2, `category "A": want a keyword (a string), found a number (7)`},
		{"k.json", "{\"A\": [\"a\", \"\"]}", 1, 13, "an empty keyword would match every buffer"},
		{"k.json", "{\"A\": [],\n\n  \"\": [\"x\"]}", 3, 3, "a category's name is empty"},
		{"k.json", "{\"A\": [],\n  \"Others\": [\"x\"]}", 2, 3, `category "Others" is reserved`},
		{"k.json", "{\"A\": [\"a\"],\n \"B\": [],\n \"A\": [\"c\"]}", 3, 2, `category "A" again (first at line 1)`},
		{"k.json", "{}", 1, 1, "has no categories"},
		{"k.json", "{\"A\": []}\n{\"B\": []}", 2, 1, "JSON syntax: invalid character '{' after top-level value"},
		{"k.yaml", "A: [a]\nB: [b\nC: [c]", 3, 2, "YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence from line 2, column 4)"},
		{"k.yaml", "A: [a]\nB: c: d", 2, 5, "YAML syntax: mapping values are not allowed in this context"},
		{"k.yaml", "- a\n- b", 1, 1, "want a mapping of category names to keyword lists, found a list"},
		{"k.yaml", "A:\n  - a\nB: weights\n", 3, 4, `category "B": want a list of keywords, found "weights"`},
		{"k.yaml", "A:\nB: [b]\n", 1, 3, `category "A": want a list of keywords, found nothing (null)`},
		{"k.yaml", "A:\n  - a\n  - {x: 1}\n", 3, 5, `category "A": want a keyword, found a mapping`},
		{"k.yaml", "A:\n  - a\n  - ~\n", 3, 5, `category "A": want a keyword, found nothing (null)`},
		{"k.yaml", "A: [a, '']\n", 1, 8, "an empty keyword"},
		{"k.yaml", "A: [a]\n'': [b]\n", 2, 1, "a category's name is empty"},
		{"k.yaml", "A: [a]\n~: [b]\n", 2, 1, "a category's name is empty"},
		{"k.yaml", "A: [a]\nUntrackable: [b]\n", 2, 1, `category "Untrackable" is reserved`},
		{"k.yaml", "A: [a]\nB: [b]\nA: [c]\n", 3, 1, `category "A" again (first at line 1)`},
		{"k.yaml", "? [x]\n: [a]\n", 1, 3, "want a category name, found a list"},
		{"k.yaml", "{}", 1, 1, "has no categories"},
		{"k.yaml", "A: [a]\n---\nB: [b]\n", 2, 1, "a second YAML document"},
		{"k.yaml", "A: *nowhere\n", 1, 4, "unknown anchor"},
	} {
		d, err := ParseDictionary(c.name, []byte(c.text))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s %q: %v, %v; want a *ParseError", c.name, c.text, d, err)
			continue
		}
		if pe.File != c.name || pe.Line != c.line || c.col != 0 && pe.Column != c.col || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s %q: %q (line %d, column %d); want line %d, column %d, saying %q", c.name, c.text, err, pe.Line, pe.Column, c.line, c.col, c.msg)
		}
		if d != nil {
			t.Errorf("%s %q: a dictionary and an error", c.name, c.text)
		}
		want := c.name + ":"
		if c.line > 0 {
			want = regexp.QuoteMeta(c.name) + ":" + regexp.QuoteMeta(strings.TrimPrefix(strings.Fields(err.Error())[0], c.name+":"))
		}
		if !strings.HasPrefix(err.Error(), c.name+":") || !regexp.MustCompile("^"+want).MatchString(err.Error()) {
			t.Errorf("%q does not start with the file and line", err)
		}
	}
}

func TestReadDictionary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kw.yaml")
	os.WriteFile(path, []byte("Weights: [w]\nBad: 3\n"), 0o644)
	if _, err := ReadDictionary(path); err == nil || !strings.HasPrefix(err.Error(), path+":2:6: ") {
		t.Errorf("ReadDictionary: %v, want it to name %s:2:6", err, path)
	}
	if _, err := ReadDictionary(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultDictionary().Validate(); err != nil {
		t.Errorf("the default dictionary: %v", err)
	}
	for _, c := range []struct {
		d    Dictionary
		want string
	}{
		{Dictionary{{"A", nil}, {"A", nil}}, "listed twice"},
		{Dictionary{{" ", nil}}, "empty"},
		{Dictionary{{"Others", nil}}, "reserved"},
		{Dictionary{{"A", []string{"x", ""}}}, "empty keyword"},
	} {
		if err := c.d.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%q) = %v, want %q", c.d, err, c.want)
		}
	}
}

// TestDefaultDictionaryDocumented: DefaultDictionary's doc comment lists
// exactly the categories and keywords it returns, in its order.
func TestDefaultDictionaryDocumented(t *testing.T) {
	src, err := os.ReadFile("dictionary.go")
	if err != nil {
		t.Fatal(err)
	}
	_, doc, ok := strings.Cut(string(src), "// DefaultDictionary returns")
	doc, _, _ = strings.Cut(doc, "func DefaultDictionary")
	if !ok {
		t.Fatal("no doc comment for DefaultDictionary")
	}
	var got Dictionary
	row := regexp.MustCompile(`^//\t(\S+(?: \S+)*?)\s{2,}(.+)$`)
	for _, l := range strings.Split(doc, "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			got = append(got, Rule{m[1], strings.Split(m[2], ", ")})
		}
	}
	if want := DefaultDictionary(); !reflect.DeepEqual(got, want) {
		t.Errorf("the doc lists %q\nDefaultDictionary returns %q", got, want)
	}
	// The user guide lists them too: "Parameters (`weights`, …),
	// Gradients (…) … and Data (…)".
	readme, err := os.ReadFile(filepath.Join("..", "docs", "device-memory.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(strings.Join(strings.Fields(string(readme)), " "), "The default dictionary is ")
	para, _, _ = strings.Cut(para, ". ")
	if !ok {
		t.Fatal(`docs/device-memory.md does not say "The default dictionary is …"`)
	}
	var inReadme Dictionary
	for _, m := range regexp.MustCompile(`(?:, | and )?([A-Z][a-z]+(?: [a-z]+)*) \(([^)]*)\)`).FindAllStringSubmatch(para, -1) {
		r := Rule{Category: m[1]}
		for _, kw := range strings.Split(m[2], ", ") {
			r.Keywords = append(r.Keywords, strings.Trim(kw, "`"))
		}
		inReadme = append(inReadme, r)
	}
	if want := DefaultDictionary(); !reflect.DeepEqual(inReadme, want) {
		t.Errorf("docs/device-memory.md lists %q\nDefaultDictionary returns %q", inReadme, want)
	}

	d := DefaultDictionary()
	d[0].Keywords[0] = "changed"
	if DefaultDictionary()[0].Keywords[0] == "changed" {
		t.Error("DefaultDictionary shares its slices between calls")
	}
	if !slices.ContainsFunc(DefaultDictionary(), func(r Rule) bool { return r.Category == "Parameters" }) {
		t.Error("no Parameters")
	}
}
