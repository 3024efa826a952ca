package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeQueryCommand puts a devprof-query on PATH that prints its
// arguments, one line on stderr, and exits with $FAKE_QUERY_EXIT.
func fakeQueryCommand(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake devprof-query is a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf '%s|' \"$@\"\necho 'devprof-query: its own error' >&2\nexit ${FAKE_QUERY_EXIT:-0}\n"
	if err := os.WriteFile(filepath.Join(dir, queryCommand), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestQueryRunsDevprofQuery: devprof query passes its arguments to
// devprof-query as they are and exits with its status, adding no second
// error line to the one devprof-query wrote.
func TestQueryRunsDevprofQuery(t *testing.T) {
	fakeQueryCommand(t)
	for _, exit := range []string{"0", "1", "2"} {
		t.Setenv("FAKE_QUERY_EXIT", exit)
		code, stdout, stderr := runCLI("query", "-q", "kernels", "-json", "/tmp/tables", "select 1 -- x")
		if want := int(exit[0] - '0'); code != want {
			t.Errorf("exit %d, want devprof-query's %d", code, want)
		}
		if stdout != "-q|kernels|-json|/tmp/tables|select 1 -- x|" {
			t.Errorf("devprof-query got %q", stdout)
		}
		if stderr != "devprof-query: its own error\n" {
			t.Errorf("stderr %q, want devprof-query's line alone", stderr)
		}
	}
}

// TestQueryWithoutDevprofQuery: without devprof-query, one line that
// says how to install it, exit 1; -h still describes the command.
func TestQueryWithoutDevprofQuery(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if p, err := findQueryCommand(); err == nil {
		t.Skipf("a devprof-query sits beside the test binary: %s", p)
	}
	code, stdout, stderr := runCLI("query", "/tmp/tables", "select 1")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, queryInstall) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("query", "-h")
	if code != 0 || !strings.Contains(stdout, "not found") || !strings.Contains(stdout, queryInstall) {
		t.Errorf("-h: exit %d\n%s", code, stdout)
	}
}
