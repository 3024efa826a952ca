package xplane

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/protoenc"
)

// streamInputs are XSpaces of every writer the tests have: devprof's
// (written here), TSL's and JAX's.
func streamInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	for _, path := range []string{
		"../../testdata/real-gpu/devprof-h100-libwork.xplane.pb",
		"../../testdata/real-gpu/jax-tsl-h100-libwork.xplane.pb",
		"../../testdata/real-gpu/jax-h100-train.xplane.pb",
		"../../testdata/jax-cpu.xplane.pb",
		"../../testdata/golden/session.xplane.pb",
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		in[path] = b
	}
	snaps := map[string]*event.Snapshot{
		"golden": eventtest.GoldenSnapshot(), "multi-process": eventtest.MultiProcessSnapshot(),
		"owned": eventtest.OwnedSnapshot(), "meta": eventtest.MetaSnapshot(),
	}
	for seed := range uint64(4) {
		snaps[fmt.Sprint("random ", seed)] = eventtest.RandomArgsSnapshot(seed)
	}
	for name, s := range snaps {
		var buf bytes.Buffer
		if err := Write(&buf, s); err != nil {
			t.Fatal(err)
		}
		in[name] = buf.Bytes()
	}
	in["out of order"] = outOfOrderSpace()
	return in
}

// outOfOrderSpace is an XSpace whose one line lists a child before its
// parent, as a writer that does not sort may: read, it is gathered.
func outOfOrderSpace() []byte {
	var e protoenc.Enc
	p := e.Begin(spacePlanes)
	e.String(planeName, HostPlaneName)
	l := e.Begin(planeLines)
	e.Int(lineID, 1)
	e.String(lineName, "worker")
	for _, ev := range [][2]int64{{5_000, 1_000}, {1_000, 10_000}, {20_000, 0}} {
		m := e.Begin(lineEvents)
		e.Int(eventMetadataID, 1)
		e.Int(eventOffsetPS, ev[0])
		e.Int(eventDurationPS, ev[1])
		e.End(m)
	}
	e.End(l)
	md := e.Begin(planeEventMetadata)
	e.Int(mapKey, 1)
	v := e.Begin(mapValue)
	e.Int(mdID, 1)
	e.String(mdName, "step")
	e.End(v)
	e.End(md)
	e.End(p)
	return e.B
}

// records lists a snapshot's metadata, tracks, processes and records,
// every field of each.
func records(s *event.Snapshot) []string {
	out := []string{fmt.Sprintf("%+v", s.Meta), fmt.Sprintf("%+v", s.Tracks), fmt.Sprintf("%+v", s.Processes)}
	for _, r := range s.Events {
		end, fin := s.EndOf(r)
		out = append(out, fmt.Sprintf("%d %v %q %d-%d/%v lane %d parent %d flags %s level %d step %d activity %v %+v",
			r.ID(), r.Kind(), s.Name(r), r.Start(), end, fin, r.Lane(), r.Parent(), fmt.Sprint("step=", r.IsStep(), " on_track=", r.OnTrack()), r.Level(), r.StepNum(), r.Activity(), s.Args(r)))
	}
	return out
}

// A line read straight into the sink gives the model that gathering and
// sorting its track gives, record for record; and both ways keep the
// order contract of event.Sink.
func TestStreamedLinesMatchGathered(t *testing.T) {
	streamed, gathered := 0, 0
	for name, data := range streamInputs(t) {
		read := func(stream bool) ([]string, *reader) {
			t.Helper()
			noStreaming = !stream
			defer func() { noStreaming = false }()
			b := &orderSink{Builder: event.NewBuilder(event.Meta{}), t: t, last: map[uint32]int64{}, spans: map[uint64]bool{}}
			rd, err := decodeSource(bytesSource(data), b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return records(b.Snapshot()), rd
		}
		want, all := read(false)
		got, rd := read(true)
		if all.streamed != 0 {
			t.Fatalf("%s: %d lines streamed with streaming off", name, all.streamed)
		}
		streamed, gathered = streamed+rd.streamed, gathered+rd.gathered
		if len(got) != len(want) {
			t.Errorf("%s: %d records streamed, %d gathered", name, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: record %d streamed\n%s\ngathered\n%s", name, i, got[i], want[i])
				break
			}
		}
		t.Logf("%s: %d lines streamed, %d gathered", name, rd.streamed, rd.gathered)
	}
	if streamed == 0 || gathered == 0 {
		t.Errorf("%d lines streamed, %d gathered: both ways must be taken", streamed, gathered)
	}
}

// orderSink is a Builder that fails the test where a reader breaks the
// order a streaming consumer relies on: on each track, spans and
// activity by nondecreasing start, a parent before its children.
type orderSink struct {
	*event.Builder
	t     *testing.T
	last  map[uint32]int64
	spans map[uint64]bool // the spans added
}

func (o *orderSink) at(track uint32, start int64, what string) {
	if last, ok := o.last[track]; ok && start < last {
		o.t.Errorf("%s at %d on track %d after an event at %d", what, start, track, last)
	}
	o.last[track] = start
}

func (o *orderSink) Span(s event.Span) uint64 {
	o.at(s.Track, s.Start, s.Name)
	if s.Parent != 0 && !o.spans[s.Parent] {
		o.t.Errorf("%s: parent %d not yet added", s.Name, s.Parent)
	}
	id := o.Builder.Span(s)
	o.spans[id] = true
	return id
}

func (o *orderSink) ActivityOf(kind event.ActivityKind, track uint32, name string, start, end int64, args []event.Arg) uint64 {
	o.at(track, start, name)
	return o.Builder.ActivityOf(kind, track, name, start, end, args)
}

// A file read by windows, however small, gives the model its bytes in
// memory give, and the same errors for its cuts.
func TestFileReadByWindows(t *testing.T) {
	defer func(n int) { windowSize = n }(windowSize)
	dir := t.TempDir()
	for name, data := range streamInputs(t) {
		want := readRecords(t, bytes.NewReader(data))
		path := filepath.Join(dir, "x.xplane.pb")
		// A prefix before the space: the file is read from its offset.
		if err := os.WriteFile(path, append([]byte("skip"), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 37, 4096} {
			windowSize = size
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Seek(4, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			got := readRecords(t, f)
			f.Close()
			if !slices.Equal(got, want) {
				t.Errorf("%s, windows of %d bytes: read differs from memory's", name, size)
			}
		}
		windowSize = 64
		for _, cut := range []int{len(data) / 3, len(data) - 7} {
			if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			_, ferr := ReadFile(path)
			_, merr := Read(bytes.NewReader(data[:cut]))
			if (ferr == nil) != (merr == nil) {
				t.Errorf("%s cut at %d: from the file %v, from memory %v", name, cut, ferr, merr)
			}
		}
	}
}

// readRecords reads r into a Builder and lists the records, or the error.
func readRecords(t *testing.T, r io.Reader) []string {
	t.Helper()
	s, err := Read(r)
	if err != nil {
		return []string{err.Error()}
	}
	return records(s)
}
