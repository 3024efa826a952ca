package perfettolink_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/perfettolink"
)

// awkwardName needs escaping both in the path and in the fragment.
const awkwardName = "my trace #1 & more?.pftrace"

// writeTrace writes a small fake trace (with every byte value, so any
// mangling shows) under a fresh directory and returns its path and bytes.
func writeTrace(t *testing.T, name string) (string, []byte) {
	t.Helper()
	data := make([]byte, 3*256+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	data[0] = 0x0a
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// start starts a server on a free loopback port and closes it at the end.
func start(t *testing.T, path string, opts perfettolink.Options) *perfettolink.Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	s, err := perfettolink.Start(path, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// traceURLFromLink extracts the trace URL the UI would fetch from a link,
// decoding it the way the UI's router does (query parameters after "#!/?").
func traceURLFromLink(t *testing.T, link string) string {
	t.Helper()
	if _, err := url.Parse(link); err != nil {
		t.Fatalf("link %q does not parse: %v", link, err)
	}
	// Like window.location.hash: the fragment as written, not decoded.
	_, frag, _ := strings.Cut(link, "#")
	route, query, ok := strings.Cut(frag, "?")
	if !ok || route != "!/" {
		t.Fatalf("link %q: fragment %q is not !/?...", link, frag)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("link %q: fragment query: %v", link, err)
	}
	if len(q) != 1 || len(q["url"]) != 1 {
		t.Fatalf("link %q: fragment query %v, want exactly one url", link, q)
	}
	return q.Get("url")
}

// client returns an http.Client that opens a new connection per request, so
// a closed server shows up as a refused connection.
func client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   10 * time.Second,
	}
}

func do(t *testing.T, method, u string, hdr http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, u, err)
	}
	return resp, body
}

// raw sends one request with an exact request target and Host header,
// bypassing any client-side path cleaning.
func raw(t *testing.T, addr, method, target, host string) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", method, target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func hostPort(t *testing.T, s *perfettolink.Server) string {
	t.Helper()
	u, err := url.Parse(s.TraceURL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func assertCommonHeaders(t *testing.T, what string, resp *http.Response, origin string) {
	t.Helper()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
		t.Errorf("%s: Access-Control-Allow-Origin = %q, want %q", what, got, origin)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("%s: Cache-Control = %q, want no-cache", what, got)
	}
}

func assertStopped(t *testing.T, s *perfettolink.Server) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	_, err := client().Get(s.TraceURL())
	if err == nil {
		t.Fatal("GET after the server stopped succeeded")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET after stop: %v, want connection refused", err)
	}
}

func assertRunning(t *testing.T, s *perfettolink.Server) {
	t.Helper()
	select {
	case <-s.Done():
		t.Fatalf("server stopped early: %v", s.Wait())
	default:
	}
}

func TestLink(t *testing.T) {
	for _, tc := range []struct{ addr, name, want string }{
		{"127.0.0.1:9001", "trace.pftrace",
			"https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A9001%2Ftrace.pftrace"},
		{"127.0.0.1:9001", "my trace #1 & more?.pftrace",
			"https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A9001%2Fmy%2520trace%2520%25231%2520%26%2520more%253F.pftrace"},
		{"127.0.0.1:9001", "100%+a=b.json.gz",
			"https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A9001%2F100%2525%2Ba%3Db.json.gz"},
	} {
		got := perfettolink.Link(tc.addr, tc.name)
		if got != tc.want {
			t.Errorf("Link(%q, %q)\n got %s\nwant %s", tc.addr, tc.name, got, tc.want)
		}
		// Robust against any fragment decoder (URLSearchParams turns '+'
		// into a space; decodeURIComponent does not).
		if _, frag, _ := strings.Cut(got, "#"); strings.ContainsAny(frag, "+ #&") {
			t.Errorf("Link(%q, %q) = %q: fragment has a raw '+', ' ', '#' or '&'", tc.addr, tc.name, got)
		}
		// The URL the UI ends up fetching must decode to /<name> on the server.
		tu := traceURLFromLink(t, got)
		u, err := url.Parse(tu)
		if err != nil {
			t.Fatalf("trace URL %q: %v", tu, err)
		}
		if u.Scheme != "http" || u.Host != tc.addr || u.Path != "/"+tc.name || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("trace URL %q parses to scheme %q host %q path %q query %q fragment %q; want path %q",
				tu, u.Scheme, u.Host, u.Path, u.RawQuery, u.Fragment, "/"+tc.name)
		}
	}
}

func TestServesFileOnceThenCloses(t *testing.T) {
	path, data := writeTrace(t, awkwardName)
	s := start(t, path, perfettolink.Options{})

	if !strings.HasPrefix(s.URL(), "https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A") {
		t.Errorf("URL() = %q", s.URL())
	}
	tu := traceURLFromLink(t, s.URL())
	if tu != s.TraceURL() {
		t.Errorf("link decodes to %q, TraceURL() = %q", tu, s.TraceURL())
	}
	assertRunning(t, s)

	// A CORS GET as the UI sends it, to the URL decoded from the link.
	resp, body := do(t, http.MethodGet, tu, http.Header{"Origin": {"https://ui.perfetto.dev"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", tu, resp.Status)
	}
	if !bytes.Equal(body, data) {
		t.Errorf("served %d bytes that differ from the file's %d", len(body), len(data))
	}
	assertCommonHeaders(t, "GET", resp, "https://ui.perfetto.dev")
	if resp.ContentLength != int64(len(data)) {
		t.Errorf("Content-Length = %d, want %d", resp.ContentLength, len(data))
	}
	if got := resp.Header.Get("Content-Type"); got != "application/octet-stream" {
		t.Errorf("Content-Type = %q", got)
	}

	assertStopped(t, s)
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after serving = %v, want nil", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after serving = %v", err)
	}
}

func TestHeadDoesNotCount(t *testing.T) {
	path, data := writeTrace(t, "t.pftrace")
	s := start(t, path, perfettolink.Options{})

	resp, body := do(t, http.MethodHead, s.TraceURL(), nil)
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD: %s, %d body bytes", resp.Status, len(body))
	}
	if resp.ContentLength != int64(len(data)) {
		t.Errorf("HEAD Content-Length = %d, want %d", resp.ContentLength, len(data))
	}
	assertCommonHeaders(t, "HEAD", resp, "https://ui.perfetto.dev")
	time.Sleep(50 * time.Millisecond)
	assertRunning(t, s)

	resp, body = do(t, http.MethodGet, s.TraceURL(), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET after HEAD: %s, %d bytes", resp.Status, len(body))
	}
	assertStopped(t, s)
}

func TestPreflight(t *testing.T) {
	path, _ := writeTrace(t, awkwardName)
	s := start(t, path, perfettolink.Options{})
	for _, u := range []string{s.TraceURL(), "http://" + hostPort(t, s) + "/status"} {
		resp, body := do(t, http.MethodOptions, u, http.Header{
			"Origin":                                 {"https://ui.perfetto.dev"},
			"Access-Control-Request-Method":          {"GET"},
			"Access-Control-Request-Private-Network": {"true"},
		})
		if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
			t.Errorf("OPTIONS %s: %s, %d body bytes; want 204, empty", u, resp.Status, len(body))
		}
		assertCommonHeaders(t, "OPTIONS", resp, "https://ui.perfetto.dev")
		for k, want := range map[string]string{
			"Access-Control-Allow-Methods":         "GET, POST, OPTIONS",
			"Access-Control-Allow-Headers":         "*",
			"Access-Control-Max-Age":               "86400",
			"Access-Control-Allow-Private-Network": "true",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("OPTIONS %s: %s = %q, want %q", u, k, got, want)
			}
		}
	}
	assertRunning(t, s)
}

func TestPostIs404(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	s := start(t, path, perfettolink.Options{})
	for _, u := range []string{"http://" + hostPort(t, s) + "/status", s.TraceURL()} {
		resp, _ := do(t, http.MethodPost, u, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %s, want 404", u, resp.Status)
		}
		assertCommonHeaders(t, "POST", resp, "https://ui.perfetto.dev")
	}
	assertRunning(t, s)
}

func TestOtherPathsAre404(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.pftrace")
	if err := os.WriteFile(path, []byte("\x0a\x00trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := start(t, path, perfettolink.Options{})
	addr := hostPort(t, s)
	for _, target := range []string{
		"/", "/index.html", "/secret.txt", "/sub", "/sub/", "/T.pftrace",
		"/t.pftrace/", "/t.pftracex", "/t.pftrace/..", "//t.pftrace", "/./t.pftrace",
		"/sub/../t.pftrace", "/../t.pftrace", "/../etc/passwd", "/%2e%2e/etc/passwd",
		"/%2e%2e%2fetc%2fpasswd", "/..%2f..%2fetc%2fpasswd", "/..%5c..%5cetc%5cpasswd",
		"//etc/passwd", "//x", "/" + url.PathEscape(dir) + "%2Ft.pftrace",
		"/t.pftrace%00", "/t%2epftrace%2f",
	} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			resp := raw(t, addr, m, target, addr)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s: %s, want 404", m, target, resp.Status)
			}
			if m == http.MethodGet {
				assertCommonHeaders(t, "GET "+target, resp, "https://ui.perfetto.dev")
			}
		}
	}
	// Other methods are refused without counting.
	if resp := raw(t, addr, http.MethodPut, "/t.pftrace", addr); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %s, want 405", resp.Status)
	}
	assertRunning(t, s)

	// Still serves the real file afterwards, also via an escaped-but-equal
	// path.
	if resp := raw(t, addr, http.MethodGet, "/t%2Epftrace", addr); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /t%%2Epftrace: %s, want 200", resp.Status)
	}
	assertStopped(t, s)
}

func TestHostHeaderChecked(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	s := start(t, path, perfettolink.Options{})
	addr := hostPort(t, s)
	_, port, _ := net.SplitHostPort(addr)
	// DNS rebinding: a page on evil.example resolving to 127.0.0.1.
	if resp := raw(t, addr, http.MethodGet, "/t.pftrace", "evil.example:"+port); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET with Host evil.example: %s, want 403", resp.Status)
	}
	assertRunning(t, s)
	if resp := raw(t, addr, http.MethodGet, "/t.pftrace", "localhost:"+port); resp.StatusCode != http.StatusOK {
		t.Errorf("GET with Host localhost: %s, want 200", resp.Status)
	}
	assertStopped(t, s)
}

func TestOrigin(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	s := start(t, path, perfettolink.Options{Origin: "http://localhost:10000/some/page?x=1#frag"})
	if !strings.HasPrefix(s.URL(), "http://localhost:10000/#!/?url=http%3A%2F%2F127.0.0.1%3A") {
		t.Errorf("URL() = %q", s.URL())
	}
	resp, _ := do(t, http.MethodGet, s.TraceURL(), nil)
	assertCommonHeaders(t, "GET", resp, "http://localhost:10000")

	if _, err := perfettolink.Start(path, perfettolink.Options{Addr: "127.0.0.1:0", Origin: "ui.perfetto.dev", Out: io.Discard}); err == nil {
		t.Error("Start with Origin without scheme succeeded")
	}
}

func TestServeReturnsAfterFetch(t *testing.T) {
	path, data := writeTrace(t, awkwardName)
	out := newLineWriter()
	errc := make(chan error, 1)
	go func() {
		errc <- perfettolink.Serve(context.Background(), path, perfettolink.Options{Addr: "127.0.0.1:0", Out: out})
	}()
	var link string
	for line := range out.lines {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "https://ui.perfetto.dev/") {
			link = l
			break
		}
	}
	resp, body := do(t, http.MethodGet, traceURLFromLink(t, link), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET: %s, %d bytes", resp.Status, len(body))
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the file was fetched")
	}
}

func TestTimeout(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	t0 := time.Now()
	err := perfettolink.Serve(context.Background(), path, perfettolink.Options{
		Addr: "127.0.0.1:0", Out: io.Discard, Timeout: 100 * time.Millisecond,
	})
	if el := time.Since(t0); el < 100*time.Millisecond || el > 10*time.Second {
		t.Errorf("Serve returned after %v, want about 100ms", el)
	}
	if !errors.Is(err, perfettolink.ErrTimeout) || !strings.Contains(err.Error(), "nobody opened the link within 100ms") {
		t.Errorf("Serve = %v, want a timeout error", err)
	}

	// Start form: Done closes and Wait reports the timeout.
	s := start(t, path, perfettolink.Options{Timeout: 50 * time.Millisecond})
	assertStopped(t, s)
	if err := s.Wait(); !errors.Is(err, perfettolink.ErrTimeout) {
		t.Errorf("Wait = %v, want ErrTimeout", err)
	}
}

func TestContextCancel(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	addr := freePort(t)
	done := make(chan error, 1)
	go func() {
		done <- perfettolink.Serve(ctx, path, perfettolink.Options{Addr: addr, Out: io.Discard})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx was cancelled")
	}
	// The port is free again.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	ln.Close()

	// An already-done context does not bind at all.
	if err := perfettolink.Serve(ctx, path, perfettolink.Options{Addr: addr, Out: io.Discard}); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve with done ctx = %v", err)
	}
}

func TestClose(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	s := start(t, path, perfettolink.Options{})
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	assertStopped(t, s)
	if err := s.Wait(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Wait after Close = %v, want net.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestBusyPort(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = perfettolink.Start(path, perfettolink.Options{Addr: addr, Out: io.Discard})
	if err == nil {
		t.Fatal("Start on a busy port succeeded")
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), addr+" is in use") {
		t.Errorf("Start = %v, want an in-use error wrapping EADDRINUSE", err)
	}
	if err := perfettolink.Serve(context.Background(), path, perfettolink.Options{Addr: addr, Out: io.Discard}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Serve = %v, want an in-use error", err)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pftrace")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "x.pftrace")
	for path, want := range map[string]string{
		missing: fmt.Sprintf("perfettolink: trace file %q: no such file", missing),
		dir:     "is a directory",
		empty:   "is empty",
	} {
		_, err := perfettolink.Start(path, perfettolink.Options{Addr: "127.0.0.1:0", Out: io.Discard})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start(%q) = %v, want error containing %q", path, err, want)
		}
		err = perfettolink.Serve(context.Background(), path, perfettolink.Options{Addr: "127.0.0.1:0", Out: io.Discard})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Serve(%q) = %v, want error containing %q", path, err, want)
		}
	}
}

func TestAddrChecked(t *testing.T) {
	path, _ := writeTrace(t, "t.pftrace")
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "192.0.2.1:0", "127.0.0.1"} {
		_, err := perfettolink.Start(path, perfettolink.Options{Addr: addr, Out: io.Discard})
		if err == nil {
			t.Errorf("Start with Addr %q succeeded", addr)
		} else if addr != "127.0.0.1" && !strings.Contains(err.Error(), "not a loopback IP") {
			t.Errorf("Start with Addr %q = %v", addr, err)
		}
	}
	// Other loopback IPs are fine; so is any host when asked for explicitly.
	start(t, path, perfettolink.Options{Addr: "127.0.0.1:0"}).Close()
	s := start(t, path, perfettolink.Options{Addr: "0.0.0.0:0", AllowNonLoopback: true})
	if !strings.HasPrefix(s.TraceURL(), "http://127.0.0.1:") {
		t.Errorf("TraceURL() = %q for a 0.0.0.0 bind", s.TraceURL())
	}
	s.Close()
}

func TestOutput(t *testing.T) {
	path, _ := writeTrace(t, awkwardName)
	var out bytes.Buffer
	s := start(t, path, perfettolink.Options{Out: &out, Timeout: time.Minute})
	s.Close()
	_, port, _ := net.SplitHostPort(hostPort(t, s))
	for _, want := range []string{
		s.URL() + "\n",
		"ssh -L " + port + ":127.0.0.1:" + port + " ",
		path,
		"1m0s",
		"only fetches from http://127.0.0.1:9001",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRealPort9001 uses the address ui.perfetto.dev actually accepts. It
// fails (rather than skips) when the port is busy.
func TestRealPort9001(t *testing.T) {
	path, data := writeTrace(t, awkwardName)
	var out bytes.Buffer
	s, err := perfettolink.Start(path, perfettolink.Options{Out: &out})
	if err != nil {
		t.Fatalf("cannot serve on 127.0.0.1:9001 (is something else using it?): %v", err)
	}
	defer s.Close()
	want := perfettolink.Link("127.0.0.1:9001", awkwardName)
	if s.URL() != want {
		t.Errorf("URL() = %q, want %q", s.URL(), want)
	}
	if !strings.Contains(out.String(), "ssh -L 9001:127.0.0.1:9001 ") || strings.Contains(out.String(), "Note:") {
		t.Errorf("unexpected output:\n%s", out.String())
	}
	tu := traceURLFromLink(t, s.URL())
	if !strings.HasPrefix(tu, "http://127.0.0.1:9001/") {
		t.Fatalf("trace URL %q", tu)
	}
	resp, _ := do(t, http.MethodPost, "http://127.0.0.1:9001/status", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /status: %s", resp.Status)
	}
	resp, body := do(t, http.MethodGet, tu, http.Header{"Origin": {"https://ui.perfetto.dev"}})
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET %s: %s, %d bytes", tu, resp.Status, len(body))
	}
	assertCommonHeaders(t, "GET", resp, "https://ui.perfetto.dev")
	assertStopped(t, s)
	if err := s.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lineWriter is an io.Writer that hands complete lines to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 100)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default:
		}
		w.buf = w.buf[i+1:]
	}
}
