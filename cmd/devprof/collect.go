package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/runstore"
	pb "github.com/devprof/devprof/profileserver/profilerpb"
)

// collectConcurrency bounds how many hosts devprof collect captures at
// once.
const collectConcurrency = 16

// collectInterrupt is the signal that ends a capture early; tests replace
// it with their own channel.
var collectInterrupt = func(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt)
}

// runCollect captures a profile from running profile servers
// (tensorflow.ProfilerService: package profileserver, jax.profiler.start_server),
// with jax.collect_profile's flags, and writes one run directory with one
// <host>.xplane.pb per host.
func runCollect(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("collect", stderr)
	logdir := fs.String("log_dir", "", "log directory; the run goes to `DIR`/plugins/profile/<run> (default: a new temporary directory)")
	hostLevel := fs.Uint("host_tracer_level", 2, "host tracer level: 0 off, 1 user annotations, 2 also expensive runtime work, 3 also verbose")
	deviceLevel := fs.Uint("device_tracer_level", 1, "device tracer level: 0 off, 1 on")
	pythonLevel := fs.Uint("python_tracer_level", 0, "Python tracer level, for JAX servers: 0 off (not sent), 1 on (a Go server ignores it)")
	noLink := fs.Bool("no_perfetto_link", false, "write the merged Perfetto trace but serve no ui.perfetto.dev link")
	timeout := fs.Duration("timeout", 0, "per-host limit on the whole capture (default: 2 × the duration + 60s, as TSL's client)")
	tablesDst := fs.String("tables", "", "also export the run as Parquet tables into `DST`, a directory or a bucket URL (as devprof export RUN DST does)")
	snapshot := fs.Bool("snapshot", false, "take each host's flight-recorder snapshot (GetSnapshot: the last seconds it kept) at once, instead of capturing DURATION_MS")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *snapshot {
		if fs.NArg() != 1 {
			fmt.Fprintf(stderr, "devprof collect --snapshot: want ADDR[,ADDR…] (and no duration: a snapshot is what the hosts already hold), got %d arguments\n", fs.NArg())
			fs.Usage()
			return errUsage
		}
	} else if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "devprof collect: want ADDR[,ADDR…] and DURATION_MS, got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	addrs, err := collectAddrs(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "devprof collect: %v\n", err)
		return errUsage
	}
	var d time.Duration
	if *snapshot {
		if *timeout <= 0 {
			*timeout = snapshotTimeout
		}
	} else {
		ms, err := strconv.ParseUint(fs.Arg(1), 10, 32)
		if err != nil || ms == 0 {
			fmt.Fprintf(stderr, "devprof collect: DURATION_MS %q: want a positive number of milliseconds\n", fs.Arg(1))
			return errUsage
		}
		d = time.Duration(ms) * time.Millisecond
		if *timeout <= 0 {
			*timeout = 2*d + time.Minute
		}
	}
	if err := checkTablesDst(*tablesDst); err != nil {
		return err
	}
	// A bucket URL: the run is written to a local staging directory and
	// uploaded at the end (publishRemote).
	remote, publish := "", func() {}
	if runstore.IsURL(*logdir) {
		remote = *logdir
		if *logdir, err = remoteLogdir(remote); err != nil {
			return err
		}
	}
	if *logdir == "" {
		if *logdir, err = os.MkdirTemp("", "devprof-collect-"); err != nil {
			return err
		}
	}
	run := time.Now().Format("2006_01_02_15_04_05")
	runDir := filepath.Join(*logdir, "plugins", "profile", run)
	if remote != "" {
		kept := true
		publish = sync.OnceFunc(func() {
			kept = !publishRemote(&err, stdout, stderr, runDir, runstore.Join(remote, "plugins", "profile", run))
		})
		defer func() {
			if publish(); !kept {
				os.RemoveAll(*logdir)
			}
		}()
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("cannot create the run directory: %w", err)
	}

	ctx, stop := collectInterrupt(context.Background())
	defer stop()
	var fetch func(addr string) (string, error)
	stopCountdown := func() {}
	if *snapshot {
		fmt.Fprintf(stderr, "devprof collect: taking the flight-recorder snapshot of %d host(s)\n", len(addrs))
		fetch = func(addr string) (string, error) { return snapshotOne(addr, runDir, *timeout) }
	} else {
		opts := &pb.ProfileOptions{
			Version: 1, HostTracerLevel: uint32(*hostLevel), DeviceTracerLevel: uint32(*deviceLevel),
			PythonTracerLevel: uint32(*pythonLevel), IncludeDatasetOps: true, EnableHloProto: true,
			DurationMs: uint64(d / time.Millisecond), RepositoryPath: *logdir, SessionId: run,
		}
		fmt.Fprintf(stderr, "devprof collect: capturing %v from %d host(s); Ctrl-C ends it early and keeps what was recorded\n", d, len(addrs))
		fetch = func(addr string) (string, error) { return collectOne(ctx, addr, opts, runDir, *timeout) }
		stopCountdown = countdown(stderr, d)
	}
	results := make([]error, len(addrs))
	paths := make([]string, len(addrs))
	sem := make(chan struct{}, collectConcurrency)
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			paths[i], results[i] = fetch(addr)
		}()
	}
	wg.Wait()
	stopCountdown()
	var errs []error
	var names, sent []string // the hosts that returned a trace, and its file
	wrote := 0
	for i, err := range results {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addrs[i], err))
			continue
		}
		wrote++
		names, sent = append(names, addrs[i]), append(sent, paths[i])
	}
	// The merge reads one host's trace at a time: N hosts cost one host's
	// memory beside the merged trace, not N.
	var mergedSnap *event.Snapshot
	mergedHosts := 0
	if len(sent) > 0 {
		var merrs []error
		mergedSnap, merrs = mergeHostFiles(names, sent)
		errs = append(errs, merrs...)
		mergedHosts = len(sent) - len(merrs)
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "devprof collect: %v\n", err)
	}
	if wrote == 0 {
		os.Remove(runDir) // only if empty: TensorBoard would list it as a run
		if *snapshot {
			return fmt.Errorf("no host returned a snapshot")
		}
		return fmt.Errorf("no host returned a trace")
	}
	if remote == "" { // else publishRemote prints the run's URL
		fmt.Fprintf(stdout, "%s\n", runDir)
	}
	fmt.Fprintf(stderr, "devprof collect: wrote %d of %d host(s) to %s; open with xprof --logdir %s, or devprof summary %s\n",
		wrote, len(addrs), runDir, *logdir, runDir)
	var merged string
	if mergedHosts > 0 {
		merged = filepath.Join(runDir, collectMergedName)
		if err := formats.WriteFile(merged, formats.Perfetto, mergedSnap); err != nil {
			errs = append(errs, fmt.Errorf("merged trace: %w", err))
			fmt.Fprintf(stderr, "devprof collect: cannot write the merged trace: %v\n", err)
			merged = ""
		} else {
			fmt.Fprintf(stderr, "devprof collect: merged %d host(s), one process each, into %s\n", mergedHosts, merged)
		}
	}
	var tablesErr error
	if *tablesDst != "" {
		tablesErr = exportRun(runDir, run, *tablesDst, stderr)
	}
	if len(errs) > 0 {
		return errors.Join(fmt.Errorf("%d of %d host(s) failed", len(errs), len(addrs)), tablesErr)
	}
	if tablesErr != nil {
		return fmt.Errorf("the run is written, but not its tables: %w", tablesErr)
	}
	publish() // before the link, which waits for the browser
	if merged != "" && !*noLink {
		return serve(merged, 0, stderr)
	}
	return nil
}

// collectMergedName is the merged trace's name in the run directory: not
// <host>.pftrace, which would read as one host's trace, and not
// *.xplane.pb, so TensorBoard and xprof list the run's hosts unchanged.
const collectMergedName = "collect" + ".pftrace"

// countdown draws the seconds left of a capture of d on stderr, once a
// second, when stderr is a terminal; the returned func clears it.
func countdown(stderr io.Writer, d time.Duration) func() {
	if !isTerminal(stderr) {
		return func() {}
	}
	end := time.Now().Add(d)
	done := make(chan struct{})
	finished := make(chan struct{})
	m := &progressMeter{w: stderr}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			left := time.Until(end).Round(time.Second)
			if left < 0 {
				left = 0
			}
			fmt.Fprintf(stderr, "\rdevprof collect: capturing, %v left\033[K", left)
			m.drawn = true
			select {
			case <-done:
				m.clear()
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// collectAddrs splits ADDR[,ADDR…], strips grpc:// prefixes and checks
// each is HOST:PORT, as TSL's client does.
func collectAddrs(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimPrefix(strings.TrimSpace(a), "grpc://")
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || strings.Contains(host, "/") {
			return nil, fmt.Errorf("address %q: want HOST:PORT", a)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("address %q: port %q is not a number", a, port)
		}
		out = append(out, a)
	}
	return out, nil
}

// collectOne captures one host and writes <host>.xplane.pb. When ctx
// ends (Ctrl-C) it sends Terminate, so the server answers with what it
// recorded.
func collectOne(ctx context.Context, addr string, opts *pb.ProfileOptions, runDir string, timeout time.Duration) (string, error) {
	conn, err := dialProfiler(addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	c := pb.NewProfilerServiceClient(conn)
	rpcCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			tctx, tcancel := context.WithTimeout(rpcCtx, 5*time.Second)
			defer tcancel()
			c.Terminate(tctx, &pb.TerminateRequest{SessionId: opts.GetSessionId()})
		case <-done:
		}
	}()
	resp, err := c.Profile(rpcCtx, &pb.ProfileRequest{
		DurationMs: opts.GetDurationMs(), MaxEvents: 1_000_000, Opts: opts,
		RepositoryRoot: filepath.Dir(runDir), SessionId: opts.GetSessionId(), HostName: addr,
		// TSL's server (jax.profiler.start_server) answers with the XSpace
		// only when asked; otherwise it writes it on its own disk.
		EmitXspace: true,
	})
	if err != nil {
		return "", err
	}
	if resp.GetEmptyTrace() {
		return "", errors.New("no trace event was collected (the server recorded nothing in the window)")
	}
	path := filepath.Join(runDir, fileHostName(addr)+formats.XPlane.SessionExt)
	if ok, err := writeResponseXPlane(resp, path); ok {
		return path, err
	}
	// An older TSL server ignores emit_xspace and writes
	// <repository_root>/<session_id>/<host>.xplane.pb itself: that is path
	// when the server runs on this machine.
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		return path, nil
	}
	return "", errors.New("the answer holds no xplane.pb (a server on another machine that saved it on its own disk keeps it there)")
}

// dialProfiler makes a client connection to the profile server at addr
// (no TLS, as TSL's client; a whole XSpace fits in one answer).
func dialProfiler(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<31-1)))
}

// writeResponseXPlane writes the XSpace a ProfileResponse carries (as
// xplane.pb tool data, or in its xspace field) to path; ok is false when
// it carries none.
func writeResponseXPlane(resp *pb.ProfileResponse, path string) (ok bool, err error) {
	for _, td := range resp.GetToolData() {
		if td.GetName() == strings.TrimPrefix(formats.XPlane.SessionExt, ".") {
			return true, writeFileAtomic(path, td.GetData())
		}
	}
	if x := resp.GetXspace(); len(x) > 0 {
		return true, writeFileAtomic(path, x)
	}
	return false, nil
}

// fileHostName names a host's file as TSL's client does (':' → '_').
func fileHostName(addr string) string {
	return strings.NewReplacer(":", "_", "/", "_", `\`, "_").Replace(addr)
}

func writeFileAtomic(path string, b []byte) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
