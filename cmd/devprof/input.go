package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/devprof/devprof/internal/runstore"
)

// traceExts are the names a session gives its outputs, in the order a
// directory's trace is chosen: Perfetto reads fastest and opens anywhere,
// the XSpace is always written, Chrome JSON only on request.
var traceExts = []string{".pftrace", ".pftrace.gz", ".xplane.pb", ".trace.json.gz"}

// inputFile resolves the FILE argument of a command that reads a trace.
// A file is returned as it is. A directory that is a log directory (it has
// plugins/profile/<run>/) or a run directory stands for its newest run's
// trace, which is named on stderr so the user knows what was read; any
// other directory is an error, since no reader can make sense of it.
func inputFile(cmd, path string, stderr io.Writer) (string, error) {
	if runstore.IsURL(path) {
		return remoteInput(cmd, path, traceExts, "trace", stderr)
	}
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return path, nil // the readers explain a missing or unreadable file
	}
	runs, profile, err := runsOf(path)
	if err != nil {
		return "", err
	}
	file, err := newestOf(runs, runTrace)
	switch {
	case err != nil:
		return "", err
	case file != "":
		fmt.Fprintf(stderr, "devprof %s: %s is a directory; reading its newest trace, %s\n", cmd, path, file)
		return file, nil
	case profile != "":
		return "", fmt.Errorf("%s is a log directory with no trace (%s) in its runs under %s", path, strings.Join(traceExts, ", "), profile)
	}
	return "", fmt.Errorf("%s is a directory, not a trace file: name a trace (%s) or a log directory", path, strings.Join(traceExts, ", "))
}

// runsOf returns the run directories a directory stands for: those under
// its plugins/profile/ when it is a log directory (profile is then that
// folder), else the directory itself.
func runsOf(path string) (runs []string, profile string, err error) {
	profile = filepath.Join(path, "plugins", "profile")
	entries, err := os.ReadDir(profile)
	if err != nil {
		return []string{path}, "", nil
	}
	for _, e := range entries {
		if e.IsDir() {
			runs = append(runs, filepath.Join(profile, e.Name()))
		}
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("%s is a log directory with no runs in %s", path, profile)
	}
	return runs, profile, nil
}

// newestOf returns the newest of the files pick finds in runs (by
// modification time; ties: the later run, as run names are start times),
// or "" if it finds none.
func newestOf(runs []string, pick func(run string) (string, time.Time, error)) (string, error) {
	file, mod := "", time.Time{}
	for _, run := range runs {
		f, t, err := pick(run)
		if err != nil {
			return "", err
		}
		if f != "" && (file == "" || !t.Before(mod)) {
			file, mod = f, t
		}
	}
	return file, nil
}

// memoryExt ends the name of the memory profile a session writes into
// its run directory (<host>.memory.pb.gz).
const memoryExt = ".memory.pb.gz"

// memoryInput resolves the INPUT of a command that reads a memory
// profile: a file as it is; a log directory or a run directory stands
// for the newest run's <host>.memory.pb.gz, named on stderr.
func memoryInput(cmd, path string, stderr io.Writer) (string, error) {
	if runstore.IsURL(path) {
		return remoteInput(cmd, path, []string{memoryExt}, "memory profile", stderr)
	}
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return path, nil // the reader explains a missing or unreadable file
	}
	runs, profile, err := runsOf(path)
	if err != nil {
		return "", err
	}
	file, err := newestOf(runs, func(run string) (string, time.Time, error) { return runFile(run, []string{memoryExt}) })
	switch {
	case err != nil:
		return "", err
	case file != "":
		fmt.Fprintf(stderr, "devprof %s: %s is a directory; reading its newest memory profile, %s\n", cmd, path, file)
		return file, nil
	case profile != "":
		return "", fmt.Errorf("%s is a log directory with no memory profile (<host>%s) in its runs under %s", path, memoryExt, profile)
	}
	return "", fmt.Errorf("%s is a directory with no memory profile (<host>%s): name a profile, a run directory or a log directory", path, memoryExt)
}

// runTrace returns the trace a run directory holds, by traceExts' order
// (names in order within an extension, for runs of several hosts), and
// its modification time; "" if it holds none.
func runTrace(dir string) (string, time.Time, error) { return runFile(dir, traceExts) }

// runFile returns the first file of a run directory ending in one of
// exts, by their order (names in order within one), and its modification
// time; "" if it holds none.
func runFile(dir string, exts []string) (string, time.Time, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", time.Time{}, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, ext := range exts {
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ext) {
				continue
			}
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since ReadDir
			} else if err != nil {
				return "", time.Time{}, err
			}
			return filepath.Join(dir, e.Name()), info.ModTime(), nil
		}
	}
	return "", time.Time{}, nil
}

// isTerminal reports whether w is a terminal, where progress lines help;
// elsewhere (a pipe, a file, a test) they would only be noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
