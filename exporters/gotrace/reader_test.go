package gotrace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/gotrace"
	"github.com/devprof/devprof/internal/conformance"
	igotrace "github.com/devprof/devprof/internal/gotrace"
)

// goTool returns the go command (go test runs with it on PATH).
func goTool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to make and dump real traces with: %v", err)
	}
	return p
}

// parsedCounts returns what go tool trace -d=parsed (the toolchain's own
// dump of the parsed trace) says of path: GC cycles (mark phases begun, or
// announced active when none was under way: at the trace's start) and
// distinct goroutines in state changes.
func parsedCounts(t *testing.T, path string) (gcs, goroutines int) {
	t.Helper()
	out, err := exec.Command(goTool(t), "tool", "trace", "-d=parsed", path).Output()
	if err != nil {
		t.Fatalf("go tool trace -d=parsed %s: %v", path, err)
	}
	gcRe := regexp.MustCompile(`^M=\S+ P=\S+ G=\S+ Range(Begin|Active|End) .*Name="GC concurrent mark phase"`)
	goRe := regexp.MustCompile(`^M=\S+ P=\S+ G=\S+ StateTransition .*GoID=(-?[0-9]+) `)
	ids := map[string]bool{}
	inGC := false // a cycle announced active in a later generation is the one under way
	for _, line := range strings.Split(string(out), "\n") {
		if m := gcRe.FindStringSubmatch(line); m != nil {
			if m[1] == "Begin" || m[1] == "Active" && !inGC {
				gcs++
			}
			inGC = m[1] != "End"
		}
		if m := goRe.FindStringSubmatch(line); m != nil {
			ids[m[1]] = true
		}
	}
	return gcs, len(ids)
}

// checkRealTrace reads the trace at path through the format table, checks
// its GC and goroutine counts against go tool trace -d=parsed, writes it
// to every output format, reads each back with the same counts, and hands
// the Perfetto and XSpace files to the conformance checkers.
func checkRealTrace(t *testing.T, name, path string) *event.Snapshot {
	t.Helper()
	if f, err := formats.Detect(path); err != nil || f != formats.GoTrace {
		t.Fatalf("%s detected as %v: %v", path, f, err)
	}
	// Every goroutine gets a row (the default bound, 1000, would cap the
	// count compared: an HTTP server starts goroutines per request).
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s, err := gotrace.Read(file, gotrace.Options{Name: path, MaxGoroutines: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sum, ok := igotrace.Summarize(s)
	if !ok {
		t.Fatalf("%s: no Go runtime tracks", path)
	}
	gcs, gs := parsedCounts(t, path)
	if sum.GCs != gcs || sum.Goroutines != gs {
		t.Errorf("%s: %d GCs, %d goroutines; go tool trace -d=parsed: %d GCs, %d goroutines", path, sum.GCs, sum.Goroutines, gcs, gs)
	}
	if gs == 0 || len(s.Events) == 0 {
		t.Fatalf("%s: an empty trace (%d goroutines, %d events)", path, gs, len(s.Events))
	}
	t.Logf("%s: %d events, %d GCs, %d pauses (%v), %d goroutines", name, len(s.Events), sum.GCs, sum.Pauses, time.Duration(sum.PauseTotal), sum.Goroutines)
	dir := t.TempDir()
	for _, ext := range []string{".pftrace", ".xplane.pb", ".json.gz"} {
		out := filepath.Join(dir, name+ext)
		if err := formats.WriteFile(out, nil, s); err != nil {
			t.Fatal(err)
		}
		back, _, err := formats.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := igotrace.Summarize(back); got.GCs != sum.GCs || got.Goroutines != sum.Goroutines || got.Pauses != sum.Pauses {
			t.Errorf("%s: read back %d GCs, %d goroutines, %d pauses; want %d, %d, %d", ext, got.GCs, got.Goroutines, got.Pauses, sum.GCs, sum.Goroutines, sum.Pauses)
		}
	}
	conformance.Export(t, name, filepath.Join(dir, name+".pftrace"), s)
	conformance.ExportXPlane(t, name, filepath.Join(dir, name+".xplane.pb"), s)
	return s
}

// TestGoTestTrace reads the trace of the project's own go test of a
// package (go test -trace), made here.
func TestGoTestTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs another package's tests")
	}
	root, err := exec.Command(goTool(t), "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.out")
	cmd := exec.Command(goTool(t), "test", "-count=1", "-run", "TestLayout|TestMemoryTimeline", "-trace="+path, "./event")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -trace: %v\n%s", err, out)
	}
	checkRealTrace(t, "gotrace-gotest", path)
}

// TestHTTPServerTrace reads a /debug/pprof/trace of a small HTTP server
// under load, taken here.
func TestHTTPServerTrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// traced counts the requests handled wholly while the trace ran: how
	// many "handle" regions the trace must hold at least. (How many that
	// is depends on the machine: 9 in 2 s when a plain go test ./... ran
	// every package beside this one on 2 cores.)
	var traced atomic.Int64
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		on := rtrace.IsEnabled()
		rtrace.WithRegion(r.Context(), "handle", func() {
			v := make([]int, 2000)
			for i := range v {
				v[i] = i
			}
			json.NewEncoder(w).Encode(v)
		})
		if on && rtrace.IsEnabled() { // one trace in this test: it ran throughout
			traced.Add(1)
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	// Connections are kept and reused, as a load generator's are.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := client.Get(base + "/work")
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	resp, err := http.Get(base + "/debug/pprof/trace?seconds=2")
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/debug/pprof/trace: %d, %v", resp.StatusCode, err)
	}
	path := filepath.Join(t.TempDir(), "http.trace")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := checkRealTrace(t, "gotrace-http", path)
	sum, _ := igotrace.Summarize(s)
	n := traced.Load()
	if n == 0 {
		t.Fatal("no request was handled while the trace ran")
	}
	if len(sum.Regions) > 0 {
		t.Logf("%d requests handled while tracing; %d %q regions read", n, sum.Regions[0].Count, sum.Regions[0].Name)
	}
	if len(sum.Regions) == 0 || sum.Regions[0].Name != "handle" || sum.Regions[0].Count < int(n) {
		t.Errorf("regions %+v: want the handler's region %q at least %d times (the requests handled while tracing)", sum.Regions, "handle", n)
	}
}

// TestUnreadable: what is not a Go trace, or a Go trace of a format the
// reader does not know, is an error saying which.
func TestUnreadable(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a Go execution trace devprof can read"},
		{"future", []byte("go 1.99 trace\x00\x00\x00\x00\x01\x02"), "Go 1.99"},
		{"old", []byte("go 1.5 trace\x00\x00\x00\x00\x00\x01\x02"), "Go 1.5"},
		{"garbage", []byte("hello"), "not a Go execution trace"},
		{"badgzip", []byte{0x1f, 0x8b, 1, 2}, "gzip"},
	} {
		_, err := gotrace.Read(bytes.NewReader(c.data), gotrace.Options{Name: c.name + ".out"})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name+".out") {
			t.Errorf("%s: %v; want an error naming the file and saying %q", c.name, err, c.want)
		}
	}
}

// smallTrace records a short runtime/trace of a GC and a region in this
// process.
func smallTrace(t testing.TB) []byte {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	rtrace.WithRegion(context.Background(), "region", func() { runtime.GC() })
	rtrace.Stop()
	return buf.Bytes()
}

// TestBoundedAndTruncated keeps at most MaxEvents events, counting the
// rest, and reads a trace cut short up to where it ends, with a warning.
func TestBoundedAndTruncated(t *testing.T) {
	data := smallTrace(t)
	full, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	capped, err := gotrace.Read(bytes.NewReader(data), gotrace.Options{MaxEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Ten events, then the collector's slices only, which have a budget
	// of their own; every other event is counted as dropped.
	collector := 0
	for i, e := range capped.Events {
		if e.Lane() == 0 || int(e.Lane()) > len(capped.Tracks) {
			continue
		}
		if n := capped.Tracks[e.Lane()-1].Name; n == igotrace.TrackGC || n == igotrace.TrackSTW {
			collector++
		} else if i >= 10 {
			t.Errorf("capped at 10: event %d is on %q, past the bound", i, n)
		}
	}
	if collector == 0 || len(capped.Events) > 10+collector || int64(len(capped.Events))+capped.Meta.Dropped() != int64(len(full.Events)) {
		t.Errorf("capped at 10: %d events (%d the collector's), %d dropped; the full trace has %d", len(capped.Events), collector, capped.Meta.Dropped(), len(full.Events))
	}
	cut, err := gotrace.Read(bytes.NewReader(data[:len(data)*2/3]), gotrace.Options{})
	if err != nil {
		t.Fatalf("a trace cut at 2/3: %v", err)
	}
	if len(cut.Meta.Warnings) == 0 || !strings.Contains(cut.Meta.Warnings[0].Text, "ends early") {
		t.Errorf("a trace cut short reads without a warning: %v", cut.Meta.Warnings)
	}
}

func FuzzRead(f *testing.F) {
	data := smallTrace(f)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := gotrace.Read(bytes.NewReader(b), gotrace.Options{MaxEvents: 1 << 16})
		if err != nil {
			if s != nil {
				t.Fatal("a snapshot with an error")
			}
			return
		}
		// Whatever was read writes out.
		for _, f := range []*formats.Format{formats.Perfetto, formats.Chrome} {
			if err := f.Write(io.Discard, s, false); err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
		}
		_ = fmt.Sprint(len(s.Events))
	})
}
