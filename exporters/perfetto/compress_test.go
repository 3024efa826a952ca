package perfetto

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/conformance"
	"github.com/devprof/devprof/internal/eventtest"
)

// stepsSnapshot builds n spans (n a multiple of 10) as the encode
// benchmark does: steps of a marker and 9 children, one int argument each,
// on a host thread, and a GPU stream with a kernel per step and a counter,
// so the trace has several sequences.
func stepsSnapshot(n int) *event.Snapshot {
	const stepNs, opNs = 10_537, 1_013 // not round: deltas of several sizes
	start := event.ClockAnchor{Mono: 1_000_000, Boot: 2_000_000, Wall: 1_795_000_000_000_000_000}
	d := int64(n/10) * stepNs
	b := event.NewBuilder(event.Meta{Host: "steps", PID: 77, Program: "steps", Start: start,
		Stop: event.ClockAnchor{Mono: start.Mono + d, Boot: start.Boot + d, Wall: start.Wall + d}, MaxEvents: int64(2 * n)})
	gpu := b.Track(event.Track{Kind: event.TrackDeviceStream, Device: 0, ID: 7, Name: "Stream #7(Compute)"})
	for step := range int64(n / 10) {
		t := start.Mono + step*stepNs
		id := b.Span(event.Span{Name: "train", Start: t, End: t + 10*opNs, Step: true, StepNum: step,
			Args: []event.Arg{{Key: "batch", Kind: event.ArgInt, Num: 32}}})
		for j := range 9 {
			s := t + int64(j+1)*opNs
			b.Span(event.Span{Name: "op", Start: s, End: s + opNs - 100 - int64(j), Parent: id,
				Args: []event.Arg{{Key: "layer", Kind: event.ArgInt, Num: uint64(j)}}})
		}
		if step%100 == 0 {
			b.Activity(gpu, "gemm", t+50, t+3_000, []event.Arg{{Key: "regs", Kind: event.ArgInt, Num: 64}})
			b.Counter("loss", "", t+9_000, 1/float64(step+1))
		}
	}
	return b.Snapshot()
}

// packetsOf returns the top-level TracePackets of a trace.
func packetsOf(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) > 0 {
		f, n, err := readField(data)
		if err != nil || f.num != fTracePacket || f.wt != wireBytes {
			t.Fatalf("not a framed packet: %+v %v", f, err)
		}
		out = append(out, f.b)
		data = data[n:]
	}
	return out
}

// TestCompressedPackets: by default a trace of more than one batch is
// written in batches, each the only field of a packet, deflated (zlib);
// inflated and put back in place they are byte for byte what
// WriteOptions.Uncompressed writes, so nothing the file says changes, and
// every form reads back alike. A trace of one batch is written bare.
func TestCompressedPackets(t *testing.T) {
	s := stepsSnapshot(40_000) // about 1.2 MB of packets: several batches
	def := encodeWith(t, s, WriteOptions{})
	bare := encodeWith(t, s, WriteOptions{Uncompressed: true})
	gz := encodeWith(t, s, WriteOptions{Gzip: true})

	var inflated []byte
	batches := packetsOf(t, def)
	if len(batches) < 4 {
		t.Fatalf("%d compressed packets, want one per batch of %d bytes of %d", len(batches), outBatch, len(bare))
	}
	for i, p := range batches {
		f, n, err := readField(p)
		if err != nil || f.num != pktCompressed || f.wt != wireBytes || n != len(p) {
			t.Fatalf("packet %d: field %d (wire %d, %d of %d bytes): want compressed_packets alone: %v", i, f.num, f.wt, n, len(p), err)
		}
		zr, err := zlib.NewReader(bytes.NewReader(f.b))
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		in, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		// A batch is flushed once it reaches outBatch, so it holds at most
		// one packet more (trace_processor's guidance: under 512 KiB).
		if len(in) > 2*outBatch {
			t.Errorf("packet %d inflates to %d bytes", i, len(in))
		}
		inflated = append(inflated, in...)
	}
	if !bytes.Equal(inflated, bare) {
		t.Fatalf("inflated packets (%d bytes) differ from the uncompressed form (%d bytes)", len(inflated), len(bare))
	}
	if len(def)*10 > len(bare) {
		t.Errorf("compressed %d bytes, uncompressed %d: want at least 10x smaller on these steps", len(def), len(bare))
	}
	t.Logf("%d events: %d bytes compressed (%.2f B/event), %d uncompressed (%.2f), %d gzip",
		len(s.Events), len(def), float64(len(def))/float64(2*len(s.Events)), len(bare), float64(len(bare))/float64(2*len(s.Events)), len(gz))

	want := mustRead(t, bare)
	got := mustRead(t, def)
	if got.Packets != want.Packets+len(batches) {
		t.Errorf("compressed trace: %d packets, want %d and %d compressed", got.Packets, want.Packets, len(batches))
	}
	got.Packets = want.Packets
	if !reflect.DeepEqual(got, want) {
		t.Error("the compressed trace reads back differently from the uncompressed one")
	}
	if g := mustRead(t, gz); !reflect.DeepEqual(g, want) {
		t.Error("the gzip trace reads back differently from the uncompressed one")
	}
	if got, want := describe(got.Snapshot(), func(t int64) int64 { return t }), describe(s, s.Meta.BootNanos); !reflect.DeepEqual(got, want) {
		t.Fatal("the compressed trace does not read back as the snapshot written")
	}

	// One batch: bare, as with Uncompressed.
	small := stepsSnapshot(1_000)
	if def, bare := encode(t, small, false), encodeWith(t, small, WriteOptions{Uncompressed: true}); !bytes.Equal(def, bare) || len(def) >= outBatch {
		t.Errorf("a trace of one batch (%d bytes) is not written bare (%d bytes)", len(bare), len(def))
	}

	path := filepath.Join(t.TempDir(), "compressed.pftrace")
	if err := os.WriteFile(path, def, 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.Export(t, "compressed", path, s)
}

// failAfter fails every write once n bytes were written.
type failAfter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDiskFull
	}
	f.n -= len(p)
	return len(p), nil
}

// A writer that fails makes Write fail with its error, in every form,
// whichever batch it fails on.
func TestWriteReturnsWriterError(t *testing.T) {
	s := stepsSnapshot(40_000)
	for _, opts := range []WriteOptions{{}, {Uncompressed: true}, {Gzip: true}} {
		size := len(encodeWith(t, s, opts))
		for _, n := range []int{0, 100, size / 2, size - 1} {
			if err := Write(&failAfter{n}, s, opts); !errors.Is(err, errDiskFull) {
				t.Errorf("%+v, failing after %d bytes: got %v", opts, n, err)
			}
		}
	}
	// The golden snapshot (one batch, bare) too.
	if err := Write(&failAfter{10}, eventtest.GoldenSnapshot(), WriteOptions{}); !errors.Is(err, errDiskFull) {
		t.Errorf("golden: got %v", err)
	}
}
