package trace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/devprof/devprof/cuptiwrap"
	cupti "github.com/devprof/devprof/sources/cupti"
)

// Off disables a tracer when given as HostTracerLevel or DeviceTracerLevel.
const Off = -1

// DefaultMaxEvents is the event bound of a session whose MaxEvents is 0:
// the trace viewer's own default cap.
const DefaultMaxEvents = 1_000_000

// Options configure a session. The zero value records with the defaults
// of JAX's ProfileOptions: host tracer level 2, device tracer level 1.
type Options struct {
	// HostTracerLevel selects which host annotations are recorded: one of
	// level L is kept when L <= HostTracerLevel. 1 keeps user annotations
	// only, 2 adds expensive operations, 3 adds verbose ones. 0 means the
	// default (2); Off records no host annotations.
	HostTracerLevel int

	// DeviceTracerLevel is 1 to record device activity; 0 means the default
	// (1); Off disables device tracing.
	DeviceTracerLevel int

	// MaxEvents bounds the events buffered in memory; past it events are
	// dropped without blocking, counted, and the count is written into every
	// output. 0 means DefaultMaxEvents. An event with more than two
	// arguments takes one extra slot per two further arguments.
	MaxEvents int

	// NoPerfetto skips the Perfetto output (<host>.pftrace).
	NoPerfetto bool

	// NoXPlane skips the TensorBoard profile output (<host>.xplane.pb).
	NoXPlane bool

	// PerfettoGzip compresses the Perfetto output (<host>.pftrace.gz); the
	// Perfetto UI reads it directly.
	PerfettoGzip bool

	// ChromeTrace also writes <host>.trace.json.gz in the Chrome Trace Event
	// Format, for tools that read only JSON.
	ChromeTrace bool

	// PerfettoLink makes Stop serve the Perfetto file once on
	// http://127.0.0.1:9001 and print a ui.perfetto.dev link, blocking until
	// it has been opened (or LinkTimeout passes), like JAX's
	// create_perfetto_link.
	PerfettoLink bool

	// LinkTimeout bounds how long Stop waits for the link to be opened;
	// 0 waits until it is.
	LinkTimeout time.Duration

	// AdvancedConfig holds rarely used settings by name, as in JAX's
	// ProfileOptions.advanced_configuration. Values are string, bool or an
	// integer type. Unknown keys and values of the wrong type make the
	// session fail to start with an error naming them. See ConfigKeys.
	AdvancedConfig map[string]any
}

// ConfigKind is the value type an advanced configuration key takes.
type ConfigKind uint8

const (
	ConfigString ConfigKind = iota + 1
	ConfigBool
	ConfigInt
)

func (k ConfigKind) String() string {
	switch k {
	case ConfigString:
		return "string"
	case ConfigBool:
		return "bool"
	case ConfigInt:
		return "int"
	}
	return "?"
}

// ConfigKey documents one advanced configuration key.
type ConfigKey struct {
	Name string
	Kind ConfigKind
	Doc  string
}

var configKeys = []ConfigKey{
	{"override_hostname", ConfigString, "host name used in output file names and shown in the outputs (default: the machine's host name)"},
	{"session_id", ConfigString, "name of the run directory under <logdir>/plugins/profile (default: the start time, YYYY_MM_DD_HH_MM_SS)"},
	{"program_name", ConfigString, "process name shown in the outputs (default: the executable's base name)"},
	{"cupti_library", ConfigString, "libcupti to load for GPU tracing, a path or soname (default: $DEVPROF_CUPTI_LIB, else a search of the CUDA 13/12/11 sonames and toolkit directories)"},
	{"gpu_max_activity_api_events", ConfigInt, "most CUPTI activity records kept; later ones are counted as dropped (default: max_events)"},
	{"gpu_buffer_size", ConfigInt, "bytes per CUPTI activity buffer, 65536..268435456 (default 4 MiB)"},
	{"gpu_max_buffers", ConfigInt, "most CUPTI activity buffers at once; when all are full CUPTI drops records (default 32)"},
	{"gpu_flush_period_ms", ConfigInt, "how often CUPTI hands over completed buffers, in ms (default 1000; 0 keeps the default)"},
}

// ConfigKeys lists the advanced configuration keys a session accepts.
func ConfigKeys() []ConfigKey { return slices.Clone(configKeys) }

// config is Options resolved and validated.
type config struct {
	hostLevel, deviceLevel int
	maxEvents              int64
	perfetto, gzip, chrome bool
	xplane                 bool
	link                   bool
	linkTimeout            time.Duration
	host, sessionID, prog  string
	gpu                    cupti.Config
}

func (o *Options) resolve() (config, error) {
	c := config{
		hostLevel:   2,
		deviceLevel: 1,
		maxEvents:   DefaultMaxEvents,
		perfetto:    !o.NoPerfetto,
		gzip:        o.PerfettoGzip,
		chrome:      o.ChromeTrace,
		xplane:      !o.NoXPlane,
		link:        o.PerfettoLink,
		linkTimeout: o.LinkTimeout,
	}
	switch {
	case o.HostTracerLevel == Off:
		c.hostLevel = 0
	case o.HostTracerLevel == 0:
	case o.HostTracerLevel >= 1 && o.HostTracerLevel <= 3:
		c.hostLevel = o.HostTracerLevel
	default:
		return c, fmt.Errorf("HostTracerLevel %d out of range: want 1..3, 0 for the default or trace.Off", o.HostTracerLevel)
	}
	switch o.DeviceTracerLevel {
	case Off:
		c.deviceLevel = 0
	case 0, 1:
	default:
		return c, fmt.Errorf("DeviceTracerLevel %d out of range: want 1, 0 for the default or trace.Off", o.DeviceTracerLevel)
	}
	switch {
	case o.MaxEvents < 0:
		return c, fmt.Errorf("MaxEvents %d is negative", o.MaxEvents)
	case o.MaxEvents > 0:
		c.maxEvents = int64(o.MaxEvents)
	}
	if o.LinkTimeout < 0 {
		return c, fmt.Errorf("LinkTimeout %v is negative", o.LinkTimeout)
	}
	if o.PerfettoLink && o.NoPerfetto {
		return c, fmt.Errorf("PerfettoLink needs the Perfetto output, but NoPerfetto is set")
	}
	if err := c.applyAdvanced(o.AdvancedConfig); err != nil {
		return c, err
	}
	return c, nil
}

func (c *config) applyAdvanced(m map[string]any) error {
	var unknown, wrong []string
	for k, v := range m {
		i := slices.IndexFunc(configKeys, func(ck ConfigKey) bool { return ck.Name == k })
		if i < 0 {
			unknown = append(unknown, k)
			continue
		}
		key := configKeys[i]
		var ok bool
		switch key.Kind {
		case ConfigString:
			var s string
			s, ok = v.(string)
			switch k {
			case "override_hostname":
				c.host = s
			case "session_id":
				c.sessionID = s
				if ok && (s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`)) {
					return fmt.Errorf("advanced configuration key %q: %q is not a valid directory name", k, s)
				}
			case "program_name":
				c.prog = s
			case "cupti_library":
				c.gpu.Library = s
			}
		case ConfigBool:
			_, ok = v.(bool)
		case ConfigInt:
			var n int64
			n, ok = asInt(v)
			if ok {
				if err := c.setInt(k, n); err != nil {
					return err
				}
			}
		}
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%q: want %s, got %T", k, key.Kind, v))
		}
	}
	sort.Strings(unknown)
	sort.Strings(wrong)
	var msgs []string
	if len(unknown) > 0 {
		names := make([]string, len(configKeys))
		for i, k := range configKeys {
			names[i] = k.Name
		}
		msgs = append(msgs, fmt.Sprintf("unknown keys %s (known keys: %s)", strings.Join(quoteAll(unknown), ", "), strings.Join(names, ", ")))
	}
	if len(wrong) > 0 {
		msgs = append(msgs, "wrong value types for "+strings.Join(wrong, "; "))
	}
	if len(msgs) > 0 {
		return fmt.Errorf("advanced configuration: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// setInt applies an integer key, checking its range.
func (c *config) setInt(k string, n int64) error {
	bad := func(want string) error {
		return fmt.Errorf("advanced configuration key %q: %d out of range: want %s", k, n, want)
	}
	switch k {
	case "gpu_max_activity_api_events":
		if n < 1 {
			return bad("at least 1")
		}
		c.gpu.MaxRecords = n
	case "gpu_buffer_size":
		if n < cuptiwrap.MinBufferSize || n > cuptiwrap.MaxBufferSize {
			return bad(fmt.Sprintf("%d..%d bytes", cuptiwrap.MinBufferSize, cuptiwrap.MaxBufferSize))
		}
		c.gpu.BufferSize = int(n)
	case "gpu_max_buffers":
		if n < 1 || n > cuptiwrap.MaxMaxBuffers {
			return bad(fmt.Sprintf("1..%d", cuptiwrap.MaxMaxBuffers))
		}
		c.gpu.MaxBuffers = int(n)
	case "gpu_flush_period_ms":
		if n < 0 || n > 60_000 {
			return bad("0..60000 ms")
		}
		c.gpu.FlushPeriod = time.Duration(n) * time.Millisecond
	}
	return nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}
