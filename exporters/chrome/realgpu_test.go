package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// Real Chrome JSON traces from an H100 (testdata/README.md).
const (
	realKineto = "../../testdata/real-gpu/kineto-h100-libwork.json.gz"
	realJAX    = "../../testdata/real-gpu/jax-h100-train.perfetto_trace.json.gz"
)

// TestReadRealGPU reads JSON traces PyTorch's and JAX's profilers wrote on
// a real GPU and checks what their workloads are known to have done.
func TestReadRealGPU(t *testing.T) {
	for _, c := range []struct {
		path   string
		events int
		names  map[string]int
	}{
		{realKineto, 10505, map[string]int{"saxpy(int, float, float const*, float*)": 500, "cudaLaunchKernel": 1000}},
		{realJAX, 344, map[string]int{"train": 8}},
	} {
		s, err := ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Events) != c.events {
			t.Errorf("%s: %d events, want %d", c.path, len(s.Events), c.events)
		}
		count := map[string]int{}
		for _, r := range s.Events {
			count[s.Name(r)]++
		}
		for name, want := range c.names {
			if count[name] != want {
				t.Errorf("%s: %d events %q, want %d", c.path, count[name], name, want)
			}
		}
	}
}

// realJSON returns the Kineto trace, decompressed, so that benchmarks
// measure the JSON reading alone.
func realJSON(b *testing.B) []byte {
	z, err := os.ReadFile(realKineto)
	if err != nil {
		b.Fatal(err)
	}
	return gunzip(b, z)
}

// BenchmarkReadRealGPU measures Read on PyTorch's trace of 500 steps of
// CUDA work.
func BenchmarkReadRealGPU(b *testing.B) {
	data := realJSON(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadChromeVsDecoderToken compares, on the same real file, the
// whole of Read with three ways of scanning events: what it does (the
// package's lexer checks each event and finds its members in one pass),
// what it did before (encoding/json decodes each event as a
// json.RawMessage, which checks its syntax, then objIter walks its
// members) and encoding/json's Decoder.Token walking every token, which
// alone does no more than find the values Read converts.
func BenchmarkReadChromeVsDecoderToken(b *testing.B) {
	data := realJSON(b)
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Lexer", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if n := lexEvents(b, data); n != 21060 {
				b.Fatalf("%d events", n)
			}
		}
	})
	b.Run("RawMessageObjIter", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if n := scanRawMessages(b, data); n != 21060 {
				b.Fatalf("%d events", n)
			}
		}
	})
	b.Run("DecoderToken", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if n := walkTokens(b, data); n < 21060 {
				b.Fatalf("%d tokens", n)
			}
		}
	})
}

// lexEvents checks every event of a Kineto trace with the package's lexer
// (which finds each event's members as it goes) and returns the count.
func lexEvents(b *testing.B, data []byte) int {
	lx := newLexer(bytes.NewReader(data))
	expect := func(want byte) {
		if c, ok := lx.skipSpace(); !ok || c != want {
			b.Fatalf("want %q at %d", want, lx.offset(lx.pos))
		}
		lx.pos++
	}
	value := func() []byte {
		lx.skipSpace()
		v, err := lx.value("reading input")
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	n := 0
	expect('{')
	for {
		key := unquote(value())
		expect(':')
		if key != "traceEvents" {
			value()
		} else {
			expect('[')
			for {
				value()
				n++
				if c, _ := lx.skipSpace(); c == ']' {
					lx.pos++
					break
				}
				expect(',')
			}
		}
		if c, _ := lx.skipSpace(); c == '}' {
			return n
		}
		expect(',')
	}
}

// scanRawMessages visits every member of every event of a Kineto trace
// ({"traceEvents": [...], ...}) as Read does, and returns the event count.
func scanRawMessages(b *testing.B, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	n := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if tok != "traceEvents" {
			continue
		}
		if _, err := dec.Token(); err != nil { // '['
			b.Fatal(err)
		}
		for dec.More() {
			if err := dec.Decode(&raw); err != nil {
				b.Fatal(err)
			}
			for it := (objIter{b: raw}); it.next(); {
			}
			n++
		}
	}
}

// walkTokens reads every token of data with Decoder.Token (numbers kept
// exact, as times need) and returns how many there were.
func walkTokens(b *testing.B, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n := 0
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// TestReadKinetoProcesses checks that PyTorch's trace keeps its
// processes: the Python process (pid 620), the GPU (pid 0, whose stream
// is a thread of its own), the string pids "Spans", "Traces" and "", and
// the processes 1-15 that only metadata names.
func TestReadKinetoProcesses(t *testing.T) {
	s, err := ReadFile(realKineto)
	if err != nil {
		t.Fatal(err)
	}
	byPID := map[string]int{} // pid as the file wrote it → index into Processes
	for i, p := range s.Processes {
		key := strconv.FormatInt(p.PID, 10)
		if p.IsLabel {
			key = strconv.Quote(p.Label)
		}
		if _, dup := byPID[key]; dup {
			t.Errorf("pid %s twice", key)
		}
		byPID[key] = i
	}
	if len(s.Processes) != 21 {
		t.Errorf("%d processes, want 21 (620, 0-15, -1, \"Spans\", \"Traces\", \"\")", len(s.Processes))
	}
	for _, c := range []struct {
		pid, name, labels string
		sort              int64
		sorted            bool
	}{
		{"620", "python3", "CPU", 620, true},
		{"0", "python3", "GPU 0", 5000000, true},
		{"15", "python3", "GPU 15", 5000015, true},
		{`"Spans"`, "", "", 536870912, true},
		{`"Traces"`, "", "", 0, false},
		{`""`, "", "", 0, false},
		{"-1", "", "", 0, false},
	} {
		i, ok := byPID[c.pid]
		if !ok {
			t.Errorf("no process %s", c.pid)
			continue
		}
		p := s.Processes[i]
		if p.Name != c.name || strings.Join(p.Labels, ",") != c.labels || p.Sorted != c.sorted || p.SortIndex != c.sort {
			t.Errorf("process %s: %+v, want name %q labels %q sort %d/%v", c.pid, p, c.name, c.labels, c.sort, c.sorted)
		}
		if p.IsLabel && p.PID <= 1909984960 { // past every numeric pid and tid of the file
			t.Errorf("string pid %s numbered %d", c.pid, p.PID)
		}
	}
	if s.Meta.PID != 620 || s.Meta.Program != "python3" {
		t.Errorf("meta pid %d program %q, want 620 python3", s.Meta.PID, s.Meta.Program)
	}
	threads := map[string]event.Track{}
	for _, tk := range s.Tracks {
		p := s.ProcessOf(tk)
		threads[fmt.Sprintf("%d/%s", p.PID, tk.Name)] = tk
	}
	for _, name := range []string{"620/tid 1909984960", "-1/tid 0"} {
		if _, ok := threads[name]; !ok {
			t.Errorf("no thread %s in %v", name, threads)
		}
	}
	if st, ok := threads["0/stream 13 "]; !ok || st.ID != 13 || !st.Sorted || st.SortIndex != 13 || st.Kind != event.TrackHostThread {
		t.Errorf("GPU stream thread %+v (found %v), want tid 13 sorted 13 under pid 0", st, ok)
	}
	spans := s.Processes[byPID[`"Spans"`]]
	if tk, ok := threads[fmt.Sprintf("%d/PyTorch Profiler", spans.PID)]; !ok || s.ProcessOf(tk).Label != "Spans" {
		t.Errorf("no thread \"PyTorch Profiler\" under \"Spans\": %v", threads)
	}
	// Four threads, and the tracks of the processes "Traces" and "" for
	// their global instants (one each, counted from the file with a
	// script), which stay on their own process.
	procTracks := map[string]int{}
	threadCount := 0
	for _, tk := range s.Tracks {
		switch tk.Kind {
		case event.TrackHostThread:
			threadCount++
		case event.TrackProcess:
			procTracks[strconv.Quote(s.ProcessOf(tk).Label)] = 0
		}
	}
	for _, r := range s.Events {
		if r.Kind() != event.KindInstant {
			continue
		}
		tk, ok := s.TrackOf(r)
		if !ok || tk.Kind != event.TrackProcess {
			t.Errorf("instant %q on %+v (%v), want a process's track", s.Name(r), tk, ok)
			continue
		}
		procTracks[strconv.Quote(s.ProcessOf(tk).Label)]++
	}
	if threadCount != 4 || len(procTracks) != 2 || procTracks[`"Traces"`] != 1 || procTracks[`""`] != 1 {
		t.Errorf("%d threads and process tracks with instants %v, want 4 and \"Traces\": 1, \"\": 1", threadCount, procTracks)
	}
}

// TestReadKinetoFlows checks PyTorch's flows (v1, "s" and "f" with "bp":"e",
// from a CPU launch to its GPU kernel): the file holds 2,500 ids with both
// ends and 5,501 with one (5,000 "f" alone, 501 "s" alone, counted from the
// file with a script); the reader keeps the first, each bound to one slice
// of the Python process and one of the GPU's, and drops and counts the
// rest.
func TestReadKinetoFlows(t *testing.T) {
	s, err := ReadFile(realKineto)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[uint64][]int64{} // flow → PIDs of the slices it binds
	for _, r := range s.Events {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				tk, _ := s.TrackOf(r)
				ends[a.Num] = append(ends[a.Num], s.ProcessOf(tk).PID)
			}
		}
	}
	if len(ends) != 2500 {
		t.Errorf("%d flows, want 2500", len(ends))
	}
	for n, pids := range ends {
		if len(pids) != 2 || pids[0] == pids[1] {
			t.Errorf("flow %d binds slices of pids %v, want one of 620 and one of 0", n, pids)
			break
		}
	}
	if got := s.Meta.Dropped(); got != 5501 {
		t.Errorf("%d dropped, want 5501 one-ended flows", got)
	}
	if len(s.Meta.Drops) != 1 || s.Meta.Drops[0].Source != DropsFlows {
		t.Errorf("drops %+v, want one source %q", s.Meta.Drops, DropsFlows)
	}
	found := false
	for _, w := range s.Meta.Warnings {
		found = found || w.Code == "one_ended_flows" && strings.Contains(w.Text, "dropped 5501 flows")
	}
	if !found {
		t.Errorf("no warning for the one-ended flows: %+v", s.Meta.Warnings)
	}
}
