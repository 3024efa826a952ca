// Package atomicfile writes a file so that readers see either nothing or
// the whole of it: data goes to a temporary file in the same directory,
// which is synced and renamed over the destination only when complete.
// devprof's outputs are written through it, so a crash, a full disk or a
// panic never leaves a half-written trace under the real name.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is a file being written. Call Commit to publish it or Abort to throw
// it away; calling Abort after Commit does nothing, so `defer f.Abort()` is
// the usual pattern.
type File struct {
	*bufio.Writer
	path string
	tmp  *os.File
	done bool
}

// Create starts writing path.
func Create(path string) (*File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &File{Writer: bufio.NewWriterSize(tmp, 256<<10), path: path, tmp: tmp}, nil
}

// Path returns the destination path.
func (f *File) Path() string { return f.path }

// Commit flushes, syncs and renames the file into place.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	f.done = true
	err := f.Flush()
	if err == nil {
		err = f.tmp.Sync()
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("cannot write %s: %w", f.path, err)
	}
	return nil
}

// Abort discards the file.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}
