package xplane_test

import (
	"bytes"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/xplane"
)

// Real XSpaces from an H100 (testdata/README.md).
const (
	realDevprof = "../../testdata/real-gpu/devprof-h100-libwork.xplane.pb"
	realTSL     = "../../testdata/real-gpu/jax-tsl-h100-libwork.xplane.pb"
	realJAX     = "../../testdata/real-gpu/jax-h100-train.xplane.pb"
)

// TestReadRealGPU reads XSpaces recorded on a real GPU by devprof and by
// JAX and checks what their workloads are known to have done.
func TestReadRealGPU(t *testing.T) {
	for _, c := range []struct {
		path     string
		events   int
		activity map[string]int // device activities by name
		spans    map[string]int // host spans by name
		program  string         // the process, as the file names it
	}{
		// This devprof wrote no process_name yet: the host.
		{realDevprof, 866, map[string]int{"_Z5saxpyifPKfPf": 20, "_Z5scaleifPf": 20, "Memset": 20}, map[string]int{"train": 20}, "vm"},
		// TSL names no process; its threads here are unnamed: the host.
		{realTSL, 7029, map[string]int{"saxpy(int, float, float const*, float*)": 500, "MemcpyH2D": 500}, map[string]int{"cuMemAlloc_v2": 1000}, "vm"},
		// JAX's main thread is named after the program.
		{realJAX, 408, nil, map[string]int{"train": 8, "jit_step:XLA GPU module": 8}, "python3"},
	} {
		s, err := xplane.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Meta.Program != c.program {
			t.Errorf("%s: program %q, want %q", c.path, s.Meta.Program, c.program)
		}
		if len(s.Events) != c.events {
			t.Errorf("%s: %d events, want %d", c.path, len(s.Events), c.events)
		}
		act, spans := map[string]int{}, map[string]int{}
		for _, r := range s.Events {
			switch r.Kind() {
			case event.KindActivity:
				act[s.Name(r)]++
			case event.KindSpan:
				spans[s.Name(r)]++
			}
		}
		for name, want := range c.activity {
			if act[name] != want {
				t.Errorf("%s: %d device activities %q, want %d", c.path, act[name], name, want)
			}
		}
		for name, want := range c.spans {
			if spans[name] != want {
				t.Errorf("%s: %d spans %q, want %d", c.path, spans[name], name, want)
			}
		}
	}
}

// BenchmarkReadRealGPU measures Read on JAX's XSpace of 500 steps of CUDA
// work, from bytes in memory.
func BenchmarkReadRealGPU(b *testing.B) {
	data := mustReadFile(b, realTSL)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := xplane.Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
