package main

import (
	"bufio"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// resultWriter prints a query's result: its columns once, then each row.
type resultWriter interface {
	columns(names []string) error
	row(values []any) error
	close() error
}

// copyRows prints rows to out as they come (the terminal table alone
// holds them, to size its columns).
func copyRows(rows *sql.Rows, out resultWriter) error {
	names, err := rows.Columns()
	if err != nil {
		return err
	}
	if err := out.columns(names); err != nil {
		return err
	}
	values := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := out.row(values); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return out.close()
}

// text is v as the terminal table and CSV show it; NULL is "".
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case interface{ Float64() float64 }: // DuckDB's DECIMAL
		return fmt.Sprint(v)
	}
	return fmt.Sprint(v)
}

// numeric reports whether v is a number, which the table aligns right.
func numeric(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, *big.Int:
		return true
	case interface{ Float64() float64 }:
		return true
	}
	return false
}

// tableWriter prints an aligned table: it holds up to max rows to size
// the columns, and says how many more there were.
type tableWriter struct {
	w     io.Writer
	max   int
	names []string
	cells [][]string
	right []bool
	more  int64
}

func (t *tableWriter) columns(names []string) error {
	t.names = names
	t.right = make([]bool, len(names))
	return nil
}

func (t *tableWriter) row(values []any) error {
	if len(t.cells) >= t.max {
		t.more++
		return nil
	}
	cells := make([]string, len(values))
	for i, v := range values {
		if v == nil {
			cells[i] = "NULL"
			continue
		}
		cells[i] = strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(text(v))
		if numeric(v) {
			t.right[i] = true
		}
	}
	t.cells = append(t.cells, cells)
	return nil
}

func (t *tableWriter) close() error {
	width := make([]int, len(t.names))
	for i, n := range t.names {
		width[i] = utf8.RuneCountInString(n)
	}
	for _, r := range t.cells {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	b := bufio.NewWriter(t.w)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case t.right[i]:
				b.WriteString(pad + c)
			case i == len(cells)-1:
				b.WriteString(c) // no trailing blanks
			default:
				b.WriteString(c + pad)
			}
		}
		b.WriteByte('\n')
	}
	line(t.names)
	rule := make([]string, len(t.names))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for _, r := range t.cells {
		line(r)
	}
	switch {
	case t.more > 0:
		fmt.Fprintf(b, "(%d rows shown of %d: -max_rows N for more, -json or -csv for all)\n", len(t.cells), int64(len(t.cells))+t.more)
	case len(t.cells) == 1:
		fmt.Fprintln(b, "(1 row)")
	default:
		fmt.Fprintf(b, "(%d rows)\n", len(t.cells))
	}
	return b.Flush()
}

// jsonWriter streams a JSON array with one object per row, its keys in
// the columns' order.
type jsonWriter struct {
	w    io.Writer
	b    *bufio.Writer
	keys [][]byte
	rows int64
}

func (j *jsonWriter) columns(names []string) error {
	j.b = bufio.NewWriter(j.w)
	for _, n := range names {
		k, err := json.Marshal(n)
		if err != nil {
			return err
		}
		j.keys = append(j.keys, k)
	}
	_, err := j.b.WriteString("[")
	return err
}

func (j *jsonWriter) row(values []any) error {
	if j.rows > 0 {
		j.b.WriteString(",")
	}
	j.rows++
	j.b.WriteString("\n{")
	for i, v := range values {
		if i > 0 {
			j.b.WriteByte(',')
		}
		j.b.Write(j.keys[i])
		j.b.WriteByte(':')
		enc, err := jsonValue(v)
		if err != nil {
			return fmt.Errorf("column %s: %v", j.keys[i], err)
		}
		j.b.Write(enc)
	}
	j.b.WriteString("}")
	return nil
}

func (j *jsonWriter) close() error {
	if j.rows > 0 {
		j.b.WriteString("\n")
	}
	j.b.WriteString("]\n")
	return j.b.Flush()
}

// jsonValue encodes one value: numbers as numbers (a HUGEINT sum too),
// a DECIMAL as its float, a non-finite float as a string (JSON has no
// NaN), a time in RFC 3339, anything else as encoding/json does.
func jsonValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return json.Marshal(text(x))
		}
	case []byte:
		return json.Marshal(string(x))
	case interface{ Float64() float64 }:
		if _, isBig := v.(*big.Int); !isBig {
			return jsonValue(x.Float64())
		}
	case time.Time:
		return json.Marshal(text(x))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.Marshal(text(v))
	}
	return b, nil
}

// csvWriter prints CSV with a header; NULL is an empty field.
type csvWriter struct {
	w      *csv.Writer
	fields []string
}

func newCSVWriter(w io.Writer) *csvWriter { return &csvWriter{w: csv.NewWriter(w)} }

func (c *csvWriter) columns(names []string) error { return c.w.Write(names) }

func (c *csvWriter) row(values []any) error {
	c.fields = c.fields[:0]
	for _, v := range values {
		c.fields = append(c.fields, text(v))
	}
	return c.w.Write(c.fields)
}

func (c *csvWriter) close() error {
	c.w.Flush()
	return c.w.Error()
}
