package profileserver_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/profileserver"
	pb "github.com/devprof/devprof/profileserver/profilerpb"
	"github.com/devprof/devprof/trace"
)

// TestMain fails the package if a goroutine outlives its tests: a stopped
// server, an ended capture and a gone client leave nothing behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a server on a free loopback port and a client of it; both
// are closed when the test ends.
func serve(t *testing.T) (*profileserver.Server, pb.ProfilerServiceClient) {
	t.Helper()
	var log bytes.Buffer
	return serveWith(t, profileserver.Options{Log: &log})
}

// serveWith is serve with the server's options.
func serveWith(t *testing.T, o profileserver.Options) (*profileserver.Server, pb.ProfilerServiceClient) {
	t.Helper()
	srv, err := profileserver.StartServer("", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return srv, pb.NewProfilerServiceClient(conn)
}

// request asks for a capture of ms milliseconds without the device tracer
// (no GPU in these tests), as a client that sets levels (version 1) does.
func request(ms uint64) *pb.ProfileRequest {
	return &pb.ProfileRequest{
		DurationMs: ms,
		SessionId:  "2026_01_02_03_04_05",
		HostName:   "127.0.0.1:9999",
		Opts: &pb.ProfileOptions{
			Version: 1, HostTracerLevel: 2, DeviceTracerLevel: 0, DurationMs: ms,
			RepositoryPath: "/no/such/dir/on/the/server",
		},
	}
}

// work annotates a span named name every millisecond until the test ends.
func work(t *testing.T, name string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				_, sp := annotate.Begin(context.Background(), name)
				sp.End()
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// waitCapturing waits until a capture session runs.
func waitCapturing(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st, ok := trace.Running(); ok && st.Capture {
			return
		}
	}
	t.Fatal("no capture started")
}

// waitIdle waits until no session runs.
func waitIdle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, ok := trace.Running(); !ok {
			return
		}
	}
	t.Fatal("a session still runs")
}

// spans reads an XSpace and counts its spans by name.
func spans(t *testing.T, b []byte) map[string]int {
	t.Helper()
	snap, err := xplane.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the response's XSpace does not read: %v", err)
	}
	n := map[string]int{}
	for _, r := range snap.Events {
		n[snap.Name(r)]++
	}
	return n
}

// xspaceOf returns the tool data the client saves as <host>.xplane.pb.
func xspaceOf(t *testing.T, resp *pb.ProfileResponse) []byte {
	t.Helper()
	if len(resp.GetToolData()) != 1 || resp.GetToolData()[0].GetName() != "xplane.pb" {
		t.Fatalf("tool data %v, want one entry named xplane.pb", resp.GetToolData())
	}
	return resp.GetToolData()[0].GetData()
}

func wantCode(t *testing.T, err error, code codes.Code, substr string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), substr) {
		t.Errorf("status %v %q, want %v mentioning %q", st.Code(), st.Message(), code, substr)
	}
}

func TestProfileAnswersWithTheXSpaceOfTheWindow(t *testing.T) {
	_, c := serve(t)
	// A span before the capture must not be in it.
	_, sp := annotate.Begin(context.Background(), "before-capture")
	sp.End()
	work(t, "served-work")
	resp, err := c.Profile(context.Background(), request(300))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetEmptyTrace() || len(resp.GetXspace()) != 0 {
		t.Errorf("empty_trace %v, xspace %d bytes; want false and none (tool data instead)", resp.GetEmptyTrace(), len(resp.GetXspace()))
	}
	n := spans(t, xspaceOf(t, resp))
	if n["served-work"] < 10 || n["before-capture"] != 0 {
		t.Errorf("spans %v: want many served-work (one a millisecond for 300ms) and no before-capture", n)
	}
}

func TestProfileEmitXSpace(t *testing.T) {
	_, c := serve(t)
	work(t, "emitted")
	req := request(100)
	req.EmitXspace = true
	resp, err := c.Profile(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetToolData()) != 0 || spans(t, resp.GetXspace())["emitted"] == 0 {
		t.Errorf("emit_xspace: %d tool data, want none and the spans in xspace", len(resp.GetToolData()))
	}
}

func TestProfileOfAnIdleProcessIsEmpty(t *testing.T) {
	_, c := serve(t)
	resp, err := c.Profile(context.Background(), request(50))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetEmptyTrace() {
		t.Errorf("empty_trace false for a capture in which nothing was annotated")
	}
}

func TestProfileRejectsBadOptions(t *testing.T) {
	_, c := serve(t)
	cfg := func(k string, v *pb.ProfileOptions_AdvancedConfigValue) *pb.ProfileRequest {
		r := request(10)
		r.Opts.AdvancedConfiguration = map[string]*pb.ProfileOptions_AdvancedConfigValue{k: v}
		return r
	}
	str := func(s string) *pb.ProfileOptions_AdvancedConfigValue {
		return &pb.ProfileOptions_AdvancedConfigValue{Value: &pb.ProfileOptions_AdvancedConfigValue_StringValue{StringValue: s}}
	}
	i64 := func(n int64) *pb.ProfileOptions_AdvancedConfigValue {
		return &pb.ProfileOptions_AdvancedConfigValue{Value: &pb.ProfileOptions_AdvancedConfigValue_Int64Value{Int64Value: n}}
	}
	for _, tc := range []struct {
		name   string
		req    *pb.ProfileRequest
		substr string
	}{
		{"unknown key", cfg("gpu_no_such_key", i64(1)), `"gpu_no_such_key"`},
		{"wrong type", cfg("gpu_buffer_size", str("big")), `"gpu_buffer_size": want int`},
		{"out of range", cfg("gpu_metrics_period_ms", i64(1)), "period"},
		{"bad string", cfg("gpu_metrics", str("sometimes")), "sometimes"},
		{"no value", cfg("gpu_metrics", &pb.ProfileOptions_AdvancedConfigValue{}), `"gpu_metrics" has no value`},
		{"path in session_id", cfg("session_id", str("../../etc")), "not a valid directory name"},
		{"host level", func() *pb.ProfileRequest { r := request(10); r.Opts.HostTracerLevel = 7; return r }(), "HostTracerLevel 7"},
		{"device level", func() *pb.ProfileRequest { r := request(10); r.Opts.DeviceTracerLevel = 2; return r }(), "DeviceTracerLevel 2"},
		{"too long", request(uint64(profileserver.MaxDuration/time.Millisecond) + 1), "duration_ms 600001 out of range: want 1..600000 (this server bounds a capture to 10m0s), or 0"},
		{"too many events", func() *pb.ProfileRequest { r := request(10); r.MaxEvents = 1 << 40; return r }(), "max_events"},
		{"far start", func() *pb.ProfileRequest {
			r := request(10)
			r.Opts.StartTimestampNs = uint64(time.Now().Add(time.Hour).UnixNano())
			return r
		}(), "start_timestamp_ns"},
	} {
		_, err := c.Profile(context.Background(), tc.req)
		wantCode(t, err, codes.InvalidArgument, tc.substr)
		if t.Failed() {
			t.Logf("case %q", tc.name)
		}
	}
	// A request larger than the bound is refused before it is decoded.
	huge := cfg("program_name", str(strings.Repeat("x", 2*profileserver.MaxRequestBytes)))
	_, err := c.Profile(context.Background(), huge)
	wantCode(t, err, codes.ResourceExhausted, "")
	// And the server still captures.
	if _, err := c.Profile(context.Background(), request(10)); err != nil {
		t.Errorf("after bad requests: %v", err)
	}
}

func TestOneCaptureAtATimeAndTerminate(t *testing.T) {
	_, c := serve(t)
	work(t, "until-terminated")
	type result struct {
		resp *pb.ProfileResponse
		err  error
	}
	first := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := c.Profile(context.Background(), request(60_000))
		first <- result{resp, err}
	}()
	waitCapturing(t)

	_, err := c.Profile(context.Background(), request(10))
	wantCode(t, err, codes.FailedPrecondition, "another capture is running")
	_, err = c.Terminate(context.Background(), &pb.TerminateRequest{SessionId: "someone-else"})
	wantCode(t, err, codes.NotFound, `"someone-else"`)

	time.Sleep(100 * time.Millisecond)
	if _, err := c.Terminate(context.Background(), &pb.TerminateRequest{SessionId: "2026_01_02_03_04_05"}); err != nil {
		t.Fatal(err)
	}
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("Terminate did not end a 60s capture early (%v)", time.Since(start))
	}
	if spans(t, xspaceOf(t, r.resp))["until-terminated"] == 0 {
		t.Errorf("the terminated capture lacks what was recorded before Terminate")
	}
	_, err = c.Terminate(context.Background(), &pb.TerminateRequest{})
	wantCode(t, err, codes.FailedPrecondition, "no capture is running")
}

// TestNoDurationRecordsUntilTerminate: duration_ms 0 ("until stopped")
// and UINT64_MAX (what JAX's subprocess profiling sends, with
// emit_xspace, before it ends the capture by session_id) both record
// until Terminate, and answer with what was recorded.
func TestNoDurationRecordsUntilTerminate(t *testing.T) {
	_, c := serve(t)
	work(t, "open-ended")
	for _, tc := range []struct {
		name string
		req  *pb.ProfileRequest
	}{
		{"duration_ms 0", request(0)},
		{"UINT64_MAX, emit_xspace", func() *pb.ProfileRequest {
			r := request(math.MaxUint64)
			r.SessionId = "subprocess_1234_1795585787000"
			r.EmitXspace = true
			return r
		}()},
	} {
		type result struct {
			resp *pb.ProfileResponse
			err  error
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			resp, err := c.Profile(context.Background(), tc.req)
			done <- result{resp, err}
		}()
		waitCapturing(t)
		m, err := c.Monitor(context.Background(), &pb.MonitorRequest{MonitoringLevel: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.GetData(), "until Terminate, at most 10m0s") {
			t.Errorf("%s: Monitor does not say the capture runs until Terminate:\n%s", tc.name, m.GetData())
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := c.Terminate(context.Background(), &pb.TerminateRequest{SessionId: tc.req.SessionId}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("%s: %v", tc.name, r.err)
		}
		if d := time.Since(start); d < 300*time.Millisecond || d > time.Minute {
			t.Errorf("%s: the capture answered after %v, want it to end at Terminate (after 300ms)", tc.name, d)
		}
		data := r.resp.GetXspace()
		if !tc.req.EmitXspace {
			data = xspaceOf(t, r.resp)
		}
		snap, err := xplane.Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := spans(t, data)["open-ended"]; n < 50 {
			t.Errorf("%s: %d open-ended spans in the answer, want those of the 300ms before Terminate", tc.name, n)
		}
		if d := time.Duration(snap.Meta.Stop.Mono - snap.Meta.Start.Mono); d < 300*time.Millisecond {
			t.Errorf("%s: the capture recorded %v, want at least the 300ms before Terminate", tc.name, d)
		}
	}
}

// TestNoDurationStopsAtTheServersBound: a capture without a duration that
// nobody terminates ends at Options.MaxDuration, answers with what was
// recorded, and says so in the server's log; a duration above the bound
// is refused naming it.
func TestNoDurationStopsAtTheServersBound(t *testing.T) {
	var log lockedBuffer
	_, c := serveWith(t, profileserver.Options{Log: &log, MaxDuration: 400 * time.Millisecond})
	work(t, "bounded")
	start := time.Now()
	resp, err := c.Profile(context.Background(), request(0))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	data := xspaceOf(t, resp)
	snap, err := xplane.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(snap.Meta.Stop.Mono - snap.Meta.Start.Mono); d < 400*time.Millisecond || took > time.Minute {
		t.Errorf("the capture recorded %v and answered after %v, want it to end at the 400ms bound", d, took)
	}
	if n := spans(t, data)["bounded"]; n < 50 {
		t.Errorf("%d bounded spans in the answer, want those of the 400ms", n)
	}
	if !strings.Contains(log.String(), `capture "2026_01_02_03_04_05" asked for no duration (until Terminate) and reached the server's bound of 400ms`) {
		t.Errorf("the server's log does not say the capture hit the bound: %q", log.String())
	}
	_, err = c.Profile(context.Background(), request(401))
	wantCode(t, err, codes.InvalidArgument, "duration_ms 401 out of range: want 1..400 (this server bounds a capture to 400ms)")

	if _, err := profileserver.StartServer("", profileserver.Options{MaxDuration: -time.Second}); err == nil || !strings.Contains(err.Error(), "MaxDuration -1s is negative") {
		t.Errorf("a negative MaxDuration: %v, want an error naming it", err)
	}
}

func TestProfileWhileALocalSessionRuns(t *testing.T) {
	_, c := serve(t)
	s, err := trace.StartSession(t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Profile(context.Background(), request(10))
	s.Stop()
	wantCode(t, err, codes.FailedPrecondition, "already running")
}

func TestClientGoneEndsTheCapture(t *testing.T) {
	_, c := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Profile(ctx, request(60_000))
		errc <- err
	}()
	waitCapturing(t)
	cancel()
	wantCode(t, <-errc, codes.Canceled, "")
	waitIdle(t)
	// The server keeps serving. (Its capture slot is freed when the ended
	// capture's handler returns, a moment after the session stopped.)
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err = c.Profile(context.Background(), request(10)); status.Code(err) != codes.FailedPrecondition {
			break
		}
	}
	if err != nil {
		t.Errorf("after a client left: %v", err)
	}
}

func TestStopEndsACaptureWithWhatWasRecorded(t *testing.T) {
	srv, c := serve(t)
	work(t, "before-stop")
	type result struct {
		resp *pb.ProfileResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Profile(context.Background(), request(60_000))
		done <- result{resp, err}
	}()
	waitCapturing(t)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	srv.Stop()
	if time.Since(start) > 15*time.Second {
		t.Errorf("Stop took %v", time.Since(start))
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if spans(t, xspaceOf(t, r.resp))["before-stop"] == 0 {
		t.Errorf("the capture Stop ended lacks what was recorded")
	}
	if _, ok := trace.Running(); ok {
		t.Errorf("a session runs after Stop")
	}
	srv.Stop() // a second Stop is harmless
}

func TestMonitor(t *testing.T) {
	_, c := serve(t)
	resp, err := c.Monitor(context.Background(), &pb.MonitorRequest{MonitoringLevel: 2, Timestamp: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"time: ", "process: ", "goroutines", "session: none running", "devices", "gpu_metrics_period_ms (int)"} {
		if !strings.Contains(resp.GetData(), want) {
			t.Errorf("idle Monitor lacks %q:\n%s", want, resp.GetData())
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Profile(context.Background(), request(60_000))
		done <- err
	}()
	waitCapturing(t)
	resp, err = c.Monitor(context.Background(), &pb.MonitorRequest{MonitoringLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.GetData(), `a remote capture (session "2026_01_02_03_04_05") running`) || strings.Contains(resp.GetData(), "advanced configuration") {
		t.Errorf("Monitor during a capture:\n%s", resp.GetData())
	}
	if _, err := c.Terminate(context.Background(), &pb.TerminateRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestListenAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr, wantHost string
		warn           bool
	}{
		{"", "127.0.0.1", false},
		{":0", "127.0.0.1", false},
		{"0", "127.0.0.1", false},
		{"127.0.0.1:0", "127.0.0.1", false},
		{"0.0.0.0:0", "", true}, // Go reports a dual-stack [::] listener
	} {
		var log bytes.Buffer
		srv, err := profileserver.StartServer(tc.addr, profileserver.Options{Log: &log})
		if err != nil {
			t.Errorf("%q: %v", tc.addr, err)
			continue
		}
		if tc.wantHost != "" && !strings.HasPrefix(srv.Addr(), tc.wantHost+":") {
			t.Errorf("%q listens on %s, want %s", tc.addr, srv.Addr(), tc.wantHost)
		}
		if warned := strings.Contains(log.String(), "every interface"); warned != tc.warn {
			t.Errorf("%q: warning %v, want %v (log %q)", tc.addr, warned, tc.warn, log.String())
		}
		srv.Stop()
	}
	for _, bad := range []string{"localhost", "1.2.3.4:notaport", ":70000", "::1"} {
		if _, err := profileserver.StartServer(bad, profileserver.Options{}); err == nil {
			t.Errorf("StartServer(%q) succeeded", bad)
		}
	}
}
