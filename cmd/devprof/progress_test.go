package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressMeter(t *testing.T) {
	var buf bytes.Buffer
	m := &progressMeter{w: &buf, label: "devprof convert: reading x.pftrace"}
	m.update(2_500_000, 10_000_000)
	m.update(10_000_000, 10_000_000)
	m.clear()
	want := "\rdevprof convert: reading x.pftrace: 2.5 MB of 10.0 MB (25%)" +
		"\rdevprof convert: reading x.pftrace: 10.0 MB of 10.0 MB (100%)" + "\r\033[K"
	if buf.String() != want {
		t.Errorf("meter drew %q\nwant %q", buf.String(), want)
	}
	// At most one line per interval.
	buf.Reset()
	m = &progressMeter{w: &buf, label: "r", every: 1 << 62}
	m.update(1, 10)
	m.update(5, 10)
	if strings.Count(buf.String(), "\r") != 1 {
		t.Errorf("drew %q, want one line", buf.String())
	}
	// Nothing to clear when nothing was drawn; a pipe gets no meter at all
	// (readTrace checks isTerminal, false for a buffer).
	buf.Reset()
	(&progressMeter{w: &buf}).clear()
	if buf.Len() != 0 || isTerminal(&buf) {
		t.Errorf("clear without a line drew %q", buf.String())
	}
}
