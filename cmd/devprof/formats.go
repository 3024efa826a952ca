package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/atomicfile"
)

// format is a trace file format devprof reads and writes.
type format int

const (
	formatUnknown format = iota
	formatPerfetto
	formatXPlane
	formatChrome
)

func (f format) String() string {
	switch f {
	case formatPerfetto:
		return "Perfetto"
	case formatXPlane:
		return "TensorBoard profile (XSpace)"
	case formatChrome:
		return "Chrome JSON"
	}
	return "unknown"
}

// formatOf decides a file's format by its name, as users name them.
func formatOf(path string) format {
	p := strings.ToLower(path)
	p = strings.TrimSuffix(p, ".gz")
	switch {
	case strings.HasSuffix(p, ".xplane.pb"):
		return formatXPlane
	case strings.HasSuffix(p, ".pftrace"), strings.HasSuffix(p, ".perfetto-trace"), strings.HasSuffix(p, ".perfetto"):
		return formatPerfetto
	case strings.HasSuffix(p, ".json"):
		return formatChrome
	}
	return formatUnknown
}

// sniff decides an input's format from its first bytes when the name does
// not tell: JSON starts with '{' or '['; both protobuf formats start with
// field 1, so an XSpace is told from a Perfetto trace by its first plane.
func sniff(path string) (format, error) {
	f, err := os.Open(path)
	if err != nil {
		return formatUnknown, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	head := make([]byte, 2)
	if _, err := io.ReadFull(r, head); err != nil {
		return formatUnknown, fmt.Errorf("%s: too short to be a trace", path)
	}
	r = io.MultiReader(bytes.NewReader(head), r)
	if head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return formatUnknown, err
		}
		r = zr
	}
	buf := make([]byte, 64)
	n, _ := io.ReadFull(r, buf)
	buf = bytes.TrimLeft(buf[:n], " \t\r\n")
	switch {
	case len(buf) == 0:
		return formatUnknown, fmt.Errorf("%s is empty", path)
	case buf[0] == '{' || buf[0] == '[':
		return formatChrome, nil
	case buf[0] == 0x0a && (bytes.Contains(buf, []byte("/host:")) || bytes.Contains(buf, []byte("/device:"))):
		return formatXPlane, nil
	case buf[0] == 0x0a:
		return formatPerfetto, nil
	}
	return formatUnknown, fmt.Errorf("%s: not a Perfetto, XSpace or Chrome JSON trace", path)
}

// checkNotEmpty refuses a file with nothing in it (after gunzip): the
// Perfetto reader would take it for a trace with no packets, and summary
// and convert would report or write an empty trace as if all were well.
func checkNotEmpty(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil // a broken gzip stream is the reader's to report
		}
		r = zr
	}
	if n, _ := io.ReadFull(r, make([]byte, 1)); n == 0 {
		return fmt.Errorf("%s is empty: not a trace", path)
	}
	return nil
}

// readTrace reads any supported trace file into the event model.
func readTrace(path string) (*event.Snapshot, format, error) {
	if err := checkNotEmpty(path); err != nil {
		return nil, formatUnknown, err
	}
	f := formatOf(path)
	if f == formatUnknown {
		var err error
		if f, err = sniff(path); err != nil {
			return nil, f, err
		}
	}
	var s *event.Snapshot
	var err error
	switch f {
	case formatPerfetto:
		s, err = perfetto.ReadSnapshot(path)
	case formatXPlane:
		s, err = xplane.ReadFile(path)
	case formatChrome:
		s, err = chrome.ReadFile(path)
	}
	return s, f, err
}

// writeTrace writes s to path in the format its name asks for, atomically.
func writeTrace(path string, s *event.Snapshot) (format, error) {
	f := formatOf(path)
	if f == formatUnknown {
		return f, fmt.Errorf("cannot tell the output format from %q: name it *.pftrace, *.pftrace.gz, *.xplane.pb or *.json / *.json.gz", path)
	}
	if f == formatXPlane && strings.HasSuffix(strings.ToLower(path), ".gz") {
		return f, fmt.Errorf("%q: TensorBoard does not read gzip-compressed .xplane.pb files; drop the .gz", path)
	}
	out, err := atomicfile.Create(path)
	if err != nil {
		return f, err
	}
	defer out.Abort()
	gz := strings.HasSuffix(strings.ToLower(path), ".gz")
	switch f {
	case formatPerfetto:
		err = perfetto.Write(out, s, perfetto.WriteOptions{Gzip: gz})
	case formatXPlane:
		err = xplane.Write(out, s)
	case formatChrome:
		if gz {
			err = chrome.Write(out, s)
		} else {
			err = chrome.WritePlain(out, s)
		}
	}
	if err != nil {
		return f, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, out.Commit()
}
