package pprof

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	rtpprof "runtime/pprof"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// content returns data gunzipped if it is gzip.
func content(t *testing.T, data []byte) []byte {
	t.Helper()
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSniff: every profile, devprof's, JAX's and the Go runtime's own,
// starts as Sniff expects; no trace in the repository does.
func TestSniff(t *testing.T) {
	var heap, cpu bytes.Buffer
	if err := rtpprof.Lookup("heap").WriteTo(&heap, 0); err != nil {
		t.Fatal(err)
	}
	if err := rtpprof.StartCPUProfile(&cpu); err != nil {
		t.Fatal(err)
	}
	rtpprof.StopCPUProfile()
	for name, data := range map[string][]byte{
		"devprof": encode(t, fixture()), "empty": encode(t, &event.DeviceMemory{}), "jax": write(t, jaxProfile(), false), "go heap": heap.Bytes(), "go cpu": cpu.Bytes(),
	} {
		head := content(t, data)
		if !Sniff(head[:min(len(head), 64)]) {
			t.Errorf("%s profile not recognised: % x", name, head[:min(len(head), 16)])
		}
	}
	if _, err := Read(bytes.NewReader(heap.Bytes())); !errors.Is(err, ErrNotMemory) || !strings.Contains(err.Error(), "inuse_space/bytes") {
		t.Errorf("the Go runtime's heap profile read with %v; want ErrNotMemory naming its sample types", err)
	}
	traces, _ := filepath.Glob("../../testdata/golden/session.*")
	real, _ := filepath.Glob("../../testdata/real-gpu/*.*")
	h200, _ := filepath.Glob("../../testdata/real-gpu/h200/*.*")
	for _, p := range h200 {
		if strings.HasSuffix(p, ".memory.pb.gz") {
			// What a session wrote on a real GPU is a profile.
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if head := content(t, data); !Sniff(head[:min(len(head), 64)]) {
				t.Errorf("%s not recognised as a profile", p)
			}
			continue
		}
		real = append(real, p)
	}
	traces = append(traces, real...)
	traces = append(traces, "../../testdata/jax-cpu.xplane.pb")
	if len(traces) < 8 {
		t.Fatalf("found only %d traces", len(traces))
	}
	for _, p := range traces {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		head := content(t, data)
		if Sniff(head[:min(len(head), 64)]) {
			t.Errorf("%s taken for a profile", p)
		}
	}
	for _, head := range [][]byte{nil, {0x0a}, {0x0a, 0x04, 0x08, 0x01, 0x10}, {0x0a, 0x02, 0x08, 0x01}, {0x0a, 0x04, 0x08, 0x01, 0x12, 0x00}, {0x0a, 0x05, 0x08, 0x01, 0x10, 0x02, 0x18}, {0x48, 0x80}, {0x48, 0x01, 0x0a, 0x02, 0x08, 0x01}, {0x08, 0x01, 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02}} {
		if Sniff(head) {
			t.Errorf("% x taken for a profile", head)
		}
	}
}
