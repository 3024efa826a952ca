package event

import (
	"strconv"
	"testing"
)

func frames(fns ...string) []Frame {
	out := make([]Frame, len(fns))
	for i, fn := range fns {
		out[i] = Frame{Function: fn, File: "f.go", Line: i + 1}
	}
	return out
}

func TestMarkGlue(t *testing.T) {
	binding := frames("example.com/cuda.(*Ctx).Malloc.func1", "example.com/cuda.(*Ctx).Malloc", "example.com/nn.NewLayer", "main.load", "main.main", "runtime.main")
	viaBinding := frames("example.com/cuda.Alloc", "example.com/nn.NewLayer", "main.main")
	fromMain := frames("main._Cfunc_cudaMalloc", "main.alloc.func1", "main.alloc", "main.load", "main.main")
	allGlue := frames("example.com/cuda.Malloc", "runtime.goexit")
	explicit := frames("example.com/cuda.Register", "main.pool")
	foreign := frames("jax_step", "<module>")
	m := &DeviceMemory{Buffers: []Buffer{
		{Source: "cuda", Stack: binding},
		{Source: "cuda", Stack: binding}, // shares the slice
		{Source: "api", Stack: viaBinding},
		{Source: "cuda", Stack: fromMain},
		{Source: "cuda", Stack: allGlue},
		{Source: "api", Stack: explicit},
		{Stack: foreign},
		{Source: "cuda"},
	}}
	m.MarkGlue(nil)
	want := []struct {
		glue int
		site string
	}{
		{2, "example.com/nn.NewLayer"},
		{2, "example.com/nn.NewLayer"},
		{1, "example.com/nn.NewLayer"}, // a binding found by a CUDA buffer is glue in any
		{2, "main.alloc"},              // cgo's wrapper and closure in main; main is never a binding
		{0, "example.com/cuda.Malloc"}, // all glue: the innermost frame stays the site
		{1, "main.pool"},
		{0, "jax_step"},
		{0, ""},
	}
	for i, w := range want {
		b := &m.Buffers[i]
		if b.Glue != w.glue || b.SiteFrame().Function != w.site {
			t.Errorf("buffer %d (%v): Glue %d, site %q; want %d, %q", i, b.Stack, b.Glue, b.SiteFrame().Function, w.glue, w.site)
		}
	}

	// Named bindings are glue with what is under them, and only that.
	m.MarkGlue([]string{"example.com/nn"})
	if b := &m.Buffers[0]; b.Glue != 3 || b.SiteFrame().Function != "main.load" {
		t.Errorf("with example.com/nn named: Glue %d, site %s; want 3, main.load", b.Glue, b.SiteFrame().Function)
	}
	m.MarkGlue([]string{"example.com/n"})
	if b := &m.Buffers[0]; b.Glue != 2 {
		t.Errorf("example.com/n made example.com/nn glue: Glue %d", b.Glue)
	}
	m.MarkGlue([]string{"example.com"})
	if b := &m.Buffers[0]; b.Glue != 3 {
		t.Errorf("example.com does not cover example.com/nn: Glue %d", b.Glue)
	}
}

func TestCallStackAndSite(t *testing.T) {
	b := Buffer{Stack: frames("a.F", "b.G", "c.H"), Glue: 2}
	if st := b.CallStack(); len(st) != 1 || st[0].Function != "c.H" || b.Site() != "c.H (f.go:3)" {
		t.Errorf("CallStack %v, Site %q", st, b.Site())
	}
	for _, g := range []int{-1, 3, 7} {
		b.Glue = g
		if b.SiteFrame().Function != "a.F" || len(b.CallStack()) != 3 {
			t.Errorf("Glue %d out of range: site %v, want the innermost frame", g, b.SiteFrame())
		}
	}
	if (&Buffer{}).Site() != "" || (&Buffer{}).SiteFrame() != (Frame{}) {
		t.Error("a buffer without a stack has a site")
	}
}

func TestFuncPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"main.main":                                   "main",
		"github.com/a/b.(*T).M":                       "github.com/a/b",
		"github.com/a/b.F.func1.2":                    "github.com/a/b",
		"gopkg.in/yaml%2ev3.Marshal":                  "gopkg.in/yaml%2ev3",
		"github.com/a/b.G[go.shape.*example.com/c.T]": "github.com/a/b",
		"runtime.goexit":                              "runtime",
		"<module>":                                    "",
		"0x4a5b":                                      "",
		"":                                            "",
	} {
		if got := FuncPackage(fn); got != want {
			t.Errorf("FuncPackage(%q) = %q, want %q", fn, got, want)
		}
	}
}

// BenchmarkMarkGlue is what finding call sites adds to a profile of 1 M
// live CUDA buffers from 1000 call sites (20-frame stacks), as the
// tracker's Snapshot and the profile reader share stacks.
func BenchmarkMarkGlue(b *testing.B) {
	stacks := make([][]Frame, 1000)
	for i := range stacks {
		fns := []string{"example.com/cuda.(*Ctx).Malloc.func1", "example.com/cuda.(*Ctx).Malloc"}
		for j := range 18 {
			fns = append(fns, "example.com/model.layer"+strconv.Itoa(i)+"_"+strconv.Itoa(j))
		}
		stacks[i] = frames(fns...)
	}
	m := &DeviceMemory{Buffers: make([]Buffer, 1<<20)}
	for i := range m.Buffers {
		m.Buffers[i] = Buffer{Source: "cuda", Stack: stacks[i%len(stacks)]}
	}
	b.ReportAllocs()
	for b.Loop() {
		m.MarkGlue(nil)
	}
	if m.Buffers[0].Glue != 2 {
		b.Fatalf("Glue %d, want 2", m.Buffers[0].Glue)
	}
}
