// Package s3test is test support: it runs a real S3-compatible server,
// versitygw (an S3 gateway over a local directory, built by
// scripts/s3-deps), on 127.0.0.1 for the tests of log directories on
// object storage (internal/runstore, trace, cmd/devprof). It is no part of
// devprof's flow; only tests import it.
//
// Where versitygw is missing, a test skips naming scripts/s3-deps, unless
// DEVPROF_REQUIRE_S3=1 (set by scripts/test, so in CI) makes it fail.
package s3test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireEnv names the environment variable under which a test that needs
// versitygw fails instead of skipping when it is missing.
const RequireEnv = "DEVPROF_REQUIRE_S3"

// Version is the versitygw release scripts/s3-deps installs.
const Version = "v1.8.0"

// Test credentials of the throwaway server: not secrets.
const (
	accessKey = "devproftest"
	secretKey = "devproftestsecret"
	region    = "us-east-1"
)

// Server is a running versitygw with one empty bucket.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Dir      string // the directory it serves: Dir/<bucket>/<key> are the objects
	Bucket   string // a bucket name unique to this server
	addr     string
	bin      string
	cmd      *exec.Cmd
	done     chan struct{}
	log      *os.File
	tb       testing.TB
}

// Binary returns the path of versitygw: on PATH, else in $GOBIN or
// $GOPATH/bin where scripts/s3-deps installs it.
func Binary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if b, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
			dirs = append(dirs, strings.TrimSpace(lines[0]))
		}
		if len(lines) > 1 {
			for _, p := range filepath.SplitList(strings.TrimSpace(lines[1])) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw is not on PATH nor in %s", strings.Join(dirs, ", "))
}

// Missing skips tb, naming the setup command, or fails it where
// RequireEnv=1 forbids skipping.
func Missing(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("%s is missing (%v): run scripts/s3-deps (go install github.com/versity/versitygw/cmd/versitygw@%s)", what, err, Version)
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatal(msg + "; " + RequireEnv + "=1 forbids skipping")
	}
	tb.Skip(msg)
}

// Start starts versitygw on a free port of 127.0.0.1 over a new temporary
// directory holding one bucket, points this process's AWS SDK at it (its
// environment, restored when tb ends), and stops it when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		Missing(tb, "versitygw (a real S3 server)", err)
	}
	s := &Server{Dir: tb.TempDir(), bin: bin, tb: tb}
	var b [4]byte
	rand.Read(b[:])
	s.Bucket = "devprof-" + hex.EncodeToString(b[:])
	if err := os.Mkdir(filepath.Join(s.Dir, s.Bucket), 0o755); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.addr = l.Addr().String()
	l.Close()
	s.Endpoint = "http://" + s.addr
	if s.log, err = os.Create(filepath.Join(tb.TempDir(), "versitygw.log")); err != nil {
		tb.Fatal(err)
	}
	s.start()
	tb.Cleanup(func() { s.Stop(); s.log.Close() })
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
	}
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	s.cmd = exec.Command(s.bin, "--access", accessKey, "--secret", secretKey, "--region", region,
		"--port", s.addr, "posix", s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("starting versitygw: %v", err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(s.log.Name())
			s.tb.Fatalf("versitygw exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("versitygw did not answer on %s in 20s: %v", s.Endpoint, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Env is the environment that points an AWS SDK (Go's, boto3/s3fs) at the
// server, as KEY=VALUE lines for a child process.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + accessKey,
		"AWS_SECRET_ACCESS_KEY=" + secretKey,
		"AWS_REGION=" + region,
		"AWS_DEFAULT_REGION=" + region,
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// URL returns s3://<bucket>/<key>.
func (s *Server) URL(key string) string {
	return "s3://" + s.Bucket + "/" + strings.TrimPrefix(key, "/")
}

// Path is where the object key lies on the server's disk.
func (s *Server) Path(key string) string {
	return filepath.Join(s.Dir, s.Bucket, filepath.FromSlash(key))
}

// Stop kills the server (as a crash or a lost network would end it) and
// waits for it to exit. It is a no-op on a stopped server.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts a stopped server again on the same address and directory.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}
