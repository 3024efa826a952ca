package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/perfettolink"
)

// ErrAlreadyStarted is returned when a session is started while another
// one is running.
var ErrAlreadyStarted = errors.New("a trace session is already running; only one session may run at a time")

// Session is a running or stopped trace session.
type Session struct {
	cfg    config
	logdir string
	runDir string // made by Stop
	// profileDir is <logdir>/plugins/profile, runName the run's name in it.
	profileDir, runName string
	buf                 *recorder.Buffer // nil for a disabled (no-op) session
	meta                event.Meta

	snap     *event.Snapshot
	sources  []runningSource // started by startSources, stopped by stopSources
	calStop  chan struct{}   // ends the calibration goroutine
	stopOnce sync.Once
	stopErr  error
	out      Outputs
	// capture marks a session that writes no files (Capture): Stop only
	// snapshots it.
	capture bool
	// cpu is the Go-runtime source's CPU profile (GoRuntime.CPUProfile),
	// written as <host>.cpu.pb.gz.
	cpu *profile.Profile
	// flightMu orders flight-recorder snapshots against Stop, which sets
	// stopped under it before it changes meta.
	flightMu sync.Mutex
	stopped  bool
}

// Outputs lists the files a stopped session wrote. Empty fields were not
// written.
type Outputs struct {
	RunDir   string // <logdir>/plugins/profile/<run>; "" if nothing was written (the directory is removed)
	Perfetto string // <run>/<host>.pftrace(.gz)
	XPlane   string // <run>/<host>.xplane.pb (TensorBoard profile)
	Chrome   string // <run>/<host>.trace.json.gz
	Memory   string // <run>/<host>.memory.pb.gz: live device buffers at Stop, when device memory was tracked
	CPU      string // <run>/<host>.cpu.pb.gz: CPU samples labelled by span, with GoRuntime.CPUProfile
	Tables   string // with Options.Tables: that destination, once the session's Parquet tables are there
	Events   int    // events written
	Dropped  int64  // events the trace lost, over all sources (Meta.Dropped)
}

var running sync.Mutex // serialises Start against Stop of the running session's slot
var current *Session

// Start starts a session writing into logdir with default options and
// returns the function that stops it, which prints on standard error
// where the files went and the commands that open them (devprof serve,
// tensorboard --logdir). Errors are reported on standard error too; use
// StartSession to handle them yourself.
func Start(logdir string) (stop func()) {
	s, err := StartSession(logdir, Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "devprof: %v\n", err)
		return func() {}
	}
	return func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devprof: %v\n", err)
		}
		printOutputs(os.Stderr, logdir, s.out)
	}
}

// printOutputs says where a stopped session's files went and how to look
// at each, as JAX prints its link: a user of Start sees nothing else.
func printOutputs(w io.Writer, logdir string, out Outputs) {
	if out.RunDir == "" {
		return // disabled, or nothing written (Stop's error says why)
	}
	fmt.Fprintf(w, "devprof: wrote %d events (%d dropped) to %s\n", out.Events, out.Dropped, out.RunDir)
	if out.Perfetto != "" {
		fmt.Fprintf(w, "devprof:   Perfetto:    devprof serve %s   (or drag it onto https://ui.perfetto.dev)\n", shellQuote(out.Perfetto))
	}
	if out.XPlane != "" {
		fmt.Fprintf(w, "devprof:   TensorBoard: tensorboard --logdir %s   (or xprof --logdir %s)\n", shellQuote(logdir), shellQuote(logdir))
	}
	if out.Chrome != "" {
		fmt.Fprintf(w, "devprof:   Chrome JSON: %s   (chrome://tracing, ui.perfetto.dev)\n", out.Chrome)
	}
	if out.Memory != "" {
		fmt.Fprintf(w, "devprof:   Device memory: devprof memory %s   (or go tool pprof -top %s)\n", shellQuote(out.Memory), shellQuote(out.Memory))
	}
	if out.CPU != "" {
		fmt.Fprintf(w, "devprof:   CPU by span: go tool pprof -tagfocus span=NAME -top %s\n", shellQuote(out.CPU))
	}
	if out.Perfetto != "" || out.XPlane != "" {
		fmt.Fprintf(w, "devprof:   in a terminal: devprof summary %s   (go install github.com/devprof/devprof/cmd/devprof@latest)\n", shellQuote(logdir))
	}
}

// shellQuote quotes p for pasting into a POSIX shell when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:+,=@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// StartSession starts a session writing into logdir; the zero Options
// are the defaults. It fails if the options are invalid, the log directory
// cannot be written, or another session is running.
func StartSession(logdir string, opts Options) (*Session, error) {
	return startSession(logdir, opts, false)
}

// startSession starts a session; a capture session (capture true) has no
// log directory and Stop writes nothing (see Capture).
func startSession(logdir string, opts Options, capture bool) (*Session, error) {
	cfg, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, logdir: logdir, capture: capture}
	if disabled() {
		if capture {
			return nil, ErrDisabled
		}
		s.out = Outputs{}
		return s, nil
	}
	if logdir == "" && !capture {
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
		return nil, fmt.Errorf("%w (%s)", ErrAlreadyStarted, current.describe())
	}
	if !capture {
		// The run is named at Start (its start time, as JAX names runs) but
		// its directory is made at Stop, when there is something to write: a
		// program that exits without stopping leaves no empty run for
		// TensorBoard to list. Start checks that it could be written.
		check := checkProfileDir
		if runstore.IsURL(logdir) {
			check = checkStore
		}
		base, err := check(logdir)
		if err != nil {
			return nil, err
		}
		s.profileDir, s.runName = base, cfg.sessionID
		if s.runName == "" {
			s.runName = time.Now().Format("2006_01_02_15_04_05")
		}
	}
	if cfg.flight != nil {
		s.buf = recorder.NewRing(int64(cfg.flight.MaxEvents), uint8(cfg.hostLevel), cfg.flight.Window)
	} else {
		s.buf = recorder.NewBuffer(cfg.maxEvents, uint8(cfg.hostLevel))
	}
	if !recorder.Activate(s.buf) {
		return nil, ErrAlreadyStarted
	}
	current = s
	s.meta.Start = recorder.ReadClocks()
	s.calStop = make(chan struct{})
	go calibrate(s.buf, s.calStop)
	s.startSources()
	return s, nil
}

var warned sync.Map // message -> struct{}: what printOnce already printed

// printOnce prints msg on standard error the first time the process sees it.
func printOnce(msg string) {
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

// checkProfileDir makes <logdir>/plugins/profile and checks that a run
// directory could be written in it.
func checkProfileDir(logdir string) (string, error) {
	base := filepath.Join(logdir, "plugins", "profile")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("cannot create log directory: %w", err)
	}
	probe, err := os.CreateTemp(base, ".devprof-probe-*")
	if err != nil {
		return "", fmt.Errorf("log directory is not writable: %w", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return base, nil
}

// makeRunDir creates base/<name>, or base/<name>_2, _3... when a run of
// that name exists (two sessions started in the same second, or the same
// session id), never writing into another run.
func makeRunDir(base, name string) (string, error) {
	for i := 1; ; i++ {
		dir := filepath.Join(base, name)
		if i > 1 {
			dir = fmt.Sprintf("%s_%d", dir, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
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

// RunDir returns the run directory the session wrote into: "" before Stop,
// when disabled, and when nothing was written.
func (s *Session) RunDir() string { return s.runDir }

func (s *Session) stop() error {
	if s.buf == nil {
		return nil
	}
	s.flightMu.Lock()
	s.stopped = true
	s.flightMu.Unlock()
	recorder.Deactivate(s.buf)
	close(s.calStop)
	s.meta.Stop = recorder.ReadClocks()
	// The buffers live at Stop, taken before the memory source stops the
	// tracking this session started. A capture writes no files, so no
	// memory profile either.
	var mem *event.DeviceMemory
	if !s.capture {
		mem, _ = devmem.Snapshot()
	}
	if mem != nil {
		addUsage(mem, s.cfg.gpuMetrics)
	}
	s.stopSources()
	running.Lock()
	if current == s {
		current = nil
	}
	running.Unlock()

	snap := s.buf.Snapshot(s.meta)
	s.snap = snap
	s.out = Outputs{Events: len(snap.Events), Dropped: snap.Meta.Dropped()}
	if s.capture {
		return nil // the caller takes the snapshot (Capture)
	}
	out, err := s.writeRun(snap, mem, s.cpu, s.runName)
	if s.cfg.tables != nil {
		terr := writeTables(s.cfg.tables, snap, s.runName, fileHost(s.meta.Host))
		if terr == nil {
			out.Tables = s.cfg.tables.Dest()
		}
		err = errors.Join(err, terr)
	}
	out.Events, out.Dropped = s.out.Events, s.out.Dropped
	s.out, s.runDir = out, out.RunDir
	if err != nil {
		return err
	}
	if s.cfg.link && s.out.Perfetto != "" && runstore.IsURL(s.profileDir) {
		printOnce("devprof: the Perfetto link serves local files only: devprof serve " + shellQuote(s.out.Perfetto) + " serves this one")
	} else if s.cfg.link && s.out.Perfetto != "" {
		if err := perfettolink.Serve(context.Background(), s.out.Perfetto, perfettolink.Options{Timeout: s.cfg.linkTimeout}); err != nil {
			return err
		}
	}
	return nil
}

// writeRun writes snap (and mem and cpu, when not nil) into a new run
// directory <logdir>/plugins/profile/<name> in the formats the options ask
// for, as Stop does; a flight recorder's snapshots are written the same
// way. A bucket log directory gets the files written locally first, then
// uploaded whole (publishRun).
func (s *Session) writeRun(snap *event.Snapshot, mem *event.DeviceMemory, cpu *profile.Profile, name string) (Outputs, error) {
	var out Outputs
	if !s.cfg.perfetto && !s.cfg.xplane && !s.cfg.chrome && mem == nil && cpu == nil {
		return out, nil // no output asked for: no run directory either
	}
	remote := runstore.IsURL(s.profileDir)
	var runDir string
	var err error
	if remote {
		runDir, err = os.MkdirTemp("", "devprof-run-")
	} else {
		runDir, err = makeRunDir(s.profileDir, name)
	}
	if err != nil {
		return out, err
	}
	out.RunDir = runDir
	host := fileHost(s.meta.Host)
	// The formats are written side by side, each by its own goroutine: they
	// only read the snapshot, and its layout is computed once, up front.
	snap.CompactLayout()
	type output struct {
		path   *string
		format *formats.Format
		name   string
	}
	var outs []output
	if s.cfg.perfetto {
		name := host + formats.Perfetto.SessionExt
		if s.cfg.gzip {
			name += ".gz"
		}
		outs = append(outs, output{&out.Perfetto, formats.Perfetto, name})
	}
	if s.cfg.xplane {
		outs = append(outs, output{&out.XPlane, formats.XPlane, host + formats.XPlane.SessionExt})
	}
	if s.cfg.chrome {
		outs = append(outs, output{&out.Chrome, formats.Chrome, host + formats.Chrome.SessionExt})
	}
	errs := make([]error, len(outs), len(outs)+3)
	var wg sync.WaitGroup
	if mem != nil {
		wg.Add(1)
		errs = append(errs, nil)
		k := len(errs) - 1
		go func() {
			defer wg.Done()
			p := filepath.Join(runDir, host+MemoryProfileExt)
			if errs[k] = writeMemoryProfile(p, mem); errs[k] == nil {
				out.Memory = p
			}
		}()
	}
	if cpu != nil {
		wg.Add(1)
		errs = append(errs, nil)
		k := len(errs) - 1
		go func() {
			defer wg.Done()
			p := filepath.Join(runDir, host+CPUProfileExt)
			if errs[k] = writeCPUProfile(p, cpu); errs[k] == nil {
				out.CPU = p
			}
		}()
	}
	for i, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(runDir, o.name)
			if errs[i] = writeOutput(p, o.format, snap); errs[i] == nil {
				*o.path = p
			}
		}()
	}
	wg.Wait()
	if remote {
		errs = append(errs, publishRun(runDir, s.profileDir, name, host, &out))
		runDir = out.RunDir
	}
	if out.Perfetto == "" && out.XPlane == "" && out.Chrome == "" && out.Memory == "" && out.CPU == "" {
		// Nothing was written (every write failed, or no output was
		// asked for): TensorBoard would list the empty directory as a run.
		// os.Remove removes a directory only while it is empty.
		if fi, err := os.Lstat(runDir); err == nil && fi.IsDir() {
			os.Remove(runDir)
		}
		out.RunDir = ""
	}
	out.Events, out.Dropped = len(snap.Events), snap.Meta.Dropped()
	return out, errors.Join(errs...)
}

// fileHost makes a host name safe as a file name, as TensorFlow does (':'
// becomes '_'), and also replaces path separators.
func fileHost(h string) string {
	return strings.NewReplacer(":", "_", "/", "_", `\`, "_").Replace(h)
}

// writeOutput writes one output file; tests replace it to make writes fail.
var writeOutput = formats.WriteFile

// CPUProfileExt ends the name of the CPU profile a session writes with
// GoRuntime.CPUProfile: <host>.cpu.pb.gz, its samples labelled span=<name>.
const CPUProfileExt = ".cpu.pb.gz"

// writeCPUProfile writes a CPU profile (gzip-compressed, as go tool pprof
// reads it) atomically.
func writeCPUProfile(path string, p *profile.Profile) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := p.Write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// writeMemoryProfile writes the device-memory profile; tests replace it.
var writeMemoryProfile = pprof.WriteFile
