package cuptiwrap

import (
	"os"
	"os/exec"
	"testing"

	"github.com/devprof/devprof/internal/fakecuda"
)

// TestABIAgainstRealHeaders compiles abicheck/abi_check.c against NVIDIA's
// CUPTI headers: it fails to compile if any offset, width, enum value or
// function type devprof declares by hand disagrees with them.
func TestABIAgainstRealHeaders(t *testing.T) {
	if _, err := os.Stat("/usr/include/cupti.h"); err != nil {
		fakecuda.MissingReal(t, "the real CUPTI headers", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("no C compiler %q (%v): install gcc (apt-get install gcc) or set CC", cc, err)
	}
	cmd := exec.Command(cc, "-fsyntax-only", "-Wall", "-Werror", "-I", "abicheck/include", "abicheck/abi_check.c")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}
