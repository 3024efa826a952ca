package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/tables"
)

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr)
	runName := fs.String("run", "", "the run `NAME` of every row (default: the name of the directory each trace is in, its run directory)")
	hostName := fs.String("host", "", "the host `NAME` of every row (default: the host the trace names, else its file name without the extension)")
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkMaxEvents("export", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("export", *maxGoroutines, stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "devprof export: want SRC and DST, got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	for _, f := range []struct{ name, v string }{{"run", *runName}, {"host", *hostName}} {
		if strings.ContainsAny(f.v, "\x00\n") {
			fmt.Fprintf(stderr, "devprof export: -%s %q: a name is one line\n", f.name, f.v)
			return errUsage
		}
	}
	src, dst := fs.Arg(0), fs.Arg(1)
	start := time.Now()
	traces, events, err := exportTables(src, dst, exportNames{run: *runName, host: *hostName},
		readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines}, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s, %s) → %s in %v\n", runstore.Display(src), plural(int64(traces), "trace"), plural(events, "event"),
		runstore.Display(dst), time.Since(start).Round(time.Millisecond))
	return nil
}

// exportNames are the run and host names the user gave ("": each
// trace's own).
type exportNames struct{ run, host string }

// exportTables exports every trace src stands for into dst, all or
// nothing, and returns how many traces and events it exported.
func exportTables(src, dst string, names exportNames, lim readLimits, stderr io.Writer) (traces int, events int64, err error) {
	inputs, err := exportInputs(src)
	if err != nil {
		return 0, 0, err
	}
	ex, err := newExport(dst)
	if err != nil {
		return 0, 0, err
	}
	stop := ex.removeOnSignal(os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer ex.abandon()
	for _, in := range inputs {
		o := tables.Options{Run: cmp.Or(names.run, in.run), Host: names.host, Session: in.session}
		n, err := ex.add(in.loc, o, lim, stderr)
		if err != nil {
			return 0, 0, err
		}
		events += n
	}
	if err := ex.publish(); err != nil {
		return 0, 0, err
	}
	return len(inputs), events, nil
}

// exportInput is one trace devprof export reads, and the run and session
// its rows get.
type exportInput struct {
	loc          string // a path or a URL
	run, session string
}

// exportInputs resolves SRC: a trace file (or object) stands for itself;
// a run directory for each trace in it, a log directory for each trace
// of each of its runs. A host's trace written in several formats (a
// session's <host>.pftrace and <host>.xplane.pb) is read once, in the
// first of traceExts' formats.
func exportInputs(src string) ([]exportInput, error) {
	var runs []string
	var list func(run string) ([]string, error)
	if runstore.IsURL(src) {
		ctx := context.Background()
		e, err := runstore.Stat(ctx, src)
		if err != nil {
			return nil, err
		}
		if !e.Dir {
			return []exportInput{inputOf(src, runstore.Base(runstore.Dir(src)))}, nil
		}
		profile := runstore.Join(src, "plugins", "profile")
		entries, err := runstore.List(ctx, profile)
		if err != nil {
			return nil, err
		}
		for _, r := range entries {
			if r.Dir {
				runs = append(runs, runstore.Join(profile, r.Name))
			}
		}
		if len(runs) == 0 {
			runs = []string{src}
		}
		list = func(run string) ([]string, error) {
			entries, err := runstore.List(ctx, run)
			var names []string
			for _, e := range entries {
				if !e.Dir {
					names = append(names, e.Name)
				}
			}
			return names, err
		}
	} else {
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			abs, err := filepath.Abs(src)
			if err != nil {
				return nil, err
			}
			return []exportInput{inputOf(src, filepath.Base(filepath.Dir(abs)))}, nil
		}
		if runs, _, err = runsOf(src); err != nil {
			return nil, err
		}
		list = func(run string) ([]string, error) {
			entries, err := os.ReadDir(run)
			var names []string
			for _, e := range entries {
				if e.Type().IsRegular() {
					names = append(names, e.Name())
				}
			}
			return names, err
		}
	}
	var inputs []exportInput
	for _, run := range runs {
		names, err := list(run)
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		seen := map[string]bool{}
		for _, ext := range traceExts {
			for _, name := range names {
				stem, ok := strings.CutSuffix(name, ext)
				// devprof collect's merged trace repeats its hosts' traces.
				if !ok || stem == "" || strings.HasPrefix(name, ".") || seen[stem] || name == collectMergedName {
					continue
				}
				seen[stem] = true
				loc := filepath.Join(run, name)
				if runstore.IsURL(run) {
					loc = runstore.Join(run, name)
				}
				runName := runstore.Base(run)
				if !runstore.IsURL(run) {
					abs, err := filepath.Abs(run)
					if err != nil {
						return nil, err
					}
					runName = filepath.Base(abs)
				}
				inputs = append(inputs, exportInput{loc: loc, run: runName, session: stem})
			}
		}
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%s holds no trace (%s) to export", runstore.Display(src), strings.Join(traceExts, ", "))
	}
	return inputs, nil
}

// inputOf is a single trace file's input: its session is its name
// without the trace extension.
func inputOf(loc, run string) exportInput {
	name := runstore.Base(loc)
	if !runstore.IsURL(loc) {
		name = filepath.Base(loc)
	}
	session := name
	for _, f := range formats.All() {
		for _, ext := range f.Extensions {
			if s, ok := strings.CutSuffix(strings.ToLower(name), ext); ok && len(s) < len(session) {
				session = name[:len(s)]
			}
		}
	}
	if session == "" {
		session = name
	}
	return exportInput{loc: loc, run: run, session: session}
}

// An export writes the tables of every trace into a staging directory,
// then publishes them at once: a local destination gets them by hard
// link (create-only) from staging in the same file system, hosts last; a
// bucket gets them uploaded, create-only, hosts last. Until publish
// nothing is at the destination; on an error or a signal, what publish
// had put there is taken back (locally: a bucket's objects stay, see
// docs/tables.md) and staging is removed.
type export struct {
	dst     string
	remote  bool
	made    bool // dst did not exist: abandon removes it if it stays empty
	staging string
	files   []string // written in staging, relative to it, hosts last

	mu        sync.Mutex // held by publish steps; the signal handler takes it for good
	published []string   // local paths placed at the destination
}

func newExport(dst string) (*export, error) {
	e := &export{dst: dst, remote: runstore.IsURL(dst)}
	var err error
	if e.remote {
		if err := runstore.Check(context.Background(), dst); err != nil {
			return nil, err
		}
		e.staging, err = os.MkdirTemp("", "devprof-export-")
	} else {
		if st, serr := os.Stat(dst); serr == nil && !st.IsDir() {
			return nil, fmt.Errorf("%s is a file, not a directory for the tables", dst)
		}
		if _, serr := os.Stat(dst); errors.Is(serr, os.ErrNotExist) {
			e.made = true
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return nil, err
		}
		// In the destination, so that publishing is a link, not a copy;
		// hidden, so that globs over the tables do not see it.
		e.staging, err = os.MkdirTemp(dst, ".devprof-export-")
	}
	return e, err
}

// exportOnTwoCores reports whether an export runs its tables on a
// goroutine of their own, behind a sinkpipe.Pipe (a variable: tests take
// both paths).
var exportOnTwoCores = func() bool { return runtime.GOMAXPROCS(0) > 1 }

// add exports the trace at loc into staging and returns its events.
func (e *export) add(loc string, o tables.Options, lim readLimits, stderr io.Writer) (int64, error) {
	if runstore.IsURL(loc) {
		return readRemote(loc, func(local string) (int64, error) { return e.add(local, o, lim, stderr) })
	}
	f, err := formats.Detect(loc)
	if err != nil {
		return 0, err
	}
	o.SourceFormat = f.Name
	ro := formats.ReadOptions{MaxEvents: lim.maxEvents}
	if isTerminal(stderr) {
		m := &progressMeter{w: stderr, label: "devprof export: reading " + loc, every: 200 * time.Millisecond}
		defer m.clear()
		ro.Progress = m.update
	}
	var readErr error
	paths, err := tables.Export(e.staging, event.Meta{}, o, func(w event.Sink) error {
		// Export writes rows as events come: on two cores reading and
		// writing overlap, and an export runs at about the slower one's
		// rate.
		readErr = readInto(f, loc, w, exportOnTwoCores(), lim, ro)
		return readErr
	})
	if readErr != nil {
		return 0, readErr
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", loc, err)
	}
	var events int64
	for _, rel := range paths {
		if strings.HasPrefix(rel, tables.TableHosts+"/") {
			hosts, err := readHosts(filepath.Join(e.staging, filepath.FromSlash(rel)))
			if err != nil {
				return 0, err
			}
			if len(hosts) > 0 {
				h := hosts[0]
				events = h.Spans + h.Instants + h.Counters + h.Kernels + h.Memory
			}
		}
	}
	e.files = append(e.files, paths...)
	return events, nil
}

func readHosts(path string) ([]tables.Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return tables.Read[tables.Host](f, st.Size())
}

// order returns the staged files with every hosts file last: a session
// listed in hosts has all its tables published.
func (e *export) order() []string {
	files := make([]string, 0, len(e.files))
	var hosts []string
	for _, f := range e.files {
		if strings.HasPrefix(f, tables.TableHosts+"/") {
			hosts = append(hosts, f)
		} else {
			files = append(files, f)
		}
	}
	return append(files, hosts...)
}

// publish moves the staged tables to the destination, none replacing a
// file there, and removes staging.
func (e *export) publish() error {
	files := e.order()
	if e.remote {
		return e.upload(files)
	}
	for _, rel := range files { // all or nothing: look before linking any
		if _, err := os.Lstat(filepath.Join(e.dst, filepath.FromSlash(rel))); err == nil {
			return fmt.Errorf("%s is already there: that run, host and session were exported before (remove it to export again)", filepath.Join(e.dst, filepath.FromSlash(rel)))
		}
	}
	for _, rel := range files {
		if err := e.link(rel); err != nil {
			e.takeBack()
			return err
		}
	}
	e.abandon()
	return nil
}

// link places one staged file at the destination.
func (e *export) link(rel string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	from := filepath.Join(e.staging, filepath.FromSlash(rel))
	to := filepath.Join(e.dst, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := runstore.Place(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s is already there: that run, host and session were exported before (remove it to export again)", to)
		}
		return err
	}
	e.published = append(e.published, to)
	return nil
}

// takeBack removes what publish had placed at a local destination.
func (e *export) takeBack() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removePublished()
}

func (e *export) removePublished() {
	runstore.Unplace(e.dst, e.published)
	e.published = nil
}

// upload puts the staged files in the bucket, create-only, hosts last.
func (e *export) upload(files []string) error {
	ctx := context.Background()
	for i, rel := range files {
		to := runstore.Join(e.dst, strings.Split(rel, "/")...)
		err := runstore.Put(ctx, to, filepath.Join(e.staging, filepath.FromSlash(rel)), runstore.PutOptions{NoOverwrite: true})
		if err != nil {
			if errors.Is(err, runstore.ErrExist) {
				err = fmt.Errorf("%s is already there: that run, host and session were exported before", runstore.Display(to))
			}
			if i > 0 {
				err = fmt.Errorf("%w; %d of the %d files were uploaded before it, without their hosts rows, which readers that join on hosts skip (docs/tables.md)", err, i, len(files))
			}
			return err
		}
	}
	return nil
}

// abandon removes staging, and the destination if this export made it
// and it holds nothing.
func (e *export) abandon() {
	os.RemoveAll(e.staging)
	if e.made {
		os.Remove(e.dst)
	}
}

// removeOnSignal makes sigs take back what the export published and
// remove staging, then end the process as the signal would have, until
// stop is called.
func (e *export) removeOnSignal(sigs ...os.Signal) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			e.mu.Lock() // held until the process ends: no link after this
			e.removePublished()
			// A table being written may have made a directory as
			// RemoveAll went: again until staging is gone.
			for range 10 {
				if os.RemoveAll(e.staging) == nil {
					if _, err := os.Lstat(e.staging); errors.Is(err, os.ErrNotExist) {
						break
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			if e.made {
				os.Remove(e.dst)
			}
			signal.Reset(sig)
			if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(sig) == nil {
				time.Sleep(time.Second)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

// checkTablesDst checks, before a capture, that the tables' destination
// of devprof collect --tables can be written: a bucket is reached, a
// local path is not a file.
func checkTablesDst(dst string) error {
	switch {
	case dst == "":
		return nil
	case runstore.IsURL(dst):
		if err := runstore.Check(context.Background(), dst); err != nil {
			return fmt.Errorf("--tables: %w", err)
		}
	default:
		if st, err := os.Stat(dst); err == nil && !st.IsDir() {
			return fmt.Errorf("--tables: %s is a file, not a directory for the tables", dst)
		}
	}
	return nil
}

// exportRun exports the run devprof collect wrote into runDir (its hosts'
// traces) into dst, for collect --tables, and says so on stderr.
func exportRun(runDir, run, dst string, stderr io.Writer) error {
	traces, events, err := exportTables(runDir, dst, exportNames{run: run}, readLimits{}, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "devprof collect: exported %s (%s) as tables to %s\n", plural(int64(traces), "trace"), plural(events, "event"), runstore.Display(dst))
	return nil
}
