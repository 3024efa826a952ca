package perfetto

import "github.com/devprof/devprof/internal/protoenc"

// enc gives the reader's hand-built test traces the small encoder they
// were written against, on top of internal/protoenc.
type enc struct{ b []byte }

func (e *enc) with(f func(p *protoenc.Enc)) {
	p := protoenc.Enc{B: e.b}
	f(&p)
	e.b = p.B
}

func (e *enc) uint(field int, v uint64)    { e.with(func(p *protoenc.Enc) { p.Uint(field, v) }) }
func (e *enc) int(field int, v int64)      { e.with(func(p *protoenc.Enc) { p.Int(field, v) }) }
func (e *enc) bool(field int, v bool)      { e.with(func(p *protoenc.Enc) { p.Bool(field, v) }) }
func (e *enc) double(field int, v float64) { e.with(func(p *protoenc.Enc) { p.Double(field, v) }) }
func (e *enc) fixed64(field int, v uint64) { e.with(func(p *protoenc.Enc) { p.Fixed64(field, v) }) }
func (e *enc) string(field int, s string)  { e.with(func(p *protoenc.Enc) { p.String(field, s) }) }
func (e *enc) begin(field int) (pos int) {
	e.with(func(p *protoenc.Enc) { pos = p.Begin(field) })
	return pos
}
func (e *enc) end(pos int) { e.with(func(p *protoenc.Enc) { p.End(pos) }) }

func appendVarint(b []byte, v uint64) []byte { return protoenc.AppendVarint(b, v) }
