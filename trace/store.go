package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/devprof/devprof/internal/runstore"
)

// A log directory may be a bucket URL (s3://, gs://, azblob://, file://;
// see internal/runstore). Such a session writes its files exactly as a
// local one does, into a local staging directory, and Stop then uploads
// each finished file to <logdir>/plugins/profile/<run>/: the formats'
// writers stay streaming writers to a file, and every object is put whole
// or not at all.

// checkStore is checkProfileDir for a bucket: it checks at Start that the
// bucket can be reached, and returns the run's parent URL.
func checkStore(logdir string) (string, error) {
	if err := runstore.Check(context.Background(), logdir); err != nil {
		return "", fmt.Errorf("log directory: %w", err)
	}
	return runstore.Join(logdir, "plugins", "profile"), nil
}

// publishRun uploads the files a session wrote into the local directory
// staging to profileURL/run/, and points out's fields at the objects.
//
// Many hosts write one run (they share a session id, or start in the same
// second): each host's files are <host>.<ext>, and every object is written
// only if it does not exist yet, so no host replaces another's file. When
// this host's name is taken (two sessions on one host in one run), the
// session takes <host>_2, <host>_3, … as a local run directory would take
// <run>_2. A file that cannot be uploaded is kept in staging, and the error
// says where.
func publishRun(staging, profileURL, run, host string, out *Outputs) error {
	ctx := context.Background()
	runURL := runstore.Join(profileURL, run)
	fields := []*string{&out.Perfetto, &out.XPlane, &out.Chrome, &out.Memory, &out.CPU}
	var files []*string // the fields that hold a staged file, in name order
	for _, f := range fields {
		if *f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		os.RemoveAll(staging)
		out.RunDir = ""
		return nil
	}
	sort.Slice(files, func(i, j int) bool { return *files[i] < *files[j] })
	local := make([]string, len(files))
	for i, f := range files {
		local[i], *f = *f, ""
	}
	// Claim a name with the first file: the first stem whose object does
	// not exist yet is this session's.
	stem, first := host, ""
	for n := 1; ; n++ {
		if n > 1 {
			stem = fmt.Sprintf("%s_%d", host, n)
		}
		dst := runstore.Join(runURL, stem+strings.TrimPrefix(filepath.Base(local[0]), host))
		err := runstore.Put(ctx, dst, local[0], runstore.PutOptions{NoOverwrite: true})
		if err == nil {
			first = dst
			break
		}
		if !errors.Is(err, runstore.ErrExist) || n >= 1000 {
			out.RunDir = ""
			return fmt.Errorf("%w; the run's files are kept in %s", err, staging)
		}
	}
	*files[0] = first
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i := 1; i < len(files); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := runstore.Join(runURL, stem+strings.TrimPrefix(filepath.Base(local[i]), host))
			if errs[i] = runstore.Put(ctx, dst, local[i], runstore.PutOptions{NoOverwrite: true}); errs[i] == nil {
				*files[i] = dst
			}
		}()
	}
	wg.Wait()
	out.RunDir = runURL
	if err := errors.Join(errs...); err != nil {
		for i, e := range errs {
			if e == nil {
				os.Remove(local[i]) // uploaded: only the failed ones stay
			}
		}
		os.Remove(local[0])
		return fmt.Errorf("%w; the files not uploaded are kept in %s", err, staging)
	}
	os.RemoveAll(staging)
	return nil
}
