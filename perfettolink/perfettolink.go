package perfettolink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultAddr is the only address whose plain-http responses ui.perfetto.dev
// accepts (its Content-Security-Policy allows exactly http://127.0.0.1:9001).
const DefaultAddr = "127.0.0.1:9001"

// DefaultOrigin is the Perfetto UI that links point at and that CORS allows.
const DefaultOrigin = "https://ui.perfetto.dev"

// ErrTimeout is wrapped by the error that Serve and Server.Wait return when
// nobody fetched the trace within Options.Timeout.
var ErrTimeout = errors.New("perfettolink: nobody opened the link")

// shutdownGrace bounds how long a finished server waits for other in-flight
// requests before closing their connections.
const shutdownGrace = 2 * time.Second

// Options configures Serve and Start. The zero value serves on DefaultAddr
// for DefaultOrigin, prints to os.Stderr and waits forever.
type Options struct {
	// Addr is the host:port to listen on; "" means DefaultAddr. The host
	// must be a loopback IP literal (127.0.0.1, ::1, ...) unless
	// AllowNonLoopback is set. Note that ui.perfetto.dev itself only fetches
	// from http://127.0.0.1:9001; other addresses are for tests, other UIs
	// (see Origin) or a browser with relaxed CSP. Port 0 picks a free port.
	Addr string

	// AllowNonLoopback permits an Addr whose host is not a loopback IP
	// (for example "0.0.0.0:9001" or a host name). Anyone who can reach the
	// port can then fetch the trace.
	AllowNonLoopback bool

	// Origin is the Perfetto UI origin, used both as the link's base and
	// as Access-Control-Allow-Origin; "" means DefaultOrigin. Any path,
	// query or fragment is dropped.
	Origin string

	// Out receives the link and hints; nil means os.Stderr. Use io.Discard
	// to print nothing.
	Out io.Writer

	// Timeout is how long to wait for the trace to be fetched; 0 means
	// wait until it is fetched, the context is done, or Close is called.
	Timeout time.Duration
}

// Link returns the ui.perfetto.dev URL that opens fileName served at
// http://addr/ (addr is host:port, normally DefaultAddr). The file name is
// path-escaped as the server expects it, and the whole trace URL is
// query-escaped inside the fragment.
func Link(addr, fileName string) string {
	return link(DefaultOrigin, traceURL(addr, fileName))
}

func traceURL(addr, fileName string) string {
	return "http://" + addr + "/" + url.PathEscape(fileName)
}

func link(origin, traceURL string) string {
	return origin + "/#!/?url=" + url.QueryEscape(traceURL)
}

// Serve serves the trace file at path once and blocks until it has been
// fetched (nil), ctx is done (an error wrapping ctx.Err()), opts.Timeout
// passes (an error wrapping ErrTimeout), or serving fails. Before binding it
// checks that path is a readable, non-empty regular file; a busy port is
// reported as an error wrapping syscall.EADDRINUSE.
func Serve(ctx context.Context, path string, opts Options) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("perfettolink: not serving %q: %w", path, err)
	}
	s, err := Start(path, opts)
	if err != nil {
		return err
	}
	select {
	case <-s.Done():
		return s.Wait()
	case <-ctx.Done():
		s.Close()
		if s.Wait() == nil { // fetched just before ctx ended
			return nil
		}
		return fmt.Errorf("perfettolink: stopped waiting for %s to be fetched: %w", s.TraceURL(), ctx.Err())
	}
}

// Server is a started one-shot link server; see Start.
type Server struct {
	path     string
	name     string
	origin   string
	traceURL string
	link     string
	loopback bool

	hs *http.Server
	ln net.Listener

	once     sync.Once
	stopping atomic.Bool
	err      error         // why it stopped; nil when the file was fetched
	done     chan struct{} // closed once fully stopped
}

// Start checks the file, binds the listener (so a busy port is reported
// right away), prints the link and hints to opts.Out, and serves in the
// background. The returned Server stops by itself once the file has been
// fetched completely by one GET, or when opts.Timeout passes; call Close to
// stop it earlier.
func Start(path string, opts Options) (*Server, error) {
	size, err := checkFile(path)
	if err != nil {
		return nil, err
	}
	origin, err := cleanOrigin(opts.Origin)
	if err != nil {
		return nil, err
	}
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	loopback, err := checkAddr(addr, opts.AllowNonLoopback)
	if err != nil {
		return nil, err
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("perfettolink: negative Timeout %v", opts.Timeout)
	}
	out := opts.Out
	if out == nil {
		out = os.Stderr
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("perfettolink: %s is in use (another trace_processor --httpd or link server?): %w", addr, err)
		}
		return nil, fmt.Errorf("perfettolink: listen on %s: %w", addr, err)
	}

	s := &Server{
		path:     path,
		name:     filepath.Base(path),
		origin:   origin,
		loopback: loopback,
		ln:       ln,
		done:     make(chan struct{}),
	}
	s.traceURL = traceURL(linkHostPort(ln.Addr()), s.name)
	s.link = link(origin, s.traceURL)
	s.hs = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}

	s.printLink(out, size, opts.Timeout)

	if d := opts.Timeout; d > 0 {
		go func() {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				s.finish(fmt.Errorf("%w within %v (%s was not fetched)", ErrTimeout, d, s.traceURL))
			case <-s.done:
			}
		}()
	}
	go func() {
		err := s.hs.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			s.finish(fmt.Errorf("perfettolink: serving %s: %w", s.traceURL, err))
		}
	}()
	return s, nil
}

// URL returns the ui.perfetto.dev link that opens the trace.
func (s *Server) URL() string { return s.link }

// TraceURL returns the plain http URL the trace file is served at.
func (s *Server) TraceURL() string { return s.traceURL }

// Done returns a channel that is closed once the server has stopped: the
// file was fetched, the timeout passed, serving failed or Close was called.
// By then the listener is closed.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until Done is closed and reports why the server stopped: nil
// when the file was fetched, an error wrapping ErrTimeout on timeout, an
// error wrapping net.ErrClosed when Close came first, or a serving error.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Close stops the server if it is still waiting and blocks until it has
// stopped. It is safe to call more than once and after the file was served.
func (s *Server) Close() error {
	s.finish(fmt.Errorf("perfettolink: closed before %s was fetched: %w", s.traceURL, net.ErrClosed))
	<-s.done
	return nil
}

// finish records why the server stops (first caller wins) and shuts it
// down in the background; done is closed when that is complete. It must not
// block, because the request handler calls it.
func (s *Server) finish(reason error) {
	s.once.Do(func() {
		s.err = reason
		s.stopping.Store(true)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if s.hs.Shutdown(ctx) != nil {
				s.hs.Close()
			}
			s.ln.Close() // in case Serve had not started yet
			close(s.done)
		}()
	})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", s.origin)
	h.Set("Cache-Control", "no-cache")

	if s.loopback && !hostHeaderOK(r.Host) {
		http.Error(w, "perfettolink: unexpected Host header", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "*")
		h.Set("Access-Control-Max-Age", "86400")
		h.Set("Access-Control-Allow-Private-Network", "true")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
		// The UI probes POST /status for a trace_processor RPC server; a
		// 200 (even empty) would make it think one is here.
		http.NotFound(w, r)
		return
	case http.MethodGet, http.MethodHead:
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// r.URL.Path is the decoded path. The name cannot contain a slash, so
	// only the exact "/<name>" matches; "/../x", "/%2e%2e/x", "//x" do not.
	if r.URL.Path != "/"+s.name {
		http.NotFound(w, r)
		return
	}
	if s.stopping.Load() {
		http.NotFound(w, r) // already served, timed out or closed
		return
	}

	f, err := os.Open(s.path)
	if err != nil {
		http.Error(w, "perfettolink: trace file is gone", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.Error(w, "perfettolink: trace file is not readable", http.StatusInternalServerError)
		return
	}
	size := fi.Size()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK) // a HEAD does not count as the fetch
		return
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.CopyN(w, f, size); err != nil {
		return
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	s.finish(nil)
}

// hostHeaderOK reports whether a Host header names the server the way a
// local browser or tool would: by IP literal or localhost. Anything else
// suggests DNS rebinding.
func hostHeaderOK(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

func (s *Server) printLink(out io.Writer, size int64, timeout time.Duration) {
	port := "9001"
	if _, p, err := net.SplitHostPort(s.ln.Addr().String()); err == nil {
		port = p
	}
	who, host := "<user>", "<host>"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		host = h
	}
	wait := "until it is fetched (Ctrl-C to stop)"
	if timeout > 0 {
		wait = "for up to " + timeout.String()
	}
	fmt.Fprintf(out, "perfettolink: serving %s (%d bytes) once at %s\n", s.path, size, s.traceURL)
	fmt.Fprintf(out, "Open the trace in Perfetto UI:\n  %s\n", s.link)
	fmt.Fprintf(out, "On a remote machine, forward the port from your laptop first:\n  ssh -L %s:127.0.0.1:%s %s@%s\n", port, port, who, host)
	if s.ln.Addr().String() != DefaultAddr {
		fmt.Fprintf(out, "Note: ui.perfetto.dev only fetches from http://%s; this link may be blocked.\n", DefaultAddr)
	}
	fmt.Fprintf(out, "Or drag %s onto %s. Waiting %s...\n", s.path, s.origin, wait)
}

// linkHostPort is the host:port to put in links: the bound address, with an
// unspecified IP (0.0.0.0, ::) replaced by 127.0.0.1.
func linkHostPort(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ta.IP == nil || ta.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return ta.String()
}

func checkFile(path string) (int64, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("perfettolink: trace file %q: no such file", path)
	case err != nil:
		return 0, fmt.Errorf("perfettolink: trace file %q: %w", path, err)
	case fi.IsDir():
		return 0, fmt.Errorf("perfettolink: trace file %q: is a directory", path)
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("perfettolink: trace file %q: not a regular file (%v)", path, fi.Mode().Type())
	case fi.Size() == 0:
		return 0, fmt.Errorf("perfettolink: trace file %q: is empty", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("perfettolink: trace file %q: not readable: %w", path, err)
	}
	f.Close()
	return fi.Size(), nil
}

// checkAddr validates addr and reports whether its host is a loopback IP.
func checkAddr(addr string, allowNonLoopback bool) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("perfettolink: bad address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	loopback := ip != nil && ip.IsLoopback()
	if !loopback && !allowNonLoopback {
		return false, fmt.Errorf("perfettolink: address %q is not a loopback IP; use %s (the only address ui.perfetto.dev fetches from), or set AllowNonLoopback to expose the trace", addr, DefaultAddr)
	}
	return loopback, nil
}

func cleanOrigin(origin string) (string, error) {
	if origin == "" {
		return DefaultOrigin, nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("perfettolink: bad Origin %q: want http(s)://host[:port]", origin)
	}
	return u.Scheme + "://" + u.Host, nil
}
