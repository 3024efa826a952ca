// Package runstore is where a run lives: a log directory is either a local
// path or a bucket URL (s3://, gs://, azblob://, or file:// through the
// same blob layer), and this package is the one place that tells them
// apart. It sits at the end of devprof's flow, after the exporters: trace
// sessions and the CLI write a run's files locally as they always have
// (atomically, through internal/atomicfile), and when the log directory is
// a bucket they hand the finished files to Put, which uploads each one
// streamed from disk, atomically per object, retried with backoff on
// transient errors and bounded in time. Readers go the other way: Get
// copies an object to a local file that the exporters' readers open.
//
// The cloud drivers are large (measured on a program that imports trace:
// 25 MB without them, 73 MB with all three), so none is linked here: a
// program opts in to a scheme with gocloud.dev's usual blank import
// (gocloud.dev/blob/s3blob, gcsblob, azureblob), as the devprof command
// does for all three, and a URL of a scheme not linked fails naming the
// import. file:// is always there.
//
// Buckets are opened with gocloud.dev/blob's URL openers, so the usual
// settings apply and nothing here handles credentials: for S3, the AWS
// SDK's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
// AWS_ENDPOINT_URL, AWS_PROFILE, …) and the URL's query (region=,
// endpoint=, use_path_style=true); for GCS, Application Default
// Credentials; for Azure, AZURE_STORAGE_ACCOUNT and the Azure SDK's default
// credential chain. A URL's query is kept with it through Join, and
// Display drops it from what is shown, so a message names the object
// without its options.
package runstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://; s3://, gs:// and azblob:// in driver_*.go
	"gocloud.dev/gcerrors"

	"github.com/devprof/devprof/internal/atomicfile"
)

// schemes are the URL schemes that name a bucket; anything else is a
// local path.
var schemes = []string{"s3", "gs", "azblob", "file"}

// IsURL reports whether loc names a location in a bucket (s3://bucket/…,
// gs://…, azblob://…, file:///…) rather than a local path.
func IsURL(loc string) bool {
	for _, s := range schemes {
		if strings.HasPrefix(loc, s+"://") {
			return true
		}
	}
	return false
}

// Join joins elements onto loc: filepath.Join for a local path; for a URL
// they are appended to its key with "/", and its query stays at the end.
func Join(loc string, elem ...string) string {
	if !IsURL(loc) {
		return filepath.Join(append([]string{loc}, elem...)...)
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Parse reports it where it matters (opening the bucket); keep
		// the text so the error names what the user wrote.
		return strings.TrimSuffix(loc, "/") + "/" + strings.Join(elem, "/")
	}
	u.Path = path.Join(append([]string{"/", u.Path}, elem...)...)
	u.RawPath = ""
	return u.String()
}

// Base returns the last element of loc (its file name).
func Base(loc string) string {
	if !IsURL(loc) {
		return filepath.Base(loc)
	}
	if u, err := url.Parse(loc); err == nil {
		if strings.Trim(u.Path, "/") == "" {
			return u.Host // the bucket itself
		}
		return path.Base(u.Path)
	}
	return path.Base(loc)
}

// Dir returns all but the last element of loc (its parent directory).
func Dir(loc string) string {
	if !IsURL(loc) {
		return filepath.Dir(loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	u.Path = path.Dir(path.Clean("/" + u.Path))
	if u.Path == "/" {
		u.Path = ""
	}
	u.RawPath = ""
	return u.String()
}

// Display is loc as messages show it: a URL without its query (which holds
// options such as the endpoint, never secrets, but makes lines long), a
// local path as it is.
func Display(loc string) string {
	if i := strings.IndexByte(loc, '?'); i >= 0 && IsURL(loc) {
		return loc[:i]
	}
	return loc
}

// object is a URL split into the bucket's URL (scheme, bucket, query) and
// the key inside it.
type object struct {
	bucket string // the URL blob.OpenBucket opens
	key    string // no leading "/"
	shown  string // Display of the whole URL
}

func parse(loc string) (object, error) {
	u, err := url.Parse(loc)
	if err != nil || !IsURL(loc) {
		return object{}, fmt.Errorf("%s: not a bucket URL (want s3://BUCKET/PATH, gs://…, azblob://… or file:///…): %v", Display(loc), err)
	}
	q := u.Query()
	o := object{shown: Display(loc)}
	if u.Scheme == "file" {
		// fileblob's bucket is a directory: the file system's root, so
		// that any absolute path is a key. Its defaults are changed so
		// that a file:// run looks like a local one: no .attrs sidecar
		// files (TensorBoard would list them), and temporary files next
		// to the final name (a rename across file systems fails).
		if u.Host != "" && u.Host != "localhost" {
			return object{}, fmt.Errorf("%s: a file:// URL names a local path: file:///ABSOLUTE/PATH", o.shown)
		}
		if !q.Has("metadata") {
			q.Set("metadata", "skip")
		}
		if !q.Has("no_tmp_dir") {
			q.Set("no_tmp_dir", "1")
		}
		o.bucket = "file:///?" + q.Encode()
		o.key = strings.TrimPrefix(path.Clean("/"+u.Path), "/")
		return o, nil
	}
	if u.Host == "" {
		return object{}, fmt.Errorf("%s: no bucket name (want %s://BUCKET/PATH)", o.shown, u.Scheme)
	}
	o.bucket = (&url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}).String()
	o.key = strings.TrimPrefix(path.Clean("/"+u.Path), "/")
	return o, nil
}

var (
	bucketsMu sync.Mutex
	buckets   = map[string]*blob.Bucket{} // opened once per process: a Bucket is safe for concurrent use
)

// open returns the bucket of o, opening it the first time.
func open(ctx context.Context, o object) (*blob.Bucket, error) {
	bucketsMu.Lock()
	defer bucketsMu.Unlock()
	if b := buckets[o.bucket]; b != nil {
		return b, nil
	}
	scheme, _, _ := strings.Cut(o.bucket, ":")
	if !slices.Contains(blob.DefaultURLMux().BucketSchemes(), scheme) {
		return nil, fmt.Errorf("%s: this program has no %s:// driver: add import _ %q to it (the devprof command has every driver)", o.shown, scheme, DriverImport(scheme))
	}
	b, err := blob.OpenBucket(ctx, o.bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot open the bucket: %v", o.shown, err)
	}
	buckets[o.bucket] = b
	return b, nil
}

// DriverImport is the package that registers the gocloud.dev/blob driver
// of scheme: what a program imports (blank) to read and write log
// directories of that scheme.
func DriverImport(scheme string) string {
	switch scheme {
	case "s3":
		return "gocloud.dev/blob/s3blob"
	case "gs":
		return "gocloud.dev/blob/gcsblob"
	case "azblob":
		return "gocloud.dev/blob/azureblob"
	}
	return "gocloud.dev/blob/" + scheme + "blob"
}

// Timeout bounds one operation on one object (all its attempts). The
// DEVPROF_STORE_TIMEOUT environment variable (a Go duration, such as
// "30s") replaces its default of 10 minutes, which uploads a 1 GB trace
// at under 2 MB/s.
func Timeout() time.Duration {
	if v := os.Getenv("DEVPROF_STORE_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return 10 * time.Minute
}

// ErrExist is wrapped by Put's error when Options.NoOverwrite is set and
// the object is already there.
var ErrExist = errors.New("object already exists")

// PutOptions change how Put writes.
type PutOptions struct {
	// NoOverwrite makes the write conditional: it fails with ErrExist
	// when the object exists, so that one host never replaces another's
	// file in a run many hosts write.
	NoOverwrite bool
}

// Put uploads the local file src to dst, a URL: streamed from disk in
// parts (never whole in memory), atomic per object (the object appears
// whole when the upload completes; a failed or cancelled one leaves none),
// retried with exponential backoff on transient errors, and bounded by
// Timeout. Its errors name dst and the cause.
func Put(ctx context.Context, dst, src string, o PutOptions) error {
	obj, err := parse(dst)
	if err != nil {
		return err
	}
	return retry(ctx, obj, "write", func(ctx context.Context, b *blob.Bucket) error {
		f, err := os.Open(src)
		if err != nil {
			return permanent{err}
		}
		defer f.Close()
		// The writer's context, cancelled on any failure before Close,
		// is what makes the driver abandon the upload (S3 aborts the
		// multipart upload) instead of publishing what was sent.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := b.NewWriter(wctx, obj.key, &blob.WriterOptions{
			IfNotExist:     o.NoOverwrite,
			ContentType:    "application/octet-stream",
			BufferSize:     partSize,
			MaxConcurrency: partsInFlight,
		})
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, f); err != nil {
			cancel()
			w.Close()
			return err
		}
		return w.Close()
	})
}

// Get copies the object src (a URL) to the local file dst, streamed, and
// atomically (see internal/atomicfile), retried and bounded as Put.
func Get(ctx context.Context, dst, src string) error {
	obj, err := parse(src)
	if err != nil {
		return err
	}
	return retry(ctx, obj, "read", func(ctx context.Context, b *blob.Bucket) error {
		r, err := b.NewReader(ctx, obj.key, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		f, err := atomicfile.Create(dst)
		if err != nil {
			return permanent{err}
		}
		defer f.Abort()
		if _, err := io.Copy(f, r); err != nil {
			return err
		}
		if err := f.Commit(); err != nil {
			return permanent{err}
		}
		return nil
	})
}

// Entry is one name directly under a location.
type Entry struct {
	Name    string // the last element, without a trailing "/"
	Dir     bool   // a common prefix (a "directory" of the bucket)
	Size    int64
	ModTime time.Time
}

// List returns what lies directly under dir (a URL), directories included,
// sorted by name. A location with nothing under it lists as empty: a
// bucket has no empty directories.
func List(ctx context.Context, dir string) ([]Entry, error) {
	obj, err := parse(dir)
	if err != nil {
		return nil, err
	}
	prefix := obj.key
	if prefix != "" {
		prefix += "/"
	}
	var out []Entry
	err = retry(ctx, obj, "list", func(ctx context.Context, b *blob.Bucket) error {
		out = out[:0]
		it := b.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
		for {
			lo, err := it.Next(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			name := strings.TrimSuffix(strings.TrimPrefix(lo.Key, prefix), "/")
			if name == "" {
				continue
			}
			out = append(out, Entry{Name: name, Dir: lo.IsDir, Size: lo.Size, ModTime: lo.ModTime})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Stat returns the entry of the object at loc (a URL). A location that is
// no object but has objects under it is a directory; one that is neither
// is an error wrapping os.ErrNotExist.
func Stat(ctx context.Context, loc string) (Entry, error) {
	obj, err := parse(loc)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	err = retry(ctx, obj, "read", func(ctx context.Context, b *blob.Bucket) error {
		if obj.key != "" {
			a, err := b.Attributes(ctx, obj.key)
			if err == nil {
				e = Entry{Name: path.Base(obj.key), Size: a.Size, ModTime: a.ModTime}
				return nil
			}
			if gcerrors.Code(err) != gcerrors.NotFound {
				return err
			}
		}
		var lo *blob.ListOptions
		if obj.key != "" {
			lo = &blob.ListOptions{Prefix: obj.key + "/"}
		}
		page, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, lo)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return permanent{fmt.Errorf("no such object or directory: %w", os.ErrNotExist)}
		}
		e = Entry{Name: path.Base(obj.key), Dir: true}
		return nil
	})
	return e, err
}

// Check tells whether the bucket of loc (a URL) can be reached with the
// credentials at hand, so that a session fails at Start, not at Stop, on a
// misspelt bucket or missing credentials.
func Check(ctx context.Context, loc string) error {
	obj, err := parse(loc)
	if err != nil {
		return err
	}
	return retry(ctx, obj, "reach", func(ctx context.Context, b *blob.Bucket) error {
		ok, err := b.IsAccessible(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return permanent{errors.New("the bucket does not exist or these credentials may not use it")}
		}
		return nil
	})
}

// permanent marks an error no retry can cure (a local file, a refusal).
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// transient reports whether err may pass if the operation is tried again:
// the server unavailable, overloaded, timing out or failing inside, or the
// connection lost (the drivers report those as Unknown).
func transient(err error) bool {
	var p permanent
	if errors.As(err, &p) {
		return false
	}
	switch gcerrors.Code(err) {
	case gcerrors.Unknown, gcerrors.Internal, gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded:
		return true
	}
	return false
}

// backoff is the wait before attempt n (1-based, n ≥ 2): 250ms doubling up
// to 8s, each with up to half again at random, so that many hosts that
// failed together do not retry together.
func backoff(n int) time.Duration {
	d := 250 * time.Millisecond << min(n-2, 5)
	return d + rand.N(d/2+1)
}

// retry runs op on obj's bucket until it succeeds, fails for good, or
// Timeout passes, waiting between attempts; the error names the object,
// what was being done, the attempts and the last cause.
func retry(ctx context.Context, obj object, verb string, op func(context.Context, *blob.Bucket) error) error {
	limit := Timeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	b, err := open(ctx, obj)
	if err != nil {
		return err
	}
	start := time.Now()
	var last error // the last failure not caused by the bound itself
	for n := 1; ; n++ {
		err := op(ctx, b)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		code := gcerrors.Code(err)
		switch {
		case code == gcerrors.FailedPrecondition || code == gcerrors.AlreadyExists:
			return fmt.Errorf("cannot %s %s: %w", verb, obj.shown, ErrExist)
		case code == gcerrors.NotFound:
			return fmt.Errorf("cannot %s %s: %w (%s)", verb, obj.shown, os.ErrNotExist, cause(err))
		case !transient(err):
			return fmt.Errorf("cannot %s %s: %w", verb, obj.shown, causeError{err})
		}
		wait := backoff(n + 1)
		if ctx.Err() != nil || time.Since(start)+wait >= limit {
			return fmt.Errorf("cannot %s %s: gave up after %d attempts in %v (DEVPROF_STORE_TIMEOUT=%v): %w",
				verb, obj.shown, n, time.Since(start).Round(time.Millisecond), limit, causeError{last})
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
}

// causeError is an error shown as cause shows it, still unwrapping to it.
type causeError struct{ err error }

func (c causeError) Error() string { return cause(c.err) }
func (c causeError) Unwrap() error { return c.err }

// cause is err's text without gocloud's "blob (code=…): " prefix, which
// says nothing to a user.
func cause(err error) string {
	s := err.Error()
	if strings.HasPrefix(s, "blob (") {
		if i := strings.Index(s, "): "); i >= 0 {
			s = s[i+3:]
		}
	}
	return s
}

// An upload sends parts of partSize, partsInFlight at once: the memory an
// upload holds whatever the file's size (BenchmarkS3Put's peak-heap-MiB),
// traded against throughput on a fast link.
const (
	partSize      = 8 << 20
	partsInFlight = 3
)
