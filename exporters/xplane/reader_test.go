package xplane_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/eventtest"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/internal/xplanepb"
)

// Tests that record go through the process-wide active buffer
// (recorder.Activate), so none of them may call t.Parallel.

// jaxFile is a real JAX 0.12 CPU profile (see testdata/README.md).
const jaxFile = "../../testdata/jax-cpu.xplane.pb"

// recordSession records events for a test; see eventtest.Record.
func recordSession(t testing.TB, maxEvents int64, fn func(ctx context.Context)) *event.Snapshot {
	t.Helper()
	return eventtest.Record(t, maxEvents, fn)
}

// tick waits until the clock has moved, so that consecutive events never
// share a nanosecond (which would make nesting ambiguous).
func tick() {
	for t := recorder.Now(); recorder.Now()-t < 1000; {
	}
}

func writeXSpace(t testing.TB, s *event.Snapshot) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := xplane.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readXSpace(t testing.TB, data []byte) *event.Snapshot {
	t.Helper()
	s, err := xplane.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return s
}

// evKey identifies an event across snapshots: name and start relative to
// the session start.
type evKey struct {
	kind  event.Kind
	name  string
	start int64
}

func keyOf(s *event.Snapshot, r *event.Record) evKey {
	return evKey{r.Kind(), s.Name(r), r.Start() - s.Meta.Start.Mono}
}

func index(t *testing.T, s *event.Snapshot) map[evKey]*event.Record {
	t.Helper()
	m := map[evKey]*event.Record{}
	for _, r := range s.Events {
		k := keyOf(s, r)
		if m[k] != nil {
			t.Fatalf("two events %v", k)
		}
		m[k] = r
	}
	return m
}

// exported is what an argument becomes in an XSpace and back: bools are
// int64 0/1, durations strings; flows are left out (their ids are
// renumbered: the tests compare flows by their ends).
func exported(args []event.Arg) []event.Arg {
	var out []event.Arg
	for _, a := range args {
		switch a.Kind {
		case event.ArgBool:
			a.Kind = event.ArgInt
		case event.ArgDuration:
			a = event.Arg{Key: a.Key, Kind: event.ArgString, Str: a.Duration().String()}
		case event.ArgFlow:
			continue
		}
		out = append(out, a)
	}
	return out
}

func TestReadRoundTrip(t *testing.T) {
	loss := annotate.Counter{Name: "loss"}
	mem := annotate.Counter{Name: "heap", Unit: "bytes"}
	s := recordSession(t, 1<<16, func(ctx context.Context) {
		for i := range 3 {
			sctx, step := annotate.Step(ctx, "train", int64(10+i), annotate.String("phase", "warmup"))
			tick()
			fctx, fwd := annotate.Begin(sctx, "fwd", annotate.Int("batch", 32), annotate.String("layer", "fc1"),
				annotate.Float64("lr", 0.125), annotate.Bool("ok", i%2 == 0), annotate.Uint64("big", 1<<63+5),
				annotate.Duration("budget", 1500*time.Millisecond), annotate.Int("neg", -7), annotate.Flow(99))
			tick()
			annotate.Instant(fctx, "mark", annotate.Int("i", i))
			tick()
			fwd.End()
			tick()
			_, bwd := annotate.Begin(sctx, "bwd")
			tick()
			bwd.End()
			tick()
			step.End()
			loss.Set(float64(i) * 1.5)
			mem.Set(float64(int64(1) << (20 + i)))
			tick()
		}
		annotate.Instant(ctx, "loose", annotate.String("why", "no span"))
		tick()
		annotate.Begin(ctx, "never-ended")
		tick()
	})
	got := readXSpace(t, writeXSpace(t, s))

	if got.Meta.Host != "testhost" || got.Meta.Dropped() != 0 || len(got.Meta.Warnings) != 0 {
		t.Errorf("meta %+v", got.Meta)
	}
	if got.Meta.Start != (event.ClockAnchor{Mono: 0, Boot: s.Meta.Start.Wall, Wall: s.Meta.Start.Wall}) {
		t.Errorf("start %+v, want wall %d", got.Meta.Start, s.Meta.Start.Wall)
	}
	if got.Meta.Stop.Wall != s.Meta.Stop.Wall || got.Meta.Stop.Mono != s.Meta.Stop.Wall-s.Meta.Start.Wall {
		t.Errorf("stop %+v, want wall %d", got.Meta.Stop, s.Meta.Stop.Wall)
	}

	want, have := index(t, s), index(t, got)
	if len(want) != len(have) {
		t.Errorf("%d events, want %d", len(have), len(want))
	}
	steps := 0
	for k, w := range want {
		g := have[k]
		if g == nil {
			t.Errorf("missing %v", k)
			continue
		}
		wend, wfin := s.EndOf(w)
		gend, gfin := got.EndOf(g)
		switch {
		case wfin != gfin:
			t.Errorf("%v: finished %v, want %v", k, gfin, wfin)
		case !wfin:
			// An open span ends at the stop time: Stop.Mono of the file
			// (wall clock) rather than the recording's monotonic clock.
			if gend != got.Meta.Stop.Mono || absDiff(gend, wend-s.Meta.Start.Mono) > int64(time.Millisecond) {
				t.Errorf("%v: open span ends at %d, want the stop time %d", k, gend, got.Meta.Stop.Mono)
			}
		case gend != wend-s.Meta.Start.Mono:
			t.Errorf("%v: end %d, want %d", k, gend, wend-s.Meta.Start.Mono)
		}
		if w.Kind() == event.KindCounter {
			if got.Args(g)[0] != s.Args(w)[0] {
				t.Errorf("%v: sample %+v, want %+v", k, got.Args(g)[0], s.Args(w)[0])
			}
			continue
		}
		if wa, ga := exported(s.Args(w)), exported(got.Args(g)); (len(wa) != 0 || len(ga) != 0) && !reflect.DeepEqual(wa, ga) {
			t.Errorf("%v: args\n got %+v\nwant %+v", k, ga, wa)
		}
		if w.IsStep() != g.IsStep() || g.StepNum() != w.StepNum() {
			t.Errorf("%v: step flag %v num %d, want %v %d", k, g.IsStep(), g.StepNum(), w.IsStep(), w.StepNum())
		}
		if g.IsStep() {
			steps++
		}
		var wp, gp evKey
		if p := s.Lookup(w.Parent()); p != nil {
			wp = keyOf(s, p)
		}
		if p := got.Lookup(g.Parent()); p != nil {
			gp = keyOf(got, p)
		}
		if wp != gp {
			t.Errorf("%v: parent %v, want %v", k, gp, wp)
		}
		if w.Kind() == event.KindInstant && !w.OnTrack() && s.Lookup(w.Parent()) == nil {
			// The program's instants on no span (its Instants line) come
			// back on no track, as they were.
			if g.OnTrack() {
				t.Errorf("%v: on track %d, want none (a loose instant)", k, g.Lane())
			}
			continue
		}
		if !g.OnTrack() || int(g.Lane()) > len(got.Tracks) || got.Tracks[g.Lane()-1].Kind != event.TrackHostThread {
			t.Errorf("%v: not on a host thread track (flags %s lane %d)", k, fmt.Sprint("step=", g.IsStep(), " on_track=", g.OnTrack()), g.Lane())
		}
	}
	if steps != 3 {
		t.Errorf("%d steps, want 3", steps)
	}
	// The three fwd spans share flow 99: a flow between host events, which
	// comes back as one flow through the three.
	_, _, _, wf := eventtest.ProcessFacts(s, false)
	_, _, _, gf := eventtest.ProcessFacts(got, false)
	if !slices.Equal(gf, wf) || !slices.Equal(wf, []string{"fwd -> fwd -> fwd"}) {
		t.Errorf("flows read back %q, want %q (recorded)", gf, wf)
	}
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestReadDropCount(t *testing.T) {
	s := recordSession(t, 8, func(ctx context.Context) {
		for range 50 {
			_, sp := annotate.Begin(ctx, "x")
			sp.End()
		}
	})
	if s.Meta.Dropped() == 0 {
		t.Fatal("nothing dropped")
	}
	got := readXSpace(t, writeXSpace(t, s))
	if !slices.Equal(got.Meta.Drops, s.Meta.Drops) || got.Meta.MaxEvents != s.Meta.MaxEvents {
		t.Errorf("drops %v of max %d, want %v of %d", got.Meta.Drops, got.Meta.MaxEvents, s.Meta.Drops, s.Meta.MaxEvents)
	}
	if len(got.Meta.Warnings) != 0 {
		t.Errorf("drop line kept as a warning: %q", got.Meta.Warnings)
	}
	// Writing the snapshot again gives the same line.
	xs := decodeXSpace(t, writeXSpace(t, got))
	want := fmt.Sprintf("devprof drops [recorder]: %d events dropped (buffer full at max_events=%d)", s.Meta.Dropped(), s.Meta.MaxEvents)
	if !slices.Contains(xs.Warnings, want) {
		t.Errorf("warnings after a second write: %q, want %q", xs.Warnings, want)
	}
}

func decodeXSpace(t testing.TB, b []byte) *xplanepb.XSpace {
	t.Helper()
	var xs xplanepb.XSpace
	if err := proto.Unmarshal(b, &xs); err != nil {
		t.Fatal(err)
	}
	return &xs
}

// xstats maps a plane's or event's stats by name.
func xstats(p *xplanepb.XPlane, stats []*xplanepb.XStat) map[string]*xplanepb.XStat {
	m := map[string]*xplanepb.XStat{}
	for _, st := range stats {
		m[p.StatMetadata[st.MetadataId].GetName()] = st
	}
	return m
}

func argsMap(s *event.Snapshot, r *event.Record) map[string]event.Arg {
	m := map[string]event.Arg{}
	for _, a := range s.Args(r) {
		k := a.Key
		if a.Kind == event.ArgFlow {
			k = "<flow>"
		}
		m[k] = a
	}
	return m
}

func TestReadDevicePlanes(t *testing.T) {
	const ms = int64(time.Millisecond)
	const details = "regs:32 static_shared:0 dynamic_shared:1024 grid:4,1,1 block:128,1,1 occ_pct:50"
	b := event.NewBuilder(event.Meta{Host: "gpu-host",
		Start: event.ClockAnchor{Mono: 5 * ms, Boot: 5 * ms, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 25 * ms, Boot: 25 * ms, Wall: 1_795_000_000_020_000_000}})
	thread := b.Track(event.Track{Kind: event.TrackHostThread, ID: 1234, Name: "python"})
	s7 := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", ID: 7, Name: "Stream #7(Compute)"})
	s9 := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, DeviceName: "NVIDIA H100 80GB HBM3", ID: 9, Name: "Stream #9(MemcpyH2D)"})
	b.Span(event.Span{Name: "cudaLaunchKernel", Start: 6 * ms, End: 6*ms + 20_000, Track: thread,
		Args: []event.Arg{{Kind: event.ArgFlow, Num: 42}, {Key: "device_id", Kind: event.ArgUint, Num: 0}}})
	b.Span(event.Span{Name: "cudaMemcpyAsync", Start: 7 * ms, End: 7*ms + 10_000, Track: thread,
		Args: []event.Arg{{Kind: event.ArgFlow, Num: 43}}})
	b.Activity(s7, "sgemm_kernel", 6*ms+50_000, 9*ms+1, []event.Arg{
		{Kind: event.ArgFlow, Num: 42}, {Key: "kernel_details", Kind: event.ArgString, Str: details}})
	b.Activity(s9, "MemcpyH2D", 7*ms+30_000, 8*ms, []event.Arg{
		{Kind: event.ArgFlow, Num: 43}, {Key: "memcpy_details", Kind: event.ArgString, Str: "kind_src:pinned kind_dst:device size:1048576 dest:0 async:1"}})
	b.Activity(s9, "fill_kernel", 8*ms+500, 8*ms+700, []event.Arg{{Key: "kernel_details", Kind: event.ArgString, Str: details}})
	s := b.Snapshot()
	data := writeXSpace(t, s)

	// The XSpace itself.
	xs := decodeXSpace(t, data)
	var gpu, host *xplanepb.XPlane
	for _, p := range xs.Planes {
		for _, md := range p.StatMetadata {
			if md.Name == "group_id" {
				t.Errorf("plane %q has group_id stat metadata", p.Name)
			}
		}
		switch p.Name {
		case "/device:GPU:0":
			gpu = p
		case xplane.HostPlaneName:
			host = p
		}
	}
	if gpu == nil || host == nil {
		t.Fatalf("planes %v", xs.Planes)
	}
	if gpu.Id != 0 {
		t.Errorf("GPU plane id %d", gpu.Id)
	}
	var ids []int64
	for _, l := range gpu.Lines {
		ids = append(ids, l.Id)
	}
	if !reflect.DeepEqual(ids, []int64{7, 9}) {
		t.Errorf("GPU line ids %v, want the stream ids [7 9]", ids)
	}
	corr := func(p *xplanepb.XPlane, name string) uint64 {
		for _, l := range p.Lines {
			for _, e := range l.Events {
				if p.EventMetadata[e.MetadataId].GetName() == name {
					st := xstats(p, e.Stats)["correlation_id"]
					if _, ok := st.GetValue().(*xplanepb.XStat_Uint64Value); !ok {
						t.Errorf("%s: correlation_id %v, want a uint64", name, st)
					}
					return st.GetUint64Value()
				}
			}
		}
		t.Errorf("no %s event", name)
		return 0
	}
	if h, d := corr(host, "cudaLaunchKernel"), corr(gpu, "sgemm_kernel"); h != 42 || d != 42 {
		t.Errorf("correlation ids: launch %d, kernel %d, want 42", h, d)
	}

	// What Read makes of it.
	got := readXSpace(t, data)
	if got.Meta.Host != "gpu-host" || got.Meta.Start.Wall != s.Meta.Start.Wall || got.Meta.Stop.Mono != 20*ms {
		t.Errorf("meta %+v", got.Meta)
	}
	type trk struct {
		kind       event.TrackKind
		dev        int
		devName    string
		id         int64
		name       string
		activities int
	}
	var tracks []trk
	for i, tr := range got.Tracks {
		n := 0
		for _, r := range got.Events {
			if r.Kind() == event.KindActivity && int(r.Lane()) == i+1 {
				n++
			}
		}
		tracks = append(tracks, trk{tr.Kind, tr.Device, tr.DeviceName, tr.ID, tr.Name, n})
	}
	for _, w := range []trk{
		{event.TrackDeviceStream, 0, "NVIDIA H100 80GB HBM3", 7, "Stream #7(Compute)", 1},
		{event.TrackDeviceStream, 0, "NVIDIA H100 80GB HBM3", 9, "Stream #9(MemcpyH2D)", 2},
	} {
		if !slices.Contains(tracks, w) {
			t.Errorf("no track %+v in %+v", w, tracks)
		}
	}
	var launch, kernel *event.Record
	for _, r := range got.Events {
		switch s.Name(r) {
		case "cudaLaunchKernel":
			launch = r
		case "sgemm_kernel":
			kernel = r
		}
	}
	if launch == nil || kernel == nil {
		t.Fatalf("events %v", got.Events)
	}
	if kernel.Kind() != event.KindActivity || kernel.Start() != ms+50_000 || kernel.End() != 4*ms+1 {
		t.Errorf("kernel %v at %d..%d", kernel.Kind(), kernel.Start(), kernel.End())
	}
	if launch.Kind() != event.KindSpan || launch.Start() != ms || launch.End() != ms+20_000 {
		t.Errorf("launch %v at %d..%d", launch.Kind(), launch.Start(), launch.End())
	}
	if tr := got.Tracks[launch.Lane()-1]; !launch.OnTrack() || tr.Kind != event.TrackHostThread {
		t.Errorf("launch on track %+v", tr)
	}
	la, ka := argsMap(got, launch), argsMap(got, kernel)
	if la["<flow>"].Num != 42 || ka["<flow>"].Num != 42 || la["<flow>"].Kind != event.ArgFlow {
		t.Errorf("flow link: launch %+v, kernel %+v", la, ka)
	}
	if _, ok := la["correlation_id"]; ok {
		t.Errorf("correlation_id kept as an argument: %+v", la)
	}
	if ka["kernel_details"] != (event.Arg{Key: "kernel_details", Kind: event.ArgString, Str: details}) {
		t.Errorf("kernel args %+v", ka)
	}
	if la["device_id"] != (event.Arg{Key: "device_id", Kind: event.ArgUint, Num: 0}) {
		t.Errorf("launch args %+v", la)
	}
}

func TestReadJAX(t *testing.T) {
	s, err := xplane.ReadFile(jaxFile)
	if err != nil {
		t.Fatal(err)
	}
	const start, stop = 1795328265080945913, 1795328265082149768
	m := s.Meta
	if m.Host != "vm" || m.PID != 17627 || m.Start.Wall != start || m.Start.Mono != 0 || m.Stop.Mono != stop-start || m.Stop.Wall != stop {
		t.Errorf("meta %+v", m)
	}
	if len(m.Warnings) != 0 || m.Dropped() != 0 {
		t.Errorf("warnings %q dropped %d", m.Warnings, m.Dropped())
	}
	var python, xla uint32
	for i, tr := range s.Tracks {
		switch {
		case tr.Kind == event.TrackHostThread && tr.Name == "python" && tr.ID == 2909598409194160805:
			python = uint32(i + 1)
		case tr.Kind == event.TrackHostThread && tr.Name == "tf_XLAExecute/-8811090495887203549" && tr.ID == -8811090495887203549:
			xla = uint32(i + 1)
		}
	}
	if python == 0 || xla == 0 || len(s.Tracks) != 2 {
		t.Fatalf("tracks %+v", s.Tracks)
	}
	if len(s.Events) != 140 {
		t.Errorf("%d events, want 140 (105 + 35 in the file)", len(s.Events))
	}

	var steps, fwds []*event.Record
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan && r.Kind() != event.KindInstant || !r.OnTrack() {
			t.Fatalf("%s: kind %v flags %s", s.Name(r), r.Kind(), fmt.Sprint("step=", r.IsStep(), " on_track=", r.OnTrack()))
		}
		switch s.Name(r) {
		case "train":
			steps = append(steps, r)
		case "fwd":
			fwds = append(fwds, r)
		}
	}
	byStart := func(a, b *event.Record) int { return int(a.Start() - b.Start()) }
	slices.SortFunc(steps, byStart)
	slices.SortFunc(fwds, byStart)
	if len(steps) != 5 || len(fwds) != 5 {
		t.Fatalf("%d train, %d fwd spans", len(steps), len(fwds))
	}
	for i, st := range steps {
		if !st.IsStep() || st.StepNum() != int64(i) || st.Lane() != python {
			t.Errorf("train %d: step %v num %d lane %d", i, st.IsStep(), st.StepNum(), st.Lane())
		}
		if a := s.Args(st); len(a) != 0 {
			t.Errorf("train %d args %+v, want none (_r and step_num make the step)", i, a)
		}
		f := fwds[i]
		if f.Parent() != st.ID() || f.Lane() != python {
			t.Errorf("fwd %d: parent %d, want train %d", i, f.Parent(), st.ID())
		}
		if a := s.Args(f); len(a) != 1 || a[0] != (event.Arg{Key: "batch", Kind: event.ArgInt, Num: 32}) {
			t.Errorf("fwd %d args %+v", i, a)
		}
	}
	// The first step as the dump shows it: line timestamp 8473 ns, offset
	// 85097000 ps, duration 358855000 ps.
	if steps[0].Start() != 8473+85097 || steps[0].End() != 8473+85097+358855 {
		t.Errorf("train 0 at %d..%d", steps[0].Start(), steps[0].End())
	}

	// XLA ops: interned strings resolved, every stat kept (twice _src).
	ops := 0
	for _, r := range s.Events {
		if s.Name(r) != "ynn_fusion" {
			continue
		}
		ops++
		if r.Lane() != xla {
			t.Errorf("ynn_fusion on track %d", r.Lane())
		}
		args := s.Args(r)
		var keys []string
		for _, a := range args {
			keys = append(keys, a.Key)
		}
		if want := []string{"hlo_op", "hlo_module", "program_id", "run_id", "device_ordinal", "_src", "_pt", "_p", "_src"}; !slices.Equal(keys, want) {
			t.Errorf("ynn_fusion arg keys %v, want %v", keys, want)
		}
		am := argsMap(s, r)
		if am["hlo_op"] != (event.Arg{Key: "hlo_op", Kind: event.ArgString, Str: "ynn_fusion"}) ||
			am["hlo_module"] != (event.Arg{Key: "hlo_module", Kind: event.ArgString, Str: "jit_f"}) ||
			am["program_id"] != (event.Arg{Key: "program_id", Kind: event.ArgInt, Num: 4}) ||
			!strings.HasSuffix(args[5].Str, "/thunk.cc") {
			t.Errorf("ynn_fusion args %+v", args)
		}
	}
	if ops != 5 {
		t.Errorf("%d ynn_fusion events, want 5", ops)
	}

	// Host name from the file name when the XSpace has none.
	xs := decodeXSpace(t, mustReadFile(t, jaxFile))
	xs.Hostnames = nil
	b, err := proto.Marshal(xs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "worker-3.xplane.pb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := xplane.ReadFile(path); err != nil || s.Meta.Host != "worker-3" {
		t.Errorf("host from file name: %v, %v", s, err)
	}
}

func mustReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// space builds XSpaces for tests: one host plane with interned metadata.
type space struct {
	xs    *xplanepb.XSpace
	plane *xplanepb.XPlane
}

func newSpace(planeName string) *space {
	p := &xplanepb.XPlane{Name: planeName, EventMetadata: map[int64]*xplanepb.XEventMetadata{}, StatMetadata: map[int64]*xplanepb.XStatMetadata{}}
	return &space{xs: &xplanepb.XSpace{Planes: []*xplanepb.XPlane{p}}, plane: p}
}

func (s *space) addPlane(name string) *xplanepb.XPlane {
	p := &xplanepb.XPlane{Name: name, EventMetadata: map[int64]*xplanepb.XEventMetadata{}, StatMetadata: map[int64]*xplanepb.XStatMetadata{}}
	s.xs.Planes = append(s.xs.Planes, p)
	s.plane = p
	return p
}

func (s *space) eventMD(name string) int64 {
	for id, md := range s.plane.EventMetadata {
		if md.Name == name {
			return id
		}
	}
	id := int64(len(s.plane.EventMetadata) + 1)
	s.plane.EventMetadata[id] = &xplanepb.XEventMetadata{Id: id, Name: name}
	return id
}

func (s *space) statMD(name string) int64 {
	for id, md := range s.plane.StatMetadata {
		if md.Name == name {
			return id
		}
	}
	id := int64(len(s.plane.StatMetadata) + 1)
	s.plane.StatMetadata[id] = &xplanepb.XStatMetadata{Id: id, Name: name}
	return id
}

func (s *space) line(id int64, name string, ts int64) *xplanepb.XLine {
	l := &xplanepb.XLine{Id: id, Name: name, TimestampNs: ts}
	s.plane.Lines = append(s.plane.Lines, l)
	return l
}

func (s *space) event(l *xplanepb.XLine, name string, offPS, durPS int64, stats ...*xplanepb.XStat) *xplanepb.XEvent {
	e := &xplanepb.XEvent{MetadataId: s.eventMD(name), Data: &xplanepb.XEvent_OffsetPs{OffsetPs: offPS}, DurationPs: durPS, Stats: stats}
	l.Events = append(l.Events, e)
	return e
}

func (s *space) intStat(name string, v int64) *xplanepb.XStat {
	return &xplanepb.XStat{MetadataId: s.statMD(name), Value: &xplanepb.XStat_Int64Value{Int64Value: v}}
}

func (s *space) uintStat(name string, v uint64) *xplanepb.XStat {
	return &xplanepb.XStat{MetadataId: s.statMD(name), Value: &xplanepb.XStat_Uint64Value{Uint64Value: v}}
}

func (s *space) strStat(name, v string) *xplanepb.XStat {
	return &xplanepb.XStat{MetadataId: s.statMD(name), Value: &xplanepb.XStat_StrValue{StrValue: v}}
}

func (s *space) taskEnv(start, stop uint64) {
	p := s.plane
	env := s.addPlane(xplane.TaskEnvPlaneName)
	env.Stats = []*xplanepb.XStat{s.uintStat("profile_start_time", start), s.uintStat("profile_stop_time", stop)}
	s.plane = p
}

func (s *space) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := proto.Marshal(s.xs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadTraceMeNames(t *testing.T) {
	i64 := func(k string, v int64) event.Arg { return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(v)} }
	u64 := func(k string, v uint64) event.Arg { return event.Arg{Key: k, Kind: event.ArgUint, Num: v} }
	f64 := func(k string, v float64) event.Arg {
		return event.Arg{Key: k, Kind: event.ArgFloat, Num: math.Float64bits(v)}
	}
	str := func(k, v string) event.Arg { return event.Arg{Key: k, Kind: event.ArgString, Str: v} }
	cases := []struct {
		in   string
		name string
		args []event.Arg
	}{
		{"fwd#batch=32#", "fwd", []event.Arg{i64("batch", 32)}},
		{"plain", "plain", nil},
		{"literal#k=v", "literal#k=v", nil},
		{"x#k=v#y", "x#k=v#y", nil},
		{"types#i=-5,p=+7,u=18446744073709551615,f=0.5,e=1e3,s=abc,big=1e999,h=0x10,us=1_000#", "types", []event.Arg{
			i64("i", -5), i64("p", 7), u64("u", math.MaxUint64), f64("f", 0.5), f64("e", 1000), str("s", "abc"),
			f64("big", math.Inf(1)), str("h", "0x10"), str("us", "1_000")}},
		{`q#s="a,b",l=[1,2],t=(x,y),d={a:1,b:[2,3]},w='c,d',n=1#`, "q", []event.Arg{
			str("s", `"a,b"`), str("l", "[1,2]"), str("t", "(x,y)"), str("d", "{a:1,b:[2,3]}"), str("w", "'c,d'"), i64("n", 1)}},
		{" spaced name # k = v , empty=, =x, novalue,,eq=a=b #", "spaced name", []event.Arg{str("k", "v"), str("eq", "a=b")}},
		{"first#a=1#b=2#", "first", []event.Arg{i64("a", 1)}},
		{"noargs##", "noargs", nil},
		{"unclosed#s=\"a,b=c#", "unclosed", []event.Arg{str("s", "\"a,b=c")}},
	}
	sp := newSpace(xplane.HostPlaneName)
	l := sp.line(1, "main", 0)
	for i, c := range cases {
		sp.event(l, c.in, int64(i)*10_000, 5_000)
	}
	// A TraceMe-encoded step, as StepTraceAnnotation names it before TSL
	// parses it.
	sp.event(l, "train#_r=1,step_num=7#", 1_000_000, 5_000)
	s := readXSpace(t, sp.bytes(t))
	spans := map[int64]*event.Record{}
	for _, r := range s.Events {
		spans[r.Start()] = r
	}
	for i, c := range cases {
		r := spans[int64(i)*10]
		if r == nil {
			t.Errorf("%q: no event", c.in)
			continue
		}
		if got := s.Args(r); s.Name(r) != c.name || !reflect.DeepEqual(slices.Clone(got), c.args) && (len(got) != 0 || len(c.args) != 0) {
			t.Errorf("%q: got %q %+v, want %q %+v", c.in, s.Name(r), got, c.name, c.args)
		}
	}
	if r := spans[1000]; r == nil || s.Name(r) != "train" || !r.IsStep() || r.StepNum() != 7 || r.NArgs() != 0 {
		t.Errorf("encoded step: %+v", r)
	}
}

func TestReadForms(t *testing.T) {
	const start = 1_700_000_000_000_000_000
	t.Run("absolute line timestamps", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		sp.taskEnv(start, start+50_000)
		sp.event(sp.line(1, "abs", start+1000), "a", 2_000_000, 3_000)
		sp.event(sp.line(2, "rel", 1000), "b", 2_000_000, 3_000)
		s := readXSpace(t, sp.bytes(t))
		for _, r := range s.Events {
			if r.Start() != 3000 || r.End() != 3003 {
				t.Errorf("%s at %d..%d, want 3000..3003", s.Name(r), r.Start(), r.End())
			}
		}
		if s.Meta.Start.Wall != start || s.Meta.Stop.Mono != 50_000 {
			t.Errorf("meta %+v", s.Meta)
		}
	})
	t.Run("absolute without task environment", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		sp.event(sp.line(1, "t1", start+5000), "a", 1_000_000, 2_000_000)
		sp.event(sp.line(2, "t2", start+1000), "b", 0, 1000)
		s := readXSpace(t, sp.bytes(t))
		got := map[string][2]int64{}
		for _, r := range s.Events {
			got[s.Name(r)] = [2]int64{r.Start(), r.End()}
		}
		if got["a"] != [2]int64{5000, 7000} || got["b"] != [2]int64{0, 1} {
			t.Errorf("times %v", got)
		}
		if s.Meta.Start.Wall != start+1000 || s.Meta.Stop.Mono != 7000 || s.Meta.Stop.Wall != start+8000 {
			t.Errorf("meta %+v", s.Meta)
		}
	})
	t.Run("relative without task environment", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		sp.event(sp.line(1, "t", 100), "a", 1_500_000, 2_000)
		s := readXSpace(t, sp.bytes(t))
		if s.Meta.Start.Wall != 0 || s.Meta.Stop.Mono != 1602 || s.Events[0].Start() != 1600 {
			t.Errorf("meta %+v, start %d", s.Meta, s.Events[0].Start())
		}
	})
	t.Run("nesting", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		l := sp.line(1, "t", 0)
		// Out of order in the file; c overlaps b partially; d and e sit in
		// b; f is an instant at b's end (outside it); g ends with a.
		sp.event(l, "d", 3_000, 1_000)
		sp.event(l, "a", 0, 100_000)
		sp.event(l, "b", 1_000, 9_000)
		sp.event(l, "c", 5_000, 20_000)
		sp.event(l, "e", 3_000, 0)
		sp.event(l, "f", 10_000, 0)
		sp.event(l, "g", 90_000, 10_000)
		s := readXSpace(t, sp.bytes(t))
		name := map[uint64]string{}
		for _, r := range s.Events {
			name[r.ID()] = s.Name(r)
		}
		parents := map[string]string{}
		for _, r := range s.Events {
			parents[s.Name(r)] = name[r.Parent()]
		}
		want := map[string]string{"a": "", "b": "a", "c": "a", "d": "b", "e": "d", "f": "c", "g": "a"}
		if !reflect.DeepEqual(parents, want) {
			t.Errorf("parents %v, want %v", parents, want)
		}
	})
	t.Run("hostile", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		l := sp.line(1, "t", 0)
		sp.event(l, "neg", 1000, -5000)
		l.Events = append(l.Events,
			&xplanepb.XEvent{MetadataId: 999, Data: &xplanepb.XEvent_OffsetPs{OffsetPs: 2000}, DurationPs: 1000,
				Stats: []*xplanepb.XStat{{MetadataId: 77, Value: &xplanepb.XStat_Int64Value{Int64Value: 1}},
					{MetadataId: sp.statMD("r"), Value: &xplanepb.XStat_RefValue{RefValue: 1 << 63}},
					{MetadataId: sp.statMD("blob"), Value: &xplanepb.XStat_BytesValue{BytesValue: []byte{1}}}}},
			&xplanepb.XEvent{MetadataId: sp.eventMD("agg"), Data: &xplanepb.XEvent_NumOccurrences{NumOccurrences: math.MaxInt64}},
			&xplanepb.XEvent{MetadataId: sp.eventMD("agg"), Data: &xplanepb.XEvent_NumOccurrences{NumOccurrences: 3}},
			&xplanepb.XEvent{MetadataId: sp.eventMD("far"), Data: &xplanepb.XEvent_OffsetPs{OffsetPs: math.MaxInt64}, DurationPs: math.MaxInt64},
		)
		sp.event(sp.line(2, "huge", math.MaxInt64), "late", math.MaxInt64, 1)
		s := readXSpace(t, sp.bytes(t))
		byName := map[string]*event.Record{}
		for _, r := range s.Events {
			byName[s.Name(r)] = r
		}
		if r := byName["neg"]; r == nil || r.Kind() != event.KindInstant || r.Start() != 1 {
			t.Errorf("negative duration: %+v", r)
		}
		r := byName["event_999"]
		if r == nil {
			t.Fatalf("events %v", byName)
		}
		if got := s.Args(r); len(got) != 2 || got[0].Key != "stat_77" || got[1] != (event.Arg{Key: "r", Kind: event.ArgString, Str: "stat_9223372036854775808"}) {
			t.Errorf("args %+v", got)
		}
		if byName["agg"] != nil {
			t.Error("aggregated event read")
		}
		if r := byName["far"]; r == nil || r.End() < r.Start() {
			t.Errorf("far: %+v", r)
		}
		warns := warningTexts(s.Meta.Warnings)
		for _, w := range []string{"2 aggregated events", "1 events with a negative duration", "1 events refer to event metadata"} {
			if !strings.Contains(warns, w) {
				t.Errorf("warnings %q lack %q", warns, w)
			}
		}
	})
	t.Run("device planes and counters", func(t *testing.T) {
		sp := newSpace("/device:GPU:3")
		sp.plane.Id = 3
		sp.plane.Stats = []*xplanepb.XStat{sp.strStat("gpu_device_name", "A100")}
		sp.event(sp.line(7, "Stream #7(Compute)", 0), "k", 1000, 2000, sp.uintStat("correlation_id", 5), sp.intStat("_r", 1))
		sp.event(sp.line(0xdeadbeef, "Steps", 0), "train 0", 1000, 2000)
		sp.event(sp.line(12, "XLA Ops", 0), "fusion", 1000, 2000)
		cl := sp.line(99, xplane.CountersLineName, 0)
		sp.event(cl, "heap (bytes)", 1000, 0, sp.strStat("note", "x"), sp.intStat("value", 42))
		sp.event(cl, "util", 2000, 0, sp.strStat("note", "no value"))
		sp.addPlane("/device:TPU:1")
		sp.event(sp.line(0xdeadbeef+5, "XLA Ops", 0), "fusion.1", 0, 1000)
		custom := sp.addPlane("/device:CUSTOM:MOSAIC:0")
		custom.Id = 12
		sp.event(sp.line(1, "core", 0), "op", 0, 1000)
		s := readXSpace(t, sp.bytes(t))
		var tracks []string
		for _, tr := range s.Tracks {
			tracks = append(tracks, fmt.Sprintf("%v/%d/%s/%d/%s", tr.Kind, tr.Device, tr.DeviceName, tr.ID, tr.Name))
		}
		want := []string{
			fmt.Sprintf("%v/3/A100/7/Stream #7(Compute)", event.TrackDeviceStream),
			fmt.Sprintf("%v/1//%d/XLA Ops", event.TrackDeviceStream, uint32(0xdeadbeef+5)),
			fmt.Sprintf("%v/12//1/core", event.TrackDeviceStream),
			// The device plane's counters belong to the device itself.
			fmt.Sprintf("%v/3/A100/0/", event.TrackDevice),
		}
		if !slices.Equal(tracks, want) {
			t.Errorf("tracks\n%q\nwant\n%q", tracks, want)
		}
		var counters []string
		for _, r := range s.Events {
			switch r.Kind() {
			case event.KindCounter:
				dev := -1
				if tr, ok := s.TrackOf(r); ok {
					dev = tr.Device
				}
				counters = append(counters, fmt.Sprintf("%s/%s/%v@%d on %d", s.Name(r), s.Args(r)[0].Key, s.Args(r)[0].Float(), r.Start(), dev))
			case event.KindActivity:
				if s.Name(r) == "k" {
					am := argsMap(s, r)
					if am["<flow>"].Num != 5 || am["_r"].Num != 1 || len(am) != 2 {
						t.Errorf("k args %+v", am)
					}
				}
			default:
				t.Errorf("%s: kind %v on a device plane", s.Name(r), r.Kind())
			}
		}
		if !slices.Equal(counters, []string{"heap/bytes/42@1 on 3"}) {
			t.Errorf("counters %q", counters)
		}
		if !strings.Contains(warningTexts(s.Meta.Warnings), "1 counter samples without a numeric stat") {
			t.Errorf("warnings %q", s.Meta.Warnings)
		}
	})
	t.Run("merged host planes and metadata", func(t *testing.T) {
		sp := newSpace("/host:CUPTI")
		sp.event(sp.line(42, "Host Threads/42", 0), "cuLaunchKernel", 2000, 1000, sp.uintStat("correlation_id", 9))
		sp.addPlane(xplane.HostPlaneName)
		sp.plane.Stats = []*xplanepb.XStat{sp.intStat("process_id", 777)}
		sp.event(sp.line(42, "worker", 0), "step", 1000, 10_000)
		sp.addPlane("/host:CPU [99]")
		sp.event(sp.line(42, "child", 0), "other", 0, 1000)
		sp.xs.Hostnames = []string{"h1", "h2"}
		sp.xs.Errors = []string{"tracer failed"}
		sp.xs.Warnings = []string{"Detected GPU events dropped"}
		s := readXSpace(t, sp.bytes(t))
		if len(s.Tracks) != 2 || s.Tracks[0].Name != "worker" || s.Tracks[1].Name != "child" {
			t.Errorf("tracks %+v", s.Tracks)
		}
		var launch, step *event.Record
		for _, r := range s.Events {
			switch s.Name(r) {
			case "cuLaunchKernel":
				launch = r
			case "step":
				step = r
			}
		}
		if launch == nil || step == nil || launch.Parent() != step.ID() || launch.Lane() != step.Lane() {
			t.Errorf("launch %+v, step %+v", launch, step)
		}
		if s.Meta.Host != "h1" || s.Meta.PID != 777 || s.Meta.Program != "h1" ||
			!slices.Equal(s.Meta.Warnings, []event.Warning{{Text: "XSpace error: tracer failed"}, {Text: "Detected GPU events dropped"}}) {
			t.Errorf("meta %+v", s.Meta)
		}
	})
	t.Run("gzip and invalid UTF-8", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		sp.event(sp.line(1, "t", 0), "name-PLACEHOLDER", 1000, 1000)
		raw := bytes.Replace(sp.bytes(t), []byte("PLACEHOLDER"), []byte("\xff\xfe-valid-ok"), 1)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(raw)
		zw.Close()
		s := readXSpace(t, gz.Bytes())
		if len(s.Events) != 1 || s.Name(s.Events[0]) != "name-\uFFFD-valid-ok" {
			t.Errorf("events %+v", s.Events)
		}
		if !strings.Contains(warningTexts(s.Meta.Warnings), "not valid UTF-8") {
			t.Errorf("warnings %q", s.Meta.Warnings)
		}
	})
	t.Run("empty XSpace", func(t *testing.T) {
		sp := newSpace(xplane.HostPlaneName)
		s := readXSpace(t, append(sp.bytes(t), 0x22, 0)) // plus an empty hostname
		if len(s.Events) != 0 || len(s.Tracks) != 0 || s.Meta.Stop.Mono != 0 {
			t.Errorf("snapshot %+v", s)
		}
	})
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	jax := mustReadFile(t, jaxFile)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty.xplane.pb", nil, "empty.xplane.pb: empty file"},
		{"cut.xplane.pb", jax[:len(jax)/2], "cut.xplane.pb: cannot decode XSpace: "},
		{"trace.json", []byte(`{"traceEvents": []}`), "trace.json: cannot decode XSpace: this is a JSON trace"},
		{"bad.xplane.pb", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "bad.xplane.pb: cannot decode XSpace: "},
		{"bad.gz", []byte{0x1f, 0x8b, 0x08, 0, 0, 0}, "bad.gz: cannot decode XSpace: gzip"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := xplane.ReadFile(path)
		if err == nil || !strings.HasPrefix(err.Error(), "xplane: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := xplane.Read(bytes.NewReader(jax[:100])); err == nil || !strings.HasPrefix(err.Error(), "xplane: cannot decode XSpace: ") {
		t.Errorf("Read of a truncated file: %v", err)
	}
	if _, err := xplane.ReadFile(filepath.Join(dir, "missing.xplane.pb")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// fuzzSnapshot is a devprof recording built without the active buffer (so
// the fuzz seed needs no session): steps, nesting, an open span, counters,
// a drop count and device activity.
func fuzzSnapshot() *event.Snapshot {
	b := event.NewBuilder(event.Meta{Host: "fuzz", Drops: []event.Drops{{Source: event.DropsRecorder, Events: 3}}, MaxEvents: 100,
		Start: event.ClockAnchor{Mono: 1000, Boot: 1000, Wall: 1_795_000_000_000_000_000},
		Stop:  event.ClockAnchor{Mono: 101_000, Boot: 101_000, Wall: 1_795_000_000_000_100_000}})
	dev := b.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7, Name: "Stream #7(Compute)"})
	for i := range int64(2) {
		t0 := 2000 + i*40_000
		st := b.Span(event.Span{Name: "train", Start: t0, End: t0 + 30_000, Step: true, StepNum: i})
		f := b.Span(event.Span{Name: "fwd", Start: t0 + 100, End: t0 + 9000, Parent: st,
			Args: []event.Arg{{Key: "batch", Kind: event.ArgInt, Num: 32}, {Kind: event.ArgFlow, Num: uint64(i + 1)}, {Key: "s", Kind: event.ArgString, Str: "x"}}})
		b.Instant("mark", t0+200, 0, f, []event.Arg{{Key: "f", Kind: event.ArgFloat, Num: math.Float64bits(0.5)}})
		b.Activity(dev, "kernel", t0+300, t0+5000, []event.Arg{{Kind: event.ArgFlow, Num: uint64(i + 1)}})
		b.Counter("heap", "bytes", t0, float64(i))
	}
	b.Span(event.Span{Name: "open", Start: 90_000, Unfinished: true})
	return b.Snapshot()
}

func FuzzRead(f *testing.F) {
	devprof := writeXSpace(f, fuzzSnapshot())
	jax := mustReadFile(f, jaxFile)
	f.Add(devprof)
	f.Add(jax)
	f.Add(jax[:len(jax)/3])
	f.Add(devprof[:len(devprof)-7])
	f.Add(writeXSpace(f, eventtest.MultiProcessSnapshot())) // process planes
	f.Add(writeXSpace(f, eventtest.OwnedSnapshot()))        // process planes with counters and instants of their own
	// The committed corpus (testdata/fuzz/FuzzRead) holds planes and cuts
	// of the real H100 files; the whole files are added from ../../testdata.
	for _, path := range []string{realDevprof, realTSL, realJAX} {
		f.Add(mustReadFile(f, path))
	}
	f.Add(writeXSpace(f, eventtest.GoldenSnapshot())) // memory events linked to their steps
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := xplane.Read(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "xplane: ") {
				t.Fatalf("error %q lacks the xplane: prefix", err)
			}
			return
		}
		for _, r := range s.Events {
			if end, _ := s.EndOf(r); end < r.Start() {
				t.Fatalf("%s ends at %d before its start %d", s.Name(r), end, r.Start())
			}
			if r.Kind() == event.KindActivity || r.OnTrack() {
				if r.Lane() == 0 || int(r.Lane()) > len(s.Tracks) {
					t.Fatalf("%s on unknown track %d", s.Name(r), r.Lane())
				}
			}
			if p := s.Lookup(r.Parent()); r.Parent() != 0 && (p == nil || p.Start() > r.Start()) {
				t.Fatalf("%s: bad parent %d", s.Name(r), r.Parent())
			}
		}
		s.MemoryTimelines(8)
		// Whatever was read can be written and read again.
		var buf bytes.Buffer
		if err := xplane.Write(&buf, s); err != nil {
			t.Fatalf("Write: %v", err)
		}
		s2, err := xplane.Read(&buf)
		if err != nil {
			t.Fatalf("reading what Write made of it: %v", err)
		}
		// The second read may add warnings of its own (what the writer made
		// of odd events); what the first read found comes back as it was.
		if !slices.Equal(s2.Meta.Drops, s.Meta.Drops) || len(s2.Meta.Warnings) < len(s.Meta.Warnings) ||
			!slices.Equal(s2.Meta.Warnings[:len(s.Meta.Warnings)], s.Meta.Warnings) || !slices.Equal(s2.Meta.Notes, s.Meta.Notes) {
			t.Fatalf("metadata changed on a second round:\n%+v\n%+v", s.Meta, s2.Meta)
		}
	})
}

// warningTexts joins the texts of warnings, one a line.
func warningTexts(ws []event.Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.Text + "\n")
	}
	return b.String()
}

// TestMetaRoundTrip: warnings, notes and per-source drops written to an
// XSpace read back as the same structure.
func TestMetaRoundTrip(t *testing.T) {
	s := eventtest.MetaSnapshot()
	eventtest.CheckMeta(t, "xplane", readXSpace(t, writeXSpace(t, s)), s)
}

// TestXprofStatsFromNeutralArgs: sources fill the model's neutral
// arguments and activity kinds; the XSpace alone speaks xprof's words
// (tf_op, kernel_details, memcpy_details), and reading it back gives the
// neutral arguments and kinds again.
func TestXprofStatsFromNeutralArgs(t *testing.T) {
	const ms = int64(1e6)
	b := event.NewBuilder(event.Meta{Host: "h", Start: event.ClockAnchor{Wall: 1.7e18}, Stop: event.ClockAnchor{Mono: 20 * ms, Wall: 1.7e18 + 20*ms}})
	dev := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 1, ID: 7, Name: "Stream #7(Compute,MemcpyH2D)"})
	str := func(k, v string) event.Arg { return event.Arg{Key: k, Kind: event.ArgString, Str: v} }
	num := func(k string, v int64) event.Arg { return event.Arg{Key: k, Kind: event.ArgInt, Num: uint64(v)} }
	kernelArgs := []event.Arg{str(event.ArgGrid, "80,1,1"), str(event.ArgBlock, "256,1,1"), num(event.ArgRegistersPerThread, 32),
		num(event.ArgStaticSharedMemory, 0), num(event.ArgDynamicSharedMemory, 1024), str(event.ArgAnnotation, "matmul")}
	copyArgs := []event.Arg{str(event.ArgCopyKind, "HtoD"), {Key: event.ArgBytes, Kind: event.ArgUint, Num: 4096},
		str(event.ArgSrcMemoryKind, "pinned"), str(event.ArgDstMemoryKind, "device")}
	b.ActivityOf(event.ActivityKernel, dev, "gemm", ms, 2*ms, kernelArgs)
	b.ActivityOf(event.ActivityMemcpy, dev, "Memcpy HtoD", 3*ms, 4*ms, copyArgs)
	data := writeXSpace(t, b.Snapshot())

	want := map[string]map[string]string{
		"gemm":        {"tf_op": "matmul", "kernel_details": "regs:32 static_shared:0 dynamic_shared:1024 grid:80,1,1 block:256,1,1"},
		"Memcpy HtoD": {"memcpy_details": "kind_src:pinned kind_dst:device size:4096 dest:1"},
	}
	for _, p := range decodeXSpace(t, data).Planes {
		for _, l := range p.Lines {
			for _, e := range l.Events {
				name := p.EventMetadata[e.MetadataId].GetName()
				st := xstats(p, e.Stats)
				for k, v := range want[name] {
					if st[k] == nil || st[k].GetStrValue() != v && p.StatMetadata[int64(st[k].GetRefValue())].GetName() != v {
						t.Errorf("%s: stat %s = %v, want %q", name, k, st[k], v)
					}
				}
				if _, ok := st[event.ArgAnnotation]; ok {
					t.Errorf("%s: the model's annotation key reached the XSpace", name)
				}
				delete(want, name)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("events not written: %v", want)
	}

	got := readXSpace(t, data)
	wantBack := map[string]struct {
		kind event.ActivityKind
		args []event.Arg
	}{"gemm": {event.ActivityKernel, kernelArgs}, "Memcpy HtoD": {event.ActivityMemcpy, copyArgs}}
	for _, r := range got.Events {
		w, ok := wantBack[got.Name(r)]
		if !ok {
			continue
		}
		if r.Activity() != w.kind || !slices.Equal(got.Args(r), w.args) {
			t.Errorf("%s read back as %s %+v, want %s %+v", got.Name(r), r.Activity(), got.Args(r), w.kind, w.args)
		}
		delete(wantBack, got.Name(r))
	}
	if len(wantBack) != 0 {
		t.Errorf("not read back: %v", wantBack)
	}
}
