package xplane

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// TestHolesWriteTheSameBytes writes snapshots with every large message's
// prefix a hole (holeMin 0: every event, line and plane; 200; the
// default) and with none (messages moved into place, as protoenc.End
// does), and requires the same bytes: the golden session (device planes,
// memory, flows), other processes, owned counters, warnings and notes,
// 200 k spans on several lanes, whose lines and host plane pass the
// default holeMin and need prefixes of 3 and 4 bytes, and spans of 40
// arguments, whose events need prefixes of 2 bytes inside their line's.
//
// Each is also written streamed (streamMin 0: measured, then encoded
// again straight to the writer), which must give the same bytes too.
func TestHolesWriteTheSameBytes(t *testing.T) {
	defer func(old int) { holeMin = old }(holeMin)
	defer func(old int) { streamMin = old }(streamMin)
	snaps := map[string]*event.Snapshot{
		"golden": eventtest.GoldenSnapshot(),
		"multi":  eventtest.MultiProcessSnapshot(),
		"owned":  eventtest.OwnedSnapshot(),
		"meta":   eventtest.MetaSnapshot(),
		"large":  lanesSnapshot(200_000),
		"wide":   wideSnapshot(),
	}
	for name, s := range snaps {
		holeMin = math.MaxInt
		var want bytes.Buffer
		if err := Write(&want, s); err != nil {
			t.Fatal(err)
		}
		for _, min := range []int{0, 200, 64 << 10} {
			holeMin = min
			for _, stream := range []bool{false, true} {
				streamMin = defaultStreamMin
				if stream {
					streamMin = 0
				}
				var got bytes.Buffer
				if err := Write(&got, s); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s, holeMin %d, streamed %v: %d bytes differ from the %d bytes written without holes", name, min, stream, got.Len(), want.Len())
				}
			}
		}
		streamMin = defaultStreamMin
		if name == "large" {
			if want.Len() < 1<<21 {
				t.Errorf("the large snapshot wrote %d bytes: too few to need 4-byte prefixes", want.Len())
			}
			if rows := len(s.Layout().Rows); rows < 4 {
				t.Errorf("the large snapshot has %d rows, want 4 (one line each)", rows)
			}
		}
	}
}

// defaultStreamMin is streamMin as Write has it.
var defaultStreamMin = streamMin

// A streamed space reaches the writer in pieces of about flushMin as it
// is encoded: no write, and so no buffer, holds much more, whatever the
// size of the space.
func TestStreamedSpaceIsWrittenInPieces(t *testing.T) {
	defer func(old int) { streamMin = old }(streamMin)
	streamMin = 0
	var w piecesWriter
	if err := Write(&w, lanesSnapshot(200_000)); err != nil {
		t.Fatal(err)
	}
	if w.total < 4*flushMin || w.writes < w.total/(2*flushMin) || w.largest > flushMin+holeMin {
		t.Fatalf("%d bytes in %d writes, the largest %d: want pieces of at most %d", w.total, w.writes, w.largest, flushMin+holeMin)
	}
}

// piecesWriter counts what it is given, and keeps none of it.
type piecesWriter struct{ total, writes, largest int }

func (w *piecesWriter) Write(b []byte) (int, error) {
	w.total += len(b)
	w.writes++
	w.largest = max(w.largest, len(b))
	return len(b), nil
}

// A streaming space that fails to write stops and reports the error.
func TestStreamedSpaceWriteError(t *testing.T) {
	defer func(old int) { streamMin = old }(streamMin)
	streamMin = 0
	err := Write(failingWriter{}, lanesSnapshot(200_000))
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("err %v, want disk full", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// lanesSnapshot builds n spans as 4 goroutines' steps (so 4 lines of the
// host plane), each span with an int argument.
func lanesSnapshot(n int) *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: int64(n) * 1000}})
	for lane := range 4 {
		for i := 0; i < n/4; i += 10 {
			t := int64(i) * 1000
			root := b.Span(event.Span{Name: fmt.Sprint("step ", lane), Start: t, End: t + 9_500})
			for j := range 9 {
				s := t + int64(j+1)*900
				b.Span(event.Span{Name: "op", Start: s, End: s + 800, Parent: root,
					Args: []event.Arg{{Key: "layer", Kind: event.ArgInt, Num: uint64(j)}}})
			}
		}
	}
	return b.Snapshot()
}

// wideSnapshot has spans of 40 arguments each: events over 127 bytes.
func wideSnapshot() *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: "h", Stop: event.ClockAnchor{Mono: 1 << 20}})
	var args []event.Arg
	for i := range 40 {
		args = append(args, event.Arg{Key: fmt.Sprint("k", i), Kind: event.ArgInt, Num: uint64(i) << 40})
	}
	for i := range 50 {
		b.Span(event.Span{Name: "wide", Start: int64(i) * 100, End: int64(i)*100 + 50, Args: args})
	}
	return b.Snapshot()
}
