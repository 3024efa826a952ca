// Package conformance hands devprof's real outputs to the independent
// checkers that CI runs against official consumers (conformance/*.py). A
// test that produced a trace calls Export; when DEVPROF_CONFORMANCE_DIR is
// set, the trace is copied there with a manifest of what the session
// recorded, computed from the event records themselves (not from the
// exporter), so the checker compares the file against the truth.
package conformance

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/trace/event"
)

// Dir returns the directory named by DEVPROF_CONFORMANCE_DIR, or "".
func Dir() string { return os.Getenv("DEVPROF_CONFORMANCE_DIR") }

// Manifest is the contract with conformance/perfetto_check.py.
type Manifest struct {
	Trace       string         `json:"trace"`
	ProcessName string         `json:"process_name"`
	Dropped     int64          `json:"dropped"`
	Spans       []Span         `json:"spans"`
	Instants    []Instant      `json:"instants"`
	Counters    []Counter      `json:"counters"`
	Flows       [][2]string    `json:"flows"`
	ExtraSlices []string       `json:"extra_slices,omitempty"`
	Meta        map[string]any `json:"meta,omitempty"`
}

// Span is an expected slice.
type Span struct {
	Name   string         `json:"name"`
	TS     int64          `json:"ts"`
	Dur    int64          `json:"dur"`
	Parent *string        `json:"parent"`
	Args   map[string]Arg `json:"args"`
}

// Instant is an expected instant event.
type Instant struct {
	Name string         `json:"name"`
	TS   int64          `json:"ts"`
	Args map[string]Arg `json:"args"`
}

// Counter is an expected counter track with its samples.
type Counter struct {
	Name    string       `json:"name"`
	Unit    string       `json:"unit"`
	Samples []Sample `json:"samples"`
}

// Sample is one counter value; it encodes as [ts, value] with an exact
// integer timestamp.
type Sample struct {
	TS    int64
	Value float64
}

// MarshalJSON implements json.Marshaler.
func (s Sample) MarshalJSON() ([]byte, error) { return json.Marshal([]any{s.TS, s.Value}) }

// Arg is an expected typed argument.
type Arg struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Expect computes the manifest of a snapshot.
func Expect(s *event.Snapshot, traceName string) *Manifest {
	m := &Manifest{Trace: traceName, ProcessName: s.Meta.Program, Dropped: s.Meta.Dropped,
		Spans: []Span{}, Instants: []Instant{}, Counters: []Counter{}, Flows: [][2]string{}}
	type flowEnd struct {
		t    int64
		name string
	}
	flows := map[uint64][]flowEnd{}
	counters := map[[2]string]int{}
	for _, r := range s.Events {
		args := map[string]Arg{}
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				flows[a.Num] = append(flows[a.Num], flowEnd{r.Start, r.Name})
				continue
			}
			args[a.Key] = arg(a)
		}
		switch r.Kind {
		case event.KindSpan:
			end, fin := s.EndOf(r)
			if r.Flags&event.FlagStep != 0 {
				args["step_num"] = Arg{"int", r.ID2}
			}
			if !fin {
				args["unfinished"] = Arg{"bool", true}
			}
			var parent *string
			if p := s.Lookup(r.Parent); p != nil {
				parent = &p.Name
			}
			m.Spans = append(m.Spans, Span{Name: r.Name, TS: s.Meta.BootNanos(r.Start), Dur: end - r.Start, Parent: parent, Args: args})
		case event.KindInstant:
			m.Instants = append(m.Instants, Instant{Name: r.Name, TS: s.Meta.BootNanos(r.Start), Args: args})
		case event.KindCounter:
			k := [2]string{r.Name, r.Args[0].Key}
			i, ok := counters[k]
			if !ok {
				i = len(m.Counters)
				counters[k] = i
				m.Counters = append(m.Counters, Counter{Name: r.Name, Unit: r.Args[0].Key})
			}
			m.Counters[i].Samples = append(m.Counters[i].Samples, Sample{s.Meta.BootNanos(r.Start), r.Args[0].Float()})
		}
	}
	for i := range m.Counters {
		slices.SortFunc(m.Counters[i].Samples, func(a, b Sample) int { return cmp.Compare(a.TS, b.TS) })
	}
	ids := make([]uint64, 0, len(flows))
	for id := range flows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ends := flows[id]
		slices.SortStableFunc(ends, func(a, b flowEnd) int { return cmp.Compare(a.t, b.t) })
		for i := 1; i < len(ends); i++ {
			m.Flows = append(m.Flows, [2]string{ends[i-1].name, ends[i].name})
		}
	}
	if s.Meta.Dropped > 0 {
		m.ExtraSlices = append(m.ExtraSlices, fmt.Sprintf("devprof: %d events dropped (buffer full at max_events=%d)", s.Meta.Dropped, s.Meta.MaxEvents))
	}
	return m
}

func arg(a event.Arg) Arg {
	switch a.Kind {
	case event.ArgInt:
		return Arg{"int", int64(a.Num)}
	case event.ArgUint:
		return Arg{"uint", a.Num}
	case event.ArgFloat:
		return Arg{"double", a.Float()}
	case event.ArgBool:
		return Arg{"bool", a.Num != 0}
	case event.ArgString:
		return Arg{"string", a.Str}
	case event.ArgDuration:
		return Arg{"string", a.Duration().String()}
	}
	return Arg{"unknown", nil}
}

// Export copies the Perfetto file at tracePath into the conformance
// directory as <name>.pftrace (keeping a .gz suffix) and writes
// <name>.expect.json for snapshot s. Without DEVPROF_CONFORMANCE_DIR it
// does nothing.
func Export(t testing.TB, name, tracePath string, s *event.Snapshot) {
	t.Helper()
	dir := Dir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ext := ".pftrace"
	if strings.HasSuffix(tracePath, ".gz") {
		ext += ".gz"
	}
	dst := filepath.Join(dir, name+ext)
	if err := copyFile(dst, tracePath); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(Expect(s, name+ext), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".expect.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
