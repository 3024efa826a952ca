package tables_test

import (
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tables"
)

// playOps makes the calls a reader would from ops, one call per few
// bytes: tracks of each kind, renames, spans finished and open (some
// ProfilerStep#N, some marked steps), their ends, device work with flows
// and correlation ids in and out of order, instants, counters, processes,
// metadata set at any point, and a start over.
func playOps(s event.Sink, ops []byte) {
	names := []string{"op", "gemm", "ProfilerStep#1", "ProfilerStep#2", "ncclKernel_AllReduce", "Memcpy HtoD", "range", "", "bad\xff"}
	var tracks []uint32
	var open []uint64
	t := int64(0)
	next := func() byte {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return b
	}
	track := func() uint32 {
		if len(tracks) == 0 {
			return 0
		}
		return tracks[int(next())%(len(tracks)+1)%len(tracks)]
	}
	for len(ops) > 0 {
		op, b := next(), next()
		name := names[int(b)%len(names)]
		t += int64(b % 7 * 10)
		switch op % 12 {
		case 0:
			var tr event.Track
			switch b % 4 {
			case 0:
				tr = event.Track{Kind: event.TrackHostThread, ID: int64(b), Name: "thread"}
			case 1:
				tr = event.Track{Kind: event.TrackDeviceStream, Device: int(b % 2), ID: int64(b % 3), Name: "Stream #7"}
			case 2:
				tr = event.Track{Kind: event.TrackDevice, Device: int(b % 2), DeviceName: "H200"}
			default:
				tr = event.Track{Kind: event.TrackHostThread, ID: int64(b), Name: "stream 3", Process: int(b % 3)}
			}
			tracks = append(tracks, s.Track(tr))
		case 1:
			if tr := track(); tr != 0 {
				s.SetTrackName(tr, name)
			}
		case 2:
			s.Span(event.Span{Name: name, Start: t, End: t + int64(b), Track: track(), Step: b%5 == 0, StepNum: int64(b)})
		case 3:
			open = append(open, s.Span(event.Span{Name: name, Start: t, Track: track(), Unfinished: true}))
		case 4:
			if len(open) > 0 {
				i := int(b) % len(open)
				s.EndSpan(open[i], t+int64(b))
				open = slices.Delete(open, i, i+1)
			}
		case 5:
			start := t - int64(b%3)*100 // now and then before the last
			args := []event.Arg{{Kind: event.ArgFlow, Num: uint64(b % 9)}, {Key: "correlation", Kind: event.ArgUint, Num: uint64(b % 4)}}
			s.ActivityOf(event.ActivityKind(b%8), track(), name, start, start+int64(b), args[:b%3])
		case 6:
			start := t - int64(b%3)*100
			s.TrackSlice(track(), name, start, start+int64(b%50), nil)
		case 7:
			s.Instant(name, t, track(), 0, []event.Arg{{Key: "k", Kind: event.ArgInt, Num: uint64(b)}})
		case 8:
			if b%2 == 0 {
				s.Counter(name, "B", t, float64(b))
			} else if tr := track(); tr != 0 {
				s.TrackCounter(tr, name, "%", t, float64(b))
			}
		case 9:
			m := s.Meta()
			switch b % 4 {
			case 0:
				m.Start = event.ClockAnchor{Mono: int64(b), Wall: wall0 + int64(b)*1000}
			case 1:
				m.Host = name
			case 2:
				m.Program, m.PID = name, int(b)
			default:
				m.Stop = event.ClockAnchor{Mono: t, Wall: wall0 + t}
			}
		case 10:
			s.Process(event.Process{PID: int64(b), Name: name})
		case 11:
			if b == 0 {
				s.Reset()
				tracks, open = nil, nil
			}
		}
	}
}

// FuzzExport holds Export, writing rows as calls come and holding
// nothing, to a Writer on any sequence of a reader's calls: the same
// files, byte for byte, whether it read the calls once or twice.
func FuzzExport(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 5, 4, 9, 0, 2, 7})
	f.Add([]byte{0, 1, 6, 10, 6, 3, 6, 200, 5, 9, 1, 4, 9, 1})
	f.Add([]byte{0, 0, 2, 2, 2, 5, 1, 3, 3, 0, 4, 9, 2, 3, 8, 1, 11, 0, 0, 0, 2, 0})
	f.Add([]byte{10, 4, 0, 3, 3, 8, 2, 13, 8, 6, 9, 8, 9, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		read := func(s event.Sink) error { playOps(s, ops); return nil }
		o := tables.Options{Run: "r", Session: "s"}
		wantDir, want := spooled(t, o, event.Meta{}, read)
		for _, hold := range []int{0, tables.LiveHoldBytes} {
			dir := t.TempDir()
			got, _, err := tables.ExportHolding(dir, event.Meta{}, o, read, hold)
			if err != nil {
				t.Fatal(err)
			}
			sameFiles(t, wantDir, want, dir, got)
		}
	})
}
