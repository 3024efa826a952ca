package perfetto

import (
	"bytes"
	"fmt"
	"github.com/devprof/devprof/internal/eventtest"
	"reflect"
	"slices"
	"testing"

	"github.com/devprof/devprof/event"
)

// describe lists a snapshot's events in a form that survives conversion:
// times on the BOOTTIME clock, parents and flows by name.
func describe(s *event.Snapshot, boot func(int64) int64) []string {
	flowNames := map[uint64][]string{}
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				flowNames[a.Num] = append(flowNames[a.Num], s.Name(r))
			}
		}
	}
	var out []string
	for _, r := range s.Events {
		end, fin := s.EndOf(r)
		parent := ""
		if p := s.Lookup(r.Parent()); p != nil {
			parent = s.Name(p)
		}
		var args []string
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				args = append(args, fmt.Sprint("flow:", flowNames[a.Num]))
				continue
			}
			args = append(args, fmt.Sprintf("%s=%v", a.Key, a.Value()))
		}
		slices.Sort(args)
		step := ""
		if r.IsStep() {
			step = fmt.Sprint(" step ", r.StepNum())
		}
		track := ""
		if r.Kind() == event.KindActivity {
			t := s.Tracks[r.Lane()-1]
			track = fmt.Sprintf(" on GPU %d stream %d", t.Device, t.ID)
		}
		out = append(out, fmt.Sprintf("%v %s [%d,%d] fin=%v parent=%q%s%s %v", r.Kind(), s.Name(r), boot(r.Start()), boot(end), fin, parent, step, track, args))
	}
	slices.Sort(out)
	return out
}

func TestSnapshotRoundTrip(t *testing.T) {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "h", Program: "trainer", PID: 100,
		Start: event.ClockAnchor{Mono: 0, Boot: 5e9, Wall: 1.7e18}, Stop: event.ClockAnchor{Mono: 20 * ms, Boot: 5e9 + 20*ms, Wall: 1.7e18 + 20*ms}})
	gpu := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 1, DeviceName: "A100", ID: 7, Name: "Stream #7(Compute)"})
	st := b.Span(event.Span{Name: "train", Start: ms, End: 10 * ms, Step: true, StepNum: 3})
	fw := b.Span(event.Span{Name: "forward", Start: 2 * ms, End: 5 * ms, Parent: st,
		Args: []event.Arg{{Key: "batch", Kind: event.ArgInt, Num: 32}, {Key: "layer", Kind: event.ArgString, Str: "fc1"}}})
	b.Span(event.Span{Name: "launch", Start: 3 * ms, End: 4 * ms, Parent: fw, Args: []event.Arg{{Kind: event.ArgFlow, Num: 9}}})
	b.Span(event.Span{Name: "async", Start: 4 * ms, End: 12 * ms, Parent: st}) // outlives its parent: displaced
	b.Span(event.Span{Name: "open", Start: 15 * ms, Unfinished: true})
	b.Activity(gpu, "kernel", 4*ms, 6*ms, []event.Arg{{Kind: event.ArgFlow, Num: 9}, {Key: "regs", Kind: event.ArgInt, Num: 64}})
	b.Instant("mark", 4*ms+500_000, 0, fw, []event.Arg{{Key: "ok", Kind: event.ArgBool, Num: 1}})
	b.Counter("loss", "", 7*ms, 0.5)
	b.Counter("mem", "bytes", 8*ms, 1024)
	b.AddDrops(event.DropsRecorder, 4)
	b.AddDrops("cupti", 5)
	b.SetMaxEvents(1000)
	b.Warn(event.Warning{Source: "cupti", Code: "records_dropped", Text: "5 GPU activity records dropped"})
	b.Warn(event.Warning{Text: "a warning read from a file that had only text"})
	b.Note(event.Note{Source: "cupti", Text: "GPU timestamps: CLOCK_REALTIME"})
	orig := b.Snapshot()

	var buf bytes.Buffer
	if err := Write(&buf, orig, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := tr.Snapshot()
	want := describe(orig, orig.Meta.BootNanos)
	have := describe(got, func(t int64) int64 { return t })
	if !slices.Equal(want, have) {
		t.Fatalf("round trip differs:\nwant %q\n got %q", want, have)
	}
	if got.Meta.Dropped() != 9 || got.Meta.MaxEvents != 1000 || got.Meta.Program != "trainer" || got.Meta.PID != 100 {
		t.Fatalf("meta %+v", got.Meta)
	}
	// Warnings, notes and drops come back as the structure they were.
	if !reflect.DeepEqual(got.Meta.Warnings, orig.Meta.Warnings) || !reflect.DeepEqual(got.Meta.Notes, orig.Meta.Notes) || !reflect.DeepEqual(got.Meta.Drops, orig.Meta.Drops) {
		t.Fatalf("metadata read back as\n%+v\n%+v\n%+v\nwant\n%+v\n%+v\n%+v", got.Meta.Warnings, got.Meta.Notes, got.Meta.Drops, orig.Meta.Warnings, orig.Meta.Notes, orig.Meta.Drops)
	}
	// The warning and note instants sit at the session's start, so the
	// trace read back starts where the session did.
	if got.Meta.Start.Wall != orig.Meta.Start.Wall {
		t.Fatalf("wall start %d, want %d", got.Meta.Start.Wall, orig.Meta.Start.Wall)
	}
}

// TestMetaRoundTrip: warnings, notes and per-source drops written to a
// Perfetto trace read back as the same structure.
func TestMetaRoundTrip(t *testing.T) {
	s := eventtest.MetaSnapshot()
	eventtest.CheckMeta(t, "perfetto", mustRead(t, encode(t, s, false)).Snapshot(), s)
}
