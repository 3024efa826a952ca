package readmecheck

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock matches a fenced ```go block, indented or not (README lists
// indent theirs); group 1 is the indentation, group 2 the code.
var goBlock = regexp.MustCompile("(?ms)^([ \t]*)```go\n(.*?)^[ \t]*```")

// programs returns the complete programs among the README's Go blocks:
// those starting with "package main". The others are fragments.
func programs(readme string) []string {
	var out []string
	for _, m := range goBlock.FindAllStringSubmatch(readme, -1) {
		code := m[2]
		if ind := m[1]; ind != "" {
			code = strings.ReplaceAll("\n"+code, "\n"+ind, "\n")[1:]
		}
		if strings.HasPrefix(code, "package main\n") {
			out = append(out, code)
		}
	}
	return out
}

func TestProgramsFindsOnlyCompletePrograms(t *testing.T) {
	md := "text\n```go\npackage main\n\nfunc main() {}\n```\n\n  ```go\n  x := 1\n  ```\n"
	got := programs(md)
	if len(got) != 1 || got[0] != "package main\n\nfunc main() {}\n" {
		t.Fatalf("programs = %q", got)
	}
}

// TestREADMEProgramsBuild writes each complete program in README.md and
// in docs/*.md into a module of its own that uses this checkout (a replace
// directive), and requires it to be gofmt-clean, to build and to pass go
// vet.
func TestREADMEProgramsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(programs(string(readme))) == 0 {
		t.Fatal("README.md has no complete Go program (a ```go block starting with package main)")
	}
	type program struct{ file, src string }
	var progs []program
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for _, src := range programs(string(b)) {
			progs = append(progs, program{rel, src})
		}
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range progs {
		src := p.src
		if formatted, err := format.Source([]byte(src)); err != nil {
			t.Errorf("%s: program %d does not parse: %v\n%s", p.file, i+1, err, src)
			continue
		} else if !bytes.Equal(formatted, []byte(src)) {
			t.Errorf("%s: program %d is not gofmt-clean; gofmt makes it:\n%s", p.file, i+1, formatted)
		}
		dir := t.TempDir()
		gomod := "module example\n\ngo 1.26\n\nrequire github.com/devprof/devprof v0.0.0\n\nreplace github.com/devprof/devprof => " + root + "\n"
		for name, content := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(src)} {
			if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// -mod=mod lets the go command add the checkout's own requirements
		// to the example's go.mod, as go get would for a user.
		for _, args := range [][]string{{"build", "-mod=mod", "-o", os.DevNull, "."}, {"vet", "-mod=mod", "."}} {
			cmd := exec.Command("go", args...) // go test puts its own go first on PATH
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: program %d: go %s: %v\n%s\n%s", p.file, i+1, strings.Join(args, " "), err, out, src)
			}
		}
	}
}
