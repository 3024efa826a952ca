//go:build unix

package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalChildEnv, set, makes the test binary the child of
// TestSignalRemovesTemporaryFile: it writes the file named in it until it
// is killed, under RemoveOnSignal unless the name follows "unguarded:".
const signalChildEnv = "ATOMICFILE_SIGNAL_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(signalChildEnv); path != "" {
		if p, unguarded := strings.CutPrefix(path, "unguarded:"); unguarded {
			writeUntilKilled(p)
		} else {
			defer RemoveOnSignal(os.Interrupt, syscall.SIGTERM)()
			writeUntilKilled(path)
		}
		return
	}
	os.Exit(m.Run())
}

// writeUntilKilled writes path without end, saying "writing" on stdout
// once a MiB is in the temporary file.
func writeUntilKilled(path string) {
	f, err := Create(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	defer f.Abort()
	line := []byte("a line of a large output that is never finished\n")
	said := false
	for n := 0; ; n += len(line) {
		f.Write(line)
		if n >= 1<<20 && !said {
			f.Flush()
			fmt.Println("writing")
			said = true
		}
	}
}

// TestSignalRemovesTemporaryFile: a process killed by SIGINT or SIGTERM
// in the middle of a write leaves no temporary file, and dies of the
// signal (as a shell expects of an interrupted command), under
// RemoveOnSignal; without it the temporary file stays, which is what
// RemoveOnSignal is for.
func TestSignalRemovesTemporaryFile(t *testing.T) {
	for _, c := range []struct {
		sig     syscall.Signal
		guarded bool
	}{{syscall.SIGINT, true}, {syscall.SIGTERM, true}, {syscall.SIGTERM, false}} {
		t.Run(fmt.Sprintf("%v guarded=%v", c.sig, c.guarded), func(t *testing.T) {
			sig := c.sig
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			env := filepath.Join(dir, "out.csv")
			if !c.guarded {
				env = "unguarded:" + env
			}
			cmd.Env = append(os.Environ(), signalChildEnv+"="+env)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan string, 1)
			go func() {
				s := bufio.NewScanner(stdout)
				s.Scan()
				ready <- s.Text()
				for s.Scan() {
				}
			}()
			select {
			case l := <-ready:
				if l != "writing" {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("child said %q", l)
				}
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("child never started writing")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("while writing, %d files in the directory, want the temporary one", len(ents))
			}
			cmd.Process.Signal(sig)
			err = cmd.Wait()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("child ended with %v, want killed by %v", err, sig)
			}
			ents, _ := os.ReadDir(dir)
			switch {
			case c.guarded && len(ents) != 0:
				t.Errorf("left behind: %v", ents)
			case !c.guarded && len(ents) != 1:
				t.Errorf("without RemoveOnSignal %d files are left, want the temporary one (else this test proves nothing)", len(ents))
			}
		})
	}
}

// TestRemoveOnSignalStops: after stop, the signals are no longer caught
// (a second stop does nothing), and files committed or aborted are no
// longer pending.
func TestRemoveOnSignalStops(t *testing.T) {
	stop := RemoveOnSignal(syscall.SIGUSR1)
	dir := t.TempDir()
	a, err := Create(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	pending.Lock()
	n := len(pending.names)
	pending.Unlock()
	if n < 2 {
		t.Fatalf("%d pending, want the two files", n)
	}
	a.Commit()
	b.Abort()
	pending.Lock()
	for name := range pending.names {
		if filepath.Dir(name) == dir {
			t.Errorf("%s still pending after Commit or Abort", name)
		}
	}
	pending.Unlock()
	stop()
	stop()
}
