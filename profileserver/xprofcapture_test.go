package profileserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/profileserver"
)

// TestXprofCaptureProfileButtonCapturesAGoProgram is xprof's own capture
// path, the one TensorBoard's Profile → CAPTURE PROFILE button takes: the
// real xprof web server (xprof's profile plugin, served on 127.0.0.1 by
// scripts/xprof_loopback.py) gets GET /data/plugin/profile/capture_profile
// with the query the button's dialog sends (service_addr, is_tpu_name,
// duration, num_retry, worker_list, the three tracer levels, delay), and
// calls xprof's C++ client (_pywrap_profiler_plugin.trace) against this
// Go process's profile server. The run the client writes must then be
// listed (/runs), offer its tools (/run_tools), and open: xprof's
// trace_viewer answers (/data) with the spans recorded in the window and
// none from before it.
func TestXprofCaptureProfileButtonCapturesAGoProgram(t *testing.T) {
	py := venvPython(t)
	var log bytes.Buffer
	srv, err := profileserver.StartServer("", profileserver.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	_, sp := annotate.Begin(context.Background(), "before-window")
	sp.End()
	work(t, "button-captured-work")

	logdir := t.TempDir()
	base := startXprof(t, py, logdir, true)

	// The dialog's defaults, as its component sends them (numRetry 3,
	// host level 2, device level 1, python level 0, delay 0), with the
	// service address a user types and a 2 s duration.
	q := url.Values{
		"service_addr":        {srv.Addr()},
		"is_tpu_name":         {"false"},
		"duration":            {"2000"},
		"num_retry":           {"3"},
		"worker_list":         {""},
		"host_tracer_level":   {"2"},
		"device_tracer_level": {"1"},
		"python_tracer_level": {"0"},
		"delay":               {"0"},
	}
	start := time.Now()
	var res struct{ Result, Error string }
	getJSON(t, base+"/data/plugin/profile/capture_profile?"+q.Encode(), &res)
	t.Logf("capture_profile answered in %v: %+v", time.Since(start).Round(time.Millisecond), res)
	if res.Error != "" || !strings.Contains(res.Result, "success") {
		t.Fatalf("capture_profile: result %q, error %q (want the button's success message)", res.Result, res.Error)
	}

	var runs []string
	getJSON(t, base+"/data/plugin/profile/runs", &runs)
	if len(runs) != 1 {
		t.Fatalf("xprof lists runs %q, want the one captured", runs)
	}
	run := runs[0]
	var tools []string
	getJSON(t, base+"/data/plugin/profile/run_tools?run="+url.QueryEscape(run), &tools)
	// "trace_viewer@" is the trace viewer served from the XSpace in
	// streaming form, the one xprof's UI opens.
	if !contains(tools, "trace_viewer@") || !contains(tools, "overview_page") {
		t.Errorf("run %q offers tools %q, want trace_viewer@ and overview_page among them", run, tools)
	}
	var hosts []struct{ Hostname string }
	getJSON(t, base+"/data/plugin/profile/hosts?run="+url.QueryEscape(run)+"&tag=trace_viewer%40", &hosts)
	_, port, _ := net.SplitHostPort(srv.Addr())
	wantHost := "127.0.0.1_" + port
	var hostNames []string
	for _, h := range hosts {
		hostNames = append(hostNames, h.Hostname)
	}
	if !contains(hostNames, wantHost) {
		t.Fatalf("run %q has hosts %q, want %q (the client names the file after the address)", run, hostNames, wantHost)
	}

	// Open it as the UI does: the streaming trace viewer's events (the
	// query its trace_data_url carries), converted by xprof from the
	// xplane the button's capture wrote.
	var tv struct {
		TraceEvents []struct {
			Ph   string  `json:"ph"`
			Name string  `json:"name"`
			Dur  float64 `json:"dur"`
		} `json:"traceEvents"`
	}
	getJSON(t, base+"/data/plugin/profile/data?"+url.Values{"run": {run}, "tag": {"trace_viewer@"}, "host": {wantHost}, "resolution": {"8000"}}.Encode(), &tv)
	n := map[string]int{}
	for _, e := range tv.TraceEvents {
		if e.Ph == "X" {
			n[e.Name]++
		}
	}
	t.Logf("xprof's trace viewer: %d events, %d button-captured-work spans", len(tv.TraceEvents), n["button-captured-work"])
	// One span about every millisecond for the 2 s window.
	if n["button-captured-work"] < 100 || n["before-window"] != 0 {
		t.Errorf("xprof's trace_viewer shows %d button-captured-work spans (want ≥ 100) and %d before-window (want 0); %d events in all",
			n["button-captured-work"], n["before-window"], len(tv.TraceEvents))
	}
	// The overview page opens too (it is the tool the UI shows first).
	// Its answer is a list of data tables (summary, steps, environment).
	var overview []struct {
		Cols []struct{ ID string }
	}
	getJSON(t, base+"/data/plugin/profile/data?"+url.Values{"run": {run}, "tag": {"overview_page"}, "host": {wantHost}}.Encode(), &overview)
	if len(overview) == 0 || len(overview[0].Cols) == 0 {
		t.Errorf("xprof's overview_page answered %d tables for the captured run, want its data tables", len(overview))
	}
}

// startXprof serves logdir with xprof's web UI on a free 127.0.0.1 port
// (scripts/xprof_loopback.py; capture shows the CAPTURE PROFILE button)
// until the test ends, and returns its base URL once it answers.
func startXprof(t *testing.T, py, logdir string, capture bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // xprof binds it itself; another process taking it meanwhile fails the wait below
	args := []string{filepath.Join(moduleRoot(t), "scripts", "xprof_loopback.py"), "--logdir", logdir, "--port", fmt.Sprint(port)}
	if capture {
		args = append(args, "--capture")
	}
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("xprof server's output:\n%s", out.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("xprof server exited before answering (%v):\n%s", err, out.String())
		default:
		}
		if resp, err := http.Get(base + "/data/plugin/profile/config"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("xprof server did not answer on %s within 2 minutes:\n%s", base, out.String())
		}
	}
}

// get fetches url and fails the test unless it answers 200.
func get(t *testing.T, url string) []byte {
	t.Helper()
	c := http.Client{Timeout: 3 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %.2000s", url, resp.Status, body)
	}
	return body
}

// getJSON fetches url and decodes its JSON answer into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	body := get(t, url)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %.2000s", url, err, body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer a child process and the test may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestXprofCaptureButtonInChromium drives xprof's real CAPTURE PROFILE
// button in headless Chromium, as a user does: the xprof UI on a fresh
// log directory, a click on CAPTURE PROFILE, this Go process's address
// typed into the dialog (every other field at its default: 1000 ms, host
// level info, device level enable, python disable), a click on CAPTURE.
// The UI must report success; after the refresh it asks for, it must
// list the run and its host and open the overview page on it (the
// service's steps counted, so no "No step marker" warning), and its
// Trace Viewer must load the run's spans. Screenshots of each stage go to
// $DEVPROF_SCREENSHOTS when set (for a person), else to a temporary
// directory. It needs chromium (scripts/browser-deps) and the
// conformance virtualenv; scripts/test sets DEVPROF_REQUIRE_CHROMIUM so
// that it cannot skip there.
func TestXprofCaptureButtonInChromium(t *testing.T) {
	py := venvPython(t)
	b := startBrowser(t, 1600, 1000)
	shots := os.Getenv("DEVPROF_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	var log bytes.Buffer
	srv, err := profileserver.StartServer("", profileserver.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	steps(t, "serve", "handle-request")
	logdir := t.TempDir()
	base := startXprof(t, py, logdir, true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	button := func(within, text string) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).find(b => b.innerText.trim() == %q)`, within+" button", text)
	}
	var page string
	text := func(what string, ok func() bool) {
		t.Helper()
		b.waitFor(ctx, what, `document.body.innerText`, &page, ok)
	}

	b.do("Page.navigate", map[string]any{"url": base + "/"}, nil)
	b.clickOn(ctx, "the CAPTURE PROFILE button", button("body", "CAPTURE PROFILE"))
	b.clickOn(ctx, "the dialog's service address field", `document.querySelector("mat-dialog-container input")`)
	b.typeText(srv.Addr())
	var typed string
	b.waitFor(ctx, "the typed address", `document.querySelector("mat-dialog-container input").value`, &typed, func() bool { return typed == srv.Addr() })
	b.screenshot(filepath.Join(shots, "xprof-capture-dialog.png"))
	b.clickOn(ctx, "the dialog's CAPTURE button", button("mat-dialog-container", "CAPTURE"))
	text("the capture's outcome", func() bool {
		return strings.Contains(page, "Capture profile successfully") || strings.Contains(page, "Failed to capture profile")
	})
	b.screenshot(filepath.Join(shots, "xprof-capture-done.png"))
	if !strings.Contains(page, "Capture profile successfully") {
		t.Fatalf("the UI reports:\n%s", page)
	}

	// The run the button wrote, listed and opened after the refresh.
	runs, _ := filepath.Glob(filepath.Join(logdir, "plugins", "profile", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want the one the button captured", runs)
	}
	run := filepath.Base(runs[0])
	_, port, _ := net.SplitHostPort(srv.Addr())
	host := "127.0.0.1_" + port
	b.do("Page.reload", nil, nil)
	text("the run's overview page", func() bool {
		return strings.Contains(page, "Sessions (1)") && strings.Contains(page, run) && strings.Contains(page, host) &&
			strings.Contains(page, "Performance Summary")
	})
	if strings.Contains(page, "No step marker observed") {
		t.Errorf("the overview page found no steps in the captured run:\n%.3000s", page)
	}
	b.screenshot(filepath.Join(shots, "xprof-captured-overview.png"))

	// Its Trace Viewer, chosen from the Tools list, loads the run's spans.
	b.clickOn(ctx, "the Tools list", `Array.from(document.querySelectorAll("mat-select")).find(e => e.innerText.includes("Overview Page"))`)
	b.clickOn(ctx, "the Trace Viewer tool", `Array.from(document.querySelectorAll("mat-option")).find(o => o.innerText.trim() == "Trace Viewer")`)
	var frame string
	b.waitFor(ctx, "the trace viewer's lanes", `(() => { const f = document.querySelector("iframe"); return f && f.contentDocument ? f.src + "\n" + f.contentDocument.body.innerText : ""; })()`, &frame, func() bool {
		return strings.Contains(frame, "tag%3Dtrace_viewer%40") && strings.Contains(frame, host+" /host:CPU") && strings.Contains(frame, "serve")
	})
	b.screenshot(filepath.Join(shots, "xprof-captured-trace-viewer.png"))
	t.Logf("screenshots in %s", shots)
}

// steps runs a service loop until the test ends: a step named name about
// every 10 ms, each holding a few spans named child.
func steps(t *testing.T, name, child string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := int64(0); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, st := annotate.Step(context.Background(), name, n)
			for range 3 {
				_, sp := annotate.Begin(ctx, child)
				time.Sleep(3 * time.Millisecond)
				sp.End()
			}
			st.End()
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
}
