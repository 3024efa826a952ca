package profileserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/devprof/devprof/profileserver/profilerpb"
	"github.com/devprof/devprof/trace"
)

// MaxDuration is the default of Options.MaxDuration: how long one
// capture may record.
const MaxDuration = 10 * time.Minute

// MaxStartDelay bounds how far in the future a request's
// start_timestamp_ns may ask the capture to begin.
const MaxStartDelay = time.Minute

// MaxRequestBytes bounds the size of a request the server accepts.
const MaxRequestBytes = 1 << 20

// maxEventsLimit bounds a request's max_events.
const maxEventsLimit = 16 * trace.DefaultMaxEvents

// Options configure a server. The zero value is ready to use.
type Options struct {
	// Log receives the server's warnings (listening on every interface,
	// options it accepts but cannot honour); nil means standard error.
	Log io.Writer
	// MaxDuration bounds every capture; 0 means the package's
	// MaxDuration (10 minutes). A request's duration_ms may ask for at
	// most this. A request without a duration — duration_ms 0, which
	// ProfileOptions defines as "until stopped", or a value no clock can
	// honour, such as the UINT64_MAX that JAX's subprocess profiling
	// sends before it ends the capture with Terminate — records until
	// Terminate, Server.Stop or the client's going away, and at the
	// latest until this bound, and then answers with what was recorded.
	MaxDuration time.Duration
}

// Server is a running profile server.
type Server struct {
	grpc *grpc.Server
	lis  net.Listener
	log  io.Writer
	max  time.Duration // Options.MaxDuration, defaulted
	done chan struct{} // closed when Serve has returned

	mu       sync.Mutex
	active   *capture // the capture running now, or nil
	stopping bool
	noted    map[string]bool // warnings already written to log
}

// capture is the one capture a server runs at a time.
type capture struct {
	sessionID string
	start     time.Time
	duration  time.Duration
	open      bool                    // no duration asked for: until Terminate, duration is the server's bound
	end       context.CancelCauseFunc // ends it early (Terminate, Stop)
}

// length describes how long c records, for messages.
func (c *capture) length() string {
	if c.open {
		return fmt.Sprintf("until Terminate, at most %v", c.duration)
	}
	return c.duration.String()
}

var (
	errTerminated = errors.New("terminated by a Terminate request")
	errStopping   = errors.New("the profile server is stopping")
)

// StartServer listens on addr and serves tensorflow.ProfilerService until
// Stop. addr "" (any free port), ":PORT" or "PORT" listen on 127.0.0.1
// only; a host, as in "10.0.0.5:9999", listens there, and an address of
// every interface ("0.0.0.0:9999", "[::]:9999") does so with a warning,
// since anyone who reaches the port can then record this process.
func StartServer(addr string, o Options) (*Server, error) {
	listen, all, err := listenAddr(addr)
	if err != nil {
		return nil, err
	}
	maxDur := o.MaxDuration
	switch {
	case maxDur < 0:
		return nil, fmt.Errorf("profile server: MaxDuration %v is negative (0: the default, %v)", maxDur, MaxDuration)
	case maxDur == 0:
		maxDur = MaxDuration
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("profile server: %w", err)
	}
	s := &Server{lis: lis, log: o.Log, max: maxDur, done: make(chan struct{}), noted: map[string]bool{}}
	if s.log == nil {
		s.log = os.Stderr
	}
	if all {
		fmt.Fprintf(s.log, "devprof: WARNING: the profile server listens on every interface (%s): anyone who can reach this port can record this process\n", lis.Addr())
	}
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(MaxRequestBytes))
	profilerpb.RegisterProfilerServiceServer(s.grpc, &service{s: s})
	go func() {
		defer close(s.done)
		s.grpc.Serve(lis) // returns when Stop stops it
	}()
	return s, nil
}

// listenAddr turns StartServer's addr into the address to listen on, and
// says whether that is every interface.
func listenAddr(addr string) (string, bool, error) {
	if addr == "" {
		return "127.0.0.1:0", false, nil
	}
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("profile server address %q: want :PORT, PORT or HOST:PORT", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", false, fmt.Errorf("profile server address %q: port %q is not a number 0..65535", addr, port)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), false, nil
	}
	ip := net.ParseIP(host)
	return addr, ip != nil && ip.IsUnspecified(), nil
}

// Addr returns the address the server listens on, with the port it got
// when asked for any.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stop ends a running capture (its client gets what was recorded so far),
// stops serving and returns when the server's goroutines are gone. It is
// safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopping = true
	if s.active != nil {
		s.active.end(errStopping)
	}
	s.mu.Unlock()
	// GracefulStop lets the capture just ended answer; a client that does
	// not read its answer must not hold Stop up for long.
	graceful := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(graceful)
	}()
	select {
	case <-graceful:
	case <-time.After(10 * time.Second):
		s.grpc.Stop()
		<-graceful
	}
	<-s.done
}

// note writes msg to the server's log the first time it comes up.
func (s *Server) note(msg string) {
	s.mu.Lock()
	seen := s.noted[msg]
	s.noted[msg] = true
	s.mu.Unlock()
	if !seen {
		fmt.Fprintln(s.log, "devprof: "+msg)
	}
}

// begin claims the server's one capture slot.
func (s *Server) begin(c *capture) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopping:
		return status.Error(codes.Unavailable, errStopping.Error())
	case s.active != nil:
		return status.Errorf(codes.FailedPrecondition, "another capture is running on this server (session %q, started %s, %v recorded of %s); only one capture runs at a time",
			s.active.sessionID, s.active.start.Format(time.TimeOnly), time.Since(s.active.start).Round(time.Millisecond), s.active.length())
	}
	s.active = c
	return nil
}

// finish frees the capture slot.
func (s *Server) finish(c *capture) {
	s.mu.Lock()
	if s.active == c {
		s.active = nil
	}
	s.mu.Unlock()
}

// service implements profilerpb.ProfilerServiceServer.
type service struct {
	profilerpb.UnimplementedProfilerServiceServer
	s *Server
}

// Profile records for the request's duration and answers with the XSpace
// as tool data "xplane.pb", which clients save as <run>/<host>.xplane.pb
// (or in the xspace field, when the request sets emit_xspace).
func (v *service) Profile(ctx context.Context, req *profilerpb.ProfileRequest) (*profilerpb.ProfileResponse, error) {
	opts, d, open, err := v.options(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := opts.Validate(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	capCtx, end := context.WithCancelCause(ctx)
	defer end(nil)
	c := &capture{sessionID: req.GetSessionId(), start: time.Now(), duration: d, open: open, end: end}
	if err := v.s.begin(c); err != nil {
		return nil, err
	}
	defer v.s.finish(c)

	// A client may ask for the capture to begin later (start_timestamp_ns:
	// newer clients delay so that every host starts together).
	if ns := req.GetOpts().GetStartTimestampNs(); ns > 0 {
		if wait := time.Until(time.Unix(0, int64(ns))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-capCtx.Done():
				t.Stop()
			}
		}
	}
	var got *trace.Captured
	if capCtx.Err() == nil {
		got, err = trace.Capture(capCtx, d, *opts)
		switch {
		case errors.Is(err, trace.ErrAlreadyStarted), errors.Is(err, trace.ErrDisabled):
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		case err != nil:
			return nil, status.Error(codes.Internal, err.Error())
		}
		if open && !got.Early {
			fmt.Fprintf(v.s.log, "devprof: capture %q asked for no duration (until Terminate) and reached the server's bound of %v; it answers with what was recorded\n", c.sessionID, d)
		}
	}
	if ctx.Err() != nil {
		// The client is gone (it disconnected, or its deadline passed):
		// the session has ended with it and nobody reads the answer.
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	resp := &profilerpb.ProfileResponse{EmptyTrace: got == nil || len(got.Snapshot.Events) == 0}
	if got == nil {
		return resp, nil // ended (Terminate, Stop) before it began
	}
	if req.GetEmitXspace() {
		resp.Xspace = got.XSpace
	} else {
		resp.ToolData = []*profilerpb.ProfileToolData{{Name: "xplane.pb", Data: got.XSpace}}
	}
	return resp, nil
}

// options translates a request into session options and its duration,
// and says whether the request asked for none (open: record until
// Terminate, bounded by the server's MaxDuration, which d then is).
// Errors name the field at fault; trace.Options.Validate checks the rest.
func (v *service) options(req *profilerpb.ProfileRequest) (o *trace.Options, d time.Duration, open bool, err error) {
	po := req.GetOpts()
	ms := po.GetDurationMs()
	if ms == 0 {
		ms = req.GetDurationMs() // old clients set only the request's copy
	}
	bound := v.s.max
	switch {
	case ms == 0 || ms > math.MaxInt64/uint64(time.Millisecond):
		// No duration, or one longer than a time.Duration holds (292
		// years: UINT64_MAX and kin are "forever", not a length).
		d, open = bound, true
	case ms > uint64(bound/time.Millisecond):
		return nil, 0, false, fmt.Errorf("duration_ms %d out of range: want 1..%d (this server bounds a capture to %v), or 0 to record until Terminate", ms, bound/time.Millisecond, bound)
	default:
		d = time.Duration(ms) * time.Millisecond
	}
	if ns := po.GetStartTimestampNs(); ns > 0 && time.Until(time.Unix(0, int64(min(ns, 1<<62)))) > MaxStartDelay {
		return nil, 0, false, fmt.Errorf("start_timestamp_ns %d is more than %v from now", ns, MaxStartDelay)
	}
	o = &trace.Options{}
	if me := req.GetMaxEvents(); me > 0 {
		if me > maxEventsLimit {
			return nil, 0, false, fmt.Errorf("max_events %d out of range: want at most %d (0: the default, %d)", me, maxEventsLimit, trace.DefaultMaxEvents)
		}
		o.MaxEvents = int(me)
	}
	// Version 0 is a client that set no levels: TSL's defaults apply, as
	// they do for the zero trace.Options.
	if po != nil && po.GetVersion() != 0 {
		o.HostTracerLevel = level(po.GetHostTracerLevel())
		o.DeviceTracerLevel = level(po.GetDeviceTracerLevel())
		if po.GetPythonTracerLevel() > 0 {
			v.s.note(fmt.Sprintf("python_tracer_level %d accepted and ignored: a Go program has no Python to trace", po.GetPythonTracerLevel()))
		}
	}
	o.Hostname = po.GetOverrideHostname()
	if ac := po.GetAdvancedConfiguration(); len(ac) > 0 {
		o.AdvancedConfig = make(map[string]any, len(ac))
		for k, val := range ac {
			switch x := val.GetValue().(type) {
			case *profilerpb.ProfileOptions_AdvancedConfigValue_StringValue:
				o.AdvancedConfig[k] = x.StringValue
			case *profilerpb.ProfileOptions_AdvancedConfigValue_BoolValue:
				o.AdvancedConfig[k] = x.BoolValue
			case *profilerpb.ProfileOptions_AdvancedConfigValue_Int64Value:
				o.AdvancedConfig[k] = x.Int64Value
			default:
				return nil, 0, false, fmt.Errorf("advanced configuration key %q has no value", k)
			}
		}
	}
	return o, d, open, nil
}

// level maps a request's tracer level (0 off) to trace.Options' (0
// default, trace.Off off); levels trace does not know stay out of range,
// so Validate names them.
func level(l uint32) int {
	if l == 0 {
		return trace.Off
	}
	return int(min(l, 1<<20))
}

// Terminate ends the running capture early; its Profile answers with what
// was recorded. An empty session_id ends whichever capture runs.
func (v *service) Terminate(_ context.Context, req *profilerpb.TerminateRequest) (*profilerpb.TerminateResponse, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.active == nil:
		return nil, status.Error(codes.FailedPrecondition, "no capture is running on this server")
	case req.GetSessionId() != "" && req.GetSessionId() != s.active.sessionID:
		return nil, status.Errorf(codes.NotFound, "no capture of session %q is running (the running one is %q)", req.GetSessionId(), s.active.sessionID)
	}
	s.active.end(errTerminated)
	return &profilerpb.TerminateResponse{}, nil
}

// GetSnapshot answers at once with the last window of the program's
// flight recorder (a session started with trace.Options.FlightRecorder),
// which keeps recording: the XSpace goes out as tool data "xplane.pb", as
// Profile's does. Without a flight recorder it fails with
// FAILED_PRECONDITION, saying how to start one.
func (v *service) GetSnapshot(_ context.Context, _ *profilerpb.GetSnapshotRequest) (*profilerpb.ProfileResponse, error) {
	got, err := trace.FlightSnapshot()
	switch {
	case errors.Is(err, trace.ErrNoFlightRecorder):
		return nil, status.Error(codes.FailedPrecondition, "this process runs no flight recorder, so there is no snapshot to take: start its session with trace.Options.FlightRecorder (or capture with Profile)")
	case errors.Is(err, trace.ErrDisabled):
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	case err != nil:
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &profilerpb.ProfileResponse{
		EmptyTrace: len(got.Snapshot.Events) == 0,
		ToolData:   []*profilerpb.ProfileToolData{{Name: "xplane.pb", Data: got.XSpace}},
	}, nil
}
