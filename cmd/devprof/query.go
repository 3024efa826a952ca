package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// queryCommand is the command devprof query runs. It is a command apart
// because it embeds DuckDB (cgo, and a binary half again devprof's size:
// docs/tables.md), which a program that only records or converts traces
// should not have to build or carry.
const queryCommand = "devprof-query"

// queryInstall is how a user gets queryCommand, for the message that
// says it is missing.
const queryInstall = "go install github.com/devprof/devprof/cmd/devprof-query@latest"

// exitStatus is a failure the command that ran already reported on its
// own stderr: devprof exits with its status and adds nothing.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// runQuery runs devprof-query with the arguments as they are, so that
// devprof query and devprof-query take the same flags and print the
// same rows: stdin, stdout and stderr are its; its exit status is
// devprof's.
func runQuery(args []string, stdout, stderr io.Writer) error {
	path, findErr := findQueryCommand()
	if wantsHelp(args) {
		queryUsage(stderr, path)
		return flag.ErrHelp
	}
	if findErr != nil {
		return findErr
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// The terminal's interrupt reaches both processes: devprof-query
	// takes back what it started and exits, and devprof waits for it
	// rather than leave it running behind the shell's prompt.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitStatus(128 + int(ws.Signal()))
		}
		return exitStatus(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("running %s: %v", path, err)
	}
	return nil
}

// findQueryCommand returns devprof-query's path: beside devprof's own
// executable first (go install puts both in one directory, which need
// not be on PATH), then on PATH.
func findQueryCommand() (string, error) {
	name := queryCommand
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if self, err := filepath.EvalSymlinks(self); err == nil {
			p := filepath.Join(filepath.Dir(self), name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(queryCommand); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("needs the %s command (it embeds DuckDB, so it is installed apart; it needs cgo): %s", queryCommand, queryInstall)
}

// queryUsage is devprof query's help; the flags are devprof-query's.
func queryUsage(w io.Writer, path string) {
	c, _ := lookup([]string{"query"})
	fmt.Fprintf(w, "Usage: devprof %s\n\n%s.\n\n", strings.TrimSpace(c.name+" "+c.args), upperFirst(c.short))
	fmt.Fprintf(w, "It runs %s with the same arguments (its -h describes each flag);", queryCommand)
	if path != "" {
		fmt.Fprintf(w, " found at %s.\n", path)
	} else {
		fmt.Fprintf(w, " not found beside devprof or on PATH: %s\n", queryInstall)
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n", c.example)
}
