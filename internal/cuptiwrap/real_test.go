package cuptiwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/fakecuda"
)

// TestABIAgainstRealHeaders compiles abicheck/abi_check.c against NVIDIA's
// CUPTI headers: it fails to compile if any offset, width, enum value or
// function type devprof declares by hand disagrees with them. The CUDA API
// parameter structs it checks are copied out of the real generated headers
// first (see abi_check.c).
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
	src, err := os.ReadFile("abicheck/abi_check.c")
	if err != nil {
		t.Fatal(err)
	}
	params, err := realParams(string(src), "/usr/include/generated_cuda_runtime_api_meta.h", "/usr/include/generated_cuda_meta.h")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dpc_real_params.h"), []byte(params), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cc, "-fsyntax-only", "-Wall", "-Werror", "-I", "abicheck/include", "-I", dir, "abicheck/abi_check.c")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}

// paramsName matches the CUDA API parameter structs abi_check.c names.
var paramsName = regexp.MustCompile(`\b(cu[A-Za-z0-9_]*_params)\b`)

// realParams returns a header holding, verbatim, the typedef of every
// *_params struct that check names, copied from headers; it fails for a
// name none of them defines.
func realParams(check string, headers ...string) (string, error) {
	var names []string
	for _, m := range paramsName.FindAllStringSubmatch(check, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var text []string
	for _, h := range headers {
		b, err := os.ReadFile(h)
		if err != nil {
			return "", fmt.Errorf("the real CUDA parameter structs: %w", err)
		}
		text = append(text, string(b))
	}
	var out strings.Builder
	out.WriteString("/* Copied by TestABIAgainstRealHeaders from " + strings.Join(headers, ", ") + ". */\n")
	out.WriteString("#ifndef DPC_REAL_PARAMS_H\n#define DPC_REAL_PARAMS_H\n#include <stddef.h>\n#include <cuda.h>\n#include <builtin_types.h>\n\n")
	for _, name := range names {
		def, ok := "", false
		for _, s := range text {
			if def, ok = typedefOf(s, name); ok {
				break
			}
		}
		if !ok {
			return "", fmt.Errorf("no typedef struct %s_st {...} %s; in %s", name, name, strings.Join(headers, ", "))
		}
		out.WriteString(def + "\n\n")
	}
	out.WriteString("#endif\n")
	return out.String(), nil
}

// typedefOf finds "typedef struct <name>_st { … } <name>;" in s.
func typedefOf(s, name string) (string, bool) {
	start := strings.Index(s, "typedef struct "+name+"_st {")
	if start < 0 {
		return "", false
	}
	end := strings.Index(s[start:], "} "+name+";")
	if end < 0 {
		return "", false
	}
	return s[start : start+end+len("} "+name+";")], true
}
