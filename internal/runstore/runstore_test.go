package runstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "gocloud.dev/blob/s3blob" // s3:// for the tests against a real server; gs:// and azblob:// stay out

	"github.com/devprof/devprof/internal/s3test"
)

// TestDriverNotLinked: a scheme whose driver the program does not import
// fails at once (no retries), naming the URL and the import that adds it.
func TestDriverNotLinked(t *testing.T) {
	for _, c := range []struct{ loc, imp string }{
		{"gs://bucket/logs", "gocloud.dev/blob/gcsblob"},
		{"azblob://container/logs", "gocloud.dev/blob/azureblob"},
	} {
		start := time.Now()
		err := Check(context.Background(), c.loc)
		if err == nil || !strings.Contains(err.Error(), c.loc) || !strings.Contains(err.Error(), `import _ "`+c.imp+`"`) {
			t.Errorf("Check(%s) = %v, want an error naming the URL and %s", c.loc, err, c.imp)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Check(%s) took %v: a missing driver is not transient", c.loc, d)
		}
	}
}

func TestLocations(t *testing.T) {
	for _, c := range []struct {
		loc      string
		url      bool
		join     string // Join(loc, "plugins", "profile")
		base     string
		shown    string
		bucket   string
		key      string
		parseErr string
	}{
		{loc: "/tmp/prof", join: "/tmp/prof/plugins/profile", base: "prof", shown: "/tmp/prof"},
		{loc: "rel/dir", join: "rel/dir/plugins/profile", base: "dir", shown: "rel/dir"},
		{loc: "s3:/not-a-url", join: "s3:/not-a-url/plugins/profile", base: "not-a-url", shown: "s3:/not-a-url"},
		{loc: "s3://b/logs", url: true, join: "s3://b/logs/plugins/profile", base: "logs", shown: "s3://b/logs", bucket: "s3://b", key: "logs"},
		{loc: "s3://b/logs/?region=eu-west-1&use_path_style=true", url: true,
			join: "s3://b/logs/plugins/profile?region=eu-west-1&use_path_style=true", base: "logs",
			shown: "s3://b/logs/", bucket: "s3://b?region=eu-west-1&use_path_style=true", key: "logs"},
		{loc: "gs://bucket", url: true, join: "gs://bucket/plugins/profile", base: "bucket", shown: "gs://bucket", bucket: "gs://bucket", key: ""},
		{loc: "azblob://c/a/b", url: true, join: "azblob://c/a/b/plugins/profile", base: "b", shown: "azblob://c/a/b", bucket: "azblob://c", key: "a/b"},
		{loc: "file:///tmp/x", url: true, join: "file:///tmp/x/plugins/profile", base: "x", shown: "file:///tmp/x", bucket: "file:///?metadata=skip&no_tmp_dir=1", key: "tmp/x"},
		{loc: "file://host/tmp/x", url: true, join: "file://host/tmp/x/plugins/profile", base: "x", shown: "file://host/tmp/x", parseErr: "file:///ABSOLUTE/PATH"},
		{loc: "s3:///key", url: true, join: "s3:///key/plugins/profile", base: "key", shown: "s3:///key", parseErr: "no bucket name"},
	} {
		if got := IsURL(c.loc); got != c.url {
			t.Errorf("IsURL(%q) = %v", c.loc, got)
		}
		if got := Join(c.loc, "plugins", "profile"); got != c.join {
			t.Errorf("Join(%q) = %q, want %q", c.loc, got, c.join)
		}
		if got := Base(c.loc); got != c.base {
			t.Errorf("Base(%q) = %q, want %q", c.loc, got, c.base)
		}
		if got := Display(c.loc); got != c.shown {
			t.Errorf("Display(%q) = %q, want %q", c.loc, got, c.shown)
		}
		if !c.url {
			continue
		}
		o, err := parse(c.loc)
		switch {
		case c.parseErr != "":
			if err == nil || !strings.Contains(err.Error(), c.parseErr) {
				t.Errorf("parse(%q): got %v, want an error saying %q", c.loc, err, c.parseErr)
			}
		case err != nil:
			t.Errorf("parse(%q): %v", c.loc, err)
		case o.bucket != c.bucket || o.key != c.key:
			t.Errorf("parse(%q) = bucket %q key %q, want %q %q", c.loc, o.bucket, o.key, c.bucket, c.key)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	for n := 2; n < 20; n++ {
		d := backoff(n)
		base := 250 * time.Millisecond << min(n-2, 5)
		if d < base || d > base+base/2 {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", n, d, base, base+base/2)
		}
	}
	if backoff(30) > 12*time.Second {
		t.Errorf("backoff(30) = %v: not capped", backoff(30))
	}
}

// randomFile writes n random bytes to a new file and returns its path and
// content.
func randomFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// roundTrip puts, lists, stats, gets and refuses to overwrite under base,
// a URL of any driver.
func roundTrip(t *testing.T, base string) {
	ctx := context.Background()
	if err := Check(ctx, base); err != nil {
		t.Fatal(err)
	}
	src, want := randomFile(t, 3<<20+17)
	dst := Join(base, "plugins", "profile", "run1", "h.xplane.pb")
	if err := Put(ctx, dst, src, PutOptions{NoOverwrite: true}); err != nil {
		t.Fatal(err)
	}
	small, _ := randomFile(t, 10)
	err := Put(ctx, dst, small, PutOptions{NoOverwrite: true})
	if !errors.Is(err, ErrExist) || !strings.Contains(err.Error(), Display(dst)) {
		t.Fatalf("second conditional Put: got %v, want ErrExist naming %s", err, Display(dst))
	}
	got := filepath.Join(t.TempDir(), "got.bin")
	if err := Get(ctx, got, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(got); !bytes.Equal(b, want) {
		t.Fatalf("Get: %d bytes, want the %d put (the refused overwrite must not have replaced it)", len(b), len(want))
	}
	es, err := List(ctx, Join(base, "plugins", "profile"))
	if err != nil || len(es) != 1 || es[0].Name != "run1" || !es[0].Dir {
		t.Fatalf("List(profile) = %+v, %v; want the one run directory", es, err)
	}
	es, err = List(ctx, Join(base, "plugins", "profile", "run1"))
	if err != nil || len(es) != 1 || es[0].Name != "h.xplane.pb" || es[0].Dir || es[0].Size != int64(len(want)) || es[0].ModTime.IsZero() {
		t.Fatalf("List(run) = %+v, %v", es, err)
	}
	if e, err := Stat(ctx, Join(base, "plugins")); err != nil || !e.Dir {
		t.Fatalf("Stat(plugins) = %+v, %v; want a directory", e, err)
	}
	if e, err := Stat(ctx, dst); err != nil || e.Dir || e.Size != int64(len(want)) {
		t.Fatalf("Stat(object) = %+v, %v", e, err)
	}
	if _, err := Stat(ctx, Join(base, "nothing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v, want ErrNotExist", err)
	}
	if err := Get(ctx, got, Join(base, "nothing")); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), Display(Join(base, "nothing"))) {
		t.Fatalf("Get(missing) = %v, want ErrNotExist naming the URL", err)
	}
	if es, err := List(ctx, Join(base, "nothing")); err != nil || len(es) != 0 {
		t.Fatalf("List(missing) = %+v, %v; want empty", es, err)
	}
}

// TestFileBucket runs the blob path through fileblob (file://), which
// needs no server.
func TestFileBucket(t *testing.T) {
	dir := t.TempDir()
	roundTrip(t, "file://"+filepath.ToSlash(dir)+"/logs")
	// A file:// run looks like a local one: no sidecar or temporary files.
	var names []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if len(names) != 1 || names[0] != "/logs/plugins/profile/run1/h.xplane.pb" {
		t.Fatalf("files on disk: %v, want only the object", names)
	}
}

func TestS3RoundTrip(t *testing.T) {
	s := s3test.Start(t)
	roundTrip(t, s.URL("logs"))
	if b, err := os.ReadFile(s.Path("logs/plugins/profile/run1/h.xplane.pb")); err != nil || len(b) != 3<<20+17 {
		t.Fatalf("the object on the server's disk: %d bytes, %v", len(b), err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	s := s3test.Start(t)
	err := Check(context.Background(), "s3://"+s.Bucket+"-missing/logs")
	if err == nil || !strings.Contains(err.Error(), "s3://"+s.Bucket+"-missing") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Check of a missing bucket: %v", err)
	}
	src, _ := randomFile(t, 10)
	err = Put(context.Background(), "s3://"+s.Bucket+"-missing/logs/x", src, PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "s3://"+s.Bucket+"-missing/logs/x") {
		t.Fatalf("Put into a missing bucket: %v", err)
	}
}

// TestS3ConditionalPutsOneWins: ten writers racing for one key (ten hosts
// claiming one name) end with exactly one object, whole, and nine
// ErrExist; ten writers on ten keys all land.
func TestS3ConditionalPutsOneWins(t *testing.T) {
	s := s3test.Start(t)
	ctx := context.Background()
	srcs := make([]string, 10)
	data := make([][]byte, 10)
	for i := range srcs {
		srcs[i], data[i] = randomFile(t, 1<<20+i)
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range srcs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs[i] = Put(ctx, s.URL("race/one.bin"), srcs[i], PutOptions{NoOverwrite: true})
		}()
		go func() {
			defer wg.Done()
			if err := Put(ctx, s.URL("race/own/"+string(rune('a'+i))), srcs[i], PutOptions{NoOverwrite: true}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both wrote the one key", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, ErrExist):
			t.Errorf("writer %d: %v, want ErrExist", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer wrote the key")
	}
	if b, _ := os.ReadFile(s.Path("race/one.bin")); !bytes.Equal(b, data[winner]) {
		t.Fatalf("the key holds %d bytes, not the winner's %d", len(b), len(data[winner]))
	}
	es, err := List(ctx, s.URL("race/own"))
	if err != nil || len(es) != 10 {
		t.Fatalf("List: %d entries, %v; want all 10", len(es), err)
	}
	for i, e := range es {
		if b, _ := os.ReadFile(s.Path("race/own/" + e.Name)); !bytes.Equal(b, data[i]) {
			t.Errorf("%s: %d bytes, want %d", e.Name, len(b), len(data[i]))
		}
	}
}

// TestS3ServerStoppedMidWrite: a server killed while a large object is
// being uploaded gives an error naming the URL and the cause, within the
// bound, and no object (whole or partial) once the server is back.
func TestS3ServerStoppedMidWrite(t *testing.T) {
	s := s3test.Start(t)
	t.Setenv("DEVPROF_STORE_TIMEOUT", "15s")
	src, _ := randomFile(t, 200<<20)
	dst := s.URL("logs/plugins/profile/run/big.xplane.pb")
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Put(context.Background(), dst, src, PutOptions{NoOverwrite: true}) }()
	// Kill the server once the upload has sent data: versitygw keeps an
	// upload's parts under the bucket's .sgwtmp until it completes.
	for sent := false; !sent; {
		select {
		case err := <-done:
			t.Fatalf("the upload ended (%v) before any part reached the server", err)
		case <-time.After(5 * time.Millisecond):
		}
		filepath.WalkDir(filepath.Join(s.Dir, s.Bucket), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, ".sgwtmp") {
				if fi, err := d.Info(); err == nil && fi.Size() > 0 {
					sent = true
				}
			}
			return nil
		})
	}
	s.Stop()
	err := <-done
	took := time.Since(start)
	if err == nil {
		t.Fatal("Put succeeded against a stopped server")
	}
	t.Logf("error after %v: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), "cannot write s3://"+s.Bucket+"/logs/plugins/profile/run/big.xplane.pb") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the error does not name the URL and the cause: %v", err)
	}
	if took > 40*time.Second {
		t.Errorf("gave up after %v: not bounded by DEVPROF_STORE_TIMEOUT=15s", took)
	}
	s.Restart()
	if _, err := Stat(context.Background(), dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the failed upload, Stat = %v; want no object", err)
	}
	if es, err := List(context.Background(), s.URL("logs/plugins/profile/run")); err != nil || len(es) != 0 {
		t.Fatalf("the run lists %+v, %v; want nothing", es, err)
	}
}

// BenchmarkS3Put uploads files of 64 MiB and 512 MiB to the real S3
// server. Its peak-heap-MiB (the largest heap in use sampled during the
// uploads) stays the same whatever the file's size: the upload streams
// from disk (the S3 uploader keeps a few parts in flight) rather than
// holding the file. MB/s is the loopback throughput.
func BenchmarkS3Put(b *testing.B) {
	s := s3test.Start(b)
	for _, size := range []int{64 << 20, 512 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			src := filepath.Join(b.TempDir(), "big.bin")
			f, err := os.Create(src)
			if err != nil {
				b.Fatal(err)
			}
			chunk := make([]byte, 1<<20)
			for range size / len(chunk) {
				rand.Read(chunk)
				f.Write(chunk)
			}
			f.Close()
			chunk = nil
			runtime.GC()
			var peak atomic.Uint64
			done := make(chan struct{})
			go func() {
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := Put(context.Background(), s.URL(fmt.Sprintf("bench/%d/%d", size, i%2)), src, PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			close(done)
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}

// FuzzLocations: no location makes Join, Base, Dir, Display or parse
// panic, and a bucket URL joined with a name stays in its bucket, one
// element deeper.
func FuzzLocations(f *testing.F) {
	for _, s := range []string{"/tmp/prof", "s3://b/logs?region=x&use_path_style=true", "gs://b", "azblob://c/a/../b",
		"file:///tmp/x", "s3://b/%2e%2e/x", "s3://b/a b/#frag", "s3://", "s3://b/a?x=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		Base(loc)
		Dir(loc)
		Display(loc)
		j := Join(loc, "run")
		if !IsURL(loc) {
			return
		}
		o, err := parse(loc)
		if err != nil {
			return
		}
		oj, err := parse(j)
		if err != nil {
			t.Fatalf("Join(%q) = %q does not parse: %v", loc, j, err)
		}
		want := "run"
		if o.key != "" {
			want = o.key + "/run"
		}
		if oj.bucket != o.bucket || oj.key != want {
			t.Fatalf("Join(%q) = %q: bucket %q key %q, want %q %q", loc, j, oj.bucket, oj.key, o.bucket, want)
		}
	})
}
