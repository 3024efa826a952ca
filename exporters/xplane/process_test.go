package xplane_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/eventtest"
)

// TestProcessPlanes: each process besides the program is a "/host:CPU
// [<pid>]" plane with its identity as plane stats and its threads as
// lines (tids as line ids); reading it back gives the same processes,
// threads and spans, and the flows: the launch -> kernel one (a
// correlation_id) and those between host threads (flow stats).
func TestProcessPlanes(t *testing.T) {
	orig := eventtest.MultiProcessSnapshot()
	data := writeXSpace(t, orig)
	xs := decodeXSpace(t, data)
	lines := map[string][]string{}
	for _, p := range xs.Planes {
		if strings.HasPrefix(p.Name, xplane.HostPlaneName) {
			for _, l := range p.Lines {
				lines[p.Name] = append(lines[p.Name], l.Name)
			}
			if p.Name != xplane.HostPlaneName {
				st := xstats(p, p.Stats)
				if st["process_id"] == nil {
					t.Errorf("plane %s has no process_id", p.Name)
				}
			}
		}
	}
	want := map[string][]string{
		xplane.HostPlaneName: {"train (lane 1)"},
		"/host:CPU [620]":    {"MainThread", "worker"},
		"/host:CPU [0]":      {"zero thread"},
		"/host:CPU [Spans]":  {"PyTorch Profiler"},
		"/host:CPU [100]":    {"twin thread"},
	}
	for name, w := range want {
		if g := lines[name]; !slices.Equal(g, w) {
			t.Errorf("plane %s lines %q, want %q (planes %v)", name, g, w, lines)
		}
	}

	got := readXSpace(t, data)
	if got.Meta.PID != 100 || got.Meta.Program != "trainer" {
		t.Errorf("program %q pid %d, want trainer 100", got.Meta.Program, got.Meta.PID)
	}
	wp, _, ws, _ := eventtest.ProcessFacts(orig, true)
	gp, _, gs, gf := eventtest.ProcessFacts(got, true)
	_, _, _, wf := eventtest.ProcessFacts(orig, true)
	_, wt, _, _ := eventtest.ProcessFacts(orig, false)
	_, gt, _, _ := eventtest.ProcessFacts(got, false)
	// Thread sort indices have no place in XSpace (xprof sorts lines by
	// name), so spans are compared without them.
	strip := func(l []string) []string {
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = strings.NewReplacer(" sort=true,1", "", " sort=true,0", "", " sort=false,0", "").Replace(s)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"processes", gp, wp}, {"threads", gt, wt}, {"spans", strip(gs), strip(ws)}, {"flows", gf, wf}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s read back:\n got %q\nwant %q", c.what, c.got, c.want)
		}
	}
}

// TestOwnerPlanes: counters and loose instants stay in their process's
// plane: the program's on the host plane, another process's on its
// "/host:CPU [<pid>]" plane (counters on its _counters_ line, instants on
// its Instants line), so reading the file back gives each the same
// process. XSpace has no thread counters: a thread's counter comes back
// as its process's.
func TestOwnerPlanes(t *testing.T) {
	orig := eventtest.OwnedSnapshot()
	data := writeXSpace(t, orig)
	lines := map[string][]string{}
	for _, p := range decodeXSpace(t, data).Planes {
		for _, l := range p.Lines {
			lines[p.Name] = append(lines[p.Name], l.Name)
		}
	}
	for plane, want := range map[string][]string{
		xplane.HostPlaneName: {"train (lane 1)", xplane.InstantsLineName, xplane.CountersLineName},
		"/host:CPU [620]":    {"MainThread", "sampler", xplane.InstantsLineName, xplane.CountersLineName},
		"/host:CPU [Traces]": {xplane.InstantsLineName},
	} {
		if g := lines[plane]; !slices.Equal(g, want) {
			t.Errorf("plane %s lines %q, want %q", plane, g, want)
		}
	}
	want := eventtest.OwnerFacts(orig, false)
	if g := eventtest.OwnerFacts(readXSpace(t, data), false); !slices.Equal(g, want) {
		t.Errorf("owners read back:\n got %q\nwant %q", g, want)
	}
}
