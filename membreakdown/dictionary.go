package membreakdown

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// A Rule is one category of a Dictionary: the keywords that put a buffer
// in it.
type Rule struct {
	Category string
	// Keywords are matched as case-sensitive substrings of a buffer's
	// Text; any one of them matching puts the buffer in the category.
	Keywords []string
}

// A Dictionary is an ordered list of categories and their keywords (MXNet's
// keyword dictionary). Its order breaks ties between categories of equal
// size, and multi-match warnings name categories in it.
type Dictionary []Rule

// Reserved category names: the breakdown adds them itself, so a
// dictionary may not use them.
const (
	// Others holds the buffers no keyword matched.
	Others = "Others"
	// UntrackableName names what the device says is in use beyond the
	// buffers tracked (see Untrackable).
	UntrackableName = "Untrackable"
)

// DefaultDictionary returns the dictionary used when none is given:
// MXNet's data-structure dictionary (in_arg, arg_grad, optimizer_state,
// data_entry, workspace) adapted to the tags Go programs on GPUs give
// their buffers, in this order:
//
//	Parameters       weights, params, parameters, in_arg
//	Gradients        grad, gradients, arg_grad
//	Optimizer state  optimizer, optimizer_state, adam, momentum
//	Activations      activation, activations, forward
//	Workspace        workspace, scratch, temp
//	Data             data, input, batch, data_entry
//
// Keywords are substrings, so "grad" already matches "gradients" and
// "arg_grad": the longer forms are listed to document what they are for.
// "params" and "forward" match tags and span names alike ("train/forward").
// Each call returns a new copy.
func DefaultDictionary() Dictionary {
	return Dictionary{
		{"Parameters", []string{"weights", "params", "parameters", "in_arg"}},
		{"Gradients", []string{"grad", "gradients", "arg_grad"}},
		{"Optimizer state", []string{"optimizer", "optimizer_state", "adam", "momentum"}},
		{"Activations", []string{"activation", "activations", "forward"}},
		{"Workspace", []string{"workspace", "scratch", "temp"}},
		{"Data", []string{"data", "input", "batch", "data_entry"}},
	}
}

// Match returns the indexes of the categories text belongs to, in the
// dictionary's order: those with at least one keyword that is a
// substring of text (case-sensitive). A category counts once however many
// of its keywords match.
func (d Dictionary) Match(text string) []int {
	var out []int
	for i, r := range d {
		for _, kw := range r.Keywords {
			if strings.Contains(text, kw) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// Validate reports the first problem that would make d's breakdown
// misleading: a category with an empty or reserved name, a category
// listed twice, an empty keyword (which would match everything).
func (d Dictionary) Validate() error {
	seen := map[string]bool{}
	for _, r := range d {
		if err := checkName(r.Category); err != nil {
			return err
		}
		if seen[r.Category] {
			return fmt.Errorf("category %q is listed twice", r.Category)
		}
		seen[r.Category] = true
		for _, kw := range r.Keywords {
			if kw == "" {
				return fmt.Errorf("category %q: an empty keyword would match every buffer", r.Category)
			}
		}
	}
	return nil
}

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("a category's name is empty")
	case name == Others || name == UntrackableName:
		return fmt.Errorf("category %q is reserved: the breakdown adds it itself", name)
	}
	return nil
}

// A ParseError is a keyword file that cannot be read as a dictionary,
// with where the problem is.
type ParseError struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int // 1-based; 0 when unknown
	Msg    string
}

// Error formats the error as compilers do: "file:line:column: message".
func (e *ParseError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&sb, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&sb, ":%d", e.Column)
		}
	}
	sb.WriteString(": ")
	sb.WriteString(e.Msg)
	return sb.String()
}

// ReadDictionary reads a keyword file (see ParseDictionary).
func ReadDictionary(path string) (Dictionary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseDictionary(path, data)
}

// ParseDictionary reads a keyword dictionary: a mapping of category names
// to lists of keywords, in JSON when name ends in ".json" and in YAML
// otherwise (a JSON file reads as YAML too), categories in the file's
// order:
//
//	{"Parameters": ["weights", "param"], "Gradients": ["grad"]}
//
//	Parameters: [weights, param]
//	Gradients:
//	  - grad
//
// name is only used to choose the syntax and in errors, which are
// *ParseError naming the line (and column) of: bad syntax, a value that
// is not a list of keywords, an empty or reserved category name (Others,
// Untrackable), a category listed twice, an empty keyword, or no
// category at all. A category with an empty list is allowed (it never
// matches).
func ParseDictionary(name string, data []byte) (Dictionary, error) {
	if !utf8.Valid(data) {
		return nil, &ParseError{File: name, Msg: "is not UTF-8 text"}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ParseError{File: name, Msg: "is empty: want a mapping of category names to keyword lists"}
	}
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return parseJSON(name, data)
	}
	return parseYAML(name, data)
}

// position is a line and column in a file.
type position struct{ line, col int }

// lineCol returns the 1-based line and column (in characters) of byte
// offset off of data.
func lineCol(data []byte, off int) position {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return position{line, utf8.RuneCount(before[start:]) + 1}
}

// jsonParser walks a JSON keyword file token by token, so that it keeps
// the file's order and knows where each token is.
type jsonParser struct {
	name string
	data []byte
	dec  *json.Decoder
}

func (p *jsonParser) errAt(pos position, format string, args ...any) error {
	return &ParseError{File: p.name, Line: pos.line, Column: pos.col, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token and where it starts.
func (p *jsonParser) next() (json.Token, position, error) {
	off := int(p.dec.InputOffset())
	for off < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	pos := lineCol(p.data, off)
	tok, err := p.dec.Token()
	if err != nil { // parseJSON checked the syntax first
		return nil, pos, p.errAt(pos, "JSON: %v", err)
	}
	return tok, pos, nil
}

// checkJSON reports where data's JSON syntax breaks, if it does. (The
// decoder's token stream gives no reliable offset for syntax errors;
// Unmarshal's does.)
func checkJSON(name string, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &ParseError{File: name, Msg: "JSON: " + err.Error()}
	}
	msg := strings.TrimPrefix(se.Error(), "json: ")
	at := int(se.Offset) - 1 // Offset is just past the byte that broke it
	if strings.HasPrefix(msg, "unexpected end") {
		msg = "the file ends inside the object"
		at = len(bytes.TrimRight(data, " \t\r\n"))
	}
	pos := lineCol(data, at)
	return &ParseError{File: name, Line: pos.line, Column: pos.col, Msg: "JSON syntax: " + msg}
}

// jsonKind names a token for errors.
func jsonKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "a list"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return fmt.Sprintf("a string (%q)", t)
	case json.Number:
		return "a number (" + t.String() + ")"
	case bool:
		return fmt.Sprintf("%v", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func parseJSON(name string, data []byte) (Dictionary, error) {
	if err := checkJSON(name, data); err != nil {
		return nil, err
	}
	p := &jsonParser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	tok, start, err := p.next()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.errAt(start, "want an object of category names to keyword lists, found %s", jsonKind(tok))
	}
	var d Dictionary
	first := map[string]position{}
	for {
		tok, pos, err := p.next()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('}') {
			break
		}
		cat, ok := tok.(string) // the decoder allows only strings here
		if !ok {
			return nil, p.errAt(pos, "want a category name, found %s", jsonKind(tok))
		}
		if err := checkName(cat); err != nil {
			return nil, p.errAt(pos, "%v", err)
		}
		if at, dup := first[cat]; dup {
			return nil, p.errAt(pos, "category %q again (first at line %d)", cat, at.line)
		}
		first[cat] = pos
		tok, pos, err = p.next()
		if err != nil {
			return nil, err
		}
		if tok != json.Delim('[') {
			return nil, p.errAt(pos, "category %q: want a list of keywords, found %s", cat, jsonKind(tok))
		}
		r := Rule{Category: cat, Keywords: []string{}}
		for {
			tok, pos, err := p.next()
			if err != nil {
				return nil, err
			}
			if tok == json.Delim(']') {
				break
			}
			kw, ok := tok.(string)
			if !ok {
				return nil, p.errAt(pos, "category %q: want a keyword (a string), found %s", cat, jsonKind(tok))
			}
			if kw == "" {
				return nil, p.errAt(pos, "category %q: an empty keyword would match every buffer", cat)
			}
			r.Keywords = append(r.Keywords, kw)
		}
		d = append(d, r)
	}
	if len(d) == 0 {
		return nil, p.errAt(start, "has no categories")
	}
	return d, nil
}

// yamlKind names a node for errors.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "a YAML node"
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func parseYAML(name string, data []byte) (Dictionary, error) {
	errAt := func(n *yaml.Node, format string, args ...any) error {
		line, col := inFile(data, n.Line, n.Column)
		return &ParseError{File: name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return nil, &ParseError{File: name, Msg: "is empty: want a mapping of category names to keyword lists"}
	} else if err != nil {
		return nil, yamlError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errAt(&extra, "a second YAML document: want one mapping")
	} else if err != io.EOF {
		return nil, yamlError(name, data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &ParseError{File: name, Msg: "is empty: want a mapping of category names to keyword lists"}
	}
	top := resolve(doc.Content[0])
	if top.Kind != yaml.MappingNode {
		return nil, errAt(top, "want a mapping of category names to keyword lists, found %s", yamlKind(top))
	}
	var d Dictionary
	first := map[string]int{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := resolve(top.Content[i]), resolve(top.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return nil, errAt(k, "want a category name, found %s", yamlKind(k))
		}
		cat := k.Value
		if k.Tag == "!!null" {
			cat = ""
		}
		if err := checkName(cat); err != nil {
			return nil, errAt(k, "%v", err)
		}
		if at, dup := first[cat]; dup {
			return nil, errAt(k, "category %q again (first at line %d)", cat, at)
		}
		first[cat] = k.Line
		if v.Kind != yaml.SequenceNode {
			return nil, errAt(v, "category %q: want a list of keywords, found %s", cat, yamlKind(v))
		}
		r := Rule{Category: cat, Keywords: []string{}}
		for _, item := range v.Content {
			item = resolve(item)
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, errAt(item, "category %q: want a keyword, found %s", cat, yamlKind(item))
			}
			if item.Value == "" {
				return nil, errAt(item, "category %q: an empty keyword would match every buffer", cat)
			}
			r.Keywords = append(r.Keywords, item.Value)
		}
		d = append(d, r)
	}
	if len(d) == 0 {
		return nil, errAt(top, "has no categories")
	}
	return d, nil
}

// inFile keeps a position the YAML library gives inside the file: it
// puts the end of a stream without a final newline (and what is missing
// there) on the line after it, which is said as the end of the last line.
func inFile(data []byte, line, col int) (int, int) {
	if end := lineCol(data, len(data)); line > end.line {
		return end.line, end.col
	}
	return line, col
}

// yamlError turns the YAML library's error into a ParseError with its
// line and column.
func yamlError(name string, data []byte, err error) error {
	var le *yaml.LoadError
	if errors.As(err, &le) {
		msg := "YAML syntax: " + le.Message
		if le.ContextMsg != "" && le.ContextMark.Line > 0 {
			msg += fmt.Sprintf(" (%s from line %d, column %d)", le.ContextMsg, le.ContextMark.Line, le.ContextMark.Column)
		}
		line, col := inFile(data, le.Mark.Line, le.Mark.Column)
		return &ParseError{File: name, Line: line, Column: col, Msg: msg}
	}
	return &ParseError{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}
