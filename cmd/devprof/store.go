package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
)

// Every FILE, INPUT or --log_dir may be a bucket URL (s3://, gs://,
// azblob://, file://; see internal/runstore). The readers read local
// files, so an object is first copied to a temporary file (streamed, not
// held in memory) and read from there; what the commands print, errors
// included, names the URL.

// remoteInput is inputFile and memoryInput for a URL: an object is
// returned as it is; a log directory or a run directory stands for the
// newest run's file ending in one of exts (what names them in messages),
// named on stderr.
func remoteInput(cmd, loc string, exts []string, what string, stderr io.Writer) (string, error) {
	ctx := context.Background()
	e, err := runstore.Stat(ctx, loc)
	if err != nil {
		return "", err
	}
	if !e.Dir {
		return loc, nil
	}
	profile := runstore.Join(loc, "plugins", "profile")
	entries, err := runstore.List(ctx, profile)
	if err != nil {
		return "", err
	}
	var runs []string
	for _, r := range entries {
		if r.Dir {
			runs = append(runs, runstore.Join(profile, r.Name))
		}
	}
	if len(runs) == 0 {
		runs, profile = []string{loc}, ""
	}
	file, mod := "", time.Time{}
	for _, run := range runs { // in name order: ties go to the later run
		files, err := runstore.List(ctx, run)
		if err != nil {
			return "", err
		}
	exts:
		for _, ext := range exts {
			for _, f := range files {
				if !f.Dir && strings.HasSuffix(f.Name, ext) {
					if file == "" || !f.ModTime.Before(mod) {
						file, mod = runstore.Join(run, f.Name), f.ModTime
					}
					break exts
				}
			}
		}
	}
	switch {
	case file != "":
		fmt.Fprintf(stderr, "devprof %s: %s is a directory; reading its newest %s, %s\n", cmd, runstore.Display(loc), what, runstore.Display(file))
		return file, nil
	case profile != "":
		return "", fmt.Errorf("%s is a log directory with no %s (%s) in its runs under %s", runstore.Display(loc), what, strings.Join(exts, ", "), runstore.Display(profile))
	}
	return "", fmt.Errorf("%s is a directory with no %s (%s): name an object, a run directory or a log directory", runstore.Display(loc), what, strings.Join(exts, ", "))
}

// fetch copies the object at loc to a temporary file named as the object,
// for a reader that reads local files; done removes it.
func fetch(loc string) (local string, done func(), err error) {
	dir, err := os.MkdirTemp("", "devprof-fetch-")
	if err != nil {
		return "", nil, err
	}
	local = filepath.Join(dir, runstore.Base(loc))
	if err := runstore.Get(context.Background(), local, loc); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return local, func() { os.RemoveAll(dir) }, nil
}

// readRemote runs read on a local copy of the object at loc, and names
// loc, not the copy, in its error.
func readRemote[T any](loc string, read func(local string) (T, error)) (T, error) {
	local, done, err := fetch(loc)
	if err != nil {
		var zero T
		return zero, err
	}
	defer done()
	v, err := read(local)
	if err != nil {
		err = renamedError{err, local, runstore.Display(loc)}
	}
	return v, err
}

// renamedError is err with one name replaced by another in its text.
type renamedError struct {
	err      error
	from, to string
}

func (e renamedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.from, e.to) }
func (e renamedError) Unwrap() error { return e.err }

// writeTrace writes s to out (a local path or a URL) in format f: a URL's
// object is written to a temporary file first and uploaded whole.
func writeTrace(out string, f *formats.Format, s *event.Snapshot) error {
	if !runstore.IsURL(out) {
		return formats.WriteFile(out, f, s)
	}
	dir, err := os.MkdirTemp("", "devprof-out-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	local := filepath.Join(dir, runstore.Base(out))
	if err := formats.WriteFile(local, f, s); err != nil {
		return renamedError{err, local, runstore.Display(out)}
	}
	return runstore.Put(context.Background(), out, local, runstore.PutOptions{})
}

// remoteLogdir prepares a log directory given as a URL for a command that
// writes a run locally (devprof collect): it checks the bucket can be
// reached and returns a local staging directory for the run.
func remoteLogdir(loc string) (staging string, err error) {
	if err := runstore.Check(context.Background(), loc); err != nil {
		return "", fmt.Errorf("--log_dir: %w", err)
	}
	return os.MkdirTemp("", "devprof-collect-")
}

// publishDir uploads every file of the local run directory dir to the
// run URL runURL, never replacing an object there (another host's, or
// another capture's of the same second); the error names dir, where the
// files stay.
func publishDir(dir, runURL string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		local := filepath.Join(dir, e.Name())
		if err := runstore.Put(context.Background(), runstore.Join(runURL, e.Name()), local, runstore.PutOptions{NoOverwrite: true}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; the files not uploaded are kept in %s", err, dir)
	}
	return nil
}

// publishRemote ends devprof collect into a bucket: it uploads what the
// capture wrote into the staging run directory (under the staging log
// directory) to runURL, says where it went, and joins an upload failure to
// *err. It reports whether the staged files may be removed (all are up,
// or there were none).
func publishRemote(err *error, stdout, stderr io.Writer, runDir, runURL string) bool {
	if entries, rerr := os.ReadDir(runDir); rerr != nil || len(entries) == 0 {
		return true // nothing was written: no run to upload
	}
	if perr := publishDir(runDir, runURL); perr != nil {
		fmt.Fprintf(stderr, "devprof collect: %v\n", perr)
		*err = errors.Join(*err, perr)
		return false
	}
	fmt.Fprintf(stdout, "%s\n", runstore.Display(runURL))
	fmt.Fprintf(stderr, "devprof collect: uploaded the run to %s\n", runstore.Display(runURL))
	return true
}
