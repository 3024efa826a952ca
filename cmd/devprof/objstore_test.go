package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/internal/s3test"
	"github.com/devprof/devprof/trace"
)

// The tests of log directories on object storage run against a real S3
// server, versitygw on 127.0.0.1 (internal/s3test; scripts/s3-deps builds
// it), and TensorBoard from the repository's .venv (scripts/pyenv).

// recordS3Session records a session of a few known spans into logdir and
// returns it, stopped.
func recordS3Session(t *testing.T, logdir string, o trace.Options) *trace.Session {
	t.Helper()
	s, err := trace.StartSession(logdir, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ctx, sp := annotate.Begin(context.Background(), "step", annotate.Int("i", i))
		_, in := annotate.Begin(ctx, "inner")
		time.Sleep(50 * time.Microsecond)
		in.End()
		sp.End()
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestS3SessionReadsBackLikeLocal: a session writes its run to s3://; the
// objects are byte for byte what the same snapshot writes locally, and
// devprof summary and convert read the run from the bucket exactly as
// they read the local copy.
func TestS3SessionReadsBackLikeLocal(t *testing.T) {
	srv := s3test.Start(t)
	logdir := srv.URL("logs")
	s := recordS3Session(t, logdir, trace.Options{ChromeTrace: true, Hostname: "worker-0"})
	out := s.Outputs()
	runURL := out.RunDir
	if !strings.HasPrefix(runURL, logdir+"/plugins/profile/") || out.Perfetto != runURL+"/worker-0.pftrace" ||
		out.XPlane != runURL+"/worker-0.xplane.pb" || out.Chrome != runURL+"/worker-0.trace.json.gz" {
		t.Fatalf("outputs %+v", out)
	}
	run := runstore.Base(runURL)
	local := t.TempDir()
	localRun := filepath.Join(local, "plugins", "profile", run)
	if err := os.MkdirAll(localRun, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*formats.Format{formats.Perfetto, formats.XPlane, formats.Chrome} {
		name := "worker-0" + f.SessionExt
		p := filepath.Join(localRun, name)
		if err := formats.WriteFile(p, f, s.Snapshot()); err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(srv.Path("logs/plugins/profile/" + run + "/" + name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s in the bucket: %d bytes (%v), want the %d the snapshot writes locally, identical", name, len(got), err, len(want))
		}
	}
	// Nothing else in the bucket: no temporary or partial objects.
	var keys []string
	filepath.WalkDir(filepath.Join(srv.Dir, srv.Bucket), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, ".sgwtmp") {
			keys = append(keys, strings.TrimPrefix(p, filepath.Join(srv.Dir, srv.Bucket)+"/"))
		}
		return nil
	})
	sort.Strings(keys)
	if len(keys) != 3 {
		t.Errorf("the bucket holds %v, want the three outputs", keys)
	}

	// summary: of the log directory, of the run and of each object, the
	// same text as of the local copy, but for the names.
	for _, c := range []struct{ remote, local string }{
		{logdir, local},
		{runURL, localRun},
		{out.XPlane, filepath.Join(localRun, "worker-0.xplane.pb")},
		{out.Chrome, filepath.Join(localRun, "worker-0.trace.json.gz")},
	} {
		code, rs, re := runCLI("summary", "-json", c.remote)
		if code != 0 {
			t.Fatalf("summary %s: exit %d: %s", c.remote, code, re)
		}
		code, ls, le := runCLI("summary", "-json", c.local)
		if code != 0 {
			t.Fatalf("summary %s: exit %d: %s", c.local, code, le)
		}
		shown := strings.ReplaceAll(strings.ReplaceAll(rs, runURL, localRun), logdir, local)
		if shown != ls {
			t.Errorf("summary of %s differs from the local copy's:\n%s\nlocal:\n%s", c.remote, rs, ls)
		}
		if strings.Contains(re, os.TempDir()) {
			t.Errorf("summary of %s names a temporary file: %s", c.remote, re)
		}
	}
	// convert: from the bucket to a local file, to the bucket, and back.
	conv := func(in, out string) {
		t.Helper()
		if code, _, e := runCLI("convert", in, out); code != 0 {
			t.Fatalf("convert %s %s: exit %d: %s", in, out, code, e)
		}
	}
	dir := t.TempDir()
	conv(out.XPlane, filepath.Join(dir, "remote.pftrace"))
	conv(filepath.Join(localRun, "worker-0.xplane.pb"), filepath.Join(dir, "local.pftrace"))
	conv(filepath.Join(localRun, "worker-0.xplane.pb"), srv.URL("converted/x.trace.json.gz"))
	conv(srv.URL("converted/x.trace.json.gz"), filepath.Join(dir, "back.trace.json.gz"))
	conv(filepath.Join(localRun, "worker-0.xplane.pb"), filepath.Join(dir, "local.trace.json.gz"))
	for _, pair := range [][2]string{{"remote.pftrace", "local.pftrace"}, {"back.trace.json.gz", "local.trace.json.gz"}} {
		a, _ := os.ReadFile(filepath.Join(dir, pair[0]))
		b, _ := os.ReadFile(filepath.Join(dir, pair[1]))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("convert through the bucket (%s, %d bytes) differs from the local conversion (%s, %d bytes)", pair[0], len(a), pair[1], len(b))
		}
	}
	// A missing object: the error names the URL, not a temporary file.
	code, _, e := runCLI("summary", srv.URL("logs/nothing.xplane.pb"))
	if code != 1 || !strings.Contains(e, srv.URL("logs/nothing.xplane.pb")) || strings.Contains(e, os.TempDir()) {
		t.Errorf("summary of a missing object: exit %d: %s", code, e)
	}
	// A damaged object: the reader's error names the URL.
	bad := filepath.Join(t.TempDir(), "bad.xplane.pb")
	os.WriteFile(bad, []byte("\x0a\xff\xff\xff\xff\x0f"), 0o644)
	if err := runstore.Put(context.Background(), srv.URL("bad/h.xplane.pb"), bad, runstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, e = runCLI("summary", srv.URL("bad/h.xplane.pb"))
	if code != 1 || !strings.Contains(e, srv.URL("bad/h.xplane.pb")) || strings.Contains(e, os.TempDir()) {
		t.Errorf("summary of a damaged object: exit %d: %s", code, e)
	}
}

// s3ChildEnv makes the test binary a child session of
// TestS3ConcurrentWriters: NAME,LOGDIR.
const s3ChildEnv = "DEVPROF_S3_CHILD"

// TestS3ConcurrentWriters: ten processes, each a session of its own host,
// write one run (one session id) into the bucket at once, and two more
// claim one host name; every file arrives whole with its own host's
// events, and no host's file replaces another's.
func TestS3ConcurrentWriters(t *testing.T) {
	if v := os.Getenv(s3ChildEnv); v != "" {
		name, logdir, _ := strings.Cut(v, ",")
		s, err := trace.StartSession(logdir, trace.Options{SessionID: "shared", Hostname: name})
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			_, sp := annotate.Begin(context.Background(), "work "+name)
			sp.End()
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		return
	}
	srv := s3test.Start(t)
	logdir := srv.URL("multi")
	names := []string{"dup", "dup"}
	for i := range 10 {
		names = append(names, fmt.Sprintf("host-%d", i))
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestS3ConcurrentWriters$", "-test.count=1")
			cmd.Env = append(os.Environ(), s3ChildEnv+"="+name+","+logdir)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %s: %v\n%s", name, err, b)
			}
		}()
	}
	wg.Wait()
	runURL := runstore.Join(logdir, "plugins", "profile", "shared")
	entries, err := runstore.List(context.Background(), runURL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name)
	}
	var want []string
	for _, n := range append(names[1:], "dup_2") {
		want = append(want, n+".pftrace", n+".xplane.pb")
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the run holds\n  %v\nwant\n  %v", got, want)
	}
	for _, e := range entries {
		stem := strings.TrimSuffix(strings.TrimSuffix(e.Name, ".pftrace"), ".xplane.pb")
		host := strings.TrimSuffix(stem, "_2")
		snap, _, err := formats.Read(srv.Path("multi/plugins/profile/shared/" + e.Name))
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		n := 0
		for _, r := range snap.Events {
			if snap.Name(r) == "work "+host {
				n++
			} else if strings.HasPrefix(snap.Name(r), "work ") {
				t.Errorf("%s holds %q", e.Name, snap.Name(r))
			}
		}
		if n != 100 || (strings.HasSuffix(e.Name, ".xplane.pb") && snap.Meta.Host != host) {
			t.Errorf("%s: host %q with %d of its 100 spans", e.Name, snap.Meta.Host, n)
		}
	}
}

// TestS3SessionErrors: a missing bucket fails at Start, naming it; a
// server gone at Stop fails naming the object and the cause, within
// DEVPROF_STORE_TIMEOUT, leaves no object and keeps the files locally.
func TestS3SessionErrors(t *testing.T) {
	srv := s3test.Start(t)
	_, err := trace.StartSession("s3://"+srv.Bucket+"-missing/logs", trace.Options{})
	if err == nil || !strings.Contains(err.Error(), "s3://"+srv.Bucket+"-missing") {
		t.Fatalf("StartSession into a missing bucket: %v", err)
	}
	t.Setenv("DEVPROF_STORE_TIMEOUT", "10s")
	s, err := trace.StartSession(srv.URL("gone"), trace.Options{Hostname: "h", SessionID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := annotate.Begin(context.Background(), "lost?")
	sp.End()
	srv.Stop()
	start := time.Now()
	err = s.Stop()
	if err == nil {
		t.Fatal("Stop succeeded with the server gone")
	}
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), srv.URL("gone/plugins/profile/r/h.")) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the error does not name the object and the cause: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("Stop took %v: not bounded", time.Since(start))
	}
	kept := err.Error()[strings.LastIndex(err.Error(), "kept in ")+len("kept in "):]
	files, _ := filepath.Glob(filepath.Join(kept, "h.*"))
	if len(files) != 2 {
		t.Errorf("kept in %q: %v, want the two outputs", kept, files)
	}
	for _, f := range files {
		if snap, _, err := formats.Read(f); err != nil || len(snap.Events) == 0 {
			t.Errorf("kept file %s: %v", f, err)
		}
	}
	os.RemoveAll(kept)
	if o := s.Outputs(); o.RunDir != "" || o.Perfetto != "" || o.XPlane != "" {
		t.Errorf("outputs name objects that were not written: %+v", o)
	}
	srv.Restart()
	if es, err := runstore.List(context.Background(), srv.URL("gone")); err != nil || len(es) != 0 {
		t.Errorf("the bucket holds %+v (%v), want nothing", es, err)
	}
}

// TestS3TensorBoardListsRun: real TensorBoard (.venv, scripts/pyenv),
// started with --logdir s3://… and pointed at the server by
// AWS_ENDPOINT_URL, lists a run devprof wrote there and its host; xprof's
// native tools answer that they cannot open s3:// files, as the README
// says.
func TestS3TensorBoardListsRun(t *testing.T) {
	tb, err := filepath.Abs("../../.venv/bin/tensorboard")
	if err == nil {
		_, err = os.Stat(tb)
	}
	if err == nil {
		err = exec.Command(filepath.Join(filepath.Dir(tb), "python"), "-c", "import s3fs, tensorboard, xprof").Run()
	}
	if err != nil {
		s3test.Missing(t, "TensorBoard with s3fs in .venv (run scripts/pyenv)", err)
	}
	srv := s3test.Start(t)
	logdir := srv.URL("tb")
	s := recordS3Session(t, logdir, trace.Options{Hostname: "worker-0", SessionID: "run_s3"})
	if s.Outputs().XPlane == "" {
		t.Fatalf("no xplane written: %+v", s.Outputs())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "tensorboard.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	tbLog := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	cmd := exec.Command(tb, "--logdir", logdir, "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Env = append(os.Environ(), srv.Env()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	get := func(path string) (string, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return string(b), fmt.Errorf("%s: %s", path, resp.Status)
		}
		return string(b), err
	}
	var runs []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		b, err := get("/data/plugin/profile/runs")
		if err == nil && json.Unmarshal([]byte(b), &runs) == nil && len(runs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("TensorBoard listed no run in 90s (last: %q, %v)\n%s", b, err, tbLog())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(runs) != 1 || runs[0] != "run_s3" {
		t.Fatalf("TensorBoard lists runs %v, want [run_s3]", runs)
	}
	b, err := get("/data/plugin/profile/hosts?run=run_s3&tag=trace_viewer@")
	if err != nil || !strings.Contains(b, `"worker-0"`) {
		t.Errorf("TensorBoard's hosts of the run: %s, %v", b, err)
	}
	// xprof's tools run in its C++ library, which has no S3 file system:
	// it offers no tool for the run, and a tool's data is an error.
	b, err = get("/data/plugin/profile/run_tools?run=run_s3")
	if err != nil || strings.TrimSpace(b) != "[]" {
		t.Errorf("TensorBoard's tools of the s3:// run: %s, %v; want none, as the README says", b, err)
	}
	b, err = get("/data/plugin/profile/data?run=run_s3&tag=overview_page&host=worker-0")
	if err == nil {
		t.Errorf("xprof's overview page opened an s3:// run; the README says it cannot: %.200s", b)
	}
	const refusal = "File system scheme 's3' not implemented"
	for end := time.Now().Add(10 * time.Second); !strings.Contains(tbLog(), refusal); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("TensorBoard's log does not say %q:\n%s", refusal, tbLog())
		}
	}
}

// TestS3CollectFanOut: devprof collect --log_dir s3://… captures two
// profile servers into one run in the bucket (each host's xplane and the
// merged trace), prints the run's URL, and leaves no staging behind.
func TestS3CollectFanOut(t *testing.T) {
	t.Run("capture", func(t *testing.T) { testS3Collect(t, "", "500") })
	// --snapshot writes its run through the same path: flight recorders'
	// windows land in the bucket as a capture's do.
	t.Run("snapshot", func(t *testing.T) { testS3Collect(t, "flight:", "--snapshot") })
}

func testS3Collect(t *testing.T, childPrefix, modeArg string) {
	srv := s3test.Start(t)
	tmp := t.TempDir()
	addrs := []string{startCollectChild(t, childPrefix+"a"), startCollectChild(t, childPrefix+"b")}
	t.Setenv("TMPDIR", tmp) // where collect stages the run (after the children started)
	logdir := srv.URL("collected")
	if childPrefix != "" {
		time.Sleep(flightWindow) // let the rings fill a window
	}
	code, stdout, stderr := runCLI("collect", strings.Join(addrs, ","), modeArg, "--log_dir", logdir, "--no_perfetto_link")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	runURL := strings.TrimSpace(stdout)
	if !strings.HasPrefix(runURL, logdir+"/plugins/profile/") || strings.Contains(runURL, "\n") {
		t.Fatalf("stdout %q, want the run's URL alone", stdout)
	}
	entries, err := runstore.List(context.Background(), runURL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name)
	}
	want := []string{fileHostName(addrs[0]) + ".xplane.pb", fileHostName(addrs[1]) + ".xplane.pb", collectMergedName}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the run holds %v, want %v", got, want)
	}
	key := strings.TrimPrefix(runURL, "s3://"+srv.Bucket+"/")
	s, err := formats.Perfetto.ReadFile(srv.Path(key+"/"+collectMergedName), nil)
	if err != nil {
		t.Fatal(err)
	}
	spans := hostSpans(s)
	for _, a := range addrs {
		if len(spans[a]) == 0 {
			t.Errorf("the merged trace has no spans of host %s (processes: %v)", a, s.Processes)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("staging left behind in TMPDIR: %v", left)
	}
	// summary reads the collected run from the bucket.
	if code, out, e := runCLI("summary", logdir); code != 0 || !strings.Contains(out, "work a") || !strings.Contains(out, "work b") {
		t.Errorf("summary %s: exit %d\n%s\n%s", logdir, code, out, e)
	}
}

// TestS3ServeAndMemory: devprof serve hands ui.perfetto.dev the object's
// own bytes, and devprof memory and memory breakdown read a profile from
// the bucket (an object, or a log directory's newest) as from disk.
func TestS3ServeAndMemory(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	// memory
	local := writeMemProfile(t, liveMemory(), "h.memory.pb.gz")
	obj := srv.URL("mem/plugins/profile/r/h.memory.pb.gz")
	if err := runstore.Put(ctx, obj, local, runstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args        []string
		remote, loc string
	}{
		{[]string{"memory", "-json"}, obj, local},
		{[]string{"memory", "breakdown", "-json"}, srv.URL("mem"), local},
	} {
		code, rs, re := runCLI(append(c.args, c.remote)...)
		if code != 0 {
			t.Fatalf("%v %s: exit %d: %s", c.args, c.remote, code, re)
		}
		code, ls, le := runCLI(append(c.args, c.loc)...)
		if code != 0 {
			t.Fatalf("%v %s: exit %d: %s", c.args, c.loc, code, le)
		}
		if rs == "" || strings.ReplaceAll(rs, obj, local) != ls {
			t.Errorf("%v of %s differs from the local file's:\n%s\nlocal:\n%s", c.args, c.remote, rs, ls)
		}
	}
	// serve
	serveAddr = "127.0.0.1:0"
	defer func() { serveAddr = "" }()
	s := recordS3Session(t, srv.URL("serve"), trace.Options{Hostname: "h"})
	want, err := os.ReadFile(srv.Path(strings.TrimPrefix(s.Outputs().Perfetto, "s3://"+srv.Bucket+"/")))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "-timeout", "20s", s.Outputs().Perfetto}, pw, &errOut)
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() { // drained on its own goroutine: serve writes while the test fetches
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, " once at http://") {
				urls <- line[strings.Index(line, " once at ")+len(" once at "):]
			}
		}
		close(urls)
	}()
	var got []byte
	if u, ok := <-urls; ok {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}).Get(u)
		if err != nil {
			t.Fatal(err)
		}
		got, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	for range urls {
	}
	if rc := <-code; rc != 0 {
		t.Fatalf("serve: exit %d: %s", rc, errOut.String())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("serve handed out %d bytes, want the object's %d", len(got), len(want))
	}
}
