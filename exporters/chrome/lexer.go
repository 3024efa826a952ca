package chrome

import (
	"fmt"
	"io"
)

// maxDepth is how deeply one value may nest, as encoding/json allows:
// past it a hostile file would only cost stack for nothing.
const maxDepth = 10000

// lexer reads JSON values from a stream through a buffer of its own. It
// checks each value's syntax as encoding/json does (same messages, same
// offsets) but keeps nothing of it: value returns the value's bytes in
// the buffer, valid until the next call, for objIter to walk in place.
// The buffer holds one value at a time (an event is a few hundred bytes),
// so memory does not grow with the file; it grows only for a value
// larger than the buffer, as encoding/json's Decoder would.
type lexer struct {
	r        io.Reader
	buf      []byte
	pos, end int   // buf[pos:end] is read and not yet consumed
	base     int64 // input offset of buf[0]
	eof      bool
	err      error // the reader's first error other than io.EOF
	stack    []byte
	// members are the members of the last object value scanned, found
	// as its syntax was checked, so that the parser need not walk it
	// again.
	members []member
	keyEnd  int // where the last key checked ends
}

// member is where one member of an object is, in offsets relative to the
// object's start: the key with its quotes, and the value.
type member struct {
	key0, key1, val0, val1 int
}

func newLexer(r io.Reader) *lexer {
	return &lexer{r: r, buf: make([]byte, 256<<10)}
}

// offset returns the input offset of buf[i].
func (l *lexer) offset(i int) int64 { return l.base + int64(i) }

// read returns the number of input bytes read so far.
func (l *lexer) read() int64 { return l.base + int64(l.end) }

// fill reads more input, keeping buf[l.pos:l.end], and reports whether
// there is more. Indices into the buffer move with it: callers keep
// offsets relative to l.pos.
func (l *lexer) fill() bool {
	for {
		if l.eof || l.err != nil {
			return false
		}
		if l.pos > 0 {
			n := copy(l.buf, l.buf[l.pos:l.end])
			l.base += int64(l.pos)
			l.pos, l.end = 0, n
		}
		if l.end == len(l.buf) {
			grown := make([]byte, 2*len(l.buf))
			copy(grown, l.buf[:l.end])
			l.buf = grown
		}
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		switch {
		case err == io.EOF:
			l.eof = true
		case err != nil:
			l.err = err
		}
		if n > 0 {
			return true
		}
	}
}

// syntaxError is a JSON syntax error at input offset off (one past the
// bad byte, as json.SyntaxError counts; the input's length when it ends
// early).
type syntaxError struct {
	msg string
	off int64
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("chrome: %s at byte offset %d", e.msg, e.off)
}

// readError is the input's own error (a read, or gzip's checksum).
type readError struct {
	what string
	err  error
	off  int64
}

func (e *readError) Error() string {
	return fmt.Sprintf("chrome: %s: %v at byte offset %d", e.what, e.err, e.off)
}
func (e *readError) Unwrap() error { return e.err }

// endError is the error for input that ends (or fails to read) inside a
// value.
func (l *lexer) endError(what string) error {
	if l.err != nil {
		return &readError{what: what, err: l.err, off: l.read()}
	}
	return &syntaxError{msg: "unexpected end of JSON input", off: l.read()}
}

// badChar is the error for byte c at buf[l.pos+i], found where context
// says.
func (l *lexer) badChar(i int, context string) error {
	return &syntaxError{msg: "invalid character " + quoteChar(l.buf[l.pos+i]) + " " + context, off: l.offset(l.pos+i) + 1}
}

// at returns the byte at l.pos+i, reading more input when needed; ok is
// false when the input ends first.
func (l *lexer) at(i int) (c byte, ok bool) {
	if j := l.pos + i; uint(j) < uint(l.end) {
		return l.buf[j], true
	}
	return l.atSlow(i)
}

func (l *lexer) atSlow(i int) (c byte, ok bool) {
	for l.pos+i >= l.end {
		if !l.fill() {
			return 0, false
		}
	}
	return l.buf[l.pos+i], true
}

// skipSpace consumes space and returns the next byte without consuming
// it; ok is false at the end of input.
func (l *lexer) skipSpace() (c byte, ok bool) {
	for {
		for l.pos < l.end {
			if c := l.buf[l.pos]; !isSpace(c) {
				return c, true
			}
			l.pos++
		}
		if !l.fill() {
			return 0, false
		}
	}
}

// value checks the syntax of the value at l.pos (space already skipped)
// and returns its bytes, consuming them; what names the input for read
// errors. Nesting counts from the value itself, as the Decoder's Decode
// counts it.
func (l *lexer) value(what string) ([]byte, error) {
	// Most values are events of a few hundred bytes: with some kilobytes
	// buffered, quickScan checks them without reading more input; the
	// rest, and every value with an error, go through scan.
	for l.end-l.pos < quickWindow && l.fill() {
	}
	if i, ok := l.quickScan(l.buf[l.pos:l.end]); ok {
		v := l.buf[l.pos : l.pos+i]
		l.pos += i
		return v, nil
	}
	i, err := l.scan(0)
	if err != nil {
		if err == errEnd {
			return nil, l.endError(what)
		}
		return nil, err
	}
	v := l.buf[l.pos : l.pos+i]
	l.pos += i
	return v, nil
}

// errEnd stands for the input ending inside a value; value turns it into
// the error to report.
var errEnd = &syntaxError{msg: "end"}

// scan checks the value that starts at relative offset i (after
// optional space) and returns the relative offset just past it.
func (l *lexer) scan(i int) (int, error) {
	l.stack = l.stack[:0]
	l.members = l.members[:0]
	var err error
	for {
		// A value begins at i.
		c, ok := byte(0), false
		if i, c, ok = l.next(i); !ok {
			return 0, errEnd
		}
		if len(l.stack) == 1 && l.stack[0] == '{' {
			l.members[len(l.members)-1].val0 = i
		}
		switch {
		case c == '{' || c == '[':
			if len(l.stack) >= maxDepth {
				return 0, l.badChar(i, "exceeded max depth")
			}
			l.stack = append(l.stack, c)
			if i, c, ok = l.next(i + 1); !ok {
				return 0, errEnd
			}
			if c == '}' && l.stack[len(l.stack)-1] == '{' || c == ']' && l.stack[len(l.stack)-1] == '[' {
				l.stack = l.stack[:len(l.stack)-1]
				i++
				break
			}
			if l.stack[len(l.stack)-1] == '{' {
				if i, err = l.memberKey(i); err != nil {
					return 0, err
				}
			}
			continue
		case c == '"':
			i, err = l.str(i)
		case c == '-' || c >= '0' && c <= '9':
			i, err = l.number(i)
		case c == 't':
			i, err = l.literal(i, "true")
		case c == 'f':
			i, err = l.literal(i, "false")
		case c == 'n':
			i, err = l.literal(i, "null")
		default:
			return 0, l.badChar(i, "looking for beginning of value")
		}
		if err != nil {
			return 0, err
		}
		// A value ends at i: close what it ends, find where the next
		// begins.
		for {
			if len(l.stack) == 0 {
				return i, nil
			}
			if len(l.stack) == 1 && l.stack[0] == '{' {
				l.members[len(l.members)-1].val1 = i
			}
			if i, c, ok = l.next(i); !ok {
				return 0, errEnd
			}
			obj := l.stack[len(l.stack)-1] == '{'
			if c == '}' && obj || c == ']' && !obj {
				l.stack = l.stack[:len(l.stack)-1]
				i++
				continue
			}
			if c != ',' {
				if obj {
					return 0, l.badChar(i, "after object key:value pair")
				}
				return 0, l.badChar(i, "after array element")
			}
			i++
			if obj {
				if i, _, ok = l.next(i); !ok {
					return 0, errEnd
				}
				if i, err = l.memberKey(i); err != nil {
					return 0, err
				}
			}
			break
		}
	}
}

// next is spaceAt, with the common case (no space, the byte read)
// inlined.
func (l *lexer) next(i int) (int, byte, bool) {
	if c, ok := l.at(i); ok && c > ' ' {
		return i, c, true
	}
	return l.spaceAt(i)
}

// spaceAt skips space from relative offset i and returns the offset and
// byte of what follows; ok is false at the end of input.
func (l *lexer) spaceAt(i int) (int, byte, bool) {
	for {
		if l.pos+i < l.end {
			if c := l.buf[l.pos+i]; !isSpace(c) {
				return i, c, true
			}
			i++
			continue
		}
		if !l.fill() {
			return i, 0, false
		}
	}
}

// memberKey is key, noting where the key is when the object is the
// value's outermost.
func (l *lexer) memberKey(i int) (int, error) {
	j, err := l.key(i)
	if err == nil && len(l.stack) == 1 {
		l.members = append(l.members, member{key0: i, key1: l.keyEnd})
	}
	return j, err
}

// key checks an object key and its colon from relative offset i (space
// skipped) and returns where its value (or the space before it) begins.
func (l *lexer) key(i int) (int, error) {
	c, ok := l.at(i)
	if !ok {
		return 0, errEnd
	}
	if c != '"' {
		return 0, l.badChar(i, "looking for beginning of object key string")
	}
	i, err := l.str(i)
	if err != nil {
		return 0, err
	}
	l.keyEnd = i
	if i, c, ok = l.next(i); !ok {
		return 0, errEnd
	}
	if c != ':' {
		return 0, l.badChar(i, "after object key")
	}
	return i + 1, nil
}

// str checks the string at relative offset i (its opening quote) and
// returns the offset past its closing quote.
func (l *lexer) str(i int) (int, error) {
	i++
	for {
		b := l.buf[l.pos+i : l.end]
		for k := 0; k < len(b); k++ {
			c := b[k]
			if c >= 0x20 && c != '"' && c != '\\' {
				continue
			}
			switch {
			case c == '"':
				return i + k + 1, nil
			case c < 0x20:
				return 0, l.badChar(i+k, "in string literal")
			}
			j, err := l.escape(i + k)
			if err != nil {
				return 0, err
			}
			i, k = j, -1
			b = l.buf[l.pos+i : l.end] // escape may have read more
		}
		i += len(b)
		if !l.fill() {
			return 0, errEnd
		}
	}
}

// escape checks the escape sequence whose backslash is at relative offset
// i and returns the offset past it.
func (l *lexer) escape(i int) (int, error) {
	c, ok := l.at(i + 1)
	if !ok {
		return 0, errEnd
	}
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		for k := i + 2; k < i+6; k++ {
			h, ok := l.at(k)
			if !ok {
				return 0, errEnd
			}
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				return 0, l.badChar(k, "in \\u hexadecimal character escape")
			}
		}
		return i + 6, nil
	}
	return 0, l.badChar(i+1, "in string escape code")
}

// number checks the number at relative offset i and returns the offset
// past it. A number may end the input.
func (l *lexer) number(i int) (int, error) {
	c, _ := l.at(i)
	if c == '-' {
		i++
		var ok bool
		if c, ok = l.at(i); !ok {
			return 0, errEnd
		}
		if c < '0' || c > '9' {
			return 0, l.badChar(i, "in numeric literal")
		}
	}
	if c == '0' {
		i++
	} else {
		i = l.digits(i)
	}
	c, ok := l.at(i)
	if !ok {
		return i, nil
	}
	if c == '.' {
		i++
		if c, ok = l.at(i); !ok {
			return 0, errEnd
		}
		if c < '0' || c > '9' {
			return 0, l.badChar(i, "after decimal point in numeric literal")
		}
		i = l.digits(i)
		if c, ok = l.at(i); !ok {
			return i, nil
		}
	}
	if c == 'e' || c == 'E' {
		i++
		if c, ok = l.at(i); ok && (c == '+' || c == '-') {
			i++
			c, ok = l.at(i)
		}
		if !ok {
			return 0, errEnd
		}
		if c < '0' || c > '9' {
			return 0, l.badChar(i, "in exponent of numeric literal")
		}
		i = l.digits(i)
	}
	return i, nil
}

// digits returns the relative offset past the digits at i.
func (l *lexer) digits(i int) int {
	for {
		b := l.buf[l.pos+i : l.end]
		k := 0
		for k < len(b) && b[k]-'0' <= 9 {
			k++
		}
		i += k
		if k < len(b) || !l.fill() {
			return i
		}
	}
}

// literal checks the literal word (true, false, null) at relative offset
// i and returns the offset past it.
func (l *lexer) literal(i int, word string) (int, error) {
	for k := 1; k < len(word); k++ {
		c, ok := l.at(i + k)
		if !ok {
			return 0, errEnd
		}
		if c != word[k] {
			return 0, l.badChar(i+k, "in literal "+word+" (expecting "+quoteChar(word[k])+")")
		}
	}
	return i + len(word), nil
}

// quickWindow is how much input value keeps buffered for quickScan.
const quickWindow = 16 << 10

// notString marks the bytes that end the plain run of a string: its
// closing quote, an escape, a control character.
var notString = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// quickScan is scan over the bytes in b alone: it reports ok only for a
// value that is valid JSON and ends within b (noting the members as scan
// does), and leaves anything else — an error to word, a value that goes
// on past b — to scan.
func (l *lexer) quickScan(b []byte) (int, bool) {
	l.stack = l.stack[:0]
	l.members = l.members[:0]
	i := 0
	for {
		// A value begins at i.
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		if len(l.stack) == 1 && l.stack[0] == '{' {
			l.members[len(l.members)-1].val0 = i
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(l.stack) >= maxDepth {
				return 0, false
			}
			l.stack = append(l.stack, c)
			i++
			for i < len(b) && isSpace(b[i]) {
				i++
			}
			if i >= len(b) {
				return 0, false
			}
			if c == '{' && b[i] == '}' || c == '[' && b[i] == ']' {
				l.stack = l.stack[:len(l.stack)-1]
				i++
				break
			}
			if c == '{' {
				var ok bool
				if i, ok = l.quickKey(b, i); !ok {
					return 0, false
				}
			}
			continue
		case '"':
			var ok bool
			if i, ok = quickString(b, i); !ok {
				return 0, false
			}
		case 't':
			if len(b)-i < 4 || string(b[i:i+4]) != "true" {
				return 0, false
			}
			i += 4
		case 'f':
			if len(b)-i < 5 || string(b[i:i+5]) != "false" {
				return 0, false
			}
			i += 5
		case 'n':
			if len(b)-i < 4 || string(b[i:i+4]) != "null" {
				return 0, false
			}
			i += 4
		default:
			var ok bool
			if i, ok = quickNumber(b, i); !ok {
				return 0, false
			}
		}
		// A value ends at i.
		for {
			if len(l.stack) == 0 {
				return i, true
			}
			if len(l.stack) == 1 && l.stack[0] == '{' {
				l.members[len(l.members)-1].val1 = i
			}
			for i < len(b) && isSpace(b[i]) {
				i++
			}
			if i >= len(b) {
				return 0, false
			}
			obj := l.stack[len(l.stack)-1] == '{'
			c := b[i]
			if c == '}' && obj || c == ']' && !obj {
				l.stack = l.stack[:len(l.stack)-1]
				i++
				continue
			}
			if c != ',' {
				return 0, false
			}
			i++
			if obj {
				for i < len(b) && isSpace(b[i]) {
					i++
				}
				var ok bool
				if i, ok = l.quickKey(b, i); !ok {
					return 0, false
				}
			}
			break
		}
	}
}

// quickKey is key (noting the member as memberKey does) over b alone.
func (l *lexer) quickKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	end, ok := quickString(b, i)
	if !ok {
		return 0, false
	}
	if len(l.stack) == 1 {
		l.members = append(l.members, member{key0: i, key1: end})
	}
	i = end
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// quickString returns the end of the string whose quote is at b[i].
func quickString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		if !notString[b[i]] {
			continue
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		}
		// An escape.
		if i+1 >= len(b) {
			return 0, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 >= len(b) {
				return 0, false
			}
			for _, h := range b[i+2 : i+6] {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					return 0, false
				}
			}
			i += 5
		default:
			return 0, false
		}
	}
	return 0, false
}

// quickNumber returns the end of the number at b[i]; a number that ends
// b is left to scan, which knows whether more input follows.
func quickNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
		return i > j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	return i, i < len(b)
}
