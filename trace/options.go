package trace

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/devprof/devprof/devmem"
	cupti "github.com/devprof/devprof/sources/cupti"
	"github.com/devprof/devprof/sources/goruntime"
	"github.com/devprof/devprof/sources/nvml"
)

// EnvDeviceTracer names the environment variable that turns the device
// tracer off without a change to the program: DEVPROF_DEVICE_TRACER=off
// (or 0, false) acts as DeviceTracerLevel: Off for every session; on (or
// 1, true, or unset) keeps what the options say. Any other value makes
// sessions fail to start.
const EnvDeviceTracer = "DEVPROF_DEVICE_TRACER"

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
	// arguments takes one extra slot per two further arguments. The bound
	// is handed out to each P in chunks that only that P writes (the span
	// path takes no lock), so near it a chunk a goroutine left behind on
	// another P may go unused: a full session keeps at most MaxEvents
	// events, and usually all but a few of them.
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

	// Hostname is the host name used in output file names and shown in
	// the outputs; "" means the machine's. Advanced key: override_hostname.
	Hostname string

	// SessionID names the run directory under <logdir>/plugins/profile;
	// "" means the start time (YYYY_MM_DD_HH_MM_SS). Advanced key:
	// session_id.
	SessionID string

	// ProgramName is the process name shown in the outputs; "" means the
	// executable's base name. Advanced key: program_name.
	ProgramName string

	// GPU configures the CUPTI source, which runs while DeviceTracerLevel
	// is on; the zero value uses its defaults.
	GPU cupti.Options

	// GPUMetrics configures the NVML source: GPU utilization, memory,
	// power, clocks and temperature as counters on each device, and the
	// devices' facts. The zero value samples every 100 ms while
	// DeviceTracerLevel is on.
	GPUMetrics nvml.Options

	// DeviceMemory turns device-memory tracking on for the session when
	// not nil (see package devmem): CUDA's allocations with the Go stacks
	// that made them, and the explicit devmem API. The trace holds every
	// allocation and free the session saw (memory over time: Perfetto
	// counters, xprof's memory_profile). Stop writes the buffers
	// still live into <run>/<host>.memory.pb.gz and stops the tracking it
	// started; tracking the program turned on itself (devmem.Start) is
	// left running, and its profile is written too. Advanced keys:
	// device_memory, device_memory_max_buffers.
	DeviceMemory *devmem.Options

	// GoRuntime configures the Go-runtime source: the Go execution tracer
	// (runtime/trace's flight recorder) runs during the session and its
	// GC cycles, stop-the-world pauses, goroutines per P and per
	// goroutine, user regions, tasks and logs, and heap and goroutine
	// counters join the same timeline, each span linked to the goroutine
	// it began on. The zero value runs it at host tracer level 3.
	// Advanced keys: go_runtime, go_runtime_max_bytes,
	// go_runtime_max_goroutines.
	GoRuntime goruntime.Options

	// Tables, when not nil, makes Stop also write the session as Parquet
	// tables (package tables, as devprof export does) to Tables.Dest(), a
	// directory or bucket URL: <dest>/<table>/run=<run>/host=<host>/<host>.parquet,
	// the run being the session's run directory name, so every host of a
	// job lands in one dataset that DuckDB or Spark query together. The
	// files appear whole, hosts table last, never replacing a file. Use
	// tables.Session(dest); a program that does not links no Parquet code.
	Tables TableWriter

	// FlightRecorder, when not nil, makes the session a flight recorder:
	// tracing stays on in a bounded ring that keeps the newest events,
	// and Session.FlightSnapshot (or trace.FlightSnapshot, or a remote
	// GetSnapshot) takes the last Window of it at any time without
	// stopping. Stop writes the last Window too. Advanced keys:
	// flight_recorder_window_ms, flight_recorder_max_events.
	FlightRecorder *FlightRecorderOptions

	// AdvancedConfig holds rarely used settings by name, as in JAX's
	// ProfileOptions.advanced_configuration: each key sets one typed
	// option above, overriding it. Values are a string or an integer type.
	// Unknown keys and values of the wrong type make the session fail to
	// start with an error naming them. See ConfigKeys.
	AdvancedConfig map[string]any
}

// FlightRecorderOptions configure a flight-recorder session (see
// Options.FlightRecorder). The zero value keeps the newest
// Options.MaxEvents events and snapshots all of them.
type FlightRecorderOptions struct {
	// Window is how far back a snapshot reaches: events that ended
	// before it are left out (and counted as dropped). 0 means all the
	// ring holds.
	Window time.Duration

	// MaxEvents bounds the ring: once it holds this many events, the
	// oldest are overwritten (and counted in the next snapshot). It is
	// raised to at least two chunks of 1024 per CPU. 0 means
	// Options.MaxEvents (DefaultMaxEvents when that is 0). A ring costs
	// 88 bytes per event, plus 40 per span for the contexts of spans
	// begun since the last turn.
	MaxEvents int
}

// ConfigKind is the value type an advanced configuration key takes.
type ConfigKind uint8

// The value types of advanced configuration keys.
const (
	ConfigString ConfigKind = iota + 1
	ConfigInt
	ConfigBool
)

// String returns the kind's name ("string", "int").
func (k ConfigKind) String() string {
	switch k {
	case ConfigString:
		return "string"
	case ConfigInt:
		return "int"
	case ConfigBool:
		return "bool"
	}
	return "?"
}

// ConfigKey documents one advanced configuration key.
type ConfigKey struct {
	Name string
	Kind ConfigKind
	Doc  string
}

// advancedKey is a ConfigKey and how it sets its typed option: the one
// place where names (JAX's advanced_configuration, remote capture) become
// the Go API's fields. Values are range-checked where the typed options
// are, by Options.resolve and each source's Validate.
type advancedKey struct {
	ConfigKey
	setString func(o *Options, v string) error
	setInt    func(o *Options, v int64)
	setBool   func(o *Options, v bool)
}

func stringKey(name, doc string, set func(o *Options, v string) error) advancedKey {
	return advancedKey{ConfigKey: ConfigKey{name, ConfigString, doc}, setString: set}
}

func intKey(name, doc string, set func(o *Options, v int64)) advancedKey {
	return advancedKey{ConfigKey: ConfigKey{name, ConfigInt, doc}, setInt: set}
}

func boolKey(name, doc string, set func(o *Options, v bool)) advancedKey {
	return advancedKey{ConfigKey: ConfigKey{name, ConfigBool, doc}, setBool: set}
}

// clampInt keeps a key's value in a range every field holds, so that an
// absurd value reaches Validate as out of range rather than wrapped.
func clampInt(v int64) int64 { return min(max(v, -1), 1<<40) }

// millis converts a key's milliseconds.
func millis(v int64) time.Duration { return time.Duration(clampInt(v)) * time.Millisecond }

var advancedKeys = []advancedKey{
	stringKey("override_hostname", "host name used in output file names and shown in the outputs (trace.Options.Hostname)",
		func(o *Options, v string) error { o.Hostname = v; return nil }),
	stringKey("session_id", "name of the run directory under <logdir>/plugins/profile (trace.Options.SessionID)",
		func(o *Options, v string) error {
			if v == "" {
				return fmt.Errorf("advanced configuration key %q: %q is not a valid directory name", "session_id", v)
			}
			o.SessionID = v
			return nil
		}),
	stringKey("program_name", "process name shown in the outputs (trace.Options.ProgramName)",
		func(o *Options, v string) error { o.ProgramName = v; return nil }),
	stringKey("cupti_library", "libcupti to load for GPU tracing, a path or soname (trace.Options.GPU.Library; default: $DEVPROF_CUPTI_LIB, else a search of the CUDA 13/12/11 sonames and toolkit directories)",
		func(o *Options, v string) error { o.GPU.Library = v; return nil }),
	intKey("gpu_max_activity_api_events", "most CUPTI activity records kept; later ones are counted as dropped (trace.Options.GPU.MaxRecords; default: max_events)",
		func(o *Options, v int64) { o.GPU.MaxRecords = v }),
	intKey("gpu_buffer_size", "bytes per CUPTI activity buffer, 65536..268435456 (trace.Options.GPU.BufferSize; default 4 MiB)",
		func(o *Options, v int64) { o.GPU.BufferSize = int(clampInt(v)) }),
	intKey("gpu_max_buffers", "most CUPTI activity buffers at once; when all are full CUPTI drops records (trace.Options.GPU.MaxBuffers; default 32)",
		func(o *Options, v int64) { o.GPU.MaxBuffers = int(clampInt(v)) }),
	intKey("gpu_flush_period_ms", "how often CUPTI hands over completed buffers, in ms (trace.Options.GPU.FlushPeriod; default 1000; 0 keeps the default)",
		func(o *Options, v int64) { o.GPU.FlushPeriod = millis(v) }),
	stringKey("gpu_metrics", "when to sample GPU metrics through NVML: auto (while the device tracer runs), on, off (trace.Options.GPUMetrics.Mode; default auto)",
		func(o *Options, v string) (err error) { o.GPUMetrics.Mode, err = nvml.ParseMode(v); return err }),
	intKey("gpu_metrics_period_ms", "GPU metrics sampling period in ms, 10..60000 (trace.Options.GPUMetrics.Period; default 100)",
		func(o *Options, v int64) { o.GPUMetrics.Period = millis(v) }),
	boolKey("gpu_metrics_pcie", "also sample PCIe throughput; each query blocks ~20 ms, so on a goroutine of its own (trace.Options.GPUMetrics.PCIe; default false)",
		func(o *Options, v bool) { o.GPUMetrics.PCIe = v }),
	stringKey("go_runtime", "when to run the Go execution tracer (GC, stop-the-world, goroutines, heap on the timeline): auto (at host tracer level 3), on, off (trace.Options.GoRuntime.Mode; default auto)",
		func(o *Options, v string) (err error) { o.GoRuntime.Mode, err = goruntime.ParseMode(v); return err }),
	intKey("go_runtime_max_bytes", "bytes of Go execution trace held in memory, 1 MiB..4 GiB; past it the session's oldest part is discarded (trace.Options.GoRuntime.MaxBytes; default 64 MiB)",
		func(o *Options, v int64) { o.GoRuntime.MaxBytes = clampInt(v) }),
	boolKey("go_runtime_cpu_profile", "also sample the CPU: samples on the goroutines' rows with the span they fell in, and <host>.cpu.pb.gz labelled span=<name> for go tool pprof -tagfocus (trace.Options.GoRuntime.CPUProfile; default false)",
		func(o *Options, v bool) { o.GoRuntime.CPUProfile = v }),
	intKey("go_runtime_max_goroutines", "most goroutines with a track of their own; the others' events are counted as dropped (trace.Options.GoRuntime.MaxGoroutines; default 1000)",
		func(o *Options, v int64) { o.GoRuntime.MaxGoroutines = int(clampInt(v)) }),
	boolKey("device_memory", "track device memory: CUDA allocations with their Go stacks and the devmem API; Stop writes <host>.memory.pb.gz (trace.Options.DeviceMemory; default false)",
		func(o *Options, v bool) {
			switch {
			case !v:
				o.DeviceMemory = nil
			case o.DeviceMemory == nil:
				o.DeviceMemory = &devmem.Options{}
			}
		}),
	intKey("device_memory_max_buffers", "most live allocations device-memory tracking keeps; later ones are counted, not kept; turns tracking on (trace.Options.DeviceMemory.MaxBuffers; default 1048576)",
		func(o *Options, v int64) {
			m := devmem.Options{}
			if o.DeviceMemory != nil {
				m = *o.DeviceMemory
			}
			m.MaxBuffers = int(clampInt(v))
			o.DeviceMemory = &m
		}),
	intKey("flight_recorder_window_ms", "make the session a flight recorder whose snapshots reach back this many ms, 0 for all it holds (trace.Options.FlightRecorder.Window)",
		func(o *Options, v int64) { o.flightRecorder().Window = millis(v) }),
	intKey("flight_recorder_max_events", "make the session a flight recorder that keeps the newest this many events (trace.Options.FlightRecorder.MaxEvents; default max_events)",
		func(o *Options, v int64) { o.flightRecorder().MaxEvents = int(clampInt(v)) }),
}

// flightRecorder returns o.FlightRecorder, a copy of it the advanced keys
// may change, made if nil: the caller's struct stays as it was.
func (o *Options) flightRecorder() *FlightRecorderOptions {
	f := FlightRecorderOptions{}
	if o.FlightRecorder != nil {
		f = *o.FlightRecorder
	}
	o.FlightRecorder = &f
	return o.FlightRecorder
}

// ConfigKeys lists the advanced configuration keys a session accepts.
func ConfigKeys() []ConfigKey {
	keys := make([]ConfigKey, len(advancedKeys))
	for i, k := range advancedKeys {
		keys[i] = k.ConfigKey
	}
	return keys
}

// Validate checks the options, advanced configuration included, as
// starting a session does, without starting one: the error names what is
// wrong (an unknown key, a value of the wrong type or out of range).
func (o *Options) Validate() error {
	_, err := o.resolve()
	return err
}

// config is Options resolved and validated.
type config struct {
	hostLevel, deviceLevel int
	maxEvents              int64
	perfetto, gzip, chrome bool
	xplane                 bool
	link                   bool
	linkTimeout            time.Duration
	host, sessionID, prog  string
	gpu                    cupti.Options
	gpuMetrics             nvml.Options
	goRuntime              goruntime.Options
	deviceMemory           *devmem.Options
	tables                 TableWriter
	// flight is set for a flight recorder: ring holds its bound.
	flight *FlightRecorderOptions
}

func (o *Options) resolve() (config, error) {
	typed := *o
	if err := typed.applyAdvanced(); err != nil {
		return config{}, err
	}
	o = &typed
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
		host:        o.Hostname,
		sessionID:   o.SessionID,
		prog:        o.ProgramName,
		gpu:         o.GPU,
		gpuMetrics:  o.GPUMetrics,
		goRuntime:   o.GoRuntime,
		tables:      o.Tables,
	}
	if o.DeviceMemory != nil {
		m := *o.DeviceMemory
		c.deviceMemory = &m
	}
	if f := o.FlightRecorder; f != nil {
		switch {
		case f.Window < 0:
			return c, fmt.Errorf("FlightRecorder.Window %v is negative", f.Window)
		case f.MaxEvents < 0:
			return c, fmt.Errorf("FlightRecorder.MaxEvents %d is negative", f.MaxEvents)
		}
		fr := *f
		c.flight = &fr
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
	// The environment can turn the device tracer off without a change to
	// the program (a shared GPU another profiler holds, a CPU-only run).
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(EnvDeviceTracer))); v {
	case "", "on", "1", "true":
	case "off", "0", "false":
		c.deviceLevel = 0
	default:
		return c, fmt.Errorf("%s=%q: want off (or on, which keeps the options' choice)", EnvDeviceTracer, v)
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
	if s := o.SessionID; s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return c, fmt.Errorf("SessionID (advanced key session_id) %q is not a valid directory name", s)
	}
	var memErr error
	if c.deviceMemory != nil {
		memErr = c.deviceMemory.Validate()
	}
	if err := errors.Join(o.GPU.Validate(), o.GPUMetrics.Validate(), o.GoRuntime.Validate(), memErr); err != nil {
		return c, err
	}
	if c.flight != nil && c.flight.MaxEvents == 0 {
		c.flight.MaxEvents = int(c.maxEvents)
	}
	if c.gpu.MaxRecords == 0 {
		c.gpu.MaxRecords = c.maxEvents
	}
	return c, nil
}

// applyAdvanced sets the typed options that o.AdvancedConfig names. Keys
// it does not know and values of the wrong type fail, all named at once.
func (o *Options) applyAdvanced() error {
	var unknown, wrong []string
	for k := range o.AdvancedConfig {
		if !slices.ContainsFunc(advancedKeys, func(ak advancedKey) bool { return ak.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	// Keys apply in the table's order, not the map's, so that two keys
	// setting one option (device_memory, device_memory_max_buffers) give
	// the same result every run.
	for _, key := range advancedKeys {
		k := key.Name
		v, set := o.AdvancedConfig[k]
		if !set {
			continue
		}
		ok := false
		switch key.Kind {
		case ConfigString:
			var s string
			if s, ok = v.(string); ok {
				if err := key.setString(o, s); err != nil {
					return err
				}
			}
		case ConfigInt:
			var n int64
			if n, ok = asInt(v); ok {
				key.setInt(o, n)
			}
		case ConfigBool:
			var b bool
			if b, ok = v.(bool); ok {
				key.setBool(o, b)
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
		names := make([]string, len(advancedKeys))
		for i, k := range advancedKeys {
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
