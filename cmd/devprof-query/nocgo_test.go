//go:build !cgo

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestNeedsCgo: without cgo the command says so in one line, exit 1,
// after checking its arguments as usual.
func TestNeedsCgo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-q", "steps", "../../testdata"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "needs cgo") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
	if code := run(context.Background(), []string{"-q", "nope", "x"}, &stdout, &stderr); code != 2 {
		t.Errorf("a usage error without cgo: exit %d", code)
	}
}
