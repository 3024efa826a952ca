package gotrace

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/devprof/devprof/event"
)

// sliceSink keeps every slice by its track's name, and nothing else.
// It checks the order Sink promises: on each track, slices begin in
// nondecreasing start order.
type sliceSink struct {
	t      *testing.T
	names  []string // by track id-1
	slices map[string][]span
	open   map[uint64]begun
	last   map[uint32]int64 // the latest start on each track
	next   uint64
}

type begun struct {
	track uint32
	span
}

func (k *sliceSink) Begin(track uint32, name string, start int64, _ []event.Arg) uint64 {
	if k.open == nil {
		k.open, k.last = map[uint64]begun{}, map[uint32]int64{}
	}
	if l, ok := k.last[track]; ok && start < l {
		k.t.Errorf("%q on %q begins at %d, before a slice begun earlier on it (%d)", name, k.names[track-1], start, l)
	}
	k.last[track] = start
	k.next++
	k.open[k.next] = begun{track, span{name, start, 0}}
	return k.next
}

func (k *sliceSink) End(id uint64, end int64) {
	b, ok := k.open[id]
	if !ok {
		k.t.Errorf("End(%d) of no open slice", id)
		return
	}
	delete(k.open, id)
	k.Slice(b.track, 0, b.name, b.start, end, nil)
}

type span struct {
	name       string
	start, end int64
}

func (k *sliceSink) Track(t event.Track) uint32 {
	k.names = append(k.names, t.Name)
	return uint32(len(k.names))
}
func (k *sliceSink) Slice(track uint32, _ uint64, name string, start, end int64, _ []event.Arg) uint64 {
	if k.slices == nil {
		k.slices = map[string][]span{}
	}
	tn := k.names[track-1]
	if goroutineTrack.MatchString(tn) {
		tn = GoroutinePrefix
	}
	k.slices[tn] = append(k.slices[tn], span{name, start, end})
	return 1
}
func (k *sliceSink) Instant(uint32, string, int64, []event.Arg) {}
func (k *sliceSink) Counter(string, string, int64, float64)     {}

// multiGenerationTrace records a trace of a little over two seconds in
// which the tracer starts a new generation every 20 ms (a flight
// recorder's snapshot forces one, as the runtime does every second on
// its own), while a goroutine keeps the collector busy and forced
// GCs run, so that GC cycles, mark assists and sweeps are under way
// across generation boundaries; a user region and a task span the
// whole trace.
func multiGenerationTrace(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skipf("runtime/trace is in use (go test -trace?): %v", err)
	}
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MinAge: time.Millisecond, MaxBytes: 1 << 20})
	if err := fr.Start(); err != nil {
		rtrace.Stop()
		t.Fatalf("flight recorder: %v", err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	ctx, task := rtrace.NewTask(context.Background(), "whole test")
	region := rtrace.StartRegion(ctx, "spans generations")
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A live heap of pointers makes each mark phase take a
			// while; the garbage makes cycles (and assists) frequent.
			live := make([]*[16]int64, 1<<16)
			for i := 0; !stop.Load(); i++ {
				live[i%len(live)] = new([16]int64)
				if i%4096 == 0 {
					// A breath, so that the trace stays small enough for
					// go tool trace -d=parsed to print quickly.
					rtrace.WithRegion(ctx, "churn", func() { time.Sleep(100 * time.Microsecond) })
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			runtime.GC()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for end := time.Now().Add(2200 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		if _, err := fr.WriteTo(io.Discard); err != nil {
			t.Fatalf("flight recorder snapshot: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	region.End()
	task.End()
	fr.Stop()
	rtrace.Stop()
	return buf.Bytes()
}

// toolchainFigures is what golang.org/x/exp/trace's events say, counted
// here without devprof's converter: a range a new generation announces
// as active is the one already open (only in the trace's first
// generation is an active range one that began before the trace, and it
// runs from the trace's first event).
type toolchainFigures struct {
	gcs                 []span // the concurrent mark phases
	pauses              []span
	assists             []span
	sweeps              []span
	regions             map[string][2]int64 // name → count, total
	goroutines          int
	actives, activeOpen int // RangeActive events; those of a range already open
}

func countWithToolchain(t *testing.T, data []byte) toolchainFigures {
	t.Helper()
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	f := toolchainFigures{regions: map[string][2]int64{}}
	type key struct {
		scope xtrace.ResourceID
		name  string
	}
	open := map[key]int64{}
	regionsOpen := map[xtrace.GoID][]span{}
	gids := map[xtrace.GoID]bool{}
	first, last := int64(-1), int64(0)
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ts := int64(ev.Time())
		if first < 0 {
			first = ts
		}
		last = max(last, ts)
		switch ev.Kind() {
		case xtrace.EventStateTransition:
			if st := ev.StateTransition(); st.Resource.Kind == xtrace.ResourceGoroutine {
				gids[st.Resource.Goroutine()] = true
			}
		case xtrace.EventRangeBegin:
			rg := ev.Range()
			open[key{rg.Scope, rg.Name}] = ts
		case xtrace.EventRangeActive:
			rg := ev.Range()
			f.actives++
			if _, ok := open[key{rg.Scope, rg.Name}]; ok {
				f.activeOpen++
			} else {
				open[key{rg.Scope, rg.Name}] = first
			}
		case xtrace.EventRangeEnd:
			rg := ev.Range()
			k := key{rg.Scope, rg.Name}
			start, ok := open[k]
			if !ok {
				start = first
			}
			delete(open, k)
			sp := span{rg.Name, start, ts}
			switch {
			case rg.Name == "GC concurrent mark phase":
				f.gcs = append(f.gcs, sp)
			case strings.HasPrefix(rg.Name, "stop-the-world"):
				f.pauses = append(f.pauses, sp)
			case rg.Name == RangeMarkAssist:
				f.assists = append(f.assists, sp)
			case rg.Name == "GC incremental sweep":
				f.sweeps = append(f.sweeps, sp)
			}
		case xtrace.EventRegionBegin:
			g := ev.Goroutine()
			regionsOpen[g] = append(regionsOpen[g], span{ev.Region().Type, ts, 0})
		case xtrace.EventRegionEnd:
			g, name := ev.Goroutine(), ev.Region().Type
			start := first
			for i := len(regionsOpen[g]) - 1; i >= 0; i-- {
				if regionsOpen[g][i].name == name {
					start = regionsOpen[g][i].start
					regionsOpen[g] = append(regionsOpen[g][:i], regionsOpen[g][i+1:]...)
					break
				}
			}
			c := f.regions[name]
			f.regions[name] = [2]int64{c[0] + 1, c[1] + ts - start}
		}
	}
	for k, start := range open {
		sp := span{k.name, start, last}
		switch {
		case k.name == "GC concurrent mark phase":
			f.gcs = append(f.gcs, sp)
		case strings.HasPrefix(k.name, "stop-the-world"):
			f.pauses = append(f.pauses, sp)
		case k.name == RangeMarkAssist:
			f.assists = append(f.assists, sp)
		case k.name == "GC incremental sweep":
			f.sweeps = append(f.sweeps, sp)
		}
	}
	for _, rs := range regionsOpen {
		for _, r := range rs {
			c := f.regions[r.name]
			f.regions[r.name] = [2]int64{c[0] + 1, c[1] + last - r.start}
		}
	}
	f.goroutines = len(gids)
	return f
}

func total(ss []span) (n int, sum, longest int64) {
	for _, s := range ss {
		n++
		sum += s.end - s.start
		longest = max(longest, s.end-s.start)
	}
	return n, sum, longest
}

func sortedSpans(ss []span) []span {
	out := append([]span(nil), ss...)
	for i := range out {
		out[i].name = ""
	}
	slicesSortSpans(out)
	return out
}

// A trace longer than one generation converts as the toolchain reads
// it: a GC cycle, mark assist or sweep under way when the tracer starts
// a new generation is the same range, not a new one under way since the
// trace began. GC cycles, their lengths, stop-the-world pauses, mark
// assists, goroutines and user regions equal what golang.org/x/exp/trace's
// events say (and, where the go command is at hand, what go tool trace
// -d=parsed prints), with the goroutine rows cut to a few so that the
// figures are the whole file's, not the rows'.
func TestGenerationsReadAsToolchain(t *testing.T) {
	if testing.Short() {
		t.Skip("records a trace for two seconds")
	}
	t0 := time.Now()
	data := multiGenerationTrace(t)
	t.Logf("recorded %d KiB in %v", len(data)>>10, time.Since(t0))
	t0 = time.Now()
	want := countWithToolchain(t, data)
	t.Logf("counted in %v", time.Since(t0))
	if want.activeOpen == 0 {
		t.Fatalf("the trace re-announced no range across a generation (%d active events): the test made none to check", want.actives)
	}
	t.Logf("%d GC cycles, %d pauses, %d mark assists, %d sweeps, %d goroutines; %d ranges re-announced in a later generation",
		len(want.gcs), len(want.pauses), len(want.assists), len(want.sweeps), want.goroutines, want.activeOpen)

	k := &sliceSink{t: t}
	c, err := convert(bytes.NewReader(data), k, Options{MaxGoroutines: 3})
	if err != nil {
		t.Fatal(err)
	}
	res := &c.res
	if len(k.open) != 0 {
		t.Errorf("%d slices begun were never ended", len(k.open))
	}
	if got := sortedSpans(k.slices[TrackGC]); !reflect.DeepEqual(got, sortedSpans(onlyNamed(k.slices[TrackGC], SliceGC))) ||
		!reflect.DeepEqual(got, sortedSpans(want.gcs)) {
		t.Errorf("GC slices %v\nwant the toolchain's %v", got, sortedSpans(want.gcs))
	}
	if got := sortedSpans(k.slices[TrackSTW]); !reflect.DeepEqual(got, sortedSpans(want.pauses)) {
		t.Errorf("stop-the-world slices %v\nwant the toolchain's %v", got, sortedSpans(want.pauses))
	}
	n, sum, longest := total(want.pauses)
	if res.GCs != len(want.gcs) || res.Pauses != n || res.PauseTotal != sum || res.PauseMax != longest || res.Goroutines != want.goroutines {
		t.Errorf("stats: %d GCs, %d pauses (%d ns, longest %d), %d goroutines; want %d, %d (%d, %d), %d",
			res.GCs, res.Pauses, res.PauseTotal, res.PauseMax, res.Goroutines, len(want.gcs), n, sum, longest, want.goroutines)
	}
	// The whole file's figures, whatever the rows cut.
	sumRes := c.summary()
	gcN, gcSum, _ := total(want.gcs)
	asN, asSum, _ := total(want.assists)
	if sumRes.GCs != gcN || sumRes.GCTotal != gcSum || sumRes.Pauses != n || sumRes.PauseTotal != sum || sumRes.PauseMax != longest ||
		sumRes.Assists != asN || sumRes.AssistTotal != asSum || sumRes.Goroutines != want.goroutines {
		t.Errorf("summary %+v\nwant %d GCs (%d ns), %d pauses (%d, longest %d), %d assists (%d ns), %d goroutines",
			sumRes, gcN, gcSum, n, sum, longest, asN, asSum, want.goroutines)
	}
	for name, cnt := range want.regions {
		i := slicesIndexRegion(sumRes.Regions, name)
		if i < 0 || int64(sumRes.Regions[i].Count) != cnt[0] || sumRes.Regions[i].Total != cnt[1] {
			t.Errorf("region %q: summary %+v, want %d (%d ns)", name, sumRes.Regions, cnt[0], cnt[1])
		}
	}
	if len(sumRes.Regions) != len(want.regions) {
		t.Errorf("summary regions %+v, want %d names", sumRes.Regions, len(want.regions))
	}
	// Mark assists and sweeps drawn (on the rows there are) are the
	// toolchain's too: none begins at the trace's start unless the
	// toolchain's does.
	assists := map[span]bool{}
	for _, a := range want.assists {
		assists[a] = true
	}
	for _, d := range onlyNamed(k.slices[GoroutinePrefix], RangeMarkAssist) {
		if !assists[d] {
			t.Errorf("mark assist %v is not one of the toolchain's", d)
		}
	}
	var sweeps []span
	for name, ss := range k.slices {
		if isProcTrack(name) {
			sweeps = append(sweeps, onlyNamed(ss, "GC incremental sweep")...)
		}
	}
	if got := sortedSpans(sweeps); !reflect.DeepEqual(got, sortedSpans(want.sweeps)) {
		t.Errorf("%d sweep slices, want the toolchain's %d", len(got), len(want.sweeps))
	}

	t.Logf("converted and compared in %v", time.Since(t0))
	if goCmd, err := exec.LookPath("go"); err == nil {
		t0 = time.Now()
		defer func() { t.Logf("go tool trace in %v", time.Since(t0)) }()
		checkParsed(t, goCmd, data, len(want.gcs), n, asN)
	}
}

// checkParsed counts, in what go tool trace -d=parsed prints, the GC
// cycles, pauses and mark assists (a range announced active in a later
// generation is the one already open).
func checkParsed(t *testing.T, goCmd string, data []byte, gcs, pauses, assists int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, "tool", "trace", "-d=parsed", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^M=\S+ P=\S+ G=\S+ (RangeBegin|RangeActive|RangeEnd) Time=\d+ Name="([^"]*)" Scope=(\S+)`)
	open := map[string]bool{}
	count := map[string]int{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.HasPrefix(b, []byte("M=")) || !bytes.Contains(b, []byte(" Range")) {
			continue // most lines: other events, and stack frames
		}
		m := line.FindStringSubmatch(string(b))
		if m == nil {
			continue
		}
		k := m[2] + "@" + m[3]
		switch m[1] {
		case "RangeBegin":
			open[k] = true
			count[m[2]]++
		case "RangeActive":
			if !open[k] {
				open[k] = true
				count[m[2]]++
			}
		case "RangeEnd":
			delete(open, k)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go tool trace -d=parsed: %v", err)
	}
	stw := 0
	for name, n := range count {
		if strings.HasPrefix(name, "stop-the-world") {
			stw += n
		}
	}
	if count["GC concurrent mark phase"] != gcs || stw != pauses || count[RangeMarkAssist] != assists {
		t.Errorf("go tool trace -d=parsed: %d GC cycles, %d pauses, %d mark assists; devprof %d, %d, %d",
			count["GC concurrent mark phase"], stw, count[RangeMarkAssist], gcs, pauses, assists)
	}
	t.Logf("go tool trace -d=parsed agrees: %d GC cycles, %d pauses, %d mark assists", gcs, pauses, assists)
}

func onlyNamed(ss []span, name string) []span {
	var out []span
	for _, s := range ss {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func slicesIndexRegion(rs []RegionStat, name string) int {
	for i, r := range rs {
		if r.Name == name {
			return i
		}
	}
	return -1
}

func slicesSortSpans(ss []span) {
	slices.SortFunc(ss, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
}
