// Package trace starts and stops devprof trace sessions: the one place where
// devprof's flow is wired together. While a session runs, sources (package
// annotate, and device tracers) append to its event buffer (package
// trace/event); Stop snapshots the buffer and hands it to the exporters,
// which write the run directory
//
//	<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.pftrace
//
// that ui.perfetto.dev opens and TensorBoard's profile plugin discovers.
//
// The one-line form mirrors jax.profiler.trace:
//
//	stop := trace.Start("/tmp/prof")
//	defer stop()
//
// Only one session runs at a time. Setting DEVPROF_DISABLE=1 in the
// environment turns every session into a no-op.
package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/chrome"
	"github.com/devprof/devprof/exporters/perfetto"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/perfettolink"
	cupti "github.com/devprof/devprof/sources/cupti"
)

// ErrAlreadyStarted is returned when a session is started while another
// one is running.
var ErrAlreadyStarted = errors.New("a trace session is already running; only one session may run at a time")

// Session is a running or stopped trace session.
type Session struct {
	cfg    config
	logdir string
	runDir string
	buf    *recorder.Buffer // nil for a disabled (no-op) session
	meta   event.Meta

	snap     *event.Snapshot
	gpu      *cupti.Source // nil when device tracing is off or failed to start
	calStop  chan struct{} // ends the calibration goroutine
	stopOnce sync.Once
	stopErr  error
	out      Outputs
}

// Outputs lists the files a stopped session wrote. Empty fields were not
// written.
type Outputs struct {
	RunDir   string // <logdir>/plugins/profile/<run>
	Perfetto string // <run>/<host>.pftrace(.gz)
	XPlane   string // <run>/<host>.xplane.pb (TensorBoard profile)
	Chrome   string // <run>/<host>.trace.json.gz
	Events   int    // events written
	Dropped  int64  // events dropped because the buffer was full
}

var running sync.Mutex // serialises Start against Stop of the running session's slot
var current *Session

// Start starts a session writing into logdir with default options and
// returns the function that stops it. Errors are reported on standard
// error; use StartSession to handle them yourself.
func Start(logdir string) (stop func()) {
	s, err := StartSession(logdir, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devprof: %v\n", err)
		return func() {}
	}
	return func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devprof: %v\n", err)
		}
		if s.out.Perfetto != "" {
			fmt.Fprintf(os.Stderr, "devprof: wrote %s (%d events, %d dropped)\n", s.out.Perfetto, s.out.Events, s.out.Dropped)
		}
	}
}

// StartSession starts a session writing into logdir. opts may be nil for
// the defaults. It fails if the options are invalid, the log directory
// cannot be written, or another session is running.
func StartSession(logdir string, opts *Options) (*Session, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, logdir: logdir}
	if disabled() {
		s.out = Outputs{}
		return s, nil
	}
	if logdir == "" {
		return nil, errors.New("no log directory given")
	}
	s.meta = event.Meta{
		Host:              cfg.host,
		PID:               os.Getpid(),
		Program:           cfg.prog,
		HostTracerLevel:   cfg.hostLevel,
		DeviceTracerLevel: cfg.deviceLevel,
		MaxEvents:         cfg.maxEvents,
	}
	if s.meta.Host == "" {
		s.meta.Host, _ = os.Hostname()
		if s.meta.Host == "" {
			s.meta.Host = "localhost"
		}
	}
	if s.meta.Program == "" {
		s.meta.Program = filepath.Base(os.Args[0])
	}

	running.Lock()
	defer running.Unlock()
	if current != nil {
		return nil, fmt.Errorf("%w (started %s, writing to %s)", ErrAlreadyStarted, time.Unix(0, current.meta.Start.Wall).Format(time.TimeOnly), current.logdir)
	}
	now := time.Now()
	runDir, err := makeRunDir(logdir, cfg.sessionID, now)
	if err != nil {
		return nil, err
	}
	s.runDir = runDir
	s.buf = recorder.NewBuffer(cfg.maxEvents, uint8(cfg.hostLevel))
	if !recorder.Activate(s.buf) {
		os.Remove(runDir)
		return nil, ErrAlreadyStarted
	}
	current = s
	s.meta.Start = recorder.ReadClocks()
	s.calStop = make(chan struct{})
	go calibrate(s.buf, s.calStop)
	if cfg.deviceLevel > 0 {
		gcfg := cfg.gpu
		if gcfg.MaxRecords == 0 {
			gcfg.MaxRecords = cfg.maxEvents
		}
		src, err := cupti.Start(s.buf, gcfg)
		if err != nil {
			// The host trace goes on; the reason is in every output.
			warnOnce(cupti.Explain(err))
			s.meta.Warnings = append(s.meta.Warnings, cupti.Explain(err))
		}
		s.gpu = src
	}
	return s, nil
}

var warned sync.Map // message -> struct{}: what warnOnce already printed

// warnOnce prints msg on standard error the first time the process sees it.
func warnOnce(msg string) {
	if _, dup := warned.LoadOrStore(msg, struct{}{}); !dup {
		fmt.Fprintln(os.Stderr, msg)
	}
}

// calibrate pairs the tick source with the monotonic clock every second
// while the session runs, so converted times stay exact however long it
// runs (see recorder.Buffer.Calibrate).
func calibrate(b *recorder.Buffer, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.Calibrate()
		case <-stop:
			return
		}
	}
}

func disabled() bool {
	v := strings.TrimSpace(os.Getenv("DEVPROF_DISABLE"))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// makeRunDir creates <logdir>/plugins/profile/<run>, choosing a fresh name
// if a run of the same second exists, and checks that it can be written.
func makeRunDir(logdir, sessionID string, now time.Time) (string, error) {
	base := filepath.Join(logdir, "plugins", "profile")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("cannot create log directory: %w", err)
	}
	name := sessionID
	if name == "" {
		name = now.Format("2006_01_02_15_04_05")
	}
	for i := 1; ; i++ {
		dir := filepath.Join(base, name)
		if i > 1 {
			dir = fmt.Sprintf("%s_%d", dir, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			probe, err := os.CreateTemp(dir, ".devprof-probe-*")
			if err != nil {
				os.Remove(dir)
				return "", fmt.Errorf("log directory is not writable: %w", err)
			}
			probe.Close()
			os.Remove(probe.Name())
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", fmt.Errorf("cannot create run directory: %w", err)
		}
	}
}

// Stop ends the session and writes its outputs. It is safe to call more
// than once and from a deferred call while a panic unwinds: later calls
// return the first call's result.
func (s *Session) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

// Outputs returns what Stop wrote. It is empty before Stop.
func (s *Session) Outputs() Outputs { return s.out }

// Snapshot returns the events of a stopped session, or nil before Stop or
// for a disabled session. It is meant for tests and custom exporters.
func (s *Session) Snapshot() *event.Snapshot { return s.snap }

// RunDir returns the run directory the session writes into ("" when
// disabled).
func (s *Session) RunDir() string { return s.runDir }

func (s *Session) stop() error {
	if s.buf == nil {
		return nil
	}
	recorder.Deactivate(s.buf)
	close(s.calStop)
	s.meta.Stop = recorder.ReadClocks()
	if s.gpu != nil {
		rep := s.gpu.Stop()
		s.meta.Notes = append(s.meta.Notes, rep.Clock)
		s.meta.Warnings = append(s.meta.Warnings, rep.Warnings...)
		for _, w := range rep.Warnings {
			warnOnce(w)
		}
	}
	running.Lock()
	if current == s {
		current = nil
	}
	running.Unlock()

	snap := s.buf.Snapshot(s.meta)
	s.snap = snap
	s.out = Outputs{RunDir: s.runDir, Events: len(snap.Events), Dropped: snap.Meta.Dropped}
	host := fileHost(s.meta.Host)
	// The formats are written side by side, each by its own goroutine: they
	// only read the snapshot, and its layout is computed once, up front.
	snap.Layout()
	type output struct {
		path  *string
		name  string
		write func(*atomicfile.File) error
	}
	var outs []output
	if s.cfg.perfetto {
		name := host + ".pftrace"
		if s.cfg.gzip {
			name += ".gz"
		}
		outs = append(outs, output{&s.out.Perfetto, name, func(f *atomicfile.File) error {
			return perfetto.Write(f, snap, perfetto.WriteOptions{Gzip: s.cfg.gzip})
		}})
	}
	if s.cfg.xplane {
		outs = append(outs, output{&s.out.XPlane, host + ".xplane.pb", func(f *atomicfile.File) error { return xplane.Write(f, snap) }})
	}
	if s.cfg.chrome {
		outs = append(outs, output{&s.out.Chrome, host + ".trace.json.gz", func(f *atomicfile.File) error { return chrome.Write(f, snap) }})
	}
	errs := make([]error, len(outs))
	var wg sync.WaitGroup
	for i, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(s.runDir, o.name)
			if errs[i] = writeFile(p, o.write); errs[i] == nil {
				*o.path = p
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if s.cfg.link && s.out.Perfetto != "" {
		if err := perfettolink.Serve(context.Background(), s.out.Perfetto, perfettolink.Options{Timeout: s.cfg.linkTimeout}); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(*atomicfile.File) error) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// fileHost makes a host name safe as a file name, as TensorFlow does (':'
// becomes '_'), and also replaces path separators.
func fileHost(h string) string {
	return strings.NewReplacer(":", "_", "/", "_", `\`, "_").Replace(h)
}
