package perfetto

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
)

// fuzzSeeds returns real traces written by the writer (bare, compressed and gzip),
// the hand-built traces of reader_test.go, and corrupt variants of them.
func fuzzSeeds(t testing.TB) [][]byte {
	s := record(t, 1<<12, func(ctx context.Context) {
		sctx, step := annotate.Step(ctx, "train", 1, annotate.Int("batch", 8))
		pctx, parent := annotate.Begin(sctx, "parent", annotate.String("s", "v"), annotate.Float64("f", 1.5), annotate.Bool("b", true))
		var wg sync.WaitGroup
		begun := make(chan struct{})
		wg.Add(1)
		go func() { // overlaps child-a: displaced
			defer wg.Done()
			<-begun
			_, b := annotate.Begin(pctx, "child-b", annotate.Uint64("u", 7))
			b.End()
		}()
		actx, a := annotate.Begin(pctx, "child-a")
		annotate.Instant(actx, "mark", annotate.Flow(3))
		close(begun)
		wg.Wait()
		a.End()
		annotate.Counter{Name: "loss"}.Set(0.5)
		annotate.Counter{Name: "mem", Unit: "bytes"}.Set(64)
		parent.End()
		annotate.Instant(ctx, "loose")
		step.End()
	})
	// A small trace is written bare, so mutations reach the packets'
	// fields; a trace of several batches is deflated, so they reach the
	// inflating too.
	plain := encode(t, s, false)
	seeds := [][]byte{
		plain,
		encode(t, s, true),
		encode(t, stepsSnapshot(10_000), false),
		incrementalClockTrace(),
		clockConversionTrace(),
		foreignTrace(),
		foreignForms(),
		legacyTimestampsTrace(),
		fastFormsTrace(),
		gpuLikeTrace(t, 300),
		plain[:len(plain)-1],
		plain[:len(plain)/2],
	}
	for _, name := range slices.Sorted(maps.Keys(ruleTraces())) {
		seeds = append(seeds, ruleTraces()[name])
	}
	flipped := bytes.Clone(plain)
	flipped[len(flipped)/3] ^= 0x40
	return append(seeds, flipped)
}

// FuzzRead's committed corpus (testdata/fuzz/FuzzRead) holds packets and
// cuts of the real H100 trace; the whole trace is added here from
// ../../testdata rather than copied into it.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	real, err := os.ReadFile(realPftrace)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(encode(f, eventtest.GoldenSnapshot(), false))       // memory events and their counters
	f.Add(encode(f, eventtest.MultiProcessSnapshot(), false)) // other processes, ranks, devprof's process labels
	f.Add(encode(f, eventtest.OwnedSnapshot(), false))        // counters under threads and processes, process instants
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTrace(bytes.NewReader(data))
		// The general path alone reads what the fast path takes as the
		// fast path reads it, drops and errors included.
		fastPackets = false
		general, gerr := ReadTrace(bytes.NewReader(data))
		fastPackets = true
		if (err == nil) != (gerr == nil) || err != nil && err.Error() != gerr.Error() {
			t.Fatalf("error %v, the general path's %v", err, gerr)
		}
		if err == nil && fmt.Sprintf("%#v", general) != fmt.Sprintf("%#v", tr) {
			t.Fatalf("the fast path reads %d slices, %d instants, %d counters, drops %v; the general path %d, %d, %d, %v",
				len(tr.Slices), len(tr.Instants), len(tr.Counters), tr.Drops, len(general.Slices), len(general.Instants), len(general.Counters), general.Drops)
		}
		if err != nil {
			if tr != nil {
				t.Fatal("a trace and an error")
			}
			if !strings.HasPrefix(err.Error(), "perfetto: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if err := checkTrace(tr); err != nil {
			t.Fatal(err)
		}
		// What convert and summary do with a read trace: the event model,
		// its layout, and writing it out again.
		snap := tr.Snapshot()
		snap.Layout()
		snap.MemoryTimelines(MemoryTopTags)
		if err := Write(io.Discard, snap, WriteOptions{}); err != nil {
			t.Fatalf("writing the read trace: %v", err)
		}
		again, err := ReadTrace(bytes.NewReader(data))
		if err != nil || fmt.Sprintf("%#v", again) != fmt.Sprintf("%#v", tr) {
			t.Fatalf("second read differs (err %v)", err)
		}
		// Streamed, in windows small enough to cut the input anywhere, the
		// model is the buffered reader's, unless the decoder gives up (and
		// Decode reads it buffered).
		for _, window := range []int{1, 5} {
			b := event.NewBuilder(event.Meta{})
			err := decodeWindowed(bytes.NewReader(data), b, window)
			if _, again := errors.AsType[*restartError](err); again {
				continue
			}
			if err != nil {
				t.Fatalf("streamed (window %d): %v; buffered read it", window, err)
			}
			if got, want := canon(b.Snapshot()), canon(snap); !slices.Equal(got, want) {
				t.Fatalf("streamed (window %d) differs: %s", window, firstDiff(got, want))
			}
		}
		if len(data) < 1<<16 && !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) { // the same bytes, gzipped, read the same
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(data)
			zw.Close()
			gz, err := ReadTrace(&z)
			if err != nil || fmt.Sprintf("%#v", gz) != fmt.Sprintf("%#v", tr) {
				t.Fatalf("gzipped read differs (err %v)", err)
			}
		}
	})
}

// checkTrace checks the invariants Read promises.
func checkTrace(tr *Trace) error {
	for _, d := range tr.Drops {
		if d.Stat == "" || d.Events < 1 || !strings.HasPrefix(d.First, "packet ") {
			return fmt.Errorf("drop %+v", d)
		}
	}
	idx := map[uint64]int{}
	for i, tk := range tr.Tracks {
		if _, dup := idx[tk.UUID]; dup {
			return fmt.Errorf("track %d listed twice", tk.UUID)
		}
		if tk.Kind < TrackProcess || tk.Kind > TrackPlain {
			return fmt.Errorf("track %d has kind %d", tk.UUID, tk.Kind)
		}
		idx[tk.UUID] = i
	}
	kind := func(uuid uint64) (TrackKind, error) {
		i, ok := idx[uuid]
		if !ok {
			return 0, fmt.Errorf("unknown track %d", uuid)
		}
		return tr.Tracks[i].Kind, nil
	}
	checkArgs := func(args []Arg) error {
		for _, a := range args {
			switch a.Value.(type) {
			case int64, uint64, float64, bool, string:
			default:
				return fmt.Errorf("arg %q has a %T", a.Name, a.Value)
			}
		}
		return nil
	}
	for i, s := range tr.Slices {
		// A slice may be on any kind of track, a counter's included (as
		// in trace_processor).
		if _, err := kind(s.Track); err != nil {
			return fmt.Errorf("slice %d: %v", i, err)
		}
		switch {
		case s.Dur < -1 || s.Start < 0 || s.Depth < 0:
			return fmt.Errorf("slice %d: %+v", i, s)
		case s.Parent < -1 || s.Parent >= i:
			return fmt.Errorf("slice %d has parent %d", i, s.Parent)
		case s.Depth > 0 && (s.Parent < 0 || tr.Slices[s.Parent].Track != s.Track || tr.Slices[s.Parent].Depth != s.Depth-1):
			return fmt.Errorf("slice %d at depth %d has parent %d", i, s.Depth, s.Parent)
		case s.Parent >= 0 && tr.Slices[s.Parent].Start > s.Start:
			return fmt.Errorf("slice %d starts before its parent %d", i, s.Parent)
		}
		if i > 0 {
			p := tr.Slices[i-1]
			if c := cmp.Or(cmp.Compare(p.Start, s.Start), cmp.Compare(idx[p.Track], idx[s.Track])); c > 0 {
				return fmt.Errorf("slices %d and %d out of order", i-1, i)
			}
		}
		if err := checkArgs(s.Args); err != nil {
			return fmt.Errorf("slice %d: %v", i, err)
		}
	}
	for i, in := range tr.Instants {
		if _, err := kind(in.Track); err != nil || in.TS < 0 {
			return fmt.Errorf("instant %d: %+v (%v)", i, in, err)
		}
		if i > 0 {
			p := tr.Instants[i-1]
			if cmp.Or(cmp.Compare(p.TS, in.TS), cmp.Compare(idx[p.Track], idx[in.Track])) > 0 {
				return fmt.Errorf("instants %d and %d out of order", i-1, i)
			}
		}
		if err := checkArgs(in.Args); err != nil {
			return fmt.Errorf("instant %d: %v", i, err)
		}
	}
	for i, c := range tr.Counters {
		if k, err := kind(c.Track); err != nil || k != TrackCounter || c.TS < 0 {
			return fmt.Errorf("counter sample %d: %+v (%v)", i, c, err)
		}
		if i > 0 && tr.Counters[i-1].TS > c.TS {
			return fmt.Errorf("counter samples %d and %d out of order", i-1, i)
		}
	}
	return nil
}
