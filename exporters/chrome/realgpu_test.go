package chrome

import (
	"bytes"
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
