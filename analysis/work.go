package analysis

import "encoding/binary"

// The records the analysis keeps per piece of device work and per launch
// call, and those Report sorts: in memory up to the budget, past it in
// the spill file (spill.go), each in a fixed number of bytes.

var le = binary.LittleEndian

// workRec is one piece of device work.
type workRec struct {
	start, end int64 // end is math.MaxInt64 while unknown
	// link is the flow (2n) or correlation id (2n+1) that ties it to its
	// launch call, 0 for none.
	link  uint64
	name  uint32
	flags uint8 // the category, and flagMayEnclose
}

const (
	flagCat = 3 // the category, in the low bits
	// flagMayEnclose marks work that may be a range annotated on the
	// stream rather than work (see dropAnnotations).
	flagMayEnclose = 4
)

func (w *workRec) cat() category { return category(w.flags & flagCat) }

var workCodec = &codec[workRec]{size: 29,
	put: func(b []byte, w *workRec) {
		le.PutUint64(b, uint64(w.start))
		le.PutUint64(b[8:], uint64(w.end))
		le.PutUint64(b[16:], w.link)
		le.PutUint32(b[24:], w.name)
		b[28] = w.flags
	},
	get: func(b []byte, w *workRec) {
		*w = workRec{start: int64(le.Uint64(b)), end: int64(le.Uint64(b[8:])), link: le.Uint64(b[16:]), name: le.Uint32(b[24:]), flags: b[28]}
	}}

// stream is one device stream's work, in the order it came: start order
// (a reader's order contract; sorted is false when it broke it, and
// Report sorts).
type stream struct {
	track  uint32
	sorted bool
	work   spool[workRec]
	// lastStart is the start of the last work added.
	lastStart int64
	// ends holds the ends learned (EndSpan) of work spilled while open,
	// by index in work.
	ends map[int]int64
}

// launchRec is a host call that launched device work.
type launchRec struct {
	link  uint64
	start int64
	name  uint32
	// who is the span the call was made in (the innermost around it),
	// else the call itself: what launched a tiny kernel.
	who    uint32
	node   int32  // the host span around the call, in nodes; -1 for none
	thread uint32 // the track of the thread that made the call
	// seq is the call's order among the launch calls: the first of a
	// link's is the one that launched.
	seq uint64
}

var launchCodec = &codec[launchRec]{size: 40,
	put: func(b []byte, l *launchRec) {
		le.PutUint64(b, l.link)
		le.PutUint64(b[8:], uint64(l.start))
		le.PutUint32(b[16:], l.name)
		le.PutUint32(b[20:], l.who)
		le.PutUint32(b[24:], uint32(l.node))
		le.PutUint32(b[28:], l.thread)
		le.PutUint64(b[32:], l.seq)
	},
	get: func(b []byte, l *launchRec) {
		*l = launchRec{link: le.Uint64(b), start: int64(le.Uint64(b[8:])), name: le.Uint32(b[16:]), who: le.Uint32(b[20:]),
			node: int32(le.Uint32(b[24:])), thread: le.Uint32(b[28:]), seq: le.Uint64(b[32:])}
	}}

// probe is what Report needs the launch call of a piece of linked work
// for: the idle gap it ended (whose cause turns on when the launch call
// began) and, for a kernel, its launch latency and launcher.
type probe struct {
	link       uint64
	start, dur int64 // the work's
	// gapStart and gapDur are the gap the work ended (probeGap).
	gapStart, gapDur int64
	stream           uint32 // the stream's index in Report's order
	flags            uint8
}

const (
	probeGap     = 1 // the work ended an idle gap
	probeOverlap = 2 // another stream of the device ran work during it
	probeKernel  = 4 // the work is a kernel
)

var probeCodec = &codec[probe]{size: 45,
	put: func(b []byte, p *probe) {
		le.PutUint64(b, p.link)
		le.PutUint64(b[8:], uint64(p.start))
		le.PutUint64(b[16:], uint64(p.dur))
		le.PutUint64(b[24:], uint64(p.gapStart))
		le.PutUint64(b[32:], uint64(p.gapDur))
		le.PutUint32(b[40:], p.stream)
		b[44] = p.flags
	},
	get: func(b []byte, p *probe) {
		*p = probe{link: le.Uint64(b), start: int64(le.Uint64(b[8:])), dur: int64(le.Uint64(b[16:])),
			gapStart: int64(le.Uint64(b[24:])), gapDur: int64(le.Uint64(b[32:])), stream: le.Uint32(b[40:]), flags: b[44]}
	}}

// nameDur is one kernel's duration, sorted by name for each name's
// percentiles.
type nameDur struct {
	name uint32
	dur  int64
}

var nameDurCodec = &codec[nameDur]{size: 12,
	put: func(b []byte, n *nameDur) {
		le.PutUint32(b, n.name)
		le.PutUint64(b[4:], uint64(n.dur))
	},
	get: func(b []byte, n *nameDur) { *n = nameDur{name: le.Uint32(b), dur: int64(le.Uint64(b[4:]))} }}

var int64Codec = &codec[int64]{size: 8,
	put: func(b []byte, v *int64) { le.PutUint64(b, uint64(*v)) },
	get: func(b []byte, v *int64) { *v = int64(le.Uint64(b)) }}

var nodeCodec = &codec[hostNode]{size: 24,
	put: func(b []byte, n *hostNode) {
		le.PutUint64(b, uint64(n.start))
		le.PutUint64(b[8:], uint64(n.end))
		le.PutUint32(b[16:], n.name)
		le.PutUint32(b[20:], uint32(n.parent))
	},
	get: func(b []byte, n *hostNode) {
		*n = hostNode{start: int64(le.Uint64(b)), end: int64(le.Uint64(b[8:])), name: le.Uint32(b[16:]), parent: int32(le.Uint32(b[20:]))}
	}}

var int32Codec = &codec[int32]{size: 4,
	put: func(b []byte, v *int32) { le.PutUint32(b, uint32(*v)) },
	get: func(b []byte, v *int32) { *v = int32(le.Uint32(b)) }}
