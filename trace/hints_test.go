package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/perfettolink"
	cupti "github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/sources/nvml"
)

// optionTypes are the Options types a message may name, by the package
// name it must be qualified with: a message travels up to callers of
// other packages (a trace user sees cuptiwrap's errors), so a bare
// "Options.Library" names nothing they have.
var optionTypes = map[string]reflect.Type{
	"trace":        reflect.TypeFor[Options](),
	"cupti":        reflect.TypeFor[cupti.Options](),
	"cuptiwrap":    reflect.TypeFor[cuptiwrap.Options](),
	"nvml":         reflect.TypeFor[nvml.Options](),
	"devmem":       reflect.TypeFor[devmem.Options](),
	"perfettolink": reflect.TypeFor[perfettolink.Options](),
}

var optionMention = regexp.MustCompile(`(?:\b([a-z][a-z0-9]*)\.)?\bOptions((?:\.[A-Z][A-Za-z0-9]*)+)`)

// checkMention returns why a mention of an option in a message is wrong,
// or "".
func checkMention(pkg, fields string) string {
	if pkg == "" {
		return "does not say whose Options (write trace.Options..., cupti.Options...)"
	}
	t, ok := optionTypes[pkg]
	if !ok {
		return "names " + pkg + ".Options, which the test does not know"
	}
	for _, f := range strings.Split(strings.TrimPrefix(fields, "."), ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return "goes into " + t.String() + ", which has no fields"
		}
		sf, ok := t.FieldByName(f)
		if !ok {
			return t.String() + " has no field " + f
		}
		t = sf.Type
	}
	return ""
}

func TestCheckMentionCanFail(t *testing.T) {
	for text, bad := range map[string]bool{
		"trace.Options.GPU.Library":     false,
		"cupti.Options.Library":         false,
		"cuptiwrap.Options.BufferSize":  false,
		"trace.Options.GPUMetrics.PCIe": false,
		"Options.Library":               true,
		"trace.Options.Library":         true,
		"trace.Options.MaxEvents.X":     true,
		"foo.Options.X":                 true,
	} {
		m := optionMention.FindStringSubmatch("fix " + text + " please")
		if m == nil || (checkMention(m[1], m[2]) != "") != bad {
			t.Errorf("%q: match %q, bad %v; want bad %v", text, m, m != nil && checkMention(m[1], m[2]) != "", bad)
		}
	}
}

// TestHintsNameRealOptions reads every string literal of the module's
// non-test Go files (messages, hints, advanced keys' docs) and checks
// every option it names against the API.
func TestHintsNameRealOptions(t *testing.T) {
	mentions := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".." || d.Name() == "testdata" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range optionMention.FindAllStringSubmatch(s, -1) {
				mentions++
				if why := checkMention(m[1], m[2]); why != "" {
					t.Errorf("%s: %q %s", fset.Position(lit.Pos()), m[0], why)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if mentions < 5 {
		t.Errorf("found %d mentions of options in messages; is the walk reading the module?", mentions)
	}
}

// TestDeviceTracerEnv: DEVPROF_DEVICE_TRACER=off turns the device tracer
// off as DeviceTracerLevel: Off does; on keeps the options' choice; any
// other value is refused, naming the variable.
func TestDeviceTracerEnv(t *testing.T) {
	for _, c := range []struct {
		env   string
		level int
		opt   int
		err   bool
	}{
		{"", 1, 0, false}, {"off", 0, 0, false}, {"OFF", 0, 0, false}, {"0", 0, 0, false},
		{"on", 1, 0, false}, {"on", 0, Off, false}, {"sometimes", 0, 0, true},
	} {
		t.Setenv(EnvDeviceTracer, c.env)
		cfg, err := (&Options{DeviceTracerLevel: c.opt}).resolve()
		if (err != nil) != c.err || err == nil && cfg.deviceLevel != c.level || err != nil && !strings.Contains(err.Error(), EnvDeviceTracer) {
			t.Errorf("%s=%q, DeviceTracerLevel %d: level %d, err %v; want level %d, error %v", EnvDeviceTracer, c.env, c.opt, cfg.deviceLevel, err, c.level, c.err)
		}
	}
}
