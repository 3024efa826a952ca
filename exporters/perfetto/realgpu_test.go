package perfetto

import (
	"bytes"
	"os"
	"testing"

	"github.com/devprof/devprof/event"
)

// realPftrace is devprof's own recording of a known workload on an H100
// (testdata/README.md): 20 steps, each with the same CUDA calls.
const realPftrace = "../../testdata/real-gpu/devprof-h100-libwork.pftrace"

// TestReadRealGPU reads a trace recorded on a real GPU and checks what the
// workload is known to have done.
func TestReadRealGPU(t *testing.T) {
	s, err := ReadFile(realPftrace)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 866 || len(s.Tracks) != 5 {
		t.Errorf("%d events on %d tracks, want 866 on 5", len(s.Events), len(s.Tracks))
	}
	count := map[string]int{}
	for _, r := range s.Events {
		if r.Kind() == event.KindActivity {
			count[s.Name(r)]++
		}
	}
	for name, want := range map[string]int{"_Z5saxpyifPKfPf": 20, "_Z5scaleifPf": 20, "Memcpy HtoD": 20, "Memcpy DtoH": 20, "Memset": 20} {
		if count[name] != want {
			t.Errorf("%d device activities %q, want %d", count[name], name, want)
		}
	}
}

// BenchmarkReadRealGPU measures Read on a real trace, from bytes in memory.
func BenchmarkReadRealGPU(b *testing.B) {
	data, err := os.ReadFile(realPftrace)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadTrace(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
