package event

import "strings"

// A CUDA allocation reaches the tracker through the Go CUDA binding the
// program uses: its Go functions, the closures cgo wraps around a C call
// that takes pointers, and cgo's _Cfunc_ wrappers. Every allocation made
// through one binding then has the same innermost frames, so a profile
// keyed by its innermost frame (pprof's -top, devprof memory -base, the
// breakdown's default tags) would merge every call site into one. The
// call site is the first frame past them; Buffer.Glue counts them.

// CallStack is the stack from the call site outward: Stack without its
// Glue frames.
func (b *Buffer) CallStack() []Frame {
	if b.Glue <= 0 || b.Glue >= len(b.Stack) {
		return b.Stack
	}
	return b.Stack[b.Glue:]
}

// SiteFrame is the call site: the innermost frame past the Glue ones,
// or the zero Frame when the stack is empty.
func (b *Buffer) SiteFrame() Frame {
	if st := b.CallStack(); len(st) > 0 {
		return st[0]
	}
	return Frame{}
}

// MarkGlue sets the Glue of every buffer: the innermost frames that are
// cgo's (_Cfunc_, _cgo…), the runtime's, or a binding package's. A
// binding package is one of bindings (package path prefixes: "a/b" stands
// for a/b and the packages under it), or one found in the buffers: the
// package of the innermost frame of a CUDA-hooked buffer (Source "cuda"),
// which is the Go code that called C, since the tracker keeps no frame of
// its own, of cgo's callback or of the runtime there. The main package is
// never found so (a program that calls CUDA from main has its call sites
// there), but a closure cgo made around the C call is glue wherever it
// is. A buffer whose frames would all be glue keeps Glue 0.
//
// It reads each distinct stack once (buffers that share a stack share
// its slice, as the tracker and the profile reader make them).
func (m *DeviceMemory) MarkGlue(bindings []string) {
	type stackID struct {
		first *Frame
		n     int
	}
	type distinct struct {
		stack []Frame
		cuda  bool // some CUDA-hooked buffer has it
		glue  int
	}
	index := map[stackID]int32{}
	var stacks []distinct
	ids := make([]int32, len(m.Buffers))
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if len(b.Stack) == 0 {
			ids[i] = -1
			continue
		}
		k := stackID{&b.Stack[0], len(b.Stack)}
		id, ok := index[k]
		if !ok {
			id = int32(len(stacks))
			index[k] = id
			stacks = append(stacks, distinct{stack: b.Stack})
		}
		if b.Source == "cuda" {
			stacks[id].cuda = true
		}
		ids[i] = id
	}
	g := glueFinder{given: bindings, found: map[string]bool{}}
	for _, d := range stacks {
		if !d.cuda {
			continue
		}
		if i := firstNonCgo(d.stack); i < len(d.stack) {
			if p := FuncPackage(d.stack[i].Function); p != "" && p != "main" {
				g.found[p] = true
			}
		}
	}
	for i := range stacks {
		stacks[i].glue = g.count(stacks[i].stack, stacks[i].cuda)
	}
	for i := range m.Buffers {
		if ids[i] < 0 {
			m.Buffers[i].Glue = 0
		} else {
			m.Buffers[i].Glue = stacks[ids[i]].glue
		}
	}
}

// glueFinder tells glue frames by the bindings given and found.
type glueFinder struct {
	given []string
	found map[string]bool
}

// count returns how many innermost frames of st are glue; 0 when all are.
// cuda says the stack is a CUDA-hooked allocation's, whose innermost
// frame called C: a closure there is cgo's.
func (g *glueFinder) count(st []Frame, cuda bool) int {
	n := 0
	for n < len(st) && g.glue(st[n].Function) {
		n++
	}
	if cuda && n+1 < len(st) && n == firstNonCgo(st) && closureOf(st[n].Function, st[n+1].Function) {
		// cgo's pointer-checking closure around the C call, in the
		// caller's package: its enclosing function is the call site.
		n++
	}
	if n >= len(st) {
		return 0
	}
	return n
}

// firstNonCgo is the index of the first frame cgo did not generate.
func firstNonCgo(st []Frame) int {
	i := 0
	for i < len(st) && cgoGenerated(st[i].Function) {
		i++
	}
	return i
}

func (g *glueFinder) glue(fn string) bool {
	if cgoGenerated(fn) || strings.HasPrefix(fn, "runtime.") {
		return true
	}
	p := FuncPackage(fn)
	if p == "" {
		return false
	}
	if g.found[p] {
		return true
	}
	for _, b := range g.given {
		if p == b || strings.HasPrefix(p, b) && p[len(b)] == '/' {
			return true
		}
	}
	return false
}

// cgoGenerated reports whether fn is one of the functions cgo writes:
// pkg._Cfunc_f, pkg._cgo_…, pkg._Cgo…, or _cgo_… itself.
func cgoGenerated(fn string) bool {
	if strings.HasPrefix(fn, "_cgo") {
		return true
	}
	name := fn
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		name = fn[i+1:]
	}
	return strings.HasPrefix(name, "_Cfunc_") || strings.HasPrefix(name, "_cgo") || strings.HasPrefix(name, "_Cgo")
}

// closureOf reports whether inner is a closure (".funcN") declared in
// outer.
func closureOf(inner, outer string) bool {
	rest, ok := strings.CutPrefix(inner, outer+".func")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// FuncPackage returns the import path of the package a Go function name
// (as runtime.Frame.Function spells it) belongs to: "a/b/c" for
// "a/b/c.(*T).M" or "a/b/c.F.func1", "main" for "main.f"; "" when the
// name has no package. The compiler writes dots in a path's last element
// as %2e, so the first dot after the last slash ends the path.
func FuncPackage(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i] // type arguments may hold any path
	}
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot <= 0 {
		return ""
	}
	return fn[:slash+1+dot]
}
