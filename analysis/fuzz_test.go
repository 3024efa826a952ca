package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
)

// readerCorpus returns the inputs of the readers' own fuzz corpora
// (exporters/<format>/testdata/fuzz/FuzzRead): traces cut from real
// files and what the readers' fuzzing found.
func readerCorpus(tb testing.TB) [][]byte {
	var out [][]byte
	for _, format := range []string{"chrome", "perfetto", "xplane"} {
		dir := filepath.Join("..", "exporters", format, "testdata", "fuzz", "FuzzRead")
		entries, err := os.ReadDir(dir)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				tb.Fatal(err)
			}
			_, lit, ok := strings.Cut(string(data), "\n[]byte(")
			if !ok {
				continue
			}
			lit = strings.TrimSuffix(strings.TrimSpace(lit), ")")
			b, err := strconv.Unquote(lit)
			if err != nil {
				tb.Fatalf("%s: %v", e.Name(), err)
			}
			out = append(out, []byte(b))
		}
	}
	if len(out) < 50 {
		tb.Fatalf("only %d inputs in the readers' corpora", len(out))
	}
	return out
}

// FuzzAnalyze streams any input every streaming reader accepts into an
// Analyzer: it must not fail, and its breakdowns must add up.
func FuzzAnalyze(f *testing.F) {
	for _, b := range readerCorpus(f) {
		f.Add(b)
	}
	var streams []*formats.Format
	for _, fm := range formats.All() {
		if fm.Stream != nil {
			streams = append(streams, fm)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range streams {
			a := NewAnalyzer(event.Meta{}, Options{Top: 3})
			if err := fm.Stream(bytes.NewReader(data), "fuzz", a); err != nil {
				continue
			}
			r := a.Report()
			for _, d := range r.Devices {
				checkAddsUp(t, fm.Name, "device", d.Breakdown)
				for _, s := range d.Streams {
					checkAddsUp(t, fm.Name, s.Name, s.Breakdown)
					if i := s.Idle; i.HostWaitNS+i.KernelWaitNS+i.SyncNS+i.OtherNS != s.IdleNS {
						t.Errorf("%s %s: idle by cause %+v, idle %d", fm.Name, s.Name, i, s.IdleNS)
					}
				}
			}
			if r.Steps != nil {
				for _, s := range r.Steps.All {
					if s.DeviceBusyNS < 0 || s.DeviceBusyNS > s.WallNS || s.HostBusyNS < 0 || s.HostBusyNS > s.WallNS {
						t.Errorf("%s: step %+v", fm.Name, s)
					}
				}
			}
		}
	})
}

// FuzzSink drives an Analyzer with any sequence of Sink calls (tracks of
// every kind, spans in and out of order, ends early and late and for
// IDs it never gave, flows and correlation ids that repeat, Resets): it
// must not fail, its breakdowns must add up, and spilling every record
// to disk must change nothing.
func FuzzSink(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(bytes.Repeat([]byte{3, 9, 200, 5, 7, 1, 4, 2, 30, 6, 6, 6}, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := NewAnalyzer(event.Meta{}, Options{Top: 2, KernelWait: 3})
		spilled := NewAnalyzer(event.Meta{}, Options{Top: 2, KernelWait: 3, MemoryBudget: 1, TempDir: t.TempDir()})
		driveSink(a, data)
		driveSink(spilled, data)
		r := a.Report()
		if s := spilled.Report(); !reflect.DeepEqual(r, s) {
			t.Errorf("spilled to disk\n got %+v\nwant %+v", s, r)
		}
		for _, d := range r.Devices {
			checkAddsUp(t, "sink", "device", d.Breakdown)
			for _, s := range d.Streams {
				checkAddsUp(t, "sink", s.Name, s.Breakdown)
				if i := s.Idle; i.HostWaitNS+i.KernelWaitNS+i.SyncNS+i.OtherNS != s.IdleNS {
					t.Errorf("%s: idle by cause %+v, idle %d", s.Name, i, s.IdleNS)
				}
			}
		}
		if r.Steps != nil {
			for _, s := range r.Steps.All {
				if s.DeviceBusyNS < 0 || s.DeviceBusyNS > s.WallNS || s.HostBusyNS < 0 || s.HostBusyNS > s.WallNS {
					t.Errorf("step %+v", s)
				}
			}
		}
	})
}

// driveSink makes Sink calls of a, as data says (FuzzSink).
func driveSink(a *Analyzer, data []byte) {
	next := func() int64 {
		if len(data) == 0 {
			return 0
		}
		v := int64(data[0])
		data = data[1:]
		return v
	}
	var ids []uint64
	tracks := uint32(0)
	for len(data) > 0 {
		op, x, y, z := next(), next(), next(), next()
		track := uint32(z) % (tracks + 2)
		args := []event.Arg{{Kind: event.ArgFlow, Num: uint64(y % 8)}}
		if y%3 == 0 {
			args = []event.Arg{{Key: "correlation", Kind: event.ArgInt, Num: uint64(x % 8)}}
		}
		switch op % 9 {
		case 0:
			kinds := []event.TrackKind{event.TrackDeviceStream, event.TrackHostThread, event.TrackDevice, event.TrackProcess}
			a.Track(event.Track{Kind: kinds[x%4], Device: int(y % 3), ID: z, Name: []string{"", "Stream #3", "main"}[z%3]})
			tracks++
		case 1:
			ids = append(ids, a.Span(event.Span{Name: []string{"train", "fwd", "ProfilerStep#4", "cudaLaunchKernel"}[x%4], Start: y * 10, End: y*10 + z,
				Track: track, Args: args, Step: x%5 == 0, StepNum: z, Unfinished: x%7 == 0}))
		case 2:
			if len(ids) > 0 {
				a.EndSpan(ids[int(x)%len(ids)], y*10+z)
			} else {
				a.EndSpan(uint64(x), y)
			}
		case 3, 4:
			kind := event.ActivityKind(x % 10)
			ids = append(ids, a.ActivityOf(kind, track, []string{"gemm", "ncclKernel_AllReduce", "Memcpy HtoD", "Stream Sync"}[y%4], y*10, y*10+z, args))
		case 5:
			ids = append(ids, a.TrackSlice(track, "slice", y*10, y*10+z, args))
		case 6:
			a.Instant("i", y, track, uint64(x), nil)
			a.TrackCounter(track, "c", "", y, float64(z))
		case 7:
			a.SetTrackName(track, []string{"Stream #1", "x"}[x%2])
			a.Process(event.Process{Name: "GPU 1", Labels: []string{"GPU 2"}})
		case 8:
			if x%16 == 0 {
				a.Reset()
				ids, tracks = nil, 0
			}
		}
	}
}
