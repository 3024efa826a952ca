package perfetto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/eventtest"
	pf "github.com/devprof/devprof/internal/pftest"
	"github.com/devprof/devprof/internal/protoenc"
)

// canon describes a snapshot in a form that does not depend on the order
// in which a reader registered its tracks or added its records: one line
// per record (with its track, process and parent described, not
// numbered), sorted, after the metadata and the processes in order.
func canon(s *event.Snapshot) []string {
	m := s.Meta
	out := []string{fmt.Sprintf("meta program=%q pid=%d start=%+v stop=%+v max=%d dropped=%d", m.Program, m.PID, m.Start, m.Stop, m.MaxEvents, m.Dropped())}
	var ws []string
	for _, w := range m.Warnings {
		ws = append(ws, fmt.Sprintf("warning %+v", w))
	}
	for _, n := range m.Notes {
		ws = append(ws, fmt.Sprintf("note %+v", n))
	}
	for _, d := range m.Drops {
		ws = append(ws, fmt.Sprintf("drops %+v", d))
	}
	slices.Sort(ws)
	out = append(out, ws...)
	for _, p := range s.Processes {
		out = append(out, fmt.Sprintf("process %+v", p))
	}
	track := func(r *event.Record) string {
		t, ok := s.TrackOf(r)
		if !ok {
			return "no track"
		}
		return fmt.Sprintf("%+v of %+v", t, s.ProcessOf(t))
	}
	var recs []string
	for _, r := range s.Events {
		parent := "none"
		if r.Parent() != 0 {
			if p := s.Lookup(r.Parent()); p != nil {
				parent = s.Name(p) + "@" + strconv.FormatInt(p.Start(), 10) + " on " + track(p)
			} else {
				parent = "missing"
			}
		}
		end, done := s.EndOf(r)
		recs = append(recs, fmt.Sprintf("%v %q %d-%d(%v) step=%v %d activity %v on %s parent %s args %v",
			r.Kind(), s.Name(r), r.Start(), end, done, r.IsStep(), r.StepNum(), r.Activity(), track(r), parent, s.Args(r)))
	}
	slices.Sort(recs)
	return append(out, recs...)
}

// streamInputs returns every trace the tests have: the fuzz seeds (real
// writer output, hand-built rule traces and corrupt variants), the fuzz
// corpus, the repository's Perfetto files, and random snapshots written
// by the writer.
func streamInputs(t *testing.T) map[string][]byte {
	in := map[string][]byte{}
	for i, b := range fuzzSeeds(t) {
		in["seed "+strconv.Itoa(i)] = b
	}
	files, _ := filepath.Glob("testdata/fuzz/*/*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			continue
		}
		lit := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		v, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		in[f] = []byte(v)
	}
	real, _ := filepath.Glob("../../testdata/real-gpu/h200/*.pftrace")
	for _, f := range append([]string{"../../testdata/golden/session.pftrace", "../../testdata/real-gpu/devprof-h100-libwork.pftrace"}, real...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[f] = b
	}
	for seed := uint64(1); seed <= 40; seed++ {
		var buf bytes.Buffer
		if err := Write(&buf, eventtest.RandomArgsSnapshot(seed), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		in["random "+strconv.FormatUint(seed, 10)] = buf.Bytes()
	}
	in["jax-like"] = jaxLikeTrace(t, 5000)
	in["gpu-like"] = gpuLikeTrace(t, 5000)
	return in
}

// TestDecodeStreamsAsReadTraceReads holds the streaming decoder to the
// buffered reader: on every trace the tests have, with windows small
// enough to cut every trace many times, it gives the same model, or the
// same error, or gives up (and Decode reads the file buffered). The
// devprof-written traces must stream.
func TestDecodeStreamsAsReadTraceReads(t *testing.T) {
	for _, window := range []int{1, 3, 64, streamWindow, 1 << 15} { // streamWindow: what Decode uses
		t.Run("window="+strconv.Itoa(window), func(t *testing.T) {
			defer func(w int) { streamWindow = w }(streamWindow)
			streamWindow = window
			streamed, restarted := 0, 0
			for name, data := range streamInputs(t) {
				want, wantErr := ReadTrace(bytes.NewReader(data))
				b := event.NewBuilder(event.Meta{})
				err := decodeStreaming(bytes.NewReader(data), b)
				if _, again := errors.AsType[*restartError](err); again {
					restarted++
					if strings.HasPrefix(name, "random") || strings.HasPrefix(name, "jax") || strings.Contains(name, "golden") || strings.Contains(name, "real-gpu") {
						t.Errorf("%s: a devprof-written trace did not stream: %v", name, err)
					}
					continue
				}
				if wantErr != nil || err != nil {
					if (wantErr == nil) != (err == nil) || wantErr.Error() != err.Error() {
						t.Errorf("%s: streaming error %v, buffered %v", name, err, wantErr)
					}
					continue
				}
				streamed++
				got, exp := canon(b.Snapshot()), canon(want.Snapshot())
				if !slices.Equal(got, exp) {
					t.Errorf("%s: the streamed model differs from the buffered one:\n%s", name, firstDiff(got, exp))
				}
			}
			t.Logf("%d traces streamed, %d read again buffered", streamed, restarted)
			if streamed < 50 {
				t.Errorf("only %d traces streamed", streamed)
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("line %d (of %d, want %d):\n got  %s\n want %s", i, len(got), len(want), g, w)
		}
	}
	return "equal"
}

// TestFastPacketMatchesGeneral holds fastPacket to the general path: on
// every trace the tests have, reading with it gives the very Trace that
// reading without it gives (drops, their first places and errors
// included), and it takes most packets of the devprof-written ones.
func TestFastPacketMatchesGeneral(t *testing.T) {
	for name, data := range streamInputs(t) {
		fastPackets = false
		want, wantErr := ReadTrace(bytes.NewReader(data))
		fastPackets = true
		got, err := ReadTrace(bytes.NewReader(data))
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, general path %v", name, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		// Printed, not DeepEqual: NaN arguments are equal when they print
		// alike.
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("%s: the fast path reads %d slices, %d instants, %d counters, drops %v; the general path %d, %d, %d, %v",
				name, len(got.Slices), len(got.Instants), len(got.Counters), got.Drops, len(want.Slices), len(want.Instants), len(want.Counters), want.Drops)
		}
	}
}

// TestFastPacketTakesDevprofSlices checks that the fast path is the one
// that reads a devprof-written trace's slices (else the test above holds
// nothing).
func TestFastPacketTakesDevprofSlices(t *testing.T) {
	data := jaxLikeTrace(t, 2000)
	r := newReader()
	taken := 0
	fastPackets = true
	src, gz, closeFn, err := openStream(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	r.fastHook = func() { taken++ }
	if err := r.stream(src, gz); err != nil {
		t.Fatal(err)
	}
	if taken < 1800 {
		t.Errorf("the fast path took %d packets of a trace of 2000 slices", taken)
	}
}

// TestFastPacketTakesGPUEvents checks that the fast path reads nearly
// every event of a GPU-shaped trace too: kernels with arguments, launches
// with flows, counter samples.
func TestFastPacketTakesGPUEvents(t *testing.T) {
	const n = 5000
	data := gpuLikeTrace(t, n)
	r := newReader()
	taken := 0
	fastPackets = true
	src, gz, closeFn, err := openStream(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	r.fastHook = func() { taken++ }
	if err := r.stream(src, gz); err != nil {
		t.Fatal(err)
	}
	// With nothing to pass them on, the events (BEGINs, ENDs) and counter
	// samples stay queued.
	if queued := len(r.events) + len(r.counters); taken < queued*98/100 {
		t.Errorf("the fast path took %d packets of the %d events and samples of a trace of %d events", taken, queued, n)
	}
}

// TestDeclaredLengthCostsOnlyWhatFollows reads files whose first packet
// declares a length far past their end: the reader says they are
// truncated, having allocated about what the file holds, not what the
// length declares (a fuzzed 135-byte file asked for 800 GB).
func TestDeclaredLengthCostsOnlyWhatFollows(t *testing.T) {
	for _, declared := range []uint64{1 << 20, 1 << 30, 1 << 39} {
		data := append([]byte{fTracePacket<<3 | wireBytes}, protoenc.AppendVarint(nil, declared)...)
		data = append(data, bytes.Repeat([]byte{0}, 100)...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadTrace(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "overruns the 100 bytes left") {
			t.Errorf("length %d: %v, want a truncated packet", declared, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("length %d in a %d-byte file: %d bytes allocated", declared, len(data), grew)
		}
	}
}

// TestJSONOnlyWhenNotProtobuf reads files that start like JSON to a
// whitespace trim: a real JSON trace is named as one; a malformed
// Perfetto file whose first packet's length byte is '{' or '[' (after the
// 0x0a tag, a newline) gets the protobuf error, not "this is JSON".
func TestJSONOnlyWhenNotProtobuf(t *testing.T) {
	for _, c := range []struct {
		data []byte
		json bool
	}{
		{[]byte(`{"traceEvents": []}`), true},
		{[]byte("\n  [{\"ph\": \"X\"}]"), true},
		{append([]byte{0x0a, '{', 0xff, 0x03}, bytes.Repeat([]byte{0x01}, 10)...), false},
		{append([]byte{0x0a, '[', 0x08, 0x01, 0x12}, bytes.Repeat([]byte{0x00}, 5)...), false},
	} {
		_, err := ReadTrace(bytes.NewReader(c.data))
		if err == nil {
			t.Fatalf("%q read without an error", c.data)
		}
		if got := strings.Contains(err.Error(), "JSON"); got != c.json {
			t.Errorf("%q: %v (taken for JSON: %v, want %v)", c.data, err, got, c.json)
		}
	}
}

// TestFastPacketSeesNamesInternedAgain: a name iid the sequence interns
// again with another name (no clear between) names the later events by
// the new name on the fast path too (its name cache is cleared).
func TestFastPacketSeesNamesInternedAgain(t *testing.T) {
	b := &tb{}
	b.packet(func(e *pb) {
		seq(e, 1, seqIncrementalStateCleared)
		msg(e, pktDefaults, func() { msg(e, defTrackEventDefaults, func() { e.uint(tedTrackUUID, 10) }) })
		interned(e, entry{idEventNames, 1, "first"})
		plainTrack(e, 10, "row")
	})
	event := func(ts, typ, iid uint64) {
		b.packet(func(e *pb) {
			e.uint(pktTimestamp, ts)
			seq(e, 1, 0)
			msg(e, pktTrackEvent, func() {
				e.uint(teType, typ)
				if iid != 0 {
					e.uint(teNameIID, iid)
				}
			})
		})
	}
	event(10, typeSliceBegin, 1)
	event(20, typeSliceEnd, 0)
	b.packet(func(e *pb) { seq(e, 1, 0); interned(e, entry{idEventNames, 1, "second"}) })
	event(30, typeSliceBegin, 1)
	event(40, typeSliceEnd, 0)
	taken := 0
	r := newReader()
	r.fastHook = func() { taken++ }
	src, gz, closeFn, err := openStream(bytes.NewReader(b.b))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if err := r.stream(src, gz); err != nil {
		t.Fatal(err)
	}
	if err := r.finish(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.t.Slices {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"first", "second"}) || taken != 4 {
		t.Errorf("slices %v (fast path took %d of 4 events), want [first second]", names, taken)
	}
}

// TestShortPacketMatchesReadField holds shortPacket to readField: at
// every offset of every trace the tests have (inside packets too, where
// any byte can look like a tag), and of packets whose length is near the
// one-byte limit or runs past the bytes held, a field shortPacket takes
// is the TracePacket readField reads there, with the same body and size.
func TestShortPacketMatchesReadField(t *testing.T) {
	inputs := streamInputs(t)
	for _, l := range []int{0, 1, 126, 127, 128, 129, 300} {
		body := bytes.Repeat([]byte{0x08}, l)
		pkt := protoenc.AppendVarint([]byte{fTracePacket<<3 | wireBytes}, uint64(l))
		pkt = append(pkt, body...)
		for cut := range len(pkt) + 1 {
			inputs["length "+strconv.Itoa(l)+" cut at "+strconv.Itoa(cut)] = pkt[:cut]
		}
	}
	taken := 0
	for name, data := range inputs {
		for off := range data {
			b := data[off:]
			body, ok := shortPacket(b)
			if !ok {
				continue
			}
			taken++
			f, n, err := readField(b)
			if err != nil || f.num != fTracePacket || f.wt != wireBytes || !bytes.Equal(f.b, body) || n != 2+len(body) {
				t.Fatalf("%s at %d: shortPacket took %d bytes of body; readField reads field %d (wire %d) of %d bytes, size %d, error %v",
					name, off, len(body), f.num, f.wt, len(f.b), n, err)
			}
		}
	}
	if taken < 1000 {
		t.Errorf("shortPacket took only %d fields", taken)
	}
}

// fastFormsTrace has the forms fastPacket reads besides plain slices
// (interned argument strings, flow ids, counter values) and the near
// misses it must leave to the general path: undefined or zero iids, more
// flow ids than it holds, packed flow ids, counter events with names,
// arguments or flows, values on slices, counters on tracks that are not
// counter tracks, and interned names and strings defined again.
func fastFormsTrace() []byte {
	t := &pf.Trace{}
	name := func(iid uint64) pf.Field { return pf.Varint(10, iid) }
	annot := func(fs ...pf.Field) pf.Field { return pf.Msg(4, fs...) }
	argName := func(iid uint64) pf.Field { return pf.Varint(1, iid) }
	strIID := func(iid uint64) pf.Field { return pf.Varint(17, iid) }
	interned := func(field protowire.Number, iid uint64, s string) pf.Field {
		return pf.Msg(field, pf.Varint(1, iid), pf.String(2, s))
	}
	t.Packet(pf.Seq(1), pf.Cleared(), pf.Track(1, 0, "t"), pf.Track(40, 0, "c40", pf.Counter(0, false)),
		pf.Track(41, 0, "inc", pf.Counter(1000, true)))
	at(t, 100, pf.Interned(pf.EventName(1, "kernel"), interned(3, 1, "grid"), interned(3, 2, "regs"), interned(29, 1, "128,1,1")))
	at(t, 110, pf.Event(pf.Begin, 1, "", name(1), annot(argName(1), strIID(1)), annot(argName(2), pf.Varint(3, 64)),
		pf.FlowID(5), pf.FlowID(6), pf.TerminatingFlowID(7)))
	at(t, 120, pf.Event(pf.End, 1, ""))
	at(t, 130, pf.Event(pf.Instant, 1, "", name(1), annot(argName(1), strIID(9))))       // string iid undefined: dropped
	at(t, 131, pf.Event(pf.Instant, 1, "", name(1), annot(argName(1), strIID(0))))       // string iid 0: dropped
	at(t, 132, pf.Event(pf.Instant, 1, "", name(1), annot(argName(0), pf.Varint(3, 1)))) // name iid 0: dropped
	at(t, 133, pf.Event(pf.Instant, 1, "", name(1), annot(argName(1), pf.Double(5, 2.5)), annot(argName(2), pf.Int(4, -3)), annot(argName(2), pf.Varint(2, 1))))
	at(t, 140, pf.Event(pf.Instant, 1, "", name(1), pf.FlowID(1), pf.FlowID(2), pf.FlowID(3), pf.FlowID(4), pf.FlowID(5)))
	at(t, 141, pf.Event(pf.Instant, 1, "", name(1), pf.String(47, string(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 8), 9)))))
	at(t, 150, pf.Event(pf.CounterType, 40, "", pf.DoubleCounterValue(1.5)))
	at(t, 151, pf.Event(pf.CounterType, 41, "", pf.CounterValue(2)))
	at(t, 152, pf.Event(pf.CounterType, 41, "", pf.DoubleCounterValue(0.5), pf.CounterValue(3))) // the last value wins
	at(t, 153, pf.Event(pf.CounterType, 40, "", name(1), pf.CounterValue(4)))
	at(t, 154, pf.Event(pf.CounterType, 40, "", name(7), pf.CounterValue(4))) // name iid undefined: dropped
	at(t, 155, pf.Event(pf.CounterType, 40, "", pf.FlowID(3), pf.CounterValue(5)))
	at(t, 156, pf.Event(pf.CounterType, 1, "", pf.CounterValue(6)))  // not a counter track: dropped
	at(t, 157, pf.Event(pf.CounterType, 99, "", pf.CounterValue(6))) // no track: dropped
	at(t, 158, pf.Event(pf.CounterType, 40, ""))                     // no value: dropped
	at(t, 160, pf.Event(pf.Begin, 1, "", name(1), pf.CounterValue(9)))
	at(t, 170, pf.Event(pf.End, 1, ""))
	// Defined again: the caches must not keep the old strings.
	at(t, 180, pf.Interned(pf.EventName(1, "kernel2"), interned(3, 1, "block"), interned(29, 1, "256,1,1")))
	at(t, 190, pf.Event(pf.Instant, 1, "", name(1), annot(argName(1), strIID(1))))
	return t.Bytes()
}

// TestFastFormsRead reads fastFormsTrace's fast forms as the rules say
// (TestFastPacketMatchesGeneral holds the rest to the general path).
func TestFastFormsRead(t *testing.T) {
	tr := mustRead(t, fastFormsTrace())
	if len(tr.Slices) != 2 {
		t.Fatalf("%d slices, want 2", len(tr.Slices))
	}
	s := tr.Slices[0]
	if s.Name != "kernel" || fmt.Sprint(s.Args) != "[{grid 128,1,1} {regs 64}]" || !slices.Equal(s.FlowIDs, []uint64{5, 6}) {
		t.Errorf("kernel slice %+v", s)
	}
	var last Instant
	for _, in := range tr.Instants {
		last = in
	}
	if last.Name != "kernel2" || fmt.Sprint(last.Args) != "[{block 256,1,1}]" {
		t.Errorf("instant after the names were defined again: %+v", last)
	}
	var values []string
	for _, c := range tr.Counters {
		values = append(values, fmt.Sprintf("%d:%g", c.Track, c.Value))
	}
	// 41 is incremental with a multiplier of 1000: 2000, then 2000+3000.
	if got, want := strings.Join(values, " "), "40:1.5 41:2000 41:5000 40:4 40:5"; got != want {
		t.Errorf("counters %s, want %s", got, want)
	}
	checkDrops(t, tr, map[string]int64{"interned_data_tokenizer_errors": 4, "track_event_counter_invalid_track_uuid": 2, "track_event_counter_missing_value": 1})
}
