//go:build cgo

package cuptiwrap

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/fakecuda"
)

// The script testdata/fakecupti/fakecupti.c plays, written out again here
// from its description (not from its code), so the parser is checked
// against an independent account of every field.

const scriptBase = 1_700_000_000_000_000_000

func slotNS(n int) uint64 { return scriptBase + 10000*uint64(n) }

var scriptKernelNames = []string{"_Z6matmulPKfS0_Pfi", "_Z4reluPfi", "_Z7softmaxPKfPfi", "_Z9layernormPKfPfi"}

// scriptPhaseA is how many records the fake writes before its first flush
// (the rest come only with a forced flush).
const scriptPhaseA = 29

// expectedScript returns the records the fake emits for layout. names
// says whether the library can name API callback ids.
func expectedScript(layout string, names bool) []Record {
	pid := uint32(os.Getpid())
	var out []Record
	apiName := func(k Kind, cbid uint32, name string) string {
		if !names {
			return "cbid " + strconv.Itoa(int(cbid))
		}
		return name
	}
	api := func(k Kind, cbid uint32, name string, n int, tid, corr uint32, ret int32) {
		out = append(out, Record{Kind: k, CBID: cbid, Name: apiName(k, cbid, name),
			Start: slotNS(n) + 100, End: slotNS(n) + 500, ProcessID: pid, ThreadID: tid,
			CorrelationID: corr, ReturnValue: ret})
	}
	ext := func(kind uint32, id uint64, corr uint32) {
		out = append(out, Record{Kind: KindExternalCorrelation, ExternalKind: kind, ExternalID: id, CorrelationID: corr})
	}
	kernel := func(i int) {
		corr := uint32(100 + i)
		tid := uint32(4242 + i%2)
		switch i {
		case 0:
			ext(3, 9000, corr)
			ext(4, 7000, corr)
		case 1:
			ext(3, 9001, corr)
		}
		if i%2 == 0 {
			api(KindRuntime, 211, "cudaLaunchKernel", i, tid, corr, 0)
		} else {
			api(KindDriver, 307, "cuLaunchKernel", i, tid, corr, 0)
		}
		dev := uint32(i % 2)
		r := Record{Kind: KindKernel, Name: scriptKernelNames[i%4],
			Start: slotNS(i) + 1000, End: slotNS(i) + 3000 + 100*uint64(i),
			DeviceID: dev, ContextID: dev + 1, StreamID: uint32(10 + (i/2)%2), CorrelationID: corr,
			Grid: [3]int32{int32(i + 1), 2, 1}, Block: [3]int32{int32(32 * (i + 1)), 4, 1},
			Registers: uint16(16 + 2*i), StaticShared: int32(256 * i), DynamicShared: int32(1024 * (i % 3))}
		if i == 5 {
			r.GraphID = 77
		}
		r.DeviceLaunched = layout == "13" && i == 7
		out = append(out, r)
	}
	memcpy := func(n int, ck, src, dst uint8, bytes uint64, dev, stream, corr, graph uint32, devLaunched bool) {
		out = append(out, Record{Kind: KindMemcpy, Name: "Memcpy " + CopyKindName(ck), CopyKind: ck, SrcKind: src, DstKind: dst,
			Bytes: bytes, Start: slotNS(n) + 1000, End: slotNS(n) + 1000 + bytes/16,
			DeviceID: dev, ContextID: dev + 1, StreamID: stream, CorrelationID: corr, GraphID: graph,
			DeviceLaunched: devLaunched && layout == "13"})
	}
	memory := func(n int, op uint8, corr uint32) {
		ts := slotNS(n) + 1000
		out = append(out, Record{Kind: KindMemory, Name: MemoryOpName(op), MemoryOp: op, MemoryKind: 3, CorrelationID: corr,
			Address: 0x7f0000100000, Bytes: 1 << 20, Start: ts, End: ts, ProcessID: pid, DeviceID: 0, ContextID: 1})
	}
	sync := func(n int, typ, corr, ctx, stream uint32) {
		out = append(out, Record{Kind: KindSync, Name: SyncTypeName(typ), SyncType: typ, Start: slotNS(n) + 1000,
			End: slotNS(n) + 5000, CorrelationID: corr, ContextID: ctx, StreamID: stream})
	}

	// Phase A.
	for i := range 6 {
		kernel(i)
	}
	api(KindRuntime, 41, "cudaMemcpyAsync", 20, 4242, 120, 0)
	memcpy(20, 1, 2, 3, 1<<20, 0, 10, 120, 0, false)
	api(KindDriver, 279, "cuMemcpyDtoHAsync_v2", 21, 4243, 121, 0)
	memcpy(21, 2, 3, 1, 4096, 1, 11, 121, 0, false)
	api(KindRuntime, 41, "cudaMemcpyAsync", 22, 4242, 122, 0)
	out = append(out, Record{Kind: KindMemcpyPeer, Name: "Memcpy PtoP", CopyKind: 10, SrcKind: 3, DstKind: 3, Bytes: 65536,
		Start: slotNS(22) + 1000, End: slotNS(22) + 4000, DeviceID: 0, ContextID: 1, StreamID: 10,
		SrcDevice: 0, DstDevice: 1, CorrelationID: 122})
	api(KindRuntime, 51, "cudaMemsetAsync", 23, 4242, 123, 0)
	out = append(out, Record{Kind: KindMemset, Name: "Memset", MemsetValue: 0xAB, Bytes: 2048,
		Start: slotNS(23) + 1000, End: slotNS(23) + 1500, DeviceID: 1, ContextID: 2, StreamID: 11,
		CorrelationID: 123, MemoryKind: 3})
	api(KindRuntime, 20, "cudaMalloc", 24, 4242, 124, 0)
	memory(24, 1, 124)
	api(KindRuntime, 131, "cudaStreamSynchronize", 25, 4243, 125, 0)
	sync(25, 3, 125, 1, 10)
	out = append(out, Record{Kind: KindOverhead, Name: "CUPTI buffer flush", OverheadKind: 1 << 16,
		ProcessID: pid, ThreadID: 4242, Start: slotNS(26) + 200, End: slotNS(26) + 700})
	api(KindDriver, 549, "", 27, 4243, 126, 1)
	if names {
		out[len(out)-1].Name = "cbid 549" // the fake has no name for it either
	}

	// Phase B.
	for i := 6; i < 10; i++ {
		kernel(i)
	}
	api(KindRuntime, 41, "cudaMemcpyAsync", 30, 4242, 130, 0)
	memcpy(30, 8, 3, 3, 8192, 1, 10, 130, 78, true)
	api(KindRuntime, 22, "cudaFree", 31, 4242, 131, 0)
	memory(31, 2, 131)
	api(KindDriver, 17, "cuCtxSynchronize", 32, 4243, 132, 0)
	sync(32, 4, 132, 2, 0xffffffff)
	out = append(out, Record{Kind: KindOverhead, Name: "Driver compiler", OverheadKind: 1,
		DeviceID: 1, ContextID: 2, StreamID: 0, Start: slotNS(33) + 200, End: slotNS(33) + 700})
	return out
}

// sinkLog collects what a Collector's sink receives.
type sinkLog struct {
	mu    sync.Mutex
	recs  []Record
	calls int
}

func (s *sinkLog) sink(batch []Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, batch...)
	s.calls++
}

func (s *sinkLog) snapshot() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// waitFor polls until cond holds or fails the test after d.
func (s *sinkLog) waitFor(t *testing.T, d time.Duration, what string, cond func([]Record) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if cond(s.snapshot()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s; have %d records", d, what, len(s.snapshot()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// diffRecords compares as multisets: every expected record exactly once,
// nothing else.
func diffRecords(got, want []Record) string {
	counts := map[Record]int{}
	for _, r := range want {
		counts[r]++
	}
	var b strings.Builder
	for _, r := range got {
		if counts[r] == 0 {
			fmt.Fprintf(&b, "unexpected or duplicated: %+v\n", r)
			continue
		}
		counts[r]--
	}
	for _, r := range want {
		if counts[r] > 0 {
			fmt.Fprintf(&b, "missing: %+v\n", r)
			counts[r] = 0
		}
	}
	return b.String()
}

// useFake points the environment at a fresh script run of the fake and
// returns its path.
func useFake(t *testing.T, layout string, dropped int) string {
	t.Helper()
	t.Setenv("FAKECUPTI_LAYOUT", layout)
	t.Setenv("FAKECUPTI_BASE", strconv.FormatUint(scriptBase, 10))
	t.Setenv("FAKECUPTI_DROPPED", strconv.Itoa(dropped))
	t.Setenv("FAKECUPTI_FAIL", "")
	t.Setenv("FAKECUPTI_VERSION", "")
	t.Setenv("FAKECUPTI_BUFFER_LIMIT", "")
	t.Setenv("FAKECUPTI_CBID_LIMIT", "")
	t.Setenv("FAKECUPTI_SCRIPT", "")
	return fakecuda.Build(t)
}

func mustStop(t *testing.T, c *Collector) Stats {
	t.Helper()
	st, err := c.Stop()
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return st
}

// TestScriptPerLayout runs the fake's whole script for each CUDA layout
// through periodic flush (phase A) and Stop's forced flush (phase B).
func TestScriptPerLayout(t *testing.T) {
	for _, tc := range []struct {
		layout  string
		version uint32
	}{{"11.8", 18}, {"12", 26}, {"13", 130000}} {
		t.Run(tc.layout, func(t *testing.T) {
			lib := useFake(t, tc.layout, 7)
			var log sinkLog
			c, err := Start(Options{Library: lib, FlushPeriod: 20 * time.Millisecond, BufferSize: MinBufferSize}, log.sink)
			if err != nil {
				t.Fatal(err)
			}
			info := c.Library()
			if info.Layout != tc.layout || info.APIVersion != tc.version {
				t.Errorf("Library() = layout %q version %d, want %q %d", info.Layout, info.APIVersion, tc.layout, tc.version)
			}
			if len(info.MissingOptional) != 0 || len(info.UnavailableKinds) != 0 {
				t.Errorf("Library() = %+v, want nothing missing", info)
			}
			want := expectedScript(tc.layout, true)

			// Phase A arrives through the periodic flush, before Stop,
			// and phase B (in flight until a forced flush) does not.
			log.waitFor(t, 5*time.Second, "periodic flush delivered phase A", func(r []Record) bool { return len(r) >= scriptPhaseA })
			time.Sleep(60 * time.Millisecond) // three more periods: nothing else may arrive
			if d := diffRecords(log.snapshot(), want[:scriptPhaseA]); d != "" {
				t.Errorf("before Stop:\n%s", d)
			}

			st := mustStop(t, c)
			if d := diffRecords(log.snapshot(), want); d != "" {
				t.Errorf("after Stop:\n%s", d)
			}
			if st.Delivered != int64(len(want)) || st.CUPTIDropped != 7 || st.Dropped != 7 || st.OverLimit != 0 {
				t.Errorf("Stats = %+v, want Delivered %d, Dropped = CUPTIDropped = 7", st, len(want))
			}
			if st.Buffers < 5 {
				t.Errorf("Stats.Buffers = %d: the script should span several buffers", st.Buffers)
			}
			if st.Unknown != 0 || st.WalkErrors != 0 || st.DeclinedBuffers != 0 {
				t.Errorf("Stats = %+v", st)
			}
			var sum int64
			for _, n := range st.PerKind {
				sum += n
			}
			if sum != st.Delivered || st.PerKind[KindKernel] != 10 || st.PerKind[KindExternalCorrelation] != 3 {
				t.Errorf("PerKind = %v", st.PerKind)
			}
			checkCorrelation(t, log.snapshot())
		})
	}
}

// checkCorrelation: every device record has exactly one API record with
// its correlation id, and that API record's thread made it.
func checkCorrelation(t *testing.T, recs []Record) {
	t.Helper()
	apis := map[uint32]Record{}
	for _, r := range recs {
		if r.Kind == KindRuntime || r.Kind == KindDriver {
			if _, dup := apis[r.CorrelationID]; dup {
				t.Errorf("two API records with correlation id %d", r.CorrelationID)
			}
			apis[r.CorrelationID] = r
		}
	}
	for _, r := range recs {
		switch r.Kind {
		case KindKernel, KindMemcpy, KindMemcpyPeer, KindMemset, KindMemory, KindSync, KindExternalCorrelation:
			a, ok := apis[r.CorrelationID]
			if !ok {
				t.Errorf("%v %q: no API record with correlation id %d", r.Kind, r.Name, r.CorrelationID)
				continue
			}
			if a.ThreadID == 0 || a.ProcessID != uint32(os.Getpid()) {
				t.Errorf("API record %+v lacks its thread or process", a)
			}
		}
	}
}
