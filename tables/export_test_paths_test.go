package tables_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/tables"
)

// sameFiles fails unless the tables in dirA and dirB are the same files,
// byte for byte, at the same paths.
func sameFiles(t *testing.T, dirA string, pathsA []string, dirB string, pathsB []string) {
	t.Helper()
	if !slices.Equal(pathsA, pathsB) {
		t.Fatalf("paths differ:\n%v\n%v", pathsA, pathsB)
	}
	for _, p := range pathsA {
		a, err := os.ReadFile(filepath.Join(dirA, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirB, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs: %d and %d bytes, first difference at %d", p, len(a), len(b), eventtest.FirstDifference(a, b))
		}
	}
}

// spooled writes read's trace through a Writer, which spools every event
// until the end.
func spooled(t *testing.T, o tables.Options, meta event.Meta, read func(event.Sink) error) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	w, err := tables.NewWriter(dir, meta, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := read(w); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	paths, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return dir, paths
}

// goTrace records a small Go program's execution trace.
func goTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prog.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		t.Skipf("runtime/trace: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			trace.WithRegion(t.Context(), "work", func() {
				s := 0
				for j := range 100_000 * (i + 1) {
					s += j
				}
				_ = s
			})
		})
	}
	wg.Wait()
	trace.Stop()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportSameFilesAsWriter: Export, which writes rows as events come,
// gives the same files, byte for byte, as a Writer, which spools them
// until the end, for the traces of every format devprof reads, whether
// it holds the whole trace, a few kilobytes or nothing before writing
// rows; and that it reads none of them but a Go execution trace twice:
// the other readers give the facts rows take (clock anchor, host,
// program, track names) before the rows, even with nothing held.
func TestExportSameFilesAsWriter(t *testing.T) {
	paths := realTraces(t)
	for _, pat := range []string{"../shared/fixtures/real-gpu/*.json.gz", "testdata/golden/*.pftrace", "testdata/golden/*.json", "testdata/golden/*.xplane.pb", "testdata/*.xplane.pb"} {
		m, _ := filepath.Glob(filepath.Join("..", pat))
		if pat[0] == '.' {
			m, _ = filepath.Glob(filepath.Join("..", "..", pat[3:]))
		}
		paths = append(paths, m...)
	}
	prog := goTrace(t)
	paths = append(paths, prog, prog+" streamed")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			file, streamed := strings.CutSuffix(path, " streamed")
			f, err := formats.Detect(file)
			if err != nil {
				t.Fatal(err)
			}
			read := func(s event.Sink) error { return f.StreamFile(file, s, formats.ReadOptions{}) }
			if streamed {
				// As devprof export reads a Go trace: decoded straight
				// into the sink, not through a model.
				read = func(s event.Sink) error {
					r, err := os.Open(file)
					if err != nil {
						return err
					}
					defer r.Close()
					return gotrace.Decode(r, s, gotrace.Options{Name: file})
				}
			}
			o := tables.Options{Run: "r", Session: "s", SourceFormat: f.Name}
			wantDir, want := spooled(t, o, event.Meta{}, read)
			for _, hold := range []int{0, 4 << 10, tables.LiveHoldBytes} {
				dir := t.TempDir()
				got, twice, err := tables.ExportHolding(dir, event.Meta{}, o, read, hold)
				if err != nil {
					t.Fatalf("hold %d: %v", hold, err)
				}
				switch {
				case !twice:
				case f == formats.GoTrace && hold < tables.LiveHoldBytes:
					// A goroutine alive when the trace began is named
					// when a stack of its own shows its start function,
					// which may come after rows on its track (when
					// another goroutine woke it): the run decides.
					t.Logf("hold %d: read twice", hold)
				default:
					// Every other reader gives the facts rows take
					// before the rows: a trace read twice costs twice.
					t.Errorf("hold %d: read twice", hold)
				}
				sameFiles(t, wantDir, want, dir, got)
				if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
					t.Errorf("hold %d: left %v", hold, left)
				}
			}
		})
	}
}

// TestExportLateFacts: each fact a reader may give only at the end of a
// trace, given after rows were written with another, makes Export read
// the trace twice, and its files are still a Writer's; given before the
// rows, or while the whole trace is held, it does not.
func TestExportLateFacts(t *testing.T) {
	thread := event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"}
	spans := func(s event.Sink, tr uint32, names ...string) {
		for i, n := range names {
			s.Span(event.Span{Name: n, Start: int64(100 * (i + 1)), End: int64(100*(i+1) + 50), Track: tr})
		}
	}
	anchor := event.ClockAnchor{Mono: 0, Wall: wall0}
	for _, c := range []struct {
		name  string
		meta  event.Meta // the metadata Export starts with
		feed  func(s event.Sink)
		twice bool
		big   bool // over Export's hold: read twice even then
	}{
		{"anchor at the end", event.Meta{}, func(s event.Sink) {
			spans(s, s.Track(thread), "a", "b")
			s.Meta().Start = anchor
		}, true, false},
		{"anchor at the start", event.Meta{Start: anchor}, func(s event.Sink) {
			spans(s, s.Track(thread), "a", "b")
			s.Meta().Start = anchor
		}, false, false},
		{"host at the end", event.Meta{}, func(s event.Sink) {
			spans(s, s.Track(thread), "a")
			s.Meta().Host = "late-host"
		}, true, false},
		{"track renamed after its rows", event.Meta{}, func(s event.Sink) {
			// Rows not yet in a written row group take the new name.
			tr := s.Track(thread)
			other := s.Track(event.Track{Kind: event.TrackHostThread, ID: 2, Name: "main"})
			spans(s, tr, "a")
			spans(s, other, "x")
			s.Counter("c", "", 1, 1)
			s.SetTrackName(tr, "renamed")
			spans(s, tr, "b")
			spans(s, other, "y")
		}, false, false},
		{"track renamed after a row group of its rows was written", event.Meta{}, func(s event.Sink) {
			tr := s.Track(thread)
			for i := range 70_000 {
				s.Span(event.Span{Name: "op", Start: int64(i) * 10, End: int64(i)*10 + 5, Track: tr})
			}
			s.SetTrackName(tr, "renamed")
		}, true, true},
		{"track named before its rows", event.Meta{}, func(s event.Sink) {
			tr := s.Track(thread)
			other := s.Track(event.Track{Kind: event.TrackHostThread, ID: 2})
			spans(s, tr, "a")
			s.SetTrackName(other, "named")
			spans(s, other, "b")
		}, false, false},
		{"a marked step after ProfilerStep#N", event.Meta{}, func(s event.Sink) {
			tr := s.Track(thread)
			spans(s, tr, "ProfilerStep#1")
			s.Span(event.Span{Name: "train", Start: 1000, End: 2000, Track: tr, Step: true, StepNum: 1})
		}, true, false},
		{"a stream's work out of order", event.Meta{}, func(s event.Sink) {
			st := s.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7, Name: "Stream #7"})
			s.TrackSlice(st, "gemm", 500, 600, nil)
			s.TrackSlice(st, "range", 100, 900, nil)
			s.TrackSlice(st, "gemm", 200, 300, nil)
		}, true, false},
		{"the program named at the end", event.Meta{}, func(s event.Sink) {
			s.Counter("heap", "bytes", 10, 1)
			s.Meta().Program, s.Meta().PID = "prog", 42
		}, true, false},
		{"a reader that starts over", event.Meta{}, func(s event.Sink) {
			spans(s, s.Track(thread), "gone")
			s.Meta().Host = "first"
			s.Reset()
			spans(s, s.Track(thread), "kept")
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			read := func(s event.Sink) error { c.feed(s); return nil }
			o := tables.Options{Run: "r", Session: "s"}
			wantDir, want := spooled(t, o, c.meta, read)
			dir := t.TempDir()
			got, twice, err := tables.ExportHolding(dir, c.meta, o, read, 0)
			if err != nil {
				t.Fatal(err)
			}
			if twice != c.twice {
				t.Errorf("read twice: %v, want %v", twice, c.twice)
			}
			sameFiles(t, wantDir, want, dir, got)
			dir = t.TempDir()
			got, twice, err = tables.ExportHolding(dir, c.meta, o, read, tables.LiveHoldBytes)
			if err != nil {
				t.Fatal(err)
			}
			if twice != c.big {
				t.Errorf("read twice: %v, with the default hold", twice)
			}
			sameFiles(t, wantDir, want, dir, got)
		})
	}
}

// TestExportReadFails: a reader's error, in the first reading or the
// second, is Export's, and nothing is left in the directory, though rows
// had been written.
func TestExportReadFails(t *testing.T) {
	bad := errors.New("truncated file")
	for _, c := range []struct {
		name    string
		failAt  int // the reading that fails, 1 or 2
		lateFix bool
	}{{"first reading", 1, false}, {"second reading", 2, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			readings := 0
			read := func(s event.Sink) error {
				readings++
				tr := s.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
				for i := range 5000 {
					s.Span(event.Span{Name: "op", Start: int64(i) * 10, End: int64(i)*10 + 5, Track: tr})
				}
				if readings == c.failAt {
					return bad
				}
				if c.lateFix {
					s.Meta().Host = "known at the end"
				}
				return nil
			}
			paths, twice, err := tables.ExportHolding(dir, event.Meta{}, tables.Options{Run: "r", Session: "s"}, read, 0)
			if !errors.Is(err, bad) || paths != nil {
				t.Fatalf("got %v, %v; want the reader's error", paths, err)
			}
			if twice != (c.failAt == 2) || readings != c.failAt {
				t.Errorf("read %d times (twice %v)", readings, twice)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("left in the directory: %v", names)
			}
		})
	}
}
