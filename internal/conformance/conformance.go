// Package conformance hands devprof's real outputs to the independent
// checkers that CI runs against official consumers (conformance/*.py). A
// test that produced a trace calls Export; when DEVPROF_CONFORMANCE_DIR is
// set, the trace is copied there with a manifest of what the session
// recorded, computed from the event records themselves (not from the
// exporter), so the checker compares the file against the truth.
// It lives beside the Python checkers it feeds (conformance/*.py): one
// home for conformance code. It is test support, imported only by tests.
package conformance

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/devprof/devprof/internal/metatext"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// Dir returns the directory named by DEVPROF_CONFORMANCE_DIR, or "".
func Dir() string { return os.Getenv("DEVPROF_CONFORMANCE_DIR") }

// Manifest is the contract with conformance/perfetto_check.py.
type Manifest struct {
	Trace       string         `json:"trace"`
	ProcessName string         `json:"process_name"`
	Dropped     int64          `json:"dropped"`
	Spans       []Span         `json:"spans"`
	Instants    []Instant      `json:"instants"`
	Counters    []Counter      `json:"counters"`
	Flows       [][2]string    `json:"flows"`
	ExtraSlices []string       `json:"extra_slices,omitempty"`
	Meta        map[string]any `json:"meta,omitempty"`
}

// Span is an expected slice.
type Span struct {
	Name   string         `json:"name"`
	TS     int64          `json:"ts"`
	Dur    int64          `json:"dur"`
	Parent *string        `json:"parent"`
	Args   map[string]Arg `json:"args"`
}

// Instant is an expected instant event.
type Instant struct {
	Name string         `json:"name"`
	TS   int64          `json:"ts"`
	Args map[string]Arg `json:"args"`
}

// Counter is an expected counter track with its samples.
type Counter struct {
	Name    string   `json:"name"`
	Unit    string   `json:"unit"`
	Samples []Sample `json:"samples"`
}

// Sample is one counter value; it encodes as [ts, value] with an exact
// integer timestamp.
type Sample struct {
	TS    int64
	Value float64
}

// MarshalJSON implements json.Marshaler.
func (s Sample) MarshalJSON() ([]byte, error) { return json.Marshal([]any{s.TS, s.Value}) }

// Arg is an expected typed argument.
type Arg struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Expect computes the manifest of a snapshot.
func Expect(s *event.Snapshot, traceName string) *Manifest {
	m := &Manifest{Trace: traceName, ProcessName: s.Meta.Program, Dropped: s.Meta.Dropped(),
		Spans: []Span{}, Instants: []Instant{}, Counters: []Counter{}, Flows: [][2]string{}}
	if m.ProcessName == "" {
		// A program without a name: the Perfetto writer names its
		// process track after its pid (a process track needs a name).
		m.ProcessName = fmt.Sprintf("Process %d", s.Meta.PID)
	}
	type flowEnd struct {
		t    int64
		name string
	}
	flows := map[uint64][]flowEnd{}
	counters := map[[2]string]int{}
	for _, r := range s.Events {
		args := map[string]Arg{}
		// The writers key arguments by name and keep repeated keys
		// (JAX's _src) apart as "k (2)", …: the manifest says the same.
		for _, a := range event.UniqueKeys(s.Args(r)) {
			if a.Kind == event.ArgFlow {
				flows[a.Num] = append(flows[a.Num], flowEnd{r.Start(), s.Name(r)})
				continue
			}
			args[a.Key] = arg(a)
		}
		if isMemoryEvent(s, r) {
			// An instant on its track's thread, the address in hex.
			if a, ok := args[event.ArgAddress]; ok && a.Type == "uint" {
				args[event.ArgAddress] = Arg{"string", fmt.Sprintf("0x%x", a.Value)}
			}
			m.Instants = append(m.Instants, Instant{Name: s.Name(r), TS: s.Meta.BootNanos(r.Start()), Args: args})
			continue
		}
		switch r.Kind() {
		case event.KindSpan, event.KindActivity:
			end, fin := s.EndOf(r)
			if r.IsStep() {
				args["step_num"] = Arg{"int", r.StepNum()}
			}
			if !fin {
				args["unfinished"] = Arg{"bool", true}
			}
			var parent *string
			if p := s.Lookup(r.Parent()); p != nil {
				pn := s.Name(p)
				parent = &pn
			}
			m.Spans = append(m.Spans, Span{Name: s.Name(r), TS: s.Meta.BootNanos(r.Start()), Dur: end - r.Start(), Parent: parent, Args: args})
		case event.KindInstant:
			m.Instants = append(m.Instants, Instant{Name: s.Name(r), TS: s.Meta.BootNanos(r.Start()), Args: args})
		case event.KindCounter:
			unit, val := s.Counter(r)
			name := s.Name(r)
			if name == "" {
				name = "counter" // the Perfetto writer names an unnamed series' track so
			}
			k := [2]string{name, unit}
			i, ok := counters[k]
			if !ok {
				i = len(m.Counters)
				counters[k] = i
				m.Counters = append(m.Counters, Counter{Name: name, Unit: unit})
			}
			m.Counters[i].Samples = append(m.Counters[i].Samples, Sample{s.Meta.BootNanos(r.Start()), val})
		}
	}
	// Each memory track's counters: its bytes in use at every event, and
	// the bytes of each tag set's series where they change.
	for _, tl := range s.MemoryTimelines(memoryTopTags) {
		name := memoryTrackName(s, &tl)
		use := Counter{Name: name + " in use", Unit: "bytes"}
		for i, t := range tl.Times {
			use.Samples = append(use.Samples, Sample{s.Meta.BootNanos(t), float64(tl.InUse[i])})
		}
		m.Counters = append(m.Counters, use)
		for _, sr := range tl.Series {
			c := Counter{Name: name + ": " + sr.Key, Unit: "bytes"}
			for i, t := range tl.Times {
				if i == 0 || sr.Bytes[i] != sr.Bytes[i-1] {
					c.Samples = append(c.Samples, Sample{s.Meta.BootNanos(t), float64(sr.Bytes[i])})
				}
			}
			m.Counters = append(m.Counters, c)
		}
	}
	for i := range m.Counters {
		slices.SortFunc(m.Counters[i].Samples, func(a, b Sample) int { return cmp.Compare(a.TS, b.TS) })
	}
	ids := make([]uint64, 0, len(flows))
	for id := range flows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ends := flows[id]
		slices.SortStableFunc(ends, func(a, b flowEnd) int { return cmp.Compare(a.t, b.t) })
		for i := 1; i < len(ends); i++ {
			m.Flows = append(m.Flows, [2]string{ends[i-1].name, ends[i].name})
		}
	}
	// Warnings and notes are instants on the process at the start; the
	// drop marker is exempt from matching (the checker finds it by its
	// total).
	for _, mk := range metatext.Markers(&s.Meta) {
		if mk.AtStop {
			m.ExtraSlices = append(m.ExtraSlices, mk.Name)
			continue
		}
		args := map[string]Arg{}
		for _, a := range mk.Args {
			args[a.Key] = arg(a)
		}
		m.Instants = append(m.Instants, Instant{Name: mk.Name, TS: s.Meta.BootNanos(s.Meta.Start.Mono), Args: args})
	}
	return m
}

// memoryTopTags is how many tag sets of a memory track the writers give a
// series of their own (perfetto.MemoryTopTags).
const memoryTopTags = 8

// isMemoryEvent reports whether r is a memory tracker's allocation or
// free (event/memory.go), which the writers show in their own way.
func isMemoryEvent(s *event.Snapshot, r *event.Record) bool {
	if k := r.Activity(); k != event.ActivityAlloc && k != event.ActivityFree {
		return false
	}
	t, ok := s.TrackOf(r)
	end, fin := s.EndOf(r)
	return ok && t.Kind == event.TrackMemory && fin && end == r.Start()
}

// memoryTrackName is what the writers name a memory track's counters after.
func memoryTrackName(s *event.Snapshot, tl *event.MemoryTimeline) string {
	if n := s.Tracks[tl.Track-1].Name; n != "" {
		return n
	}
	if tl.Device < 0 {
		return "host memory"
	}
	return fmt.Sprintf("GPU %d memory", tl.Device)
}

func arg(a event.Arg) Arg {
	switch a.Kind {
	case event.ArgInt:
		return Arg{"int", int64(a.Num)}
	case event.ArgUint:
		return Arg{"uint", a.Num}
	case event.ArgFloat:
		return Arg{"double", a.Float()}
	case event.ArgBool:
		return Arg{"bool", a.Num != 0}
	case event.ArgString:
		return Arg{"string", a.Str}
	case event.ArgDuration:
		return Arg{"string", a.Duration().String()}
	}
	return Arg{"unknown", nil}
}

// Export copies the Perfetto file at tracePath into the conformance
// directory as <name>.pftrace (keeping a .gz suffix) and writes
// <name>.expect.json for snapshot s. Without DEVPROF_CONFORMANCE_DIR it
// does nothing.
func Export(t testing.TB, name, tracePath string, s *event.Snapshot) {
	t.Helper()
	dir := Dir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ext := ".pftrace"
	if strings.HasSuffix(tracePath, ".gz") {
		ext += ".gz"
	}
	dst := filepath.Join(dir, name+ext)
	if err := copyFile(dst, tracePath); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(Expect(s, name+ext), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".expect.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// XprofManifest is what xprof's own converters must show for an
// .xplane.pb (checked by conformance/test_xprof_outputs.py).
type XprofManifest struct {
	XPlane   string         `json:"xplane"`
	Events   []XprofEvent   `json:"events"`
	Steps    []XprofStep    `json:"steps"`
	Counters []XprofCounter `json:"counters"`
	Kernels  map[string]int `json:"kernels"` // kernel name -> occurrences, for kernel_stats
	// LaunchLinks counts host spans linked to device activity by a flow id
	// (a launch and its kernel or copy): xprof draws each as a flow.
	LaunchLinks int `json:"launch_links"`
	// HostFlows are the arrows xprof's trace viewer must draw between host
	// events (flows no device activity carries, written as flow stats): for
	// each flow, its shown ends in time order, as consecutive [from, to]
	// event-name pairs. xprof keeps one flow per event, the last flow stat,
	// so an event on several such flows shows only the last of its args.
	// None of them may be a launch (category gpu_launch).
	HostFlows [][2]string `json:"host_flows"`
	// DeviceType is what the overview page must call the device, from the
	// capability stats (measured on xprof 2.24.2: compute capability 9.x
	// reads as "Nvidia GPU (Hopper)"); empty when not checked.
	DeviceType string `json:"device_type,omitempty"`
	// Occupancy says kernel_stats must show every kernel with a non-zero
	// theoretical occupancy: the devices' capabilities (SMs, clock,
	// compute capability) are on their planes.
	Occupancy bool `json:"occupancy,omitempty"`
}

// XprofEvent is an expected trace-viewer event on the /host:CPU process.
type XprofEvent struct {
	Process string         `json:"process"`
	Name    string         `json:"name"`
	Thread  string         `json:"thread"`
	TSUs    float64        `json:"ts_us"`
	DurUs   float64        `json:"dur_us"`
	Args    map[string]any `json:"args"`
}

// XprofStep is an expected step of the overview page.
type XprofStep struct {
	Name  string  `json:"name"`
	DurUs float64 `json:"dur_us"`
	// DeviceUs is the extent of the device activity the step launched (by
	// flow / correlation id): with GPU planes xprof's overview page reports
	// that as the step time. 0 without device activity.
	DeviceUs float64 `json:"device_us"`
}

// XprofCounter is an expected counter track of the streaming trace viewer.
type XprofCounter struct {
	Name    string       `json:"name"`
	Samples [][2]float64 `json:"samples"` // [ts_us, value]
}

// xprofHiddenStats are stats xprof's trace viewer never shows as args.
var xprofHiddenStats = map[string]bool{"flops": true, "kernel_details": true, "program_id": true, "symbol_id": true,
	"_r": true, "_p": true, "_c": true, "_pt": true, "_ct": true}

// isKernel reports whether device activity r is a kernel to xprof's
// kernel_stats: of kind kernel, or of unknown kind (built or read from a
// file) with a kernel's launch shape or xprof's own kernel_details.
func isKernel(s *event.Snapshot, r *event.Record) bool {
	switch r.Activity() {
	case event.ActivityKernel:
		return true
	case event.ActivityUnknown:
		for _, a := range s.Args(r) {
			if a.Key == event.ArgGrid || a.Key == "kernel_details" {
				return true
			}
		}
	}
	return false
}

// ExpectXprof computes what xprof should show for snapshot s: events on
// the rows of the layout, steps named "<name> <step_num>", counters.
func ExpectXprof(s *event.Snapshot, xplaneName string) *XprofManifest {
	m := &XprofManifest{XPlane: xplaneName, Events: []XprofEvent{}, Steps: []XprofStep{}, Counters: []XprofCounter{}, Kernels: map[string]int{}}
	us := func(t int64) float64 { return float64(t-s.Meta.Start.Mono) / 1e3 }
	onDevice := func(r *event.Record) bool {
		if r.Kind() != event.KindActivity || r.Lane() == 0 || int(r.Lane()) > len(s.Tracks) {
			return false
		}
		return s.Tracks[r.Lane()-1].Kind == event.TrackDeviceStream
	}
	args := func(r *event.Record, fin bool) map[string]any {
		out := map[string]any{}
		onDev := onDevice(r)
		for _, a := range s.Args(r) {
			if xprofHiddenStats[a.Key] {
				continue
			}
			if onDev && a.Key == event.ArgAnnotation {
				a.Key = "tf_op" // xprof's name for the op device work belongs to
			}
			switch a.Kind {
			case event.ArgFlow:
			case event.ArgBool:
				out[a.Key] = int64(a.Num)
			case event.ArgDuration:
				out[a.Key] = a.Duration().String()
			default:
				out[a.Key] = a.Value()
			}
		}
		if onDev && r.Activity() == event.ActivityMemcpy {
			// xprof's memory tools read a copy's summary: memory kinds,
			// size, destination device.
			dest := uint64(s.Tracks[r.Lane()-1].Device)
			if d, ok := out[event.ArgDstDevice].(uint64); ok {
				dest = d
			}
			out["memcpy_details"] = fmt.Sprintf("kind_src:%v kind_dst:%v size:%v dest:%d", out[event.ArgSrcMemoryKind], out[event.ArgDstMemoryKind], out[event.ArgBytes], dest)
		}
		if r.IsStep() {
			out["step_num"] = r.StepNum()
		}
		if !fin {
			out["unfinished"] = int64(1)
		}
		return out
	}
	l := s.Layout()
	// Device activity by flow id, to measure what each step launched; a
	// flow id shared by device work and a host event (a span, or a call
	// on a host thread's track) is a launch link, one per device event.
	type extent struct{ lo, hi int64 }
	device := map[uint64]extent{}
	deviceEvents := map[uint64]int{}
	for _, r := range s.Events {
		if !onDevice(r) {
			continue
		}
		end, _ := s.EndOf(r)
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow {
				e, seen := device[a.Num]
				if !seen || r.Start() < e.lo {
					e.lo = r.Start()
				}
				if !seen || end > e.hi {
					e.hi = end
				}
				device[a.Num] = e
				deviceEvents[a.Num]++
			}
		}
	}
	stepOf := func(r *event.Record) *event.Record {
		for p := r; p != nil; p = s.Lookup(p.Parent()) {
			if p.IsStep() {
				return p
			}
		}
		return nil
	}
	stepDevice := map[uint64]extent{}
	launched := map[uint64]bool{}
	for _, r := range s.Events {
		if r.Kind() != event.KindSpan && (r.Kind() != event.KindActivity || onDevice(r)) {
			continue
		}
		for _, a := range s.Args(r) {
			e, ok := device[a.Num]
			if a.Kind != event.ArgFlow || !ok {
				continue
			}
			if !launched[a.Num] {
				launched[a.Num] = true
				m.LaunchLinks += deviceEvents[a.Num]
			}
			if st := stepOf(r); st != nil {
				cur, seen := stepDevice[st.ID()]
				if !seen || e.lo < cur.lo {
					cur.lo = e.lo
				}
				if !seen || e.hi > cur.hi {
					cur.hi = e.hi
				}
				stepDevice[st.ID()] = cur
			}
		}
	}
	for i := range l.Rows {
		row := &l.Rows[i]
		process := "/host:CPU"
		if t, ok := s.Track(row); ok && t.Kind == event.TrackMemory {
			// Memory events are MemoryAllocation and MemoryDeallocation
			// events, which xprof's trace viewer does not show (nor JAX's:
			// measured with xprof 2.24.2); its memory_profile tool does
			// (ExpectMemoryProfile).
			continue
		}
		if t, ok := s.Track(row); ok && t.Kind == event.TrackDeviceStream {
			process = fmt.Sprintf("/device:GPU:%d", t.Device)
			for _, d := range l.Devices {
				if d.Device == t.Device && d.Caps.ComputeCapMajor == 9 {
					m.DeviceType = "Nvidia GPU (Hopper)"
				}
				if d.Device == t.Device && d.Caps.Cores > 0 && d.Caps.ClockRateKHz > 0 {
					m.Occupancy = true
				}
			}
		}
		for _, p := range row.Spans {
			if process != "/host:CPU" && isKernel(s, p.Record) {
				m.Kernels[s.Name(p.Record)]++
			}
			name := s.Name(p.Record)
			if p.IsStep() {
				name = fmt.Sprintf("%s %d", s.Name(p.Record), p.StepNum())
				st := XprofStep{Name: name, DurUs: float64(p.End-p.Start()) / 1e3}
				if e, ok := stepDevice[p.ID()]; ok {
					st.DeviceUs = float64(e.hi-e.lo) / 1e3
				}
				m.Steps = append(m.Steps, st)
			}
			m.Events = append(m.Events, XprofEvent{Process: process, Name: name, Thread: row.Name, TSUs: us(p.Start()), DurUs: float64(p.End-p.Start()) / 1e3, Args: args(p.Record, p.Finished)})
		}
		for _, r := range row.Instants {
			m.Events = append(m.Events, XprofEvent{Process: process, Name: s.Name(r), Thread: row.Name, TSUs: us(r.Start()), Args: args(r, true)})
		}
	}
	for _, r := range l.Loose {
		m.Events = append(m.Events, XprofEvent{Process: "/host:CPU", Name: s.Name(r), Thread: "Instants", TSUs: us(r.Start()), Args: args(r, true)})
	}
	launchIDs := make(map[uint64]bool, len(device))
	for id := range device {
		launchIDs[id] = true
	}
	m.HostFlows = xprofHostFlows(s, l, launchIDs)
	idx := map[string]int{}
	samples := slices.Clone(l.Counters) // the host's, then each device's (on its plane)
	for _, d := range l.Devices {
		samples = append(samples, l.DeviceCounters[d.Device]...)
	}
	for _, r := range samples {
		name := s.Name(r)
		unit, val := s.Counter(r)
		if u := unit; u != "" {
			name += " (" + u + ")"
		}
		i, ok := idx[name]
		if !ok {
			i = len(m.Counters)
			idx[name] = i
			m.Counters = append(m.Counters, XprofCounter{Name: name})
		}
		m.Counters[i].Samples = append(m.Counters[i].Samples, [2]float64{us(r.Start()), val})
	}
	return m
}

// xprofHostFlows computes XprofManifest.HostFlows: the flows between the
// host events the XPlane writer puts out (rows of host threads, memory
// events aside, and loose instants) whose ids no device activity carries
// (launch holds those) and that have two ends or more there.
func xprofHostFlows(s *event.Snapshot, l *event.Layout, launch map[uint64]bool) [][2]string {
	ends := map[uint64][]*event.Record{}
	note := func(r *event.Record) {
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow && !launch[a.Num] && !slices.Contains(ends[a.Num], r) {
				ends[a.Num] = append(ends[a.Num], r)
			}
		}
	}
	for i := range l.Rows {
		row := &l.Rows[i]
		if t, ok := s.Track(row); ok && t.Kind == event.TrackDeviceStream {
			continue
		}
		for _, p := range row.Spans {
			if p.End == p.Start() && isMemoryEvent(s, p.Record) {
				continue
			}
			note(p.Record)
		}
		for _, r := range row.Instants {
			note(r)
		}
	}
	for _, r := range l.Loose {
		note(r)
	}
	// The flow an end shows: the last of its written flows (xprof keeps
	// the last flow stat of an event).
	shows := func(r *event.Record, id uint64) bool {
		var last uint64
		for _, a := range s.Args(r) {
			if a.Kind == event.ArgFlow && !launch[a.Num] && len(ends[a.Num]) >= 2 {
				last = a.Num
			}
		}
		return last == id
	}
	name := func(r *event.Record) string {
		if r.IsStep() {
			return fmt.Sprintf("%s %d", s.Name(r), r.StepNum())
		}
		return s.Name(r)
	}
	ids := make([]uint64, 0, len(ends))
	for id, rs := range ends {
		if len(rs) >= 2 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	pairs := [][2]string{}
	for _, id := range ids {
		var rs []*event.Record
		for _, r := range ends[id] {
			if shows(r, id) {
				rs = append(rs, r)
			}
		}
		slices.SortStableFunc(rs, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
		for i := 1; i < len(rs); i++ {
			pairs = append(pairs, [2]string{name(rs[i-1]), name(rs[i])})
		}
	}
	return pairs
}

// ExportXPlane copies an .xplane.pb into the conformance directory as
// <name>.xplane.pb with <name>.xprof.json. Without DEVPROF_CONFORMANCE_DIR
// it does nothing.
func ExportXPlane(t testing.TB, name, xplanePath string, s *event.Snapshot) {
	t.Helper()
	dir := Dir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(dir, name+".xplane.pb"), xplanePath); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(ExpectXprof(s, name+".xplane.pb"), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".xprof.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// MemoryProfileManifest is what xprof's memory_profile tool must show for
// an .xplane.pb (checked by conformance/test_xprof_memory.py): one entry
// per memory id (allocator) the trace's memory tracks become.
type MemoryProfileManifest struct {
	XPlane     string                     `json:"xplane"`
	MemoryIDs  []string                   `json:"memory_ids"` // sorted
	Allocators map[string]MemoryAllocator `json:"allocators"`
}

// MemoryAllocator is what the tool shows of one memory id.
type MemoryAllocator struct {
	Allocations   int `json:"allocations"`
	Deallocations int `json:"deallocations"`
	// PeakBytes is the most heap in use (bytes_allocated) at any event,
	// first reached PeakTimePs after the profile start, in step PeakStep;
	// CapacityBytes is the heap and the free bytes then.
	PeakBytes     uint64 `json:"peak_bytes"`
	PeakTimePs    int64  `json:"peak_time_ps"`
	PeakStep      int64  `json:"peak_step"`
	CapacityBytes uint64 `json:"capacity_bytes"`
	// LifetimePeakBytes is the most the tracker ever held
	// (peak_bytes_in_use); LastBytes the heap after the last event.
	LifetimePeakBytes uint64 `json:"lifetime_peak_bytes"`
	LastBytes         uint64 `json:"last_bytes"`
	// Breakdown is the tool's table of what held memory at the peak.
	Breakdown []MemoryRow `json:"breakdown"`
}

// MemoryRow is one row of the tool's breakdown at the peak: Count equal
// allocations of Bytes (allocation_bytes), with their op (tf_op) and
// region (region_type); a Special row is one the tool adds itself.
type MemoryRow struct {
	Bytes   uint64 `json:"bytes"`
	Op      string `json:"op"`
	Region  string `json:"region"`
	Count   int    `json:"count"`
	Special bool   `json:"special,omitempty"`
}

// Equal reports whether two allocators' expectations are the same.
func (a MemoryAllocator) Equal(b MemoryAllocator) bool {
	return slices.Equal(a.Breakdown, b.Breakdown) &&
		a.Allocations == b.Allocations && a.Deallocations == b.Deallocations &&
		a.PeakBytes == b.PeakBytes && a.PeakTimePs == b.PeakTimePs && a.PeakStep == b.PeakStep &&
		a.CapacityBytes == b.CapacityBytes && a.LifetimePeakBytes == b.LifetimePeakBytes && a.LastBytes == b.LastBytes
}

// ExpectMemoryProfile computes what xprof's memory_profile must show for
// snapshot s, from its memory events (event/memory.go), following the
// tool's documented rules (shared reference memory.md §5): the heap is
// each event's bytes in use; the peak is its first maximum; an event's
// step is xprof's group id of the step it was made in (steps numbered
// 0, 1, … in time order; 0 without one); the breakdown lists the
// allocations live at the peak that were made in the peak's step, largest
// first, merging equal rows, and calls the rest of the heap "unused
// preallocated device memory".
func ExpectMemoryProfile(s *event.Snapshot) *MemoryProfileManifest {
	m := &MemoryProfileManifest{MemoryIDs: []string{}, Allocators: map[string]MemoryAllocator{}}
	sizes := map[int]uint64{}
	for _, t := range s.Tracks {
		if (t.Kind == event.TrackDevice || t.Kind == event.TrackDeviceStream) && sizes[t.Device] == 0 {
			sizes[t.Device] = t.Caps.MemoryBytes
		}
	}
	type memEvent struct {
		free               bool
		t                  int64
		addr, bytes, inUse uint64
		peak               uint64
		step               int64
		op, region         string
	}
	// xprof's group ids: steps in time order; an event's step span is the
	// one of its number that began last before it.
	var steps []*event.Record
	for _, r := range s.Events {
		if r.Kind() == event.KindSpan && r.IsStep() {
			steps = append(steps, r)
		}
	}
	slices.SortStableFunc(steps, func(a, b *event.Record) int { return cmp.Compare(a.Start(), b.Start()) })
	groupOf := func(step int64, t int64) int64 {
		group := int64(-1)
		for i, st := range steps {
			if st.StepNum() == step && (group < 0 || st.Start() <= t) {
				group = int64(i)
			}
		}
		return max(group, 0)
	}
	byAllocator := map[string][]memEvent{}
	devices := map[string]int{}
	for _, r := range s.Events {
		if !isMemoryEvent(s, r) {
			continue
		}
		tr, _ := s.TrackOf(r)
		e := memEvent{free: r.Activity() == event.ActivityFree, t: r.Start()}
		allocator := fmt.Sprintf("GPU_%d_devmem", tr.Device)
		if tr.Device < 0 {
			allocator = "host_devmem"
		}
		var kind, tags, span, api string
		for _, a := range s.Args(r) {
			switch a.Key {
			case event.ArgAddress:
				e.addr = a.Num
			case event.ArgBytes:
				e.bytes = a.Num
			case event.ArgInUse:
				e.inUse = a.Num
			case event.ArgPeakInUse:
				e.peak = a.Num
			case event.ArgStep:
				e.step = groupOf(int64(a.Num), r.Start())
			case event.ArgMemoryKind:
				kind = a.Str
			case event.ArgTags:
				tags = a.Str
			case event.ArgSpan:
				span = a.Str
			case event.ArgAPI:
				api = a.Str
			case "allocator_name":
				allocator = a.Str
			}
		}
		e.op = api
		if span != "" {
			e.op = span[strings.LastIndexByte(span, '/')+1:]
		}
		e.region = cmp.Or(tags, kind)
		byAllocator[allocator] = append(byAllocator[allocator], e)
		devices[allocator] = tr.Device
	}
	for id, evs := range byAllocator {
		m.MemoryIDs = append(m.MemoryIDs, id)
		slices.SortStableFunc(evs, func(a, b memEvent) int { return cmp.Compare(a.t, b.t) })
		var a MemoryAllocator
		peakAt := -1
		for i, e := range evs {
			if e.free {
				a.Deallocations++
			} else {
				a.Allocations++
			}
			if peakAt < 0 || e.inUse > a.PeakBytes {
				a.PeakBytes, peakAt = e.inUse, i
			}
			a.LifetimePeakBytes = max(a.LifetimePeakBytes, e.peak)
			a.LastBytes = e.inUse
		}
		pe := evs[peakAt]
		a.PeakTimePs = (pe.t - s.Meta.Start.Mono) * 1000
		a.PeakStep = pe.step
		a.CapacityBytes = a.PeakBytes
		if size := sizes[devices[id]]; size > 0 {
			a.CapacityBytes = a.PeakBytes + size - min(size, a.PeakBytes)
		}
		active := map[uint64]memEvent{}
		unmapped, unmappedFree := int64(a.PeakBytes), int64(0)
		for _, e := range evs[:peakAt+1] {
			if e.step != pe.step {
				continue
			}
			if !e.free {
				active[e.addr] = e
				unmapped -= int64(e.bytes)
				continue
			}
			if _, ok := active[e.addr]; ok {
				delete(active, e.addr)
			} else {
				unmappedFree += int64(e.bytes)
			}
			unmapped += int64(e.bytes)
		}
		unmapped -= unmappedFree
		rows := map[MemoryRow]int{}
		for _, e := range active {
			rows[MemoryRow{Bytes: e.bytes, Op: e.op, Region: e.region}]++
		}
		for r, n := range rows {
			r.Count = n
			a.Breakdown = append(a.Breakdown, r)
		}
		slices.SortFunc(a.Breakdown, func(x, y MemoryRow) int {
			if c := cmp.Compare(y.Bytes, x.Bytes); c != 0 {
				return c
			}
			return cmp.Or(cmp.Compare(x.Op, y.Op), cmp.Compare(x.Region, y.Region))
		})
		if unmapped > 0 {
			a.Breakdown = append(a.Breakdown, MemoryRow{Bytes: uint64(unmapped), Op: "unused preallocated device memory", Region: "persist/dynamic", Count: 1, Special: true})
		}
		m.Allocators[id] = a
	}
	slices.Sort(m.MemoryIDs)
	return m
}

// ExportMemoryProfile writes <name>.memprof.json, what xprof's
// memory_profile must show for <name>.xplane.pb (which ExportXPlane
// copies). Without DEVPROF_CONFORMANCE_DIR it does nothing.
func ExportMemoryProfile(t testing.TB, name, xplanePath string, s *event.Snapshot) {
	t.Helper()
	dir := Dir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(dir, name+".xplane.pb"), xplanePath); err != nil {
		t.Fatal(err)
	}
	m := ExpectMemoryProfile(s)
	m.XPlane = name + ".xplane.pb"
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".memprof.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
