package chrome

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"
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
// whole of Read with the two ways of scanning events it could use: what it
// does (each event decoded as a json.RawMessage, which checks its syntax,
// then its members walked by objIter) and encoding/json's Decoder.Token
// walking every token, which alone does no more than find the values
// Read converts. The figures are in the Read doc comment's note on speed.
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
